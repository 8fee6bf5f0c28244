"""GuardIntegerDivision: an integer division that could trap (zero divisor, INT_MIN / -1) is
guarded with the Relax operators' semantics; divisions that cannot trap are left alone."""

import numpy as np
import pytest
from lowering_helpers import func_of
from tvm.ffi import structural_equal
from tvm.tir import (
    EQ, BufferStore, Call, Cast, Div, FloorDiv, FloorMod, For, ForKind, IntImm, Mod, Or, Select,
    Var, decl_buffer,
)
from tvm.tir.stmt_functor import post_order_visit
from tvm.tir.transform import guard_integer_division


def _kernel(make_value, dtype="int32", n=8):
    A = decl_buffer((n,), dtype, "A")
    B = decl_buffer((n,), dtype, "B")
    C = decl_buffer((n,), dtype, "C")
    i = Var("i")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(C, make_value(A[i], B[i], i), (i,)))
    params = [Var(x, "handle") for x in "abc"]
    func = func_of(params, body, dict(zip(params, (A, B, C))))
    return func.with_attr("global_symbol", "kern")


def _checks(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Call)
                     and getattr(n.op, "name", "") == "tir.check" else None)
    return found


@pytest.mark.parametrize("op", [Div, FloorDiv, Mod, FloorMod])
def test_a_data_dependent_signed_divisor_is_guarded(op):
    func = _kernel(lambda a, b, i: op(a, b))
    got = guard_integer_division(func)
    (check,) = _checks(got)
    value, cond, message = check.args[:3]
    what = "modulo" if op in (Mod, FloorMod) else "division"
    assert message.value == f"kern: integer {what} by zero"
    b = func.body.body.value.b
    assert structural_equal(cond, b != IntImm("int32", 0))
    # the hardware divide only sees a safe divisor; -1 is computed without dividing
    assert isinstance(value, Select) and structural_equal(value.condition, EQ(b, IntImm("int32", -1)))
    safe = value.false_value.b
    assert isinstance(value.false_value, op) and isinstance(safe, Select)
    assert structural_equal(safe.condition, Or(EQ(b, IntImm("int32", 0)), EQ(b, IntImm("int32", -1))))


def test_unsigned_divisor_guards_zero_only():
    got = guard_integer_division(_kernel(lambda a, b, i: FloorDiv(a, b), dtype="uint16"))
    (check,) = _checks(got)
    value = check.args[0]
    assert isinstance(value, FloorDiv) and isinstance(value.b, Select)
    assert not isinstance(value, Select)


@pytest.mark.parametrize("make", [
    lambda a, b, i: FloorDiv(a, IntImm("int32", 4)),            # a nonzero constant
    lambda a, b, i: FloorDiv(a, i + 1),                         # provably positive in the loop
    lambda a, b, i: Div(Cast("float32", a), Cast("float32", b)),  # float division: no trap
])
def test_divisions_that_cannot_trap_are_left_alone(make):
    func = _kernel(make)
    assert guard_integer_division(func) is func


def test_shape_variable_divisors_are_left_alone():
    n = Var("n")
    A = decl_buffer((n,), "int32", "A")
    C = decl_buffer((n,), "int32", "C")
    i = Var("i")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(C, FloorDiv(A[i], n), (i,)))
    params = [Var(x, "handle") for x in "ac"]
    func = func_of(params, body, dict(zip(params, (A, C))))
    assert guard_integer_division(func) is func


def test_an_already_guarded_divisor_is_left_alone():
    def make(a, b, i):
        zero, minus = IntImm("int32", 0), IntImm("int32", -1)
        return FloorDiv(a, Select(Or(EQ(b, zero), EQ(b, minus)), IntImm("int32", 1), b))

    func = _kernel(make)
    assert guard_integer_division(func) is func


def test_constant_zero_and_minus_one_divisors_are_guarded():
    got = guard_integer_division(_kernel(lambda a, b, i: Mod(a, IntImm("int32", 0))))
    assert len(_checks(got)) == 1
    got = guard_integer_division(_kernel(lambda a, b, i: Div(a, IntImm("int32", -1))))
    assert len(_checks(got)) == 1


def test_compiled_kernels_fail_cleanly_and_wrap_int_min():
    pytest.importorskip("tvm.target.llvm")
    from tvm import tir
    from tvm.runtime import KernelError

    func = _kernel(lambda a, b, i: FloorDiv(a, b))
    lib = tir.build(func, target="llvm")
    a = np.array([7, -7, 5, -2**31, 9, 0, 2, 3], "int32")
    b = np.array([2, 2, -1, -1, 3, 1, -3, 7], "int32")
    c = np.zeros(8, "int32")
    lib["kern"](a, b, c)
    want = np.floor_divide(a.astype(np.int64), b).astype(np.int32)  # INT_MIN // -1 wraps
    np.testing.assert_array_equal(c, want)
    b[4] = 0
    with pytest.raises(KernelError, match="kern: integer division by zero"):
        lib["kern"](a, b, c)
