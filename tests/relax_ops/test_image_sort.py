"""image.resize2d and sort/argsort/topk legalized and run on every target of the suite
(conftest.py), against numpy (and PyTorch's interpolate when it is installed)."""

import math

import numpy as np
import pytest
from relax_op_harness import run_op

from tvm import tir
from tvm.relax import op

rng = np.random.default_rng(13)
n = tir.Var("n", "int64")
IMG = rng.random((1, 2, 5, 7)).astype("float32")


def _coord(x, n_in, n_out, mode):
    if mode == "half_pixel":
        return (x + 0.5) * n_in / n_out - 0.5
    if mode == "align_corners":
        return x * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    if mode == "asymmetric":
        return x * n_in / n_out
    if mode == "pytorch_half_pixel":
        return (x + 0.5) * n_in / n_out - 0.5 if n_out > 1 else 0.0
    return (x + 0.5) * n_in / n_out  # tf_half_pixel_for_nn


def _weights(n_in, n_out, mode, method, alpha=-0.5, exclude=False, rounding="round"):
    """The (n_out, n_in) interpolation matrix of one axis."""
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        c = _coord(o, n_in, n_out, mode)
        if method == "nearest_neighbor":
            r = {"round": lambda v: math.floor(v + 0.5) if v >= 0 else math.ceil(v - 0.5),
                 "floor": math.floor, "ceil": math.ceil,
                 "round_prefer_floor": lambda v: math.ceil(v - 0.5),
                 "round_prefer_ceil": lambda v: math.floor(v + 0.5)}[rounding](c)
            w[o, min(max(r, 0), n_in - 1)] = 1
            continue
        base = math.floor(c)
        t = c - base
        if method == "linear":
            taps = [(base, 1 - t), (base + 1, t)]
        else:
            def kern(d):
                d = abs(d)
                if d <= 1:
                    return (alpha + 2) * d ** 3 - (alpha + 3) * d ** 2 + 1
                return alpha * d ** 3 - 5 * alpha * d ** 2 + 8 * alpha * d - 4 * alpha if d < 2 else 0
            taps = [(base + k, kern(t - k)) for k in (-1, 0, 1, 2)]
            if exclude:
                taps = [(p, v if 0 <= p < n_in else 0.0) for p, v in taps]
                total = sum(v for _, v in taps)
                taps = [(p, v / total) for p, v in taps]
        for p, v in taps:
            w[o, min(max(p, 0), n_in - 1)] += v
    return w


def resize_ref(x, size, method, mode, **kw):
    wy = _weights(x.shape[2], size[0], mode, method, **kw)
    wx = _weights(x.shape[3], size[1], mode, method, **kw)
    return np.einsum("oh,nchw,pw->ncop", wy, x.astype(np.float64), wx).astype(x.dtype)


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("size", [(8, 4), (3, 10)])
def test_resize2d(method, mode, size):
    out = run_op(lambda d: op.image.resize2d(d, size, method=method,
                                             coordinate_transformation_mode=mode), [IMG])
    np.testing.assert_allclose(out, resize_ref(IMG, size, method, mode), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rounding", ["round", "floor", "ceil", "round_prefer_floor",
                                      "round_prefer_ceil"])
def test_resize2d_nearest_rounding(rounding):
    out = run_op(lambda d: op.image.resize2d(d, (9, 3), method="nearest", rounding_method=rounding),
                 [IMG])
    np.testing.assert_array_equal(out, resize_ref(IMG, (9, 3), "nearest_neighbor", "half_pixel",
                                                  rounding=rounding))


def test_resize2d_cubic_exclude_nhwc():
    out = run_op(lambda d: op.image.resize2d(d, (8, 9), method="cubic", cubic_alpha=-0.75,
                                             cubic_exclude=1, layout="NHWC"),
                 [IMG.transpose(0, 2, 3, 1)])
    expected = resize_ref(IMG, (8, 9), "cubic", "half_pixel", alpha=-0.75, exclude=True)
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-5)


def test_resize2d_uint8():
    img = (IMG * 200).astype("uint8")
    out = run_op(lambda d: op.image.resize2d(d, (10, 14)), [img])
    expected = np.round(resize_ref(img.astype("float32"), (10, 14), "linear", "half_pixel"))
    np.testing.assert_allclose(out, expected, atol=1)


@pytest.mark.parametrize("kw,torch_kw", [
    ({"method": "linear"}, {"mode": "bilinear", "align_corners": False}),
    ({"method": "linear", "coordinate_transformation_mode": "align_corners"},
     {"mode": "bilinear", "align_corners": True}),
    ({"method": "cubic", "cubic_alpha": -0.75}, {"mode": "bicubic", "align_corners": False}),
    ({"method": "nearest", "coordinate_transformation_mode": "asymmetric",
      "rounding_method": "floor"}, {"mode": "nearest"}),
    ({"method": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
      "rounding_method": "floor"}, {"mode": "nearest-exact"}),
])
def test_resize2d_matches_pytorch(kw, torch_kw):
    torch = pytest.importorskip("torch")
    out = run_op(lambda d: op.image.resize2d(d, (8, 11), **kw), [IMG])
    expected = torch.nn.functional.interpolate(torch.from_numpy(IMG), (8, 11), **torch_kw)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-4, atol=1e-5)


# -- sorting ------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(axis, descending):
    x = rng.integers(0, 5, (4, 6, 5)).astype("float32")  # many ties: checks stability
    key = -x if descending else x
    order = np.argsort(key, axis=axis, kind="stable")
    np.testing.assert_array_equal(run_op(lambda t: op.sort(t, axis, descending), [x]),
                                  np.take_along_axis(x, order, axis))
    np.testing.assert_array_equal(
        run_op(lambda t: op.argsort(t, axis, descending, "int64"), [x]), order)


@pytest.mark.parametrize("length", [1, 2, 7, 16, 33])
def test_sort_lengths_and_symbolic(length):
    x = rng.standard_normal((3, length)).astype("float32")
    np.testing.assert_array_equal(run_op(lambda t: op.sort(t), [x], shapes=[[3, n]]), np.sort(x))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("ret_type", ["both", "values", "indices"])
def test_topk(largest, ret_type):
    x = rng.permutation(24).reshape(2, 3, 4).astype("float32")
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :2]
    values = np.take_along_axis(x, order, 1)
    out = run_op(lambda t: op.topk(t, 2, axis=1, ret_type=ret_type, largest=largest), [x])
    if ret_type == "both":
        np.testing.assert_array_equal(out[0], values)
        np.testing.assert_array_equal(out[1], order.astype("int32"))
    else:
        np.testing.assert_array_equal(out, values if ret_type == "values" else order)


def test_sort_integers():
    x = rng.integers(-100, 100, (50,)).astype("int32")
    np.testing.assert_array_equal(run_op(op.sort, [x]), np.sort(x))
