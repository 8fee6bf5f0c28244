"""ONNX GridSample and RoiAlign against onnxruntime: the importer emits the registered Relax
ops (``relax.image.grid_sample``, ``relax.vision.roi_align``), never a private kernel."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

rng = np.random.default_rng(20)


def _model(node, inputs, opset):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT64 if a.dtype == np.int64
                                       else TensorProto.FLOAT, a.shape) for n, a in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _compare(node, inputs, opset, rtol=1e-4, atol=1e-5, op_name=None):
    model = _model(node, inputs, opset)
    mod = from_onnx(model)
    called = {b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
              if isinstance(b.value, relax.Call)}
    assert op_name in called and "relax.call_tir" not in called, called
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    ours = vm["main"](*[a for _, a in inputs]).numpy()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, dict(inputs))
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=atol)


_GRID_CASES = list(itertools.product(["linear", "nearest", "cubic"],
                                     ["zeros", "border", "reflection"], [0, 1]))


@pytest.mark.parametrize("mode, padding, align", _GRID_CASES)
def test_grid_sample_2d_matches_onnxruntime(mode, padding, align):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)  # some outside [-1, 1]
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding,
                            align_corners=align)
    _compare(node, [("x", x), ("grid", grid)], 20, op_name="relax.image.grid_sample")


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_opset16_mode_names(mode):
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    grid = rng.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode)
    _compare(node, [("x", x), ("grid", grid)], 16, op_name="relax.image.grid_sample")


@pytest.mark.parametrize("mode, padding", [("linear", "zeros"), ("nearest", "border"),
                                           ("linear", "reflection")])
def test_grid_sample_3d_matches_onnxruntime(mode, padding):
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 2, 3, 2, 3)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding)
    _compare(node, [("x", x), ("grid", grid)], 20, op_name="relax.image.grid_sample")


_ROI_CASES = list(itertools.product(["avg", "max"], ["half_pixel", "output_half_pixel"],
                                    [0, 2]))


@pytest.mark.parametrize("mode, transform, ratio", _ROI_CASES)
def test_roi_align_matches_onnxruntime(mode, transform, ratio):
    x = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 7.5, 8.0], [2.0, 0.0, 11.0, 4.5], [-1.0, -1.0, 3.0, 12.0],
                     [4.0, 4.0, 4.5, 4.2]], np.float32)
    bidx = np.array([0, 1, 1, 0], np.int64)
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], mode=mode,
                            coordinate_transformation_mode=transform, output_height=3,
                            output_width=4, sampling_ratio=ratio, spatial_scale=0.9)
    _compare(node, [("x", x), ("rois", rois), ("idx", bidx)], 16,
             op_name="relax.vision.roi_align")


def test_roi_align_opset10_defaults_to_output_half_pixel():
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    rois = np.array([[0.0, 0.0, 4.0, 3.0], [1.0, 2.0, 5.5, 5.5]], np.float32)
    bidx = np.array([0, 0], np.int64)
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], output_height=2,
                            output_width=2, sampling_ratio=2)
    _compare(node, [("x", x), ("rois", rois), ("idx", bidx)], 10,
             op_name="relax.vision.roi_align")
