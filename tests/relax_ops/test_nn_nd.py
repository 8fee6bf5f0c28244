"""1-d and 3-d convolutions and poolings, resize1d/3d, grid_sample and roi_align legalized
and run on every target of the suite (conftest.py), against numpy references (and PyTorch /
the ONNX reference runtime when installed)."""

import itertools

import nd_reference as ref
import numpy as np
import pytest
from relax_op_harness import run_op
from test_image_sort import _weights

from tvm import tir
from tvm.relax import op

rng = np.random.default_rng(21)
n = tir.Var("n", "int64")
RTOL = dict(rtol=1e-4, atol=1e-5)


# -- convolutions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("stride,pad,dilation,groups", [
    ((1, 1, 1), (0, 0, 0, 0, 0, 0), (1, 1, 1), 1),
    ((2, 1, 2), (1, 0, 1, 0, 1, 1), (1, 2, 1), 2),
])
def test_conv3d(stride, pad, dilation, groups):
    x = rng.random((2, 4, 5, 6, 5)).astype("float32")
    w = rng.random((4, 4 // groups, 2, 3, 2)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv3d(d, k, stride, pad, dilation, groups), [x, w])
    np.testing.assert_allclose(out, ref.conv_nd(x, w, stride, pad, dilation, groups), **RTOL)


def test_conv3d_channels_last_and_symbolic_batch():
    x = rng.random((2, 3, 4, 5, 4)).astype("float32")
    w = rng.random((2, 3, 3, 3, 3)).astype("float32")
    expected = ref.conv_nd(x, w, (1, 1, 1), (1,) * 6, (1, 1, 1))
    out = run_op(lambda d, k: op.nn.conv3d(d, k, padding=1, data_layout="NDHWC",
                                           kernel_layout="DHWIO"),
                 [x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0)],
                 shapes=[[n, 4, 5, 4, 3], None])
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 4, 1), **RTOL)


@pytest.mark.parametrize("stride,pad,out_pad,dilation,groups", [
    ((1,), (0, 0), (0,), (1,), 1),
    ((3,), (1, 2), (2,), (1,), 2),
    ((2,), (0, 1), (0,), (2,), 1),
])
def test_conv1d_transpose(stride, pad, out_pad, dilation, groups):
    x = rng.random((2, 4, 5)).astype("float32")
    w = rng.random((4, 3, 3)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv1d_transpose(d, k, stride, pad, out_pad, dilation,
                                                     groups), [x, w])
    np.testing.assert_allclose(
        out, ref.conv_transpose_nd(x, w, stride, pad, out_pad, dilation, groups), **RTOL)


def test_conv3d_transpose():
    x = rng.random((1, 4, 3, 4, 2)).astype("float32")
    w = rng.random((4, 1, 2, 3, 2)).astype("float32")
    args = ((2, 1, 2), (1, 0, 0, 0, 1, 1), (1, 0, 1), (1, 1, 1), 2)
    out = run_op(lambda d, k: op.nn.conv3d_transpose(d, k, *args), [x, w])
    np.testing.assert_allclose(out, ref.conv_transpose_nd(x, w, *args), **RTOL)


def test_convolutions_match_pytorch():
    torch = pytest.importorskip("torch")
    f = torch.nn.functional
    x = rng.random((1, 4, 4, 5, 3)).astype("float32")
    w = rng.random((6, 2, 3, 2, 2)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv3d(d, k, (1, 2, 1), (1, 0, 1), (1, 1, 2), 2), [x, w])
    expected = f.conv3d(torch.from_numpy(x), torch.from_numpy(w), None, (1, 2, 1), (1, 0, 1),
                        (1, 1, 2), 2)
    np.testing.assert_allclose(out, expected.numpy(), **RTOL)
    x1, w1 = rng.random((2, 4, 6)).astype("float32"), rng.random((4, 3, 4)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv1d_transpose(d, k, 2, 1, 1, 1, 2), [x1, w1])
    expected = f.conv_transpose1d(torch.from_numpy(x1), torch.from_numpy(w1), None, 2, 1, 1, 2)
    np.testing.assert_allclose(out, expected.numpy(), **RTOL)


