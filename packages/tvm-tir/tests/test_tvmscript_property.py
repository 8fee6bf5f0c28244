"""Property: random TIR prints as TVMScript that parses back to a structurally equal function
(and prints again to the same text)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm.ffi import assert_structural_equal
from tvm.script import tir as T
from tvm.tir import (
    EQ, GE, GT, LE, LT, NE, Add, Allocate, And, AssertStmt, AttrStmt, BufferLoad, BufferStore,
    Cast, DeclBuffer, Div, Evaluate, FloatImm, FloorDiv, FloorMod, For, ForKind, IfThenElse,
    IntImm, Let, LetStmt, Max, Min, Mod, Mul, Not, Or, PrimFunc, Select, StringImm, Sub, Var,
    decl_buffer, op, stmt_seq,
)

X = Var("x", "int32")
Y = Var("y", "int32")
Z = Var("z", "int64")
F = Var("f", "float32")
G = Var("g", "float32")
P = Var("p", "bool")
A = decl_buffer((16,), "float32", "A")
B = decl_buffer((16,), "int32", "B")
HA, HB = Var("a", "handle"), Var("b", "handle")
PARAMS = [X, Y, Z, F, G, P, HA, HB]

INT_BIN = [Add, Sub, Mul, FloorDiv, FloorMod, Min, Max, Div, Mod]
FLOAT_BIN = [Add, Sub, Mul, Div, Min, Max]
CMP = [EQ, NE, LT, LE, GT, GE]
FLOAT_UNARY = [op.exp, op.sqrt, op.tanh, op.fabs, op.floor, op.log]


def _func(body) -> PrimFunc:
    return PrimFunc(PARAMS, body, buffer_map={HA: A, HB: B}, attrs={"global_symbol": "f"})


def _check(func: PrimFunc) -> None:
    text = func.script()
    parsed = T.parse(text)
    assert_structural_equal(func, parsed)
    assert parsed.script() == text


@st.composite
def exprs(draw, kind: str, depth: int = 3, scope: tuple = ()):
    """A random expression of ``kind`` ("int", "int64", "float", "bool")."""
    ints = [X, Y, *[v for v in scope if v.dtype == "int32"]]
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if kind == "int":
            return draw(st.one_of(st.sampled_from(ints),
                                  st.integers(-2**31, 2**31 - 1).map(lambda v: IntImm("int32", v))))
        if kind == "int64":
            return draw(st.one_of(st.just(Z), st.integers(-2**40, 2**40).map(
                lambda v: IntImm("int64", v))))
        if kind == "float":
            return draw(st.one_of(
                st.sampled_from([F, G]),
                st.floats(allow_nan=False, width=32).map(lambda v: FloatImm("float32", v)),
                st.sampled_from([float("inf"), float("-inf"), -0.0]).map(
                    lambda v: FloatImm("float32", v))))
        return draw(st.one_of(st.just(P), st.booleans().map(lambda v: IntImm("bool", int(v)))))
    sub = depth - 1
    if kind == "int":
        choice = draw(st.integers(0, 6))
        if choice <= 2:
            cls = draw(st.sampled_from(INT_BIN))
            return cls(draw(exprs("int", sub, scope)), draw(exprs("int", sub, scope)))
        if choice == 3:
            return Select(draw(exprs("bool", sub, scope)), draw(exprs("int", sub, scope)),
                          draw(exprs("int", sub, scope)))
        if choice == 4:
            return Cast("int32", draw(exprs(draw(st.sampled_from(["float", "int64"])), sub, scope)))
        if choice == 5:
            return BufferLoad(B, [draw(exprs("int", sub, scope))])
        v = Var(draw(st.sampled_from(["t", "x", "T", "range", "i.x", "1v"])), "int32")
        return Let(v, draw(exprs("int", sub, scope)), draw(exprs("int", sub, (*scope, v))))
    if kind == "int64":
        return Add(draw(exprs("int64", sub, scope)), Cast("int64", draw(exprs("int", sub, scope))))
    if kind == "float":
        choice = draw(st.integers(0, 4))
        if choice <= 1:
            cls = draw(st.sampled_from(FLOAT_BIN))
            return cls(draw(exprs("float", sub, scope)), draw(exprs("float", sub, scope)))
        if choice == 2:
            return draw(st.sampled_from(FLOAT_UNARY))(draw(exprs("float", sub, scope)))
        if choice == 3:
            return BufferLoad(A, [draw(exprs("int", sub, scope))])
        return op.if_then_else(draw(exprs("bool", sub, scope)), draw(exprs("float", sub, scope)),
                               draw(exprs("float", sub, scope)))
    choice = draw(st.integers(0, 2))
    if choice == 0:
        operand = draw(st.sampled_from(["int", "float", "int64"]))
        cls = draw(st.sampled_from(CMP))
        return cls(draw(exprs(operand, sub, scope)), draw(exprs(operand, sub, scope)))
    if choice == 1:
        cls = draw(st.sampled_from([And, Or]))
        return cls(draw(exprs("bool", sub, scope)), draw(exprs("bool", sub, scope)))
    return Not(draw(exprs("bool", sub, scope)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["int", "int64", "float", "bool"]).flatmap(lambda k: exprs(k, 4)))
def test_random_expressions_roundtrip(expr) -> None:
    _check(_func(Evaluate(expr)))


@st.composite
def stmts(draw, depth: int = 3, scope: tuple = ()):
    """A random statement (sequences flattened, as the parser makes them); ``scope``
    holds the int32 variables defined around it."""
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        if draw(st.booleans()):
            return BufferStore(A, draw(exprs("float", 2, scope)), [draw(exprs("int", 1, scope))])
        return Evaluate(op.call_extern("int32", "tick", draw(exprs("int", 1, scope))))
    sub = depth - 1
    choice = draw(st.integers(0, 7))
    if choice == 0:
        items = draw(st.lists(st.integers(0, 0), min_size=2, max_size=3))
        return stmt_seq(*(draw(stmts(sub, scope)) for _ in items))
    if choice == 1:
        v = Var("i", "int32")
        kind = draw(st.sampled_from([ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED]))
        return For(v, IntImm("int32", draw(st.integers(0, 3))), IntImm("int32", draw(
            st.integers(1, 8))), kind, draw(stmts(sub, (*scope, v))))
    if choice == 2:
        other = draw(stmts(sub, scope)) if draw(st.booleans()) else None
        return IfThenElse(draw(exprs("bool", 2, scope)), draw(stmts(sub, scope)), other)
    if choice == 3:
        v = Var("v", "int32")
        return LetStmt(v, draw(exprs("int", 2, scope)), draw(stmts(sub, (*scope, v))))
    if choice == 4:
        buf = decl_buffer((4,), "float32", "tmp", scope=draw(st.sampled_from(["global", "local"])))
        inner = stmt_seq(BufferStore(buf, FloatImm("float32", 1.0), [IntImm("int32", 0)]),
                         draw(stmts(sub, scope)))
        return Allocate(buf.data, "float32", [IntImm("int32", 4)], IntImm("bool", 1),
                        DeclBuffer(buf, inner), buf.scope)
    if choice == 5:
        return AssertStmt(draw(exprs("bool", 2, scope)), "check %lld", draw(stmts(sub, scope)),
                          tuple(Cast("int64", x) for x in scope[:1]))
    if choice == 6:
        return AttrStmt(StringImm("k"), "pragma_key", draw(exprs("int", 1, scope)),
                        draw(stmts(sub, scope)))
    return stmt_seq(draw(stmts(sub, scope)), Evaluate(IntImm("int32", 0)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stmts(4))
def test_random_statements_roundtrip(stmt) -> None:
    _check(_func(stmt))
