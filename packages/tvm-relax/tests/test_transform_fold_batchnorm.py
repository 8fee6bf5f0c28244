"""FoldBatchnormToConv2D: structure, numerics and the cases it must leave alone."""

import numpy as np
import pytest
from graph_pass_testing import assert_same, fresh, make_mod, op_names, run, tensor

from tvm import relax
from tvm.relax import op
from tvm.relax.transform import FoldBatchnormToConv2D

rng = np.random.default_rng(3)
C_IN, C_OUT = 3, 4


def _params(channels=C_OUT):
    gamma, beta, mean = (rng.standard_normal(channels).astype("float32") for _ in range(3))
    var = (rng.random(channels) + 0.5).astype("float32")
    return [relax.const(p) for p in (gamma, beta, mean, var)]


def _conv_bn(weight, params, bias=None, data_layout="NCHW", kernel_layout="OIHW", axis=1,
             training=False, groups=1, extra_use=False):
    def body(bb, x):
        conv = bb.emit(op.nn.conv2d(x, weight, padding=1, groups=groups,
                                    data_layout=data_layout, kernel_layout=kernel_layout))
        data = conv if bias is None else bb.emit(op.add(conv, bias))
        bn = bb.emit(op.nn.batch_norm(data, *params, axis=axis, epsilon=1e-3, training=training))
        out = bb.emit(op.nn.relu(bb.emit(relax.TupleGetItem(bn, 0))))
        if extra_use:
            out = bb.emit(relax.Tuple([out, conv]))
        return out

    return body


def _input(layout="NCHW", channels=C_IN):
    shape = (1, channels, 6, 6) if layout == "NCHW" else (1, 6, 6, channels)
    return shape, rng.standard_normal(shape).astype("float32")


@pytest.mark.parametrize("with_bias", [False, True])
def test_structure_after_folding(with_bias):
    weight = relax.const(rng.standard_normal((C_OUT, C_IN, 3, 3)).astype("float32"))
    params = _params()
    bias = relax.const(rng.standard_normal((C_OUT, 1, 1)).astype("float32")) if with_bias else None
    shape, data = _input()
    x, = fresh(tensor(shape))
    mod = make_mod([x], _conv_bn(weight, params, bias))
    out = FoldBatchnormToConv2D()(mod)
    assert op_names(out) == ["relax.nn.conv2d", "relax.add", "relax.nn.relu", "DataflowVar"]
    b = [bd for blk in out["main"].body.blocks for bd in blk.bindings]
    new_w, shift = b[0].value.args[1], b[1].value.args[1]
    assert new_w.data.shape == (C_OUT, C_IN, 3, 3) and shift.data.shape == (1, C_OUT, 1, 1)

    def after(bb, x):
        conv = bb.emit(op.nn.conv2d(x, relax.const(new_w.data), padding=1))
        return bb.emit(op.nn.relu(bb.emit(op.add(conv, relax.const(shift.data)))))

    assert_same(out, make_mod(fresh(tensor(shape)), after))
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data_layout,kernel_layout,axis", [
    ("NHWC", "HWIO", 3), ("NHWC", "OHWI", -1), ("NCHW", "OIHW", 1),
])
def test_numerics_across_layouts(data_layout, kernel_layout, axis):
    w = rng.standard_normal((C_OUT, C_IN, 3, 3)).astype("float32")
    weight = relax.const(np.transpose(w, ["OIHW".index(c) for c in kernel_layout]))
    shape, data = _input(data_layout)
    x, = fresh(tensor(shape))
    bias = relax.const(rng.standard_normal((C_OUT,)).astype("float32")) \
        if data_layout == "NHWC" else None
    mod = make_mod([x], _conv_bn(weight, _params(), bias, data_layout, kernel_layout, axis))
    out = FoldBatchnormToConv2D()(mod)
    assert "relax.nn.batch_norm" not in op_names(out)
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)


def test_depthwise_convolution():
    weight = relax.const(rng.standard_normal((C_IN, 1, 3, 3)).astype("float32"))
    shape, data = _input()
    x, = fresh(tensor(shape))
    mod = make_mod([x], _conv_bn(weight, _params(C_IN), groups=C_IN))
    out = FoldBatchnormToConv2D()(mod)
    assert "relax.nn.batch_norm" not in op_names(out)
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)