# -- pooling ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("include", [False, True])
def test_pool1d_and_pool3d(kind, include):
    make = {"max": (op.nn.max_pool1d, op.nn.max_pool3d),
            "avg": (op.nn.avg_pool1d, op.nn.avg_pool3d)}[kind]
    x1 = rng.standard_normal((2, 3, 9)).astype("float32")
    out = run_op(lambda d: make[0](d, 3, 2, (1, 1), count_include_pad=include), [x1])
    np.testing.assert_allclose(out, ref.pool_nd(x1, kind, (3,), (2,), (1, 1), include), **RTOL)
    x3 = rng.standard_normal((1, 2, 5, 4, 6)).astype("float32")
    args = ((2, 3, 2), (2, 1, 2), (1, 0, 1, 0, 1, 0))
    out = run_op(lambda d: make[1](d, *args, count_include_pad=include), [x3])
    np.testing.assert_allclose(out, ref.pool_nd(x3, kind, *args, include), **RTOL)


def test_pool_channels_last_and_symbolic():
    x = rng.standard_normal((2, 3, 7)).astype("float32")
    out = run_op(lambda d: op.nn.max_pool1d(d, 2, 2, layout="NWC"), [x.transpose(0, 2, 1)],
                 shapes=[[n, 7, 3]])
    np.testing.assert_allclose(out, ref.pool_nd(x, "max", (2,), (2,), (0, 0)).transpose(0, 2, 1))
    x3 = rng.standard_normal((1, 4, 4, 4, 2)).astype("float32")  # NDHWC
    out = run_op(lambda d: op.nn.avg_pool3d(d, 2, 2, layout="NDHWC", out_layout="NCDHW"), [x3])
    expected = ref.pool_nd(x3.transpose(0, 4, 1, 2, 3), "avg", (2,) * 3, (2,) * 3, (0,) * 6)
    np.testing.assert_allclose(out, expected, **RTOL)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_pool1d_and_3d(kind):
    make = {"max": (op.nn.adaptive_max_pool1d, op.nn.adaptive_max_pool3d),
            "avg": (op.nn.adaptive_avg_pool1d, op.nn.adaptive_avg_pool3d)}[kind]
    x1 = rng.standard_normal((2, 3, 10)).astype("float32")
    np.testing.assert_allclose(run_op(lambda d: make[0](d, 4), [x1]),
                               ref.adaptive_pool_nd(x1, kind, (4,)), **RTOL)
    x3 = rng.standard_normal((1, 2, 5, 3, 7)).astype("float32")
    np.testing.assert_allclose(run_op(lambda d: make[1](d, (2, 3, 3)), [x3]),
                               ref.adaptive_pool_nd(x3, kind, (2, 3, 3)), **RTOL)
    np.testing.assert_allclose(run_op(lambda d: make[1](d), [x3]), x3, **RTOL)


# -- resize -----------------------------------------------------------------------------------------
def resize_nd(x, size, method, mode, **kw):
    """Separable reference: one interpolation matrix per spatial axis."""
    out = x.astype(np.float64)
    for k, s in enumerate(size):
        w = _weights(x.shape[2 + k], s, mode, method, **kw)
        out = np.moveaxis(np.tensordot(w, np.moveaxis(out, 2 + k, 0), axes=(1, 0)), 0, 2 + k)
    return out.astype(x.dtype)


@pytest.mark.parametrize("method,mode", [
    ("nearest_neighbor", "asymmetric"), ("linear", "half_pixel"), ("linear", "align_corners"),
    ("cubic", "half_pixel"),
])
def test_resize1d_and_resize3d(method, mode):
    x1 = rng.random((2, 3, 7)).astype("float32")
    out = run_op(lambda d: op.image.resize1d(d, (11,), method=method,
                                             coordinate_transformation_mode=mode), [x1])
    np.testing.assert_allclose(out, resize_nd(x1, (11,), method, mode), **RTOL)
    x3 = rng.random((1, 2, 3, 4, 5)).astype("float32")
    out = run_op(lambda d: op.image.resize3d(d, (5, 3, 7), method=method,
                                             coordinate_transformation_mode=mode), [x3])
    np.testing.assert_allclose(out, resize_nd(x3, (5, 3, 7), method, mode), **RTOL)


