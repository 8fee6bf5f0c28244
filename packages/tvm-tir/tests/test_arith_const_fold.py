"""Constant folding: exact per-dtype semantics and exact identities."""

import math

import numpy as np

import pytest
from arith_util import fmt
from tvm.arith import Analyzer
from tvm.arith import const_fold as F
from tvm.ffi import structural_equal
from tvm.tir import expr as E
from tvm.tir import op as T


def c(v, dtype="int32"):
    return E.const(v, dtype)


def value(e):
    assert isinstance(e, (E.IntImm, E.FloatImm)), fmt(e)
    return e.value


@pytest.mark.parametrize(
    "cls, a, b, expected",
    [
        (E.Add, 2147483647, 1, -2147483648),
        (E.Sub, -2147483648, 1, 2147483647),
        (E.Mul, 65536, 65536, 0),
        (E.Div, -7, 2, -3),
        (E.Mod, -7, 2, -1),
        (E.FloorDiv, -7, 2, -4),
        (E.FloorMod, -7, 2, 1),
        (E.Div, 7, -2, -3),
        (E.Mod, 7, -2, 1),
        (E.FloorDiv, 7, -2, -4),
        (E.FloorMod, 7, -2, -1),
        (E.Div, -2147483648, -1, -2147483648),
        (E.Min, -3, 4, -3),
        (E.Max, -3, 4, 4),
    ],
)
def test_int32_semantics(cls, a, b, expected):
    assert value(F.fold(cls(c(a), c(b)))) == expected


def test_int8_and_uint_wrap():
    assert value(F.add(c(127, "int8"), c(1, "int8"))) == -128
    assert value(F.sub(c(0, "uint8"), c(1, "uint8"))) == 255
    assert value(F.mul(c(3000000000, "uint32"), c(2, "uint32"))) == 6000000000 % 2**32
    assert F.add(c(1, "int64"), c(2, "int64")).dtype == "int64"


@pytest.mark.parametrize("cls", [E.Div, E.Mod, E.FloorDiv, E.FloorMod])
def test_division_by_zero_not_folded(cls):
    out = F.fold(cls(c(5), c(0)))
    assert isinstance(out, cls)
    assert isinstance(F.fold(E.Div(c(1.0, "float32"), c(0.0, "float32"))), E.Div)


def test_float_rounding_per_dtype():
    third32 = value(F.fold(E.Div(c(1.0, "float32"), c(3.0, "float32"))))
    third64 = value(F.fold(E.Div(c(1.0, "float64"), c(3.0, "float64"))))
    assert third64 == 1.0 / 3.0
    assert third32 != third64 and abs(third32 - third64) < 1e-7
    half = value(F.fold(E.Add(c(1.0, "float16"), c(0.0004, "float16"))))
    assert half == 1.0  # below float16 resolution at 1.0
    assert value(F.fold(E.Mul(c(1e30, "float32"), c(1e30, "float32")))) == math.inf


def test_float_min_max_with_nan_not_folded():
    nan = c(float("nan"), "float32")
    assert isinstance(F.fold(E.Min(nan, c(1.0, "float32"))), E.Min)


def test_comparisons_fold_to_bool():
    out = F.fold(E.LT(c(1), c(2)))
    assert out.dtype == "bool" and out.value == 1
    assert F.fold(E.GE(c(1.5, "float32"), c(2.5, "float32"))).value == 0


def test_identities_int():
    x = E.Var("x")
    assert F.add(x, 0) is x
    assert F.add(0, x) is x
    assert F.sub(x, 0) is x
    assert F.mul(x, 1) is x
    assert value(F.mul(x, 0)) == 0
    assert F.floordiv(x, 1) is x
    assert value(F.floormod(x, 1)) == 0
    assert F.truncdiv(x, 1) is x
    assert F.min_(x, x) is x
    assert F.max_(x, x) is x
    assert value(F.sub(x, x)) == 0


def test_identities_float_are_exact_only():
    f = E.Var("f", "float32")
    assert F.mul(f, 1.0) is f
    assert F.add(f, 0.0) is f
    assert isinstance(F.mul(f, 0.0), E.Mul)  # f may be inf or nan
    assert isinstance(F.sub(f, f), E.Sub)
    assert isinstance(F.floordiv(f, 1.0), E.FloorDiv)  # floor(f) is not f


