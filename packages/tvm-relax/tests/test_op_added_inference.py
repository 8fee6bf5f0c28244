"""StructInfo inference (static and symbolic shapes, errors) of the operators added for the
ONNX frontend: inverse/hyperbolic trigonometry, conv3d and the 1-d/3-d transposed
convolutions and poolings, resize1d/3d, grid_sample, roi_align, scatter_nd, one_hot,
einsum and the data-dependent dynamic_strided_slice, nonzero and unique; plus TVMScript
round trips of their calls and of their legalized forms."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.relax import TensorStructInfo, TupleStructInfo, op
from tvm.relax.analysis import get_static_shape
from tvm.relax.transform import LegalizeOps
from tvm.script import relax as R

n = tir.Var("n", "int64")
h = tir.Var("h", "int64")
analyzer = relax.BlockBuilder().analyzer


def infer(expr):
    return relax.BlockBuilder().normalize(expr).struct_info


def tensor(shape, dtype="float32", name="x"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


def static(expr):
    return get_static_shape(infer(expr))


def dims(sinfo):
    return [v.value if isinstance(v, tir.IntImm) else v for v in sinfo.shape_values]


# -- unary ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                                  "atanh"])
def test_inverse_and_hyperbolic_unary(name):
    x = tensor([n, 3])
    assert infer(getattr(op, name)(x)) is x.struct_info
    with pytest.raises(relax.StructInfoError, match="requires a floating-point input"):
        infer(getattr(op, name)(tensor([2], "int32")))


# -- convolution / pooling ----------------------------------------------------------------------------
def test_conv3d():
    s = infer(op.nn.conv3d(tensor([n, 4, 8, 9, 10]), tensor([6, 2, 3, 3, 3], name="w"),
                           strides=(1, 2, 3), padding=1, groups=2))
    assert dims(s) == [n, 6, 8, 5, 4]
    s = infer(op.nn.conv3d(tensor([1, 8, 9, 10, 4]), tensor([3, 3, 3, 4, 6], name="w"),
                           data_layout="NDHWC", kernel_layout="DHWIO", out_layout="NCDHW"))
    assert dims(s) == [1, 6, 6, 7, 8]
    s = infer(op.nn.conv3d(tensor([1, 4, h, 5, 5]), tensor([2, 4, 2, 2, 2], name="w")))
    assert analyzer.can_prove_equal(s.shape_values[2], h - 1)
    with pytest.raises(relax.StructInfoError, match="data must have 5 dimensions, got 4"):
        infer(op.nn.conv3d(tensor([1, 4, 5, 5]), tensor([2, 4, 2, 2, 2], name="w")))
    with pytest.raises(ValueError, match="padding must have 1, 3 or 6 values"):
        op.nn.conv3d(tensor([1, 4, 5, 5, 5]), tensor([2, 4, 2, 2, 2], name="w"), padding=(1, 2))


def test_transposed_convolutions_1d_3d():
    s = static(op.nn.conv1d_transpose(tensor([2, 4, 6]), tensor([4, 3, 3], name="w"),
                                      strides=2, padding=1, output_padding=1, groups=2))
    assert s == (2, 6, 12)  # (6 - 1) * 2 - 2 + 2 + 1 + 1
    s = static(op.nn.conv3d_transpose(tensor([1, 4, 2, 3, 4]), tensor([4, 5, 2, 2, 2], name="w"),
                                      strides=(1, 2, 3)))
    assert s == (1, 5, 3, 6, 11)
    with pytest.raises(relax.StructInfoError, match="output_padding 1 must be smaller"):
        infer(op.nn.conv1d_transpose(tensor([2, 4, 6]), tensor([4, 3, 3], name="w"),
                                     output_padding=1))
    with pytest.raises(ValueError, match="output_padding must have 1 or 3 values"):
        op.nn.conv3d_transpose(tensor([1, 4, 2, 3, 4]), tensor([4, 5, 2, 2, 2], name="w"),
                               output_padding=(1, 1))


def test_pool1d_pool3d_and_adaptive():
    s = infer(op.nn.max_pool1d(tensor([n, 3, 9]), 3, 2, 1))
    assert dims(s) == [n, 3, 5]
    assert static(op.nn.avg_pool1d(tensor([1, 9, 3]), 2, 2, layout="NWC",
                                   ceil_mode=True)) == (1, 5, 3)
    assert static(op.nn.max_pool3d(tensor([1, 2, 6, 7, 8]), (2, 3, 2), (2, 2, 2),
                                   (0, 1, 0, 0, 1, 0))) == (1, 2, 3, 4, 4)
    assert static(op.nn.avg_pool3d(tensor([1, 6, 6, 6, 2]), 2, 2, layout="NDHWC",
                                   out_layout="NCDHW")) == (1, 2, 3, 3, 3)
    assert static(op.nn.adaptive_avg_pool1d(tensor([2, 3, 10]), 4)) == (2, 3, 4)
    assert dims(infer(op.nn.adaptive_max_pool3d(tensor([1, 2, h, 4, 4]), (1, 2, 3)))) == \
        [1, 2, 1, 2, 3]
    assert infer(op.nn.adaptive_avg_pool3d(tensor([1, 2, h, 4, 4]))).shape_values[2] is h
    with pytest.raises(relax.StructInfoError, match="data must have 3 dimensions, got 4"):
        infer(op.nn.max_pool1d(tensor([1, 2, 3, 4]), 2))
    with pytest.raises(relax.StructInfoError, match="output spatial size is 0"):
        infer(op.nn.max_pool3d(tensor([1, 1, 2, 2, 2]), 3))
    with pytest.raises(ValueError, match="layout must be a permutation of 'NCDHW'"):
        op.nn.max_pool3d(tensor([1, 1, 2, 2, 2]), 1, layout="NCHW")


# -- image / vision -------------------------------------------------------------------------------------
def test_resize1d_resize3d():
    assert static(op.image.resize1d(tensor([2, 3, 5]), 9)) == (2, 3, 9)
    s = infer(op.image.resize3d(tensor([n, 2, 3, 4, 5]), (6, h, 2), layout="NCDHW",
                                method="nearest", out_dtype="float16"))
    assert dims(s) == [n, 2, 6, h, 2] and s.dtype == "float16"
    assert static(op.image.resize3d(tensor([1, 3, 4, 5, 2]), (2, 2, 2), layout="NDHWC")) == \
        (1, 2, 2, 2, 2)
    with pytest.raises(relax.StructInfoError, match="must be a shape of 3 value"):
        infer(op.image.resize3d(tensor([1, 2, 3, 4, 5]), relax.ShapeExpr([2, 2])))
    with pytest.raises(ValueError, match="resize1d: method must be one of"):
        op.image.resize1d(tensor([2, 3, 5]), 9, method="area")


def test_grid_sample():
    s = infer(op.image.grid_sample(tensor([n, 3, 8, 9]), tensor([n, 4, h, 2], name="g")))
    assert dims(s) == [n, 3, 4, h]
    assert static(op.image.grid_sample(tensor([1, 2, 3, 4, 5]),
                                       tensor([1, 6, 7, 8, 3], name="g"), "nearest")) == \
        (1, 2, 6, 7, 8)
    call = op.image.grid_sample(tensor([1, 2, 3, 4]), tensor([1, 2, 2, 2], name="g"), "linear",
                                "reflection", True)
    assert call.attrs.method == "bilinear" and call.attrs.align_corners is True
    with pytest.raises(relax.StructInfoError, match="last axis of grid must have 2 coordinates"):
        infer(op.image.grid_sample(tensor([1, 2, 3, 4]), tensor([1, 2, 2, 3], name="g")))
    with pytest.raises(relax.StructInfoError, match="batch sizes differ: 1 vs 2"):
        infer(op.image.grid_sample(tensor([1, 2, 3, 4]), tensor([2, 2, 2, 2], name="g")))
    with pytest.raises(relax.StructInfoError, match="grid must have a floating-point dtype"):
        infer(op.image.grid_sample(tensor([1, 2, 3, 4]), tensor([1, 2, 2, 2], "int32", "g")))
    with pytest.raises(relax.StructInfoError, match="grid must have as many dimensions"):
        infer(op.image.grid_sample(tensor([1, 2, 3, 4]), tensor([1, 2, 2, 2, 2], name="g")))
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        op.image.grid_sample(tensor([1, 2, 3, 4]), tensor([1, 2, 2, 2], name="g"),
                             padding_mode="wrap")


def test_roi_align():
    data, rois = tensor([2, 16, h, 30]), tensor([n, 4], name="rois")
    idx = tensor([n], "int64", "idx")
    s = infer(op.vision.roi_align(data, rois, idx, (7, 5), 0.25, 2, "max"))
    assert dims(s) == [n, 16, 7, 5]
    s = infer(op.vision.roi_align(tensor([2, h, 30, 16]), rois, idx, 3, layout="NHWC"))
    assert dims(s) == [n, 3, 3, 16]
    with pytest.raises(relax.StructInfoError, match="rois must be \\(num_rois, 4\\) boxes"):
        infer(op.vision.roi_align(data, tensor([3, 5], name="r"), tensor([3], "int64", "i")))
    with pytest.raises(relax.StructInfoError, match="batch_indices has 4 entries for 3 boxes"):
        infer(op.vision.roi_align(data, tensor([3, 4], name="r"), tensor([4], "int64", "i")))
    with pytest.raises(relax.StructInfoError, match="batch_indices must be an integer tensor"):
        infer(op.vision.roi_align(data, rois, tensor([n], "float32", "i")))
    with pytest.raises(ValueError, match="coordinate_transformation_mode must be"):
        op.vision.roi_align(data, rois, idx, coordinate_transformation_mode="align_corners")


# -- indexing ---------------------------------------------------------------------------------------------
def test_scatter_nd():
    data = tensor([n, 4, 5])
    s = infer(op.scatter_nd(data, tensor([3, 7, 2], "int64", "i"), tensor([3, 7, 5], name="u"),
                            "add"))
    assert s is data.struct_info
    assert op.scatter_nd(data, data, data, "none").attrs.reduction == "update"
    with pytest.raises(relax.StructInfoError, match=r"updates must have shape .* = \(3, 5\), "
                                                    r"got \(3, 4\)"):
        infer(op.scatter_nd(data, tensor([3, 2], "int64", "i"), tensor([3, 4], name="u")))
    with pytest.raises(relax.StructInfoError, match="indices address 4 dimension"):
        infer(op.scatter_nd(data, tensor([3, 4], "int64", "i"), tensor([3], name="u")))
    with pytest.raises(relax.StructInfoError, match="indices must be an integer tensor"):
        infer(op.scatter_nd(data, tensor([3, 1]), tensor([3, 4, 5], name="u")))
    with pytest.raises(ValueError, match="reduction must be one of"):
        op.scatter_nd(data, data, data, "sum")


def test_one_hot():
    idx = tensor([n, 3], "int64", "i")
    values = tensor([2], "float16", "v")
    s = infer(op.one_hot(idx, 10, values))
    assert dims(s) == [n, 3, 10] and s.dtype == "float16"
    assert dims(infer(op.one_hot(idx, 10, values, axis=0))) == [10, n, 3]
    d = tir.Var("d", "int64")
    s = infer(op.one_hot(idx, d, (0, 1), axis=1, dtype="int32"))
    assert dims(s) == [n, d, 3] and s.dtype == "int32"
    unknown = relax.Var("depth", relax.PrimStructInfo("int64"))
    assert infer(op.one_hot(idx, unknown, values)).shape is None
    with pytest.raises(relax.StructInfoError, match="axis 3 is out of range"):
        infer(op.one_hot(idx, 4, values, axis=3))
    with pytest.raises(relax.StructInfoError, match="values must be a tensor of 2 elements"):
        infer(op.one_hot(idx, 4, tensor([3], name="v")))
    with pytest.raises(relax.StructInfoError, match="depth must not be negative"):
        infer(op.one_hot(idx, -1, values))


# -- einsum ------------------------------------------------------------------------------------------------
def test_einsum_inference():
    a, b = tensor([n, 3, 4]), tensor([n, 4, 5], name="b")
    assert dims(infer(op.einsum([a, b], "bij,bjk->bik"))) == [n, 3, 5]
    assert dims(infer(op.einsum([a, b], "...ij,...jk"))) == [n, 3, 5]
    assert dims(infer(op.einsum([tensor([4, 4])], "ii->i"))) == [4]
    assert dims(infer(op.einsum([tensor([4, 4])], "ii"))) == []
    assert infer(op.einsum([tensor(None)], "ij->j")).ndim == -1
    with pytest.raises(relax.StructInfoError, match="subscript 'j' has size 4 and 3"):
        infer(op.einsum([tensor([3, 4]), tensor([3, 5], name="b")], "ij,jk->ik"))
    with pytest.raises(relax.StructInfoError, match="operands must have one dtype"):
        infer(op.einsum([tensor([3]), tensor([3], "float16", "b")], "i,i"))
    with pytest.raises(relax.StructInfoError, match="output subscript\\(s\\) z appear in no"):
        infer(op.einsum([tensor([3])], "i->z"))
    with pytest.raises(relax.StructInfoError, match="operand 0 has 3 dimension\\(s\\)"):
        infer(op.einsum([tensor([3, 4, 5])], "ij->i"))
    with pytest.raises(relax.StructInfoError, match="needs '...' too"):
        infer(op.einsum([tensor([3, 4, 5])], "...j->j"))
    with pytest.raises(ValueError, match="name 2 operand\\(s\\), given 1"):
        op.einsum([a], "ij,jk->ik")


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_einsum_shapes_match_numpy(data):
    letters = "abcde"
    sizes = {c: data.draw(st.integers(1, 4)) for c in letters}
    nops = data.draw(st.integers(1, 3))
    terms = ["".join(data.draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3)))
             for _ in range(nops)]
    used = sorted(set("".join(terms)))
    out = "".join(data.draw(st.permutations(used))[:data.draw(st.integers(0, len(used)))])
    subscripts = ",".join(terms) + ("->" + out if data.draw(st.booleans()) else "")
    shapes = [[sizes[c] for c in t] for t in terms]
    expected = np.einsum(subscripts, *[np.zeros(s) for s in shapes]).shape
    ops = [tensor(s, name=f"x{k}") for k, s in enumerate(shapes)]
    assert static(op.einsum(ops, subscripts)) == expected


# -- data-dependent ----------------------------------------------------------------------------------------
def test_data_dependent_inference():
    x = tensor([n, 6])
    b = tensor([2], "int64", "b")
    s = infer(op.dynamic_strided_slice(x, b, b, b))
    assert s.ndim == 2 and s.shape is None and s.dtype == "float32"
    assert infer(op.dynamic_strided_slice(x, tensor([1], "int32", "b"),
                                          tensor([1], "int32", "e"), axes=[1])).ndim == 2
    with pytest.raises(relax.StructInfoError, match="begin has 2 entries for 1 sliced axes"):
        infer(op.dynamic_strided_slice(x, b, tensor([1], "int64", "e"), axes=[0]))
    with pytest.raises(relax.StructInfoError, match="end must be an integer tensor"):
        infer(op.dynamic_strided_slice(x, b, tensor([2], name="e"), b))
    s = infer(op.nonzero(tensor([n, 3, 2])))
    assert s.ndim == 2 and s.dtype == "int64" and s.shape is None
    s = infer(op.unique(x))
    assert s.ndim == 1 and s.shape is None
    s = infer(op.unique(x, axis=1, return_inverse=True, return_counts=True))
    assert isinstance(s, TupleStructInfo) and len(s.fields) == 3
    assert s.fields[0].ndim == 2 and dims(s.fields[1]) == [6] and s.fields[2].ndim == 1
    s = infer(op.unique(x, return_index=True, return_inverse=True))
    assert analyzer.can_prove_equal(s.fields[2].shape_values[0], n * 6)


def _module(make, params):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return bb.get()


def test_data_dependent_legalization_binds_fresh_shapes():
    x = tensor([n, 6])
    mod = LegalizeOps()(_module(lambda x: op.multiply(op.nonzero(x), relax.const(2, "int64")),
                                [x]))
    text = mod.script()
    assert "cls.nonzero_count" in text and "vm.builtin.tensor_to_shape" in text
    assert "R.match_cast" in text and "relax.run." not in text  # TIR kernels, no host code
    assert "R.multiply" not in text  # the product sees (2, num_nonzero) and is lowered too
    assert_structural_equal(R.parse(text), mod)
    b = tensor([2], "int64", "b")
    mod = LegalizeOps()(_module(lambda x, b: op.dynamic_strided_slice(x, b, b, b), [x, b]))
    text = mod.script()
    assert "vm.builtin.tensor_to_shape" in text and "dynamic_strided_slice_plan" in text
    assert_structural_equal(R.parse(text), mod)
    # an unknown rank cannot be lowered: the call stays
    y = relax.Var("y", TensorStructInfo(None, "float32", -1))
    mod = LegalizeOps()(_module(op.nonzero, [y]))
    assert "R.nonzero" in mod.script()


# -- TVMScript round trips ---------------------------------------------------------------------------------
X5 = relax.Var("x5", TensorStructInfo([n, 4, 4, 5, 6], "float32"))
X3 = relax.Var("x3", TensorStructInfo([n, 4, 7], "float32"))
X4 = relax.Var("x4", TensorStructInfo([n, 4, 5, 6], "float32"))
IDX = relax.Var("idx", TensorStructInfo([3, 2], "int64"))
CASES = {
    "conv3d": lambda: op.nn.conv3d(X5, relax.const(np.ones((2, 2, 1, 2, 3), "float32")),
                                   strides=2, padding=(1, 0, 1), groups=2),
    "conv1d_transpose": lambda: op.nn.conv1d_transpose(
        X3, relax.const(np.ones((4, 2, 3), "float32")), 2, 1, 1),
    "max_pool3d": lambda: op.nn.max_pool3d(X5, 2, 2, ceil_mode=True),
    "adaptive_avg_pool1d": lambda: op.nn.adaptive_avg_pool1d(X3, 3),
    "resize3d": lambda: op.image.resize3d(X5, (2, 3, 4), method="cubic"),
    "grid_sample": lambda: op.image.grid_sample(
        X5, relax.const(np.zeros((1, 2, 2, 2, 3), "float32")), "nearest", "border"),
    "roi_align": lambda: op.vision.roi_align(
        X4, relax.const(np.zeros((3, 4), "float32")),
        relax.const(np.zeros(3, "int64")), (2, 2), 0.5, 2, "max", "output_half_pixel"),
    "scatter_nd": lambda: op.scatter_nd(X4, IDX, relax.const(
        np.zeros((3, 5, 6), "float32")), "max"),
    "one_hot": lambda: op.one_hot(IDX, 5, (0.0, 2.0), axis=1),
    "einsum": lambda: op.einsum([X3, X3], "bij,bkj->bik"),
    "acosh": lambda: op.acosh(X3),
    "dynamic_strided_slice": lambda: op.dynamic_strided_slice(
        X3, relax.const(np.zeros(1, "int64")), relax.const(np.ones(1, "int64")), axes=[2]),
    "unique": lambda: op.unique(X3, False, True, axis=2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_call_roundtrip(name):
    mod = _module(lambda *_: CASES[name](), [X5, X4, X3, IDX])
    assert_structural_equal(R.parse(mod.script()), mod)
    legalized = LegalizeOps()(mod)
    assert_structural_equal(R.parse(legalized.script()), legalized)
