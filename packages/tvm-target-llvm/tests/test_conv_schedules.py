"""Default CPU schedules of the convolutions of mobile networks: depthwise convolutions with
the zero padding inlined as a bounds check (as graph-level legalization writes them),
strided depthwise convolutions and 1x1 convolutions, numbers against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import schedule_workloads as W
from tvm import te, tir
from tvm.target.llvm.schedule_rules import STRICT_ENV, explain_default_schedule, schedule_prim_func
from tvm.target.llvm.schedule_rules.analysis import linear_form
from tvm.tir.expr import FloorDiv, IntImm, Var

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def strict_rules(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def run(func, inputs, out_shape):
    mod = tir.build(func, target="llvm")
    out = np.zeros(out_shape, "float32")
    mod["main"](*inputs, out)
    return out


def depthwise_inline_pad(c: int, h: int, w: int, stride: int = 1, pad: int = 1, r: int = 3):
    """A depthwise conv2d NCHW whose padding is a bounds check inside the reduction
    (``X[n, c // 1 * 1 + rc, ...]`` with ``rc`` of extent 1, int64 indices), followed by a
    clip epilogue: the form relax legalizes and fuses."""
    X = te.placeholder((1, c, h, w), name="X")
    Wt = te.placeholder((c, 1, r, r), name="W")
    oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    rc = te.reduce_axis((0, 1), name="rc")
    ry = te.reduce_axis((0, r), name="ry")
    rx = te.reduce_axis((0, r), name="rx")

    def body(n, o, y, x):
        iy, ix = y * stride + ry - pad, x * stride + rx - pad
        inside = te.all(iy >= 0, iy < h, ix >= 0, ix < w)
        ch = FloorDiv(o, IntImm(o.dtype, 1)) * 1 + rc
        return te.sum(te.if_then_else(inside, X[n, ch, iy, ix], 0.0) * Wt[o, rc, ry, rx],
                      axis=[rc, ry, rx])

    conv = te.compute((1, c, oh, ow), body, name="conv")
    out = te.compute((1, c, oh, ow), lambda *i: te.min(te.max(conv(*i), 0.0), 6.0),
                     name="T_clip")
    return te.create_prim_func([X, Wt, out])


def clip_ref(x):
    return np.clip(x, 0.0, 6.0)


# -- depthwise with inlined padding ------------------------------------------------------------
@pytest.mark.parametrize("c, h, w", [(32, 56, 56), (5, 9, 11), (16, 14, 14), (3, 7, 33)])
def test_inline_padded_depthwise_numbers(c, h, w):
    x, wt = rand(1, c, h, w), rand(c, 1, 3, 3)
    got = run(depthwise_inline_pad(c, h, w), [x, wt], (1, c, h, w))
    ref = clip_ref(W.conv2d_nchw_ref(x, wt, groups=c))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_inline_padding_is_materialized_per_channel_and_vectorized():
    f = depthwise_inline_pad(32, 56, 56)
    plan = explain_default_schedule(f)
    assert plan["conv"] == "contraction"
    assert plan["X_pad"] == "prologue of conv"  # padded copy made per channel, right before use
    assert plan["T_clip"] == "epilogue of conv"
    text = schedule_prim_func(f).script()
    conv_nest = text[text.index('T.block("conv")') - 400:text.index('T.block("conv")')]
    assert "T.vectorized" in conv_nest
    assert "if_then_else" not in text[text.index('T.block("conv")'):]


def test_padding_left_inline_when_not_along_the_vector():
    # a 3x3 NCHW convolution on a narrow image vectorizes its output channels: the bounds
    # check does not vary along them, nothing to materialize
    f = W.conv2d_nchw(1, 8, 6, 12, 32)
    assert not any(name.endswith("_pad") for name in explain_default_schedule(f))


# -- strided depthwise ----------------------------------------------------------------------------
@pytest.mark.parametrize("c, h, w", [(96, 112, 112), (7, 13, 11), (16, 14, 14), (4, 7, 7)])
def test_stride2_depthwise_numbers(c, h, w):
    x, wt = rand(1, c, h, w), rand(c, 1, 3, 3)
    ref = W.conv2d_nchw_ref(x, wt, groups=c, stride=2)
    got = run(W.conv2d_nchw(1, c, h, w, c, groups=c, stride=2), [x, wt], ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    got = run(depthwise_inline_pad(c, h, w, stride=2), [x, wt], ref.shape)
    np.testing.assert_allclose(got, clip_ref(ref), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("builder", [
    lambda: W.conv2d_nchw(1, 96, 112, 112, 96, groups=96, stride=2),
    lambda: depthwise_inline_pad(96, 112, 112, stride=2),
])
def test_stride2_depthwise_rule(builder):
    # the input is read at 2 * w + rw: neither contiguous along the output width nor
    # packable, and every operand reads the channel; a copy that would make it contiguous
    # (de-interleaved, or channels-last) costs more than the 2.25 multiply-adds per input
    # element it serves, so it gets the reduction rule (parallel over channels)
    f = builder()
    plan = explain_default_schedule(f)
    name = "conv" if "conv" in plan else "conv2d_nchw"
    assert plan[name] == "reduction"
    assert "T.parallel" in schedule_prim_func(f).script()


# -- 1x1 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("c, k, h, w", [(24, 144, 56, 56), (3, 5, 7, 9), (17, 33, 5, 13),
                                        (320, 40, 7, 7), (16, 96, 112, 112)])
def test_pointwise_numbers(c, k, h, w):
    x, wt = rand(1, c, h, w), rand(k, c, 1, 1)
    f = W.conv2d_nchw(1, c, h, w, k, r=1, pad=0)
    got = run(f, [x, wt], (1, k, h, w))
    np.testing.assert_allclose(got, W.conv2d_nchw_ref(x, wt, pad=0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c, k, h, w", [(24, 144, 56, 56), (32, 192, 28, 28), (5, 7, 4, 12)])
def test_pointwise_vectorizes_the_image_without_transposing(c, k, h, w):
    # a 1x1 convolution is W[co, ci] @ X[ci, hw]: it broadcasts the weights along image
    # rows (56 wide: half a 16-lane register) or along the rows fused into one run (28 or
    # 12 wide), needing no channels-last copy of its output; the epilogue runs per block
    # of output channels when a vector tile spans several rows
    X = te.placeholder((1, c, h, w), name="X")
    Wt = te.placeholder((k, c, 1, 1), name="W")
    b = te.placeholder((k,), name="b")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 1), name="ry")
    rx = te.reduce_axis((0, 1), name="rx")
    conv = te.compute((1, k, h, w), lambda n, o, y, x: te.sum(
        X[n, rc, y + ry, x + rx] * Wt[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    out = te.compute((1, k, h, w), lambda n, o, y, x: te.max(conv[n, o, y, x] + b[o], 0.0),
                     name="T_relu")
    f = te.create_prim_func([X, Wt, b, out])
    plan = explain_default_schedule(f)
    assert plan["conv"] == "contraction" and plan["T_relu"] == "epilogue of conv"
    assert "conv_global" not in plan
    if w < 16:
        assert "y_x_fused" in schedule_prim_func(f).script()
    x, wt, bb = rand(1, c, h, w), rand(k, c, 1, 1), rand(k)
    got = run(f, [x, wt, bb], (1, k, h, w))
    ref = np.maximum(W.conv2d_nchw_ref(x, wt, pad=0) + bb[None, :, None, None], 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_linear_form_reads_floordiv_by_one():
    c, rc = Var("c", "int64"), Var("rc", "int64")
    expr = FloorDiv(c, IntImm("int64", 1)) * IntImm("int64", 1) + rc
    assert linear_form(expr, [c, rc]) == ({0: 1, 1: 1}, False)
    assert linear_form(FloorDiv(c, IntImm("int64", 2)), [c, rc]) is None