def test_select_and_logic_with_constants():
    x, y = E.Var("x"), E.Var("y")
    b = E.Var("b", "bool")
    assert F.select(E.const(True), x, y) is x
    assert F.select(E.const(False), x, y) is y
    assert F.select(b, x, x) is x
    assert F.logical_and(E.const(True), b) is b
    assert value(F.logical_and(E.const(False), b)) == 0
    assert F.logical_or(E.const(False), b) is b
    assert value(F.logical_or(b, E.const(True))) == 1
    assert value(F.logical_not(E.const(True))) == 0
    assert F.logical_not(E.Not(b)) is b


def test_casts():
    assert value(F.cast("int32", c(3.7, "float32"))) == 3
    assert value(F.cast("int32", c(-3.7, "float32"))) == -3
    assert value(F.cast("int8", c(300))) == 44
    assert value(F.cast("uint8", c(-1))) == 255
    assert value(F.cast("bool", c(5))) == 1
    assert value(F.cast("float16", c(2049))) == 2048.0
    assert isinstance(F.cast("int32", c(float("inf"), "float32")), E.Cast)
    assert isinstance(F.cast("int8", c(1e10, "float64")), E.Cast)  # out of range: not folded
    x = E.Var("x")
    assert F.cast("int32", x) is x


def test_vector_constants_fold():
    out = F.add(E.Broadcast(c(1), 4), E.Broadcast(c(2), 4))
    assert structural_equal(out, E.Broadcast(c(3), 4))


def test_simplify_folds_float_without_reassociation():
    f = E.Var("f", "float32")
    ana = Analyzer()
    expr = (f + 1.0) + 2.0
    assert structural_equal(ana.simplify(expr), expr)
    assert structural_equal(ana.simplify(c(1.5, "float32") * c(2.0, "float32") + f), f + 3.0)
    assert structural_equal(ana.simplify(T.exp(f * 1.0)), T.exp(f))


def test_identities_keep_side_effects():
    """An identity that would drop or merge an evaluation is not applied to a call with side
    effects; pure calls fold as any expression."""
    x = E.Var("x")
    impure = T.call_extern("int32", "next_id")
    pure = T.call_pure_extern("int32", "f", x)
    assert isinstance(F.mul(impure, 0), E.Mul)
    assert isinstance(F.sub(impure, impure), E.Sub)
    assert isinstance(F.min_(impure, impure), E.Min)
    assert isinstance(F.select(E.Var("b", "bool"), impure, impure), E.Select)
    assert value(F.mul(pure, 0)) == 0
    assert F.max_(pure, T.call_pure_extern("int32", "f", x)) is pure


def test_ramp_builder():
    x = E.Var("x")
    assert isinstance(F.ramp(x, 0, 4), E.Broadcast)
    r = F.ramp(x, 2, 4)
    assert isinstance(r, E.Ramp) and r.lanes == 4
    assert structural_equal(F.sub(r, F.ramp(x, 1, 4)), E.Ramp(c(0), c(1), 4))
    assert structural_equal(F.fold(E.Ramp(x, c(0), 4)), E.Broadcast(x, 4))


def test_float_operands_are_taken_at_their_precision():
    # 0.1 and 0.2 as float32 immediates hold more digits than float32 has.
    out = F.add(E.FloatImm("float32", 0.1), E.FloatImm("float32", 0.2))
    assert value(out) == float(np.float32(np.float32(0.1) + np.float32(0.2)))
    assert value(F.cast("float64", E.FloatImm("float32", 0.1))) == float(np.float32(0.1))
    big = (1 << 60) + 1  # not representable in double: rounded once, to float32
    assert value(F.cast("float32", E.IntImm("int64", big))) == float(np.float32(np.int64(big)))


def test_simplify_keeps_each_call_with_side_effects():
    x = E.Var("x")
    tick, tock = T.call_extern("int32", "tick"), T.call_extern("int32", "tick")
    ana = Analyzer()
    assert isinstance(ana.simplify(tick - tock), E.Sub)
    assert isinstance(ana.simplify(E.LT(tick, tock)), E.LT)
    assert structural_equal(ana.simplify(tick + x - x), tick)
    pure = T.call_pure_extern("int32", "f", x)
    assert value(ana.simplify(pure - T.call_pure_extern("int32", "f", x))) == 0
