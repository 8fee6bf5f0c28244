"""tvm.tir.expr_util: the one home of the small expression queries."""

from tvm.tir import For, IntImm, Var, op
from tvm.tir import expr as E
from tvm.tir.expr_util import (
    const_int, const_value, has_side_effect, is_const_int, loop_extent, same_expr,
)
from tvm.tir.stmt import Evaluate


def test_const_int_and_const_value():
    assert const_int(IntImm("int64", 7)) == 7
    assert const_int(5) == 5
    assert const_int(True) is None and const_int(E.FloatImm("float32", 1.0)) is None
    assert const_int(Var("n")) is None
    assert const_value(E.FloatImm("float32", 1.5)) == 1.5
    assert const_value(E.Broadcast(E.const(3), 4)) == 3
    assert is_const_int(E.Broadcast(E.const(0), 4), 0)
    assert is_const_int(E.const(1), 1) and not is_const_int(E.const(1), 2)


def test_same_expr_is_structural_and_optionally_pure():
    x = Var("x")
    assert same_expr(x + 1, x + 1)
    assert not same_expr(x + 1, Var("x") + 1)  # free variables by identity
    assert not same_expr(E.const(1), E.const(1, "int64"))
    call = op.call_extern("int32", "tick")
    assert same_expr(call, call) and not same_expr(call, call, pure=True)
    assert same_expr(x * 2, x * 2, pure=True)


def test_has_side_effect():
    x = Var("x")
    assert not has_side_effect(x + op.exp(E.Cast("float32", x)).astype("int32"))
    assert has_side_effect(x + op.call_extern("int32", "tick"))
    assert not has_side_effect(E.const(1))


def test_loop_extent_of_a_loop_and_of_its_sref():
    from tvm.tir.schedule.state import StmtSRef

    i, n = Var("i"), Var("n")
    loop = For(i, 0, 16, body=Evaluate(E.const(0)))
    assert loop_extent(loop) == 16
    assert loop_extent(StmtSRef(loop, "main")) == 16
    assert loop_extent(For(i, 0, n, body=Evaluate(E.const(0)))) is None


def test_arith_and_helpers_import_first():
    """tvm.arith and tvm.tir import each other: either may be imported first."""
    import subprocess
    import sys

    for module in ("tvm.arith", "tvm.arith.const_fold", "tvm.tir.expr_util", "tvm.tir.transform"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr


def test_a_buffer_is_not_iterable():
    """``iter(buffer)`` would otherwise index it 0, 1, 2, ... forever."""
    import pytest
    from tvm.tir import decl_buffer

    buf = decl_buffer((4,), "float32", "A")
    with pytest.raises(TypeError, match="tir.Buffer is not iterable"):
        iter(buf)
    with pytest.raises(TypeError, match="not iterable"):
        list(buf)
    assert buf[1].indices[0].value == 1
