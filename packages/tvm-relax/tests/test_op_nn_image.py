"""StructInfo inference of relax.nn (convolution, pooling, normalisation, attention, pad)
and relax.image.resize2d."""

import pytest
from hypothesis import given, settings, strategies as st

from tvm import relax, tir
from tvm.relax import TensorStructInfo, TupleStructInfo, op
from tvm.relax.analysis import get_static_shape

n = tir.Var("n", "int64")
h = tir.Var("h", "int64")
analyzer = relax.BlockBuilder().analyzer


def infer(expr):
    return relax.BlockBuilder().normalize(expr).struct_info


def tensor(shape, dtype="float32", name="x"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


def static(expr):
    return get_static_shape(infer(expr))


def torch_conv_out(size, k, s, p0, p1, d):
    return (size + p0 + p1 - d * (k - 1) - 1) // s + 1


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 12), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2),
       st.integers(0, 2), st.integers(1, 2))
def test_conv2d_output_size(size, k, s, p0, p1, d):
    expr = op.nn.conv2d(tensor([1, 4, size, size + 1]), tensor([8, 4, k, k], name="w"),
                        strides=s, padding=(p0, p1, p1, p0), dilation=d)
    expected = (1, 8, torch_conv_out(size, k, s, p0, p1, d), torch_conv_out(size + 1, k, s, p1, p0, d))
    assert static(expr) == expected


def test_conv2d_layouts_groups_dtype():
    x = tensor([n, 32, 32, 16])  # NHWC
    w = tensor([3, 3, 4, 8], name="w")  # HWIO, groups 4
    s = infer(op.nn.conv2d(x, w, padding=1, groups=4, data_layout="NHWC", kernel_layout="HWIO"))
    assert s.shape_values[0] is n and [v.value for v in s.shape_values[1:]] == [32, 32, 8]
    s = infer(op.nn.conv2d(x, w, padding=1, groups=4, data_layout="NHWC", kernel_layout="HWIO",
                           out_layout="NCHW", out_dtype="float16"))
    assert s.dtype == "float16" and [v.value for v in s.shape_values[1:]] == [8, 32, 32]
    s = infer(op.nn.conv2d(tensor([1, 3, h, 10]), tensor([5, 3, 3, 3], name="w")))
    assert analyzer.can_prove_equal(s.shape_values[2], h - 2)
    with pytest.raises(relax.StructInfoError, match="data has 16 channels but kernel I \\* groups is 8"):
        infer(op.nn.conv2d(tensor([1, 16, 8, 8]), tensor([8, 4, 3, 3], name="w"), groups=2))
    with pytest.raises(relax.StructInfoError, match="not divisible by groups=3"):
        infer(op.nn.conv2d(tensor([1, 6, 8, 8]), tensor([8, 2, 3, 3], name="w"), groups=3))
    with pytest.raises(relax.StructInfoError, match="dtypes differ; give out_dtype"):
        infer(op.nn.conv2d(tensor([1, 4, 8, 8]), tensor([8, 4, 3, 3], "float16", name="w")))
    with pytest.raises(relax.StructInfoError, match="output spatial size is -2"):
        infer(op.nn.conv2d(tensor([1, 4, 2, 2]), tensor([8, 4, 5, 5], name="w")))
    with pytest.raises(relax.StructInfoError, match="data must have 4 dimensions, got 3"):
        infer(op.nn.conv2d(tensor([4, 8, 8]), tensor([8, 4, 3, 3], name="w")))
    with pytest.raises(ValueError, match="data_layout must be a permutation of 'NCHW'"):
        op.nn.conv2d(x, w, data_layout="NCW")
    with pytest.raises(ValueError, match="padding must have 1, 2 or 4 values"):
        op.nn.conv2d(x, w, padding=(1, 2, 3))


