"""ConvertLayout: desired layouts for conv/pool, propagation, boundaries, numerics."""

import numpy as np
import pytest
from graph_pass_testing import assert_same, bindings, fresh, make_mod, op_names, run, tensor

from tvm import relax
from tvm.relax import op
from tvm.relax.transform import ConvertLayout

rng = np.random.default_rng(5)
NHWC = {"relax.nn.conv2d": ["NHWC", "OHWI"]}


def _const(*shape):
    return relax.const(rng.standard_normal(shape).astype("float32"))


W1 = _const(4, 3, 3, 3)
W2 = _const(4, 4, 1, 1)


def test_single_conv_structure():
    x, = fresh(tensor([1, 3, 8, 8]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.nn.conv2d(x, W1, padding=1)))
    out = ConvertLayout(NHWC)(mod)

    def after(bb, x):
        xt = bb.emit(op.permute_dims(x, [0, 2, 3, 1]))
        w = relax.const(np.transpose(W1.data, [0, 2, 3, 1]))
        conv = bb.emit(op.nn.conv2d(xt, w, padding=1, data_layout="NHWC", kernel_layout="OHWI"))
        return op.permute_dims(conv, [0, 3, 1, 2])

    assert_same(out, make_mod(fresh(tensor([1, 3, 8, 8])), after))


def test_chain_needs_one_transpose_in_and_one_out():
    x, = fresh(tensor([1, 3, 8, 8]))
    bias = _const(4, 1, 1)

    def body(bb, x):
        a = bb.emit(op.nn.conv2d(x, W1, padding=1))
        b = bb.emit(op.nn.relu(bb.emit(op.add(a, bias))))
        c = bb.emit(op.nn.conv2d(b, W2))
        return bb.emit(op.add(c, b))

    mod = make_mod([x], body)
    out = ConvertLayout(NHWC)(mod)
    names = op_names(out)
    assert names.count("relax.permute_dims") == 2
    assert names[0] == "relax.permute_dims" and names[-1] == "relax.permute_dims"
    # the per-channel bias was re-laid out as a constant of shape (1, 1, 1, 4)
    add = bindings(out)[2].value
    assert add.op.name == "relax.add" and add.args[1].data.shape == (1, 1, 1, 4)
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)
    assert relax.analysis.well_formed(out)


def test_pooling_reductions_softmax_concat_follow_the_layout():
    x, = fresh(tensor([1, 3, 8, 8]))

    def body(bb, x):
        a = bb.emit(op.nn.conv2d(x, W1, padding=1))
        p = bb.emit(op.nn.max_pool2d(a, 2, 2))
        q = bb.emit(op.nn.avg_pool2d(a, 2, 2))
        cat = bb.emit(op.concat([p, q], axis=1))
        s = bb.emit(op.nn.softmax(cat, axis=1))
        m = bb.emit(op.mean(s, axis=[2, 3], keepdims=False))
        k = bb.emit(op.sum(s, axis=[1], keepdims=True))
        return relax.Tuple([m, k])

    mod = make_mod([x], body)
    out = ConvertLayout(NHWC)(mod)
    names = op_names(out)
    pools = [b.value for b in bindings(out)
             if isinstance(b.value, relax.Call) and "pool" in b.value.op.name]
    assert len(pools) == 2
    assert all(p.attrs.layout == "NHWC" for p in pools)
    # one transpose in, one back for the keepdims sum; the mean's result is already (N, C)
    assert names.count("relax.permute_dims") == 2
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    before, after = run(mod, data), run(out, data)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_desired_pooling_layout_and_other_ops_restore():
    x, = fresh(tensor([1, 4, 8, 8]))

    def body(bb, x):
        p = bb.emit(op.nn.max_pool2d(x, 2, 2))
        flat = bb.emit(op.reshape(p, [1, 64]))       # layout-dependent: gets NCHW back
        return bb.emit(op.nn.relu(flat))

    mod = make_mod([x], body)
    out = ConvertLayout({"relax.nn.max_pool2d": ["NHWC"]})(mod)
    assert op_names(out)[:4] == ["relax.permute_dims", "relax.nn.max_pool2d",
                                 "relax.permute_dims", "relax.reshape"]
    data = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-6)


