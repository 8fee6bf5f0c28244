"""relax.nn operators legalized and run on every target of the suite (conftest.py),
against numpy references."""

import nn_reference as ref
import numpy as np
import pytest
from relax_op_harness import run_op

from tvm import tir
from tvm.relax import op

rng = np.random.default_rng(5)
n = tir.Var("n", "int64")
RTOL = dict(rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stride,pad,dilation,groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 1), (1, 2, 0, 1), (1, 2), 2),
    ((1, 2), (1, 1, 1, 1), (2, 1), 4),
])
def test_conv2d(stride, pad, dilation, groups):
    x = rng.random((2, 4, 7, 6)).astype("float32")
    w = rng.random((8, 4 // groups, 3, 2)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv2d(d, k, stride, pad, dilation, groups), [x, w])
    np.testing.assert_allclose(out, ref.conv2d(x, w, stride, pad, dilation, groups), **RTOL)


def test_conv2d_layouts_and_symbolic_batch():
    x = rng.random((2, 3, 6, 5)).astype("float32")
    w = rng.random((4, 3, 3, 3)).astype("float32")
    expected = ref.conv2d(x, w, pad=(1, 1, 1, 1))
    out = run_op(lambda d, k: op.nn.conv2d(d, k, padding=1, data_layout="NHWC",
                                           kernel_layout="HWIO"),
                 [x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)])
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 1), **RTOL)
    out = run_op(lambda d, k: op.nn.conv2d(d, k, padding=1, kernel_layout="OHWI",
                                           out_layout="NHWC"),
                 [x, w.transpose(0, 2, 3, 1)], shapes=[[n, 3, 6, 5], None])
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 1), **RTOL)


def test_conv2d_integer_out_dtype():
    x = rng.integers(-8, 8, (1, 2, 4, 4)).astype("int8")
    w = rng.integers(-8, 8, (3, 2, 2, 2)).astype("int8")
    out = run_op(lambda d, k: op.nn.conv2d(d, k, out_dtype="int32"), [x, w])
    np.testing.assert_array_equal(out, ref.conv2d(x.astype("int32"), w.astype("int32")))


def test_conv1d():
    x = rng.random((2, 4, 9)).astype("float32")
    w = rng.random((4, 2, 3)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv1d(d, k, strides=2, padding=(1, 2), groups=2), [x, w])
    expected = ref.conv2d(x[:, :, None], w[:, :, None], (1, 2), (0, 1, 0, 2), groups=2)[:, :, 0]
    np.testing.assert_allclose(out, expected, **RTOL)
    out = run_op(lambda d, k: op.nn.conv1d(d, k, data_layout="NWC", kernel_layout="WIO",
                                           groups=2),
                 [x.transpose(0, 2, 1), w.transpose(2, 1, 0)])
    expected = ref.conv2d(x[:, :, None], w[:, :, None], groups=2)[:, :, 0].transpose(0, 2, 1)
    np.testing.assert_allclose(out, expected, **RTOL)


@pytest.mark.parametrize("stride,pad,out_pad,dilation,groups", [
    ((1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1),
    ((2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1),
    ((2, 1), (0, 1, 1, 0), (1, 0), (1, 2), 2),
])
def test_conv2d_transpose(stride, pad, out_pad, dilation, groups):
    x = rng.random((1, 4, 4, 5)).astype("float32")
    w = rng.random((4, 3, 3, 2)).astype("float32")
    out = run_op(lambda d, k: op.nn.conv2d_transpose(d, k, stride, pad, out_pad, dilation,
                                                     groups), [x, w])
    np.testing.assert_allclose(out, ref.conv2d_transpose(x, w, stride, pad, out_pad, dilation,
                                                         groups), **RTOL)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,stride,pad,dilation,ceil_mode,include", [
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, False),
    ((3, 2), (2, 1), (1, 0, 1, 1), (1, 1), True, True),
    ((2, 2), (1, 1), (0, 0, 0, 0), (2, 2), False, False),
])
def test_pool2d(kind, k, stride, pad, dilation, ceil_mode, include):
    x = rng.uniform(-1, 1, (1, 2, 7, 6)).astype("float32")
    fn = op.nn.max_pool2d if kind == "max" else op.nn.avg_pool2d
    out = run_op(lambda d: fn(d, k, stride, pad, dilation, ceil_mode, include), [x])
    expected = ref.pool2d(x, kind, k, stride, pad, dilation, ceil_mode, include)
    np.testing.assert_allclose(out, expected, **RTOL)


def test_pool2d_nhwc():
    x = rng.random((1, 6, 6, 3)).astype("float32")
    out = run_op(lambda d: op.nn.max_pool2d(d, 2, 2, layout="NHWC"), [x])
    expected = ref.pool2d(x.transpose(0, 3, 1, 2), "max", (2, 2), (2, 2), (0, 0, 0, 0))
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 5)])
def test_adaptive_pool2d(kind, size):
    x = rng.random((1, 2, 7, 5)).astype("float32")
    fn = op.nn.adaptive_max_pool2d if kind == "max" else op.nn.adaptive_avg_pool2d
    np.testing.assert_allclose(run_op(lambda d: fn(d, size), [x]),
                               ref.adaptive_pool2d(x, kind, size), **RTOL)