def test_cases_left_alone():
    weight = relax.const(rng.standard_normal((C_OUT, C_IN, 3, 3)).astype("float32"))
    shape, _ = _input()
    x, = fresh(tensor(shape))
    for body in (
        _conv_bn(weight, _params(), training=True),            # training mode
        _conv_bn(weight, _params(), extra_use=True),           # conv also used elsewhere
        _conv_bn(weight, _params(), bias=relax.const(           # bias not per-channel
            rng.standard_normal((1, C_OUT, 6, 6)).astype("float32"))),
    ):
        mod = make_mod([x], body)
        assert FoldBatchnormToConv2D()(mod) is mod

    w = relax.Var("w", tensor([C_OUT, C_IN, 3, 3]))       # weight not a constant
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            conv = bb.emit(op.nn.conv2d(x, w, padding=1))
            bn = bb.emit(op.nn.batch_norm(conv, *_params()))
            gv = bb.emit_output(relax.TupleGetItem(bn, 0))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert FoldBatchnormToConv2D()(mod) is mod


def test_batch_norm_on_another_axis_is_left_alone():
    weight = relax.const(rng.standard_normal((4, 4, 1, 1)).astype("float32"))
    x, = fresh(tensor([1, 4, 4, 4]))

    def body(bb, x):
        conv = bb.emit(op.nn.conv2d(x, weight))
        bn = bb.emit(op.nn.batch_norm(conv, *_params(4), axis=2))   # H axis, not channels
        return bb.emit(relax.TupleGetItem(bn, 0))

    mod = make_mod([x], body)
    assert FoldBatchnormToConv2D()(mod) is mod


def _conv_scale_shift(weight, scale, shift, bias=None, scale_first=False, extra_use=False):
    """conv2d [+ bias] -> multiply(scale) -> add(shift) -> relu: a batch-norm as ONNX
    BatchNormalization imports (a per-channel scale and shift)."""
    def body(bb, x):
        conv = bb.emit(op.nn.conv2d(x, weight, padding=1))
        data = conv if bias is None else bb.emit(op.add(conv, bias))
        scaled = bb.emit(op.multiply(scale, data) if scale_first else op.multiply(data, scale))
        out = bb.emit(op.nn.relu(bb.emit(op.add(scaled, shift))))
        return bb.emit(relax.Tuple([out, conv])) if extra_use else out

    return body


@pytest.mark.parametrize("with_bias,scale_first", [(False, False), (True, False), (False, True)])
def test_a_decomposed_batchnorm_folds_into_the_conv(with_bias, scale_first):
    w = rng.standard_normal((C_OUT, C_IN, 3, 3)).astype("float32")
    s = rng.standard_normal((1, C_OUT, 1, 1)).astype("float32")
    t = rng.standard_normal((1, C_OUT, 1, 1)).astype("float32")
    b = rng.standard_normal((C_OUT, 1, 1)).astype("float32")
    shape, data = _input()
    mod = make_mod(fresh(tensor(shape)), _conv_scale_shift(
        relax.const(w), relax.const(s), relax.const(t),
        relax.const(b) if with_bias else None, scale_first))
    out = FoldBatchnormToConv2D()(mod)
    assert op_names(out) == ["relax.nn.conv2d", "relax.add", "relax.nn.relu", "DataflowVar"]
    bindings = [bd for blk in out["main"].body.blocks for bd in blk.bindings]
    np.testing.assert_allclose(bindings[0].value.args[1].data, w * s.reshape(C_OUT, 1, 1, 1),
                               rtol=1e-6)
    want_shift = t + (b.reshape(1, C_OUT, 1, 1) * s if with_bias else 0)
    np.testing.assert_allclose(bindings[1].value.args[1].data, want_shift, rtol=1e-5)
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["not_per_channel", "shared_conv", "weight_not_constant"])
def test_a_scale_that_cannot_fold_is_left_alone(case):
    w = relax.const(rng.standard_normal((C_OUT, C_IN, 3, 3)).astype("float32"))
    t = relax.const(rng.standard_normal((1, C_OUT, 1, 1)).astype("float32"))
    s = rng.standard_normal((1, C_OUT, 1, 1)).astype("float32")
    if case == "not_per_channel":  # a scale varying over the rows would change per pixel
        s = rng.standard_normal((1, 1, 6, 1)).astype("float32")
    shape, _ = _input()
    if case == "weight_not_constant":
        x, wv = fresh(tensor(shape), tensor((C_OUT, C_IN, 3, 3)))
        body = _conv_scale_shift(wv, relax.const(s), t)
        mod = make_mod([x, wv], lambda bb, x, _w: body(bb, x))
    else:
        mod = make_mod(fresh(tensor(shape)), _conv_scale_shift(
            w, relax.const(s), t, extra_use=case == "shared_conv"))
    out = FoldBatchnormToConv2D()(mod)
    assert "relax.multiply" in op_names(out)
