"""ONNX operators with data-dependent output shapes (NonZero, Unique, NonMaxSuppression,
Compress with a runtime condition): the importer binds their shapes to fresh symbolic
variables, later nodes use them, and the compiled model matches onnxruntime.  Skipped
without the ``onnx`` package (the numeric checks without ``onnxruntime``)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from vm_testing import requires_llvm  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax, tir  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

rng = np.random.default_rng(3)


def _model(nodes, inputs, outputs, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _check(model, *inputs):
    """Compile ``model``, run it on ``inputs`` and compare with onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    mod = from_onnx(model)
    assert relax.analysis.well_formed(mod)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    got = vm["main"](*inputs)
    got = [g.numpy() for g in got] if isinstance(got, (list, tuple)) else [got.numpy()]
    feeds = {vi.name: x for vi, x in zip(model.graph.input, inputs)}
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype
    return mod


@requires_llvm
def test_nonzero_shape_is_symbolic_for_later_nodes():
    m = _model([helper.make_node("NonZero", ["x"], ["nz"]),
                helper.make_node("Transpose", ["nz"], ["t"]),
                helper.make_node("Shape", ["nz"], ["s"])],
               [_vi("x", ["n", 3])],
               [_vi("t", None, TensorProto.INT64), _vi("s", None, TensorProto.INT64)])
    mod = from_onnx(m)
    bindings = {b.var.name_hint: b.var for b in mod["main"].body.blocks[0].bindings}
    count, two = bindings["t"].struct_info.shape_values  # Transpose sees (count, 2)
    assert isinstance(count, tir.Var) and int(two) == 2
    x = rng.integers(0, 2, (4, 3)).astype("float32")
    _check(m, x)


@requires_llvm
@pytest.mark.parametrize("axis,length", [(0, 3), (1, 4), (None, 5)])
def test_compress_with_a_runtime_condition(axis, length):
    """The condition may be shorter than the axis, or longer (entries past it are ignored
    when they are false)."""
    kwargs = {} if axis is None else {"axis": axis}
    m = _model([helper.make_node("Compress", ["x", "c"], ["y"], **kwargs)],
               [_vi("x", [3, 2]), _vi("c", [length], TensorProto.BOOL)], [_vi("y", None)])
    x = np.arange(6, dtype="float32").reshape(3, 2)
    cond = np.array([True, False, True, False, True][:length])
    if axis == 1:
        cond = np.array([False, True, False, False])
    _check(m, x, cond)


@requires_llvm
def test_unique_with_only_some_outputs():
    m = _model([helper.make_node("Unique", ["x"], ["y", "", "inverse"], sorted=0)],
               [_vi("x", [2, 5], TensorProto.INT64)],
               [_vi("y", None, TensorProto.INT64), _vi("inverse", None, TensorProto.INT64)])
    mod = _check(m, rng.integers(0, 4, (2, 5)).astype("int64"))
    bindings = {b.var.name_hint: b.var for b in mod["main"].body.blocks[0].bindings}
    assert isinstance(bindings["y"].struct_info.shape_values[0], tir.Var)
    assert int(bindings["inverse"].struct_info.shape_values[0]) == 10


@requires_llvm
def test_non_max_suppression_with_absent_optional_inputs():
    """No iou_threshold (0: any overlap suppresses) and no score_threshold (every box)."""
    m = _model([helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit"], ["sel"],
                                 center_point_box=1)],
               [_vi("boxes", [1, 6, 4]), _vi("scores", [1, 2, 6]),
                _vi("limit", [1], TensorProto.INT64)],
               [_vi("sel", None, TensorProto.INT64)])
    boxes = np.concatenate([rng.uniform(0, 6, (1, 6, 2)), rng.uniform(0.5, 2, (1, 6, 2))],
                           -1).astype("float32")
    scores = rng.uniform(-1, 1, (1, 2, 6)).astype("float32")
    _check(m, boxes, scores, np.array([4], "int64"))