def test_conv1d_and_transpose():
    assert static(op.nn.conv1d(tensor([2, 4, 10]), tensor([6, 4, 3], name="w"), strides=2,
                               padding=1)) == (2, 6, 5)
    assert static(op.nn.conv1d(tensor([2, 10, 4]), tensor([3, 4, 6], name="w"),
                               data_layout="NWC", kernel_layout="WIO")) == (2, 8, 6)
    s = static(op.nn.conv2d_transpose(tensor([1, 4, 5, 5]), tensor([4, 3, 3, 3], name="w"),
                                      strides=2, padding=1, output_padding=1))
    assert s == (1, 3, 10, 10)
    s = static(op.nn.conv2d_transpose(tensor([1, 4, 5, 5]), tensor([4, 2, 3, 3], name="w"),
                                      groups=2))
    assert s == (1, 4, 7, 7)
    with pytest.raises(relax.StructInfoError, match="output_padding 2 must be smaller"):
        infer(op.nn.conv2d_transpose(tensor([1, 4, 5, 5]), tensor([4, 3, 3, 3], name="w"),
                                     strides=2, output_padding=2))


def test_pooling():
    x = tensor([n, 3, 7, 7])
    s = infer(op.nn.max_pool2d(x, 3, 2, 1))
    assert s.shape_values[0] is n and [v.value for v in s.shape_values[1:]] == [3, 4, 4]
    # ceil_mode: the last window must start inside the input or the left padding
    assert static(op.nn.avg_pool2d(tensor([1, 1, 6, 6]), 2, 2, 0, ceil_mode=True)) == (1, 1, 3, 3)
    assert static(op.nn.max_pool2d(tensor([1, 1, 5, 5]), 2, 2, 1, ceil_mode=True)) == (1, 1, 3, 3)
    assert static(op.nn.max_pool2d(tensor([1, 1, 4, 4]), 3, 2, 1, ceil_mode=True)) == (1, 1, 3, 3)
    assert static(op.nn.max_pool2d(tensor([1, 1, 6, 6]), 2, 2, 1, ceil_mode=True)) == (1, 1, 4, 4)
    assert static(op.nn.max_pool2d(tensor([1, 8, 8, 3]), 2, 2, layout="NHWC")) == (1, 4, 4, 3)
    with pytest.raises(relax.StructInfoError, match="data must have 4 dimensions"):
        infer(op.nn.max_pool2d(tensor([3, 7, 7]), 2))
    with pytest.raises(relax.StructInfoError, match="output spatial size is -1"):
        infer(op.nn.max_pool2d(tensor([1, 1, 2, 2]), 4))
    with pytest.raises(ValueError, match="pool_size must be positive"):
        op.nn.max_pool2d(x, 0)
    assert static(op.nn.adaptive_avg_pool2d(tensor([1, 3, 9, 9]), (2, 4))) == (1, 3, 2, 4)
    s = infer(op.nn.adaptive_max_pool2d(tensor([1, 3, h, 9])))
    assert s.shape_values[2] is h


def test_norms_and_dropout():
    x = tensor([n, 4, 6])
    assert infer(op.nn.layer_norm(x, tensor([6], name="g"), tensor([6], name="b"), -1)) is x.struct_info
    with pytest.raises(relax.StructInfoError, match=r"gamma has shape \(4\), expected \(6\)"):
        infer(op.nn.layer_norm(x, tensor([4], name="g"), tensor([6], name="b")))
    with pytest.raises(relax.StructInfoError, match="beta must have data's dtype"):
        infer(op.nn.layer_norm(x, tensor([6], name="g"), tensor([6], "float16", name="b")))
    with pytest.raises(relax.StructInfoError, match="must have a floating-point dtype"):
        infer(op.nn.layer_norm(tensor([2], "int32"), tensor([2], "int32", name="g"),
                               tensor([2], "int32", name="b")))
    g = tensor([4], name="g")
    assert infer(op.nn.group_norm(x, g, g, 2, 1, [2])) is x.struct_info
    with pytest.raises(relax.StructInfoError, match="4 channels are not divisible into 3 groups"):
        infer(op.nn.group_norm(x, g, g, 3, 1, [2]))
    with pytest.raises(relax.StructInfoError, match="must not contain the channel axis"):
        infer(op.nn.group_norm(x, g, g, 2, 1, [1, 2]))
    bn = infer(op.nn.batch_norm(x, g, g, g, g, axis=1))
    assert isinstance(bn, TupleStructInfo) and bn.fields[0] is x.struct_info
    assert get_static_shape(bn.fields[1]) == (4,)
    with pytest.raises(relax.StructInfoError, match=r"moving_var has shape \(6\), expected \(4\)"):
        infer(op.nn.batch_norm(x, g, g, g, tensor([6], name="v"), axis=1))
    assert infer(op.nn.rms_norm(x, tensor([6], name="w"))) is x.struct_info
    d = infer(op.nn.dropout(x, 0.1))
    assert isinstance(d, TupleStructInfo) and d.fields[1] is x.struct_info
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
        op.nn.dropout(x, 1.0)