def test_existing_transposes_cancel():
    # a model written in NHWC that transposes around an NCHW convolution (as importers do)
    x, = fresh(tensor([1, 8, 8, 3]))

    def body(bb, x):
        t = bb.emit(op.permute_dims(x, [0, 3, 1, 2]))
        c = bb.emit(op.nn.conv2d(t, W1, padding=1))
        r = bb.emit(op.nn.relu(c))
        return bb.emit(op.permute_dims(r, [0, 2, 3, 1]))

    mod = make_mod([x], body)
    out = ConvertLayout(NHWC)(mod)
    assert op_names(out) == ["relax.nn.conv2d", "relax.nn.relu"]
    data = rng.standard_normal((1, 8, 8, 3)).astype("float32")
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)


def test_batch_norm_and_weights_given_as_parameters():
    x, w = fresh(tensor([1, 3, 8, 8]), tensor([4, 3, 3, 3]))
    gamma, beta, mean = (_const(4) for _ in range(3))
    var = relax.const((rng.random(4) + 0.5).astype("float32"))

    def body(bb, x, w):
        c = bb.emit(op.nn.conv2d(x, w, padding=1))
        bn = bb.emit(op.nn.batch_norm(c, gamma, beta, mean, var))
        return bb.emit(op.nn.relu(bb.emit(relax.TupleGetItem(bn, 0))))

    mod = make_mod([x, w], body)
    out = ConvertLayout({"relax.nn.conv2d": ["NHWC", "default"]})(mod)
    convs = [b.value for b in bindings(out)
             if isinstance(b.value, relax.Call) and b.value.op.name == "relax.nn.conv2d"]
    assert convs[0].attrs.kernel_layout == "HWIO"
    bns = [b.value for b in bindings(out)
           if isinstance(b.value, relax.Call) and b.value.op.name == "relax.nn.batch_norm"]
    assert bns[0].attrs.axis == 3
    assert op_names(out).count("relax.permute_dims") == 3   # data in, weight, result out
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    weight = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    np.testing.assert_allclose(run(out, data, weight), run(mod, data, weight),
                               rtol=1e-4, atol=1e-4)


def test_outputs_of_the_block_are_restored_to_their_layout():
    x, = fresh(tensor([1, 3, 8, 8]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(op.nn.conv2d(x, W1, padding=1))
            gv = bb.emit_output(op.nn.relu(c))
        out = bb.emit(op.exp(gv))          # outside the dataflow block: NCHW expected
        bb.emit_func_output(out)
    mod = bb.get()
    new = ConvertLayout(NHWC)(mod)
    assert new["main"].ret_struct_info.shape_values == mod["main"].ret_struct_info.shape_values
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(run(new, data), run(mod, data), rtol=1e-4, atol=1e-4)


def test_no_layout_op_means_no_change():
    x, = fresh(tensor([1, 3, 8, 8]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.nn.relu(x)))
    assert ConvertLayout(NHWC)(mod) is mod


def test_bad_desired_layouts():
    with pytest.raises(ValueError, match="no layout attributes"):
        ConvertLayout({"relax.add": ["NHWC"]})
    with pytest.raises(ValueError, match="unknown operator"):
        ConvertLayout({"relax.nn.conv9d": ["NHWC"]})
    with pytest.raises(ValueError, match="layout string"):
        ConvertLayout({"relax.nn.max_pool2d": ["NHWC", "OHWI"]})
    with pytest.raises(TypeError, match="dict"):
        ConvertLayout(["NHWC"])
    x, = fresh(tensor([1, 3, 8, 8]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.nn.conv2d(x, W1)))
    with pytest.raises(ValueError, match="not a permutation"):
        ConvertLayout({"relax.nn.conv2d": ["NCHW4c", "OIHW"]})(mod)
