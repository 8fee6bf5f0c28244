"""StructInfo construction, erasure, lca, base checks and call derivation."""

import pytest
from hypothesis import given, settings, strategies as st

from tvm import relax, tir
from tvm.ffi import structural_equal
from tvm.relax import (
    BaseCheckResult,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from tvm.relax.analysis import (
    definable_tir_vars_in_struct_info,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    get_static_shape,
    struct_info_base_check,
    struct_info_lca,
    tir_vars_in_struct_info,
)

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def test_tensor_struct_info_fields():
    s = TensorStructInfo([n, 4], "float16")
    assert s.ndim == 2 and s.dtype == "float16"
    assert isinstance(s.shape, relax.ShapeExpr)
    assert s.shape_values[0] is n and s.shape_values[1].value == 4
    assert s.shape_values[1].dtype == "int64"
    unknown = TensorStructInfo(dtype=None, ndim=3)
    assert unknown.is_unknown_dtype and unknown.shape is None and unknown.ndim == 3


def test_tensor_struct_info_errors():
    with pytest.raises(ValueError, match="ndim=3 does not match"):
        TensorStructInfo([1, 2], "float32", ndim=3)
    with pytest.raises(ValueError, match="invalid dtype"):
        TensorStructInfo([1], "floaty")
    with pytest.raises(TypeError, match="must be an int"):
        TensorStructInfo([1.5], "float32")
    with pytest.raises(ValueError, match="ndim must be"):
        ShapeStructInfo(ndim=-3)


def test_shape_from_shape_var():
    s = relax.Var("s", ShapeStructInfo([n, m]))
    t = TensorStructInfo(s, "float32")
    assert t.ndim == 2 and t.shape is s and t.shape_values == (n, m)


def test_prim_struct_info():
    assert PrimStructInfo("int32").value is None
    p = PrimStructInfo(value=n)
    assert p.dtype == "int64" and p.value is n
    assert PrimStructInfo("int64", 3).value.value == 3
    with pytest.raises(TypeError):
        PrimStructInfo()


def test_func_struct_info():
    f = FuncStructInfo([TensorStructInfo([n], "float32")], TensorStructInfo([n], "float32"))
    assert not f.is_opaque and f.purity
    o = FuncStructInfo.opaque_func()
    assert o.is_opaque and not o.purity and isinstance(o.ret, ObjectStructInfo)
    # parameters bind their symbolic variables: alpha-equivalent signatures are equal
    g = FuncStructInfo([TensorStructInfo([m], "float32")], TensorStructInfo([m], "float32"))
    assert structural_equal(f, g)
    h = FuncStructInfo([TensorStructInfo([m], "float32")], TensorStructInfo([n], "float32"))
    assert not structural_equal(f, h)


def test_static_shape_and_vars():
    assert get_static_shape(TensorStructInfo([2, 3], "float32")) == (2, 3)
    assert get_static_shape(TensorStructInfo([n, 3], "float32")) is None
    assert get_static_shape(ShapeStructInfo([4])) == (4,)
    s = TupleStructInfo([TensorStructInfo([n * 2, m], "float32"), PrimStructInfo(value=n)])
    assert [v.name for v in tir_vars_in_struct_info(s)] == ["n", "m"]
    assert [v.name for v in definable_tir_vars_in_struct_info(s)] == ["m", "n"]


def test_erase_to_well_defined():
    s = TensorStructInfo([n, m], "float32")
    kept = erase_to_well_defined(s, {n: n, m: m})
    assert kept is s
    erased = erase_to_well_defined(s, {n: n})
    assert erased.shape is None and erased.ndim == 2 and erased.dtype == "float32"
    subst = erase_to_well_defined(s, {n: tir.IntImm("int64", 8), m: m})
    assert subst.shape_values[0].value == 8 and subst.shape_values[1] is m
    tup = erase_to_well_defined(TupleStructInfo([PrimStructInfo(value=n), ShapeStructInfo([m])]))
    assert tup.fields[0].value is None and tup.fields[1].values is None
    assert tup.fields[1].ndim == 1


def test_lca():
    a = TensorStructInfo([n, 4], "float32")
    b = TensorStructInfo([n, 4], "float32")
    assert structural_equal(struct_info_lca(a, b), a)
    c = TensorStructInfo([n, 5], "float32")
    assert struct_info_lca(a, c).shape is None and struct_info_lca(a, c).ndim == 2
    d = TensorStructInfo([3], "int32")
    j = struct_info_lca(a, d)
    assert j.ndim == -1 and j.is_unknown_dtype
    assert isinstance(struct_info_lca(a, ShapeStructInfo([1])), ObjectStructInfo)
    t = struct_info_lca(TupleStructInfo([a, d]), TupleStructInfo([c, d]))
    assert isinstance(t, TupleStructInfo) and t.fields[1] is d
    assert isinstance(struct_info_lca(TupleStructInfo([a]), TupleStructInfo([a, a])), ObjectStructInfo)


def test_base_check():
    base = TensorStructInfo([n, 4], "float32")
    assert struct_info_base_check(base, TensorStructInfo([n, 4], "float32")) == BaseCheckResult.PASS
    assert struct_info_base_check(base, TensorStructInfo([n, 5], "float32")) == BaseCheckResult.FAIL_L0
    assert struct_info_base_check(base, TensorStructInfo([m, 4], "float32")) == BaseCheckResult.FAIL_L2
    assert struct_info_base_check(base, TensorStructInfo(ndim=2)) == BaseCheckResult.FAIL_L1
    assert struct_info_base_check(base, TensorStructInfo([n, 4], "int32")) == BaseCheckResult.FAIL_L0
    assert struct_info_base_check(base, ObjectStructInfo()) == BaseCheckResult.FAIL_L1
    assert struct_info_base_check(base, ShapeStructInfo([n])) == BaseCheckResult.FAIL_L0
    assert relax.is_base_of(ObjectStructInfo(), base)
    assert relax.is_base_of(TensorStructInfo(dtype=None, ndim=-1), base)
    assert not relax.is_base_of(base, TensorStructInfo(dtype=None, ndim=-1))
    assert base.is_base_of(TensorStructInfo([n, 4], "float32"))


def test_derive_call_ret_binds_symbolic_vars():
    sig = FuncStructInfo(
        [TensorStructInfo([n, m], "float32"), TensorStructInfo([m], "float32")],
        TensorStructInfo([n * 2], "float32"),
    )
    args = [TensorStructInfo([3, 5], "float32"), TensorStructInfo([5], "float32")]
    ret = derive_call_ret_struct_info(sig, args)
    assert get_static_shape(ret) == (6,)
    with pytest.raises(relax.StructInfoError, match="argument 1: dimension 0 must be 5, got 7"):
        derive_call_ret_struct_info(sig, [args[0], TensorStructInfo([7], "float32")])
    with pytest.raises(relax.StructInfoError, match="expects 2 argument"):
        derive_call_ret_struct_info(sig, args[:1])
    with pytest.raises(relax.StructInfoError, match="expects Tensor"):
        derive_call_ret_struct_info(sig, [ShapeStructInfo([1, 2]), args[1]])
    unknown = derive_call_ret_struct_info(sig, [TensorStructInfo(ndim=2), args[1]])
    assert unknown.shape is None and unknown.ndim == 1


dims = st.lists(st.integers(1, 6), min_size=0, max_size=4)


@settings(max_examples=40, deadline=None)
@given(dims, dims)
def test_lca_is_base_of_both(a, b):
    sa, sb = TensorStructInfo(a, "float32"), TensorStructInfo(b, "float32")
    j = struct_info_lca(sa, sb)
    assert relax.is_base_of(j, sa) and relax.is_base_of(j, sb)
    assert relax.is_base_of(sa, sb) == (a == b)
