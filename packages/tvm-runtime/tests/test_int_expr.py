"""The one run-time expression format (tvm.runtime.int_expr): semantics, JSON round trip,
and the same values whether the variables are VM heap slots or host-program names."""

import json

import pytest
from tvm.runtime.int_expr import (
    ExprError, compile_expr, evaluate, expr_vars, format_expr, validate_expr,
)
from tvm.runtime.vm.bytecode import BytecodeError, validate_function


def v(key):
    return ["var", key]


CASES = [
    (["add", v("n"), 3], 7),
    (["sub", 3, v("n")], -1),
    (["mul", v("n"), v("m")], 36),
    (["div", -7, 2], -3), (["mod", -7, 2], -1),
    (["floordiv", -7, 2], -4), (["floormod", -7, 2], 1),
    (["div", 1.0, 4.0], 0.25), (["floordiv", 7.5, 2.0], 3.0),
    (["min", v("n"), ["max", 1, 2]], 2),
    (["select", ["lt", v("n"), 2], 10, 20], 20),
    (["select", ["and", ["ge", 3, 3], ["not", ["ne", 1, 1]]], 1, ["div", 1, 0]], 1),
    (["or", ["lt", 2, 1], ["le", 1, 1]], True),
    (["eq", v("n"), 4], True), (["gt", v("n"), v("m")], False),
    (["neg", v("m")], -9),
    (["cast", "uint8", -1], 255), (["cast", "int32", -2.7], -2),
    (["cast", "int8", ["mul", v("m"), 20]], -76), (["cast", "float32", v("n")], 4.0),
    (["cast", "bool", v("n")], True),
    (True, True), (2.5, 2.5), (12, 12),
]


@pytest.mark.parametrize("expr, expected", CASES)
def test_vm_and_host_program_uses_evaluate_identically(expr, expected):
    """The VM's variables are heap slots, a host program's are names; same values."""
    slots = {"n": 0, "m": 1}

    def as_vm(e):
        if isinstance(e, list) and e and e[0] == "var":
            return ["var", slots[e[1]]]
        if isinstance(e, list):
            return [as_vm(x) for x in e]
        return e

    host = evaluate(expr, {"n": 4, "m": 9})
    vm = compile_expr(as_vm(expr))([4, 9])
    assert host == expected and vm == expected
    assert type(host) is type(vm)


@pytest.mark.parametrize("expr, expected", CASES)
def test_json_round_trip_keeps_the_value_and_the_text(expr, expected):
    back = json.loads(json.dumps(expr))
    assert back == expr
    validate_expr(back)
    assert evaluate(back, {"n": 4, "m": 9}) == expected
    assert format_expr(back) == format_expr(expr)


def test_text_names_heap_slots_and_host_variables():
    e = ["mul", ["add", ["var", 0], 1], ["var", 1]]
    assert format_expr(e, ["n", "m"]) == "((n + 1) * m)"
    assert format_expr(e) == "((h0 + 1) * h1)"
    assert format_expr(["floordiv", ["var", "n"], ["cast", "int32", 4]]) == "(n // int32(4))"
    assert expr_vars(e) == [0, 1]


@pytest.mark.parametrize("bad, message", [
    (["pow", 1, 2], "unknown expression operator 'pow'"),
    (["add", 1], "'add' takes 2 operand"),
    (["var"], "bad variable"),
    (["var", True], "bad variable"),
    (["cast", "nonsense", 1], "bad cast"),
    ("n", "bad expression"),
    ([], "bad expression"),
])
def test_malformed_expressions_are_rejected(bad, message):
    with pytest.raises(ExprError, match=message):
        validate_expr(bad)


def test_errors_at_evaluation():
    with pytest.raises(ZeroDivisionError):
        evaluate(["floordiv", 1, 0], {})
    with pytest.raises(KeyError):
        evaluate(["var", "missing"], {})


def test_the_vm_checks_heap_slots_against_its_heap():
    fn = {"name": "f", "params": ["x"], "num_regs": 2, "heap_size": 1,
          "code": [{"op": "alloc_storage", "dst": 1, "size": ["mul", ["var", 1], 4],
                    "device": 0, "scope": "global"}, {"op": "ret", "value": ["reg", 1]}]}
    with pytest.raises(BytecodeError, match=r"instruction 0: heap slot .*1.* is not defined"):
        validate_function(fn, 0)
    fn["code"][0]["size"] = ["mul", ["var", "n"], 4]  # a host-program name is no heap slot
    with pytest.raises(BytecodeError, match="heap slot"):
        validate_function(fn, 0)
    fn["code"][0]["size"] = ["mul", ["var", 0], 4]
    validate_function(fn, 0)


@pytest.mark.parametrize("version", [1, 2])
def test_vm_programs_with_the_old_expression_format_are_refused(version):
    import struct

    from tvm.runtime import ModuleLoadError
    from tvm.runtime.vm.executable import Executable

    blob = struct.pack("<8sII", b"TVMVMPRG", version, 2) + b"{}"
    with pytest.raises(ModuleLoadError, match=f"version {version} was written by an older "
                                              "tvm-runtime.*rebuild the executable"):
        Executable.from_program_bytes(blob)