def test_resize3d_channels_last_matches_pytorch():
    x = rng.random((1, 2, 3, 4, 5)).astype("float32")
    out = run_op(lambda d: op.image.resize3d(d, (6, 2, 7), layout="NDHWC"),
                 [x.transpose(0, 2, 3, 4, 1)])
    expected = resize_nd(x, (6, 2, 7), "linear", "half_pixel").transpose(0, 2, 3, 4, 1)
    np.testing.assert_allclose(out, expected, **RTOL)
    torch = pytest.importorskip("torch")
    tri = torch.nn.functional.interpolate(torch.from_numpy(x), (6, 2, 7), mode="trilinear")
    np.testing.assert_allclose(out, tri.numpy().transpose(0, 2, 3, 4, 1), **RTOL)


# -- grid_sample ----------------------------------------------------------------------------------
IMG = rng.random((1, 2, 4, 5)).astype("float32")
GRID = rng.uniform(-1.4, 1.4, (1, 3, 4, 2)).astype("float32")


@pytest.mark.parametrize("method,padding,align", [
    *itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]),
    ("bicubic", "zeros", False), ("bicubic", "border", True), ("bicubic", "reflection", False),
])
def test_grid_sample_2d(method, padding, align):
    out = run_op(lambda d, g: op.image.grid_sample(d, g, method, padding, align), [IMG, GRID])
    np.testing.assert_allclose(out, ref.grid_sample(IMG, GRID, method, padding, align), **RTOL)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_matches_pytorch(padding):
    torch = pytest.importorskip("torch")
    for method, align in (("bilinear", False), ("nearest", True), ("bicubic", True)):
        out = run_op(lambda d, g, m=method, a=align: op.image.grid_sample(d, g, m, padding, a),
                     [IMG, GRID])
        expected = torch.nn.functional.grid_sample(
            torch.from_numpy(IMG), torch.from_numpy(GRID), method, padding, align)
        np.testing.assert_allclose(out, expected.numpy(), rtol=1e-4, atol=1e-4)


def test_grid_sample_3d_and_symbolic_grid():
    x = rng.random((2, 2, 3, 4, 3)).astype("float32")
    g = rng.uniform(-1.2, 1.2, (2, 2, 3, 2, 3)).astype("float32")
    for method, padding in (("bilinear", "zeros"), ("nearest", "reflection"),
                            ("bilinear", "border")):
        out = run_op(lambda d, gg, m=method, p=padding: op.image.grid_sample(d, gg, m, p),
                     [x, g], shapes=[None, [2, n, 3, 2, 3]])
        np.testing.assert_allclose(out, ref.grid_sample(x, g, method, padding), **RTOL)


# -- roi_align ------------------------------------------------------------------------------------
FEATURES = rng.standard_normal((2, 3, 6, 7)).astype("float32")
ROIS = np.array([[0.5, 1, 4, 5], [1, 0, 6.5, 3.2], [-2, -1, 8, 9], [3, 3, 3.2, 3.1],
                 [6, 5, 2, 1]], "float32")
BATCH = np.array([0, 1, 1, 0, 1], "int64")


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("coords", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(mode, coords, ratio):
    out = run_op(lambda d, r, b: op.vision.roi_align(d, r, b, (2, 3), 0.9, ratio, mode, coords),
                 [FEATURES, ROIS, BATCH])
    expected = ref.roi_align(FEATURES, ROIS, BATCH, (2, 3), 0.9, ratio, mode,
                             coords == "half_pixel")
    np.testing.assert_allclose(out, expected, **RTOL)


def test_roi_align_nhwc_symbolic_rois_and_onnx_reference():
    out = run_op(lambda d, r, b: op.vision.roi_align(d, r, b, 2, 0.5, 0, layout="NHWC"),
                 [FEATURES.transpose(0, 2, 3, 1), ROIS * 2, BATCH],
                 shapes=[None, [n, 4], [n]])
    expected = ref.roi_align(FEATURES, ROIS * 2, BATCH, (2, 2), 0.5, 0, "avg", True)
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 1), **RTOL)
    pytest.importorskip("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    for mode in ("avg", "max"):
        node = helper.make_node("RoiAlign", ["X", "rois", "idx"], ["Y"], mode=mode,
                                output_height=3, output_width=2, sampling_ratio=0,
                                spatial_scale=0.9)
        (expected,) = ReferenceEvaluator(node).run(None, {"X": FEATURES, "rois": ROIS,
                                                          "idx": BATCH})
        out = run_op(lambda d, r, b, m=mode: op.vision.roi_align(d, r, b, (3, 2), 0.9, 0, m),
                     [FEATURES, ROIS, BATCH])
        np.testing.assert_allclose(out, expected, **RTOL)