def test_softmax_log_softmax():
    x = rng.uniform(-5, 5, (2, 3, 4)).astype("float32")
    np.testing.assert_allclose(run_op(lambda t: op.nn.softmax(t, 1), [x]), ref.softmax(x, 1), **RTOL)
    np.testing.assert_allclose(run_op(lambda t: op.nn.log_softmax(t), [x]),
                               np.log(ref.softmax(x, -1)), **RTOL)
    np.testing.assert_allclose(run_op(lambda t: op.nn.softmax(t, 0), [x], shapes=[[n, 3, 4]]),
                               ref.softmax(x, 0), **RTOL)


def test_layer_norm_and_rms_norm():
    x = rng.random((2, 3, 4)).astype("float32")
    g, b = rng.random((3, 4)).astype("float32"), rng.random((3, 4)).astype("float32")
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-5) * g + b
    out = run_op(lambda t, s, o: op.nn.layer_norm(t, s, o, [1, 2]), [x, g, b])
    np.testing.assert_allclose(out, expected, **RTOL)
    out = run_op(lambda t, s, o: op.nn.layer_norm(t, s, o, [-2, -1], center=False, scale=False),
                 [x, g, b])
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-5), **RTOL)
    w = rng.random(4).astype("float32")
    expected = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(run_op(lambda t, s: op.nn.rms_norm(t, s, epsilon=1e-6), [x, w]),
                               expected, **RTOL)


def test_group_norm():
    x = rng.random((2, 6, 3, 2)).astype("float32")
    g, b = rng.random(6).astype("float32"), rng.random(6).astype("float32")
    grouped = x.reshape(2, 3, 2, 3, 2)
    mean = grouped.mean((2, 3, 4), keepdims=True)
    var = grouped.var((2, 3, 4), keepdims=True)
    norm = ((grouped - mean) / np.sqrt(var + 1e-5)).reshape(x.shape)
    expected = norm * g[:, None, None] + b[:, None, None]
    out = run_op(lambda t, s, o: op.nn.group_norm(t, s, o, 3, 1, [2, 3]), [x, g, b])
    np.testing.assert_allclose(out, expected, **RTOL)


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm(training):
    x = rng.random((3, 4, 2, 2)).astype("float32")
    g, b = rng.random(4).astype("float32"), rng.random(4).astype("float32")
    mm, mv = rng.random(4).astype("float32"), rng.random(4).astype("float32") + 0.5
    out, mean, var = run_op(
        lambda t, s, o, m, v: op.nn.batch_norm(t, s, o, m, v, axis=1, momentum=0.2,
                                               training=training), [x, g, b, mm, mv])
    if training:
        bm, bv = x.mean((0, 2, 3)), x.var((0, 2, 3))
        use_m, use_v = bm, bv
        np.testing.assert_allclose(mean, 0.8 * mm + 0.2 * bm, **RTOL)
        np.testing.assert_allclose(var, 0.8 * mv + 0.2 * bv, **RTOL)
    else:
        use_m, use_v = mm, mv
        np.testing.assert_array_equal(mean, mm)
        np.testing.assert_array_equal(var, mv)
    c = (slice(None), None, None)
    expected = (x - use_m[c]) / np.sqrt(use_v[c] + 1e-5) * g[c] + b[c]
    np.testing.assert_allclose(out, expected, **RTOL)


def test_dropout_is_identity():
    x = rng.random((2, 3)).astype("float32")
    out, mask = run_op(lambda t: op.nn.dropout(t, 0.4), [x])
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, np.ones_like(x))


@pytest.mark.parametrize("causal", [None, "TopLeft", "BottomRight"])
def test_attention(causal):
    q = rng.random((2, 3, 4, 8)).astype("float32")
    k = rng.random((2, 5, 2, 8)).astype("float32")
    v = rng.random((2, 5, 2, 6)).astype("float32")
    out = run_op(lambda a, b, c: op.nn.attention(a, b, c, causal_mask=causal), [q, k, v])
    np.testing.assert_allclose(out, ref.attention(q, k, v, causal=causal), **RTOL)


def test_attention_bias_scale_and_symbolic_sequence():
    q = rng.random((1, 4, 2, 8)).astype("float32")
    k = rng.random((1, 4, 2, 8)).astype("float32")
    bias = rng.random((1, 2, 1, 4)).astype("float32")
    s = tir.Var("s", "int64")
    out = run_op(lambda a, b, c, d: op.nn.attention(a, b, c, d, scale=0.25, causal_mask="TopLeft"),
                 [q, k, k, bias], shapes=[[1, s, 2, 8], [1, s, 2, 8], [1, s, 2, 8], [1, 2, 1, s]])
    np.testing.assert_allclose(out, ref.attention(q, k, k, bias, 0.25, "TopLeft"), **RTOL)