def test_gelu_tanh():
    x = tensor([n, 4])
    assert infer(op.nn.gelu_tanh(x)) is x.struct_info
    with pytest.raises(relax.StructInfoError, match="relax.nn.gelu_tanh: requires a floating-point"):
        infer(op.nn.gelu_tanh(tensor([2], "int32")))


def test_attention():
    q = tensor([2, n, 8, 16], name="q")
    k = tensor([2, 10, 2, 16], name="k")
    v = tensor([2, 10, 2, 32], name="v")
    s = infer(op.nn.attention(q, k, v))
    assert s.shape_values[1] is n and [s.shape_values[i].value for i in (0, 2, 3)] == [2, 8, 32]
    s = infer(op.nn.attention(q, k, v, tensor([2, 1, 1, 10], name="b"), causal_mask="TopLeft"))
    assert s.ndim == 4
    with pytest.raises(relax.StructInfoError, match="the head dim differs: 16 vs 8"):
        infer(op.nn.attention(q, tensor([2, 10, 2, 8], name="k"), v))
    with pytest.raises(relax.StructInfoError, match="query heads 8 are not a multiple of key/value heads 3"):
        infer(op.nn.attention(q, tensor([2, 10, 3, 16], name="k"), tensor([2, 10, 3, 32], name="v")))
    with pytest.raises(relax.StructInfoError, match="cannot broadcast bias"):
        infer(op.nn.attention(q, k, v, tensor([3, 1, 1, 10], name="b")))
    with pytest.raises(relax.StructInfoError, match="query must have 4 dimensions"):
        infer(op.nn.attention(tensor([2, 8, 16], name="q"), k, v))
    with pytest.raises(ValueError, match="causal_mask"):
        op.nn.attention(q, k, v, causal_mask="Upper")


def test_pad():
    x = tensor([n, 3])
    s = infer(op.nn.pad(x, [(1, 2), (0, 3)]))
    assert analyzer.can_prove_equal(s.shape_values[0], n + 3) and s.shape_values[1].value == 6
    assert static(op.nn.pad(tensor([2, 3]), [0, 0, 1, 1], "reflect")) == (2, 5)
    with pytest.raises(relax.StructInfoError, match="pad_width needs 2 values per dimension"):
        infer(op.nn.pad(x, [1, 1]))
    with pytest.raises(relax.StructInfoError, match="reflect padding of 3 needs dimension 1 larger"):
        infer(op.nn.pad(tensor([4, 3]), [0, 0, 3, 0], "reflect"))
    with pytest.raises(ValueError, match="pad_mode"):
        op.nn.pad(x, [0, 0, 0, 0], "symmetric")
    assert static(op.nn.pad(tensor([2, 3]), [0, 0, 4, 4], "wrap")) == (2, 11)


def test_resize2d():
    s = infer(op.image.resize2d(tensor([n, 3, 8, 8]), (16, 12)))
    assert s.shape_values[0] is n and [v.value for v in s.shape_values[1:]] == [3, 16, 12]
    s = infer(op.image.resize2d(tensor([1, 8, 8, 3]), relax.ShapeExpr([h, 4]), layout="NHWC",
                                method="nearest", out_dtype="float16"))
    assert s.shape_values[1] is h and s.dtype == "float16"
    with pytest.raises(ValueError, match="method must be one of"):
        op.image.resize2d(tensor([1, 3, 8, 8]), (4, 4), method="area")
    with pytest.raises(ValueError, match="coordinate_transformation_mode"):
        op.image.resize2d(tensor([1, 3, 8, 8]), (4, 4), coordinate_transformation_mode="x")
    with pytest.raises(relax.StructInfoError, match="data must have 4 dimensions"):
        infer(op.image.resize2d(tensor([3, 8, 8]), (4, 4)))
