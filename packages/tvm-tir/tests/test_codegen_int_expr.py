"""PrimExprs written in the run-time expression format (tvm.tir.codegen.int_expr): the VM
compiler and the GPU host-program writer emit the same expression, and the runtime's
evaluator agrees with TIR's own constant folding."""

import json
import random

import pytest

from tvm import tir
from tvm.arith import Analyzer
from tvm.tir import expr as E
from tvm.tir.codegen.c_types import CodegenError
from tvm.tir.codegen.int_expr import to_int_expr

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def _fail(what):
    return CodegenError(what)


def _random_expr(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([n, m, E.IntImm("int64", rng.randint(-9, 9))])
    a, b = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    kind = rng.choice(["add", "sub", "mul", "floordiv", "floormod", "div", "mod", "min", "max",
                       "select", "cast"])
    if kind in ("floordiv", "floormod", "div", "mod"):
        b = E.Max(E.Mul(b, b), E.IntImm("int64", 1))  # a positive divisor
        cls = {"floordiv": E.FloorDiv, "floormod": E.FloorMod, "div": E.Div, "mod": E.Mod}
        return cls[kind](a, b)
    if kind == "select":
        return E.Select(E.LT(a, b), a, E.Sub(b, a))
    if kind == "cast":
        return E.Cast("int64", E.Cast("int8", a))
    cls = {"add": E.Add, "sub": E.Sub, "mul": E.Mul, "min": E.Min, "max": E.Max}[kind]
    return cls(a, b)


def _rekey(e, keys):
    if isinstance(e, list) and e and e[0] == "var":
        return ["var", keys[e[1]]]
    return [_rekey(x, keys) for x in e] if isinstance(e, list) else e


@pytest.mark.parametrize("seed", range(40))
def test_vm_and_host_program_keys_give_one_expression_and_tir_values(seed):
    int_expr = pytest.importorskip("tvm.runtime.int_expr")
    rng = random.Random(seed)
    e = _random_expr(rng, 4)
    host = to_int_expr(e, lambda v: v.name, _fail)
    vm = to_int_expr(e, lambda v: {"n": 0, "m": 1}[v.name], _fail)
    assert _rekey(host, {"n": 0, "m": 1}) == vm
    assert json.loads(json.dumps(host)) == host
    int_expr.validate_expr(host)
    for nv, mv in [(3, -4), (-7, 2), (0, 5)]:
        folded = Analyzer().simplify(tir.stmt_functor.substitute(
            e, {n: E.IntImm("int64", nv), m: E.IntImm("int64", mv)}))
        assert isinstance(folded, E.IntImm), folded
        assert int_expr.evaluate(host, {"n": nv, "m": mv}) == folded.value
        assert int_expr.compile_expr(vm)([nv, mv]) == folded.value


def test_literals_casts_and_conditions():
    x = tir.Var("x", "int32")
    assert to_int_expr(E.IntImm("int32", 5), str, _fail) == 5
    assert to_int_expr(E.IntImm("bool", 1), str, _fail) is True
    assert to_int_expr(E.FloatImm("float32", 0.5), str, _fail) == 0.5
    assert to_int_expr(E.Cast("int64", x), lambda v: v.name, _fail) == ["cast", "int64",
                                                                        ["var", "x"]]
    likely = tir.op.likely(E.LT(x, E.IntImm("int32", 4)))
    assert to_int_expr(likely, lambda v: v.name, _fail) == ["lt", ["var", "x"], 4]


def test_unsupported_expressions_are_reported_by_the_caller():
    x = tir.Var("x", "int32")
    let = E.Let(x, E.IntImm("int32", 1), E.Add(x, x))
    with pytest.raises(CodegenError, match="Let"):
        to_int_expr(let, lambda v: v.name, _fail)
