"""Relax TVMScript errors point at the offending line and column and say what is wrong."""

from __future__ import annotations

import inspect

import pytest
from tvm.ir.diagnostics import DiagnosticError
from tvm.script import ir as I
from tvm.script import relax as R


def error_at(text: str, line: int, col: int | None = None) -> str:
    with pytest.raises(DiagnosticError) as info:
        R.parse(text)
    err = info.value
    assert err.span is not None, err
    assert err.span.line == line, str(err)
    if col is not None:
        assert err.span.column == col, str(err)
    assert f"{line} |" in str(err)  # the rendered error quotes the line
    return err.message


HEAD = "@R.function\ndef f(a: R.Tensor((128, 256), 'float32'), b: R.Tensor((128, 512), 'float32')):\n"


def test_shape_mismatch_points_at_the_call() -> None:
    msg = error_at(HEAD + "    lv = R.matmul(a, b)\n    return lv\n", 3, 10)
    assert "relax.matmul" in msg and "256" in msg and "128" in msg


def test_dtype_mismatch() -> None:
    msg = error_at("@R.function\ndef f(a: R.Tensor((4,), 'float32'), b: R.Tensor((4,), 'int32')):\n"
                   "    c = R.add(a, b)\n    return c\n", 3, 9)
    assert "float32" in msg and "int32" in msg


def test_inner_call_of_nested_expression_is_located() -> None:
    text = HEAD + "    lv = R.add(a, R.matmul(b, a))\n    return lv\n"
    msg = error_at(text, 3, 19)
    assert "relax.matmul" in msg


def test_annotation_mismatch() -> None:
    msg = error_at("@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n"
                   "    lv: R.Tensor((5,), 'float32') = R.add(a, a)\n    return lv\n", 3, 9)
    assert "annotation" in msg and "(5)" in msg and "(4)" in msg


def test_return_annotation_mismatch() -> None:
    msg = error_at("@R.function\ndef f(a: R.Tensor((4,), 'float32')) -> R.Tensor((4,), 'int8'):\n"
                   "    return a\n", 2, 40)
    assert "return value" in msg and "int8" in msg


def test_unknown_operator_with_suggestion() -> None:
    msg = error_at("@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n"
                   "    b = R.nn.softmx(a)\n    return b\n", 3, 9)
    assert "unknown Relax operator 'relax.nn.softmx'" in msg and "R.nn.softmax" in msg
    msg = error_at("@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n"
                   "    b = R.mutliply(a, a)\n    return b\n", 3, 9)
    assert "did you mean R.multiply" in msg


def test_wrong_arity() -> None:
    msg = error_at("@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n"
                   "    b = R.add(a)\n    return b\n", 3, 9)
    assert "R.add" in msg and "x2" in msg


def test_undefined_name_with_suggestion() -> None:
    msg = error_at("@R.function\ndef f(value: R.Tensor((4,), 'float32')):\n"
                   "    b = R.add(value, valeu)\n    return b\n", 3, 22)
    assert "undefined variable 'valeu'" in msg and "did you mean 'value'" in msg


def test_signature_symbol_used_without_declaration() -> None:
    msg = error_at("@R.function\ndef f(a: R.Tensor(('n',), 'float32')):\n"
                   "    b: R.Tensor((n,), 'float32') = a\n    return b\n", 3, 18)
    assert "n = T.int64()" in msg


def test_structure_errors() -> None:
    assert "must end with a return" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    b = R.add(a, a)\n", 3)
    assert "last statement" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    return a\n    b = a\n"
        "    return b\n", 3)
    assert "needs a StructInfo annotation" in error_at(
        "@R.function\ndef f(a):\n    return a\n", 2, 7)
    assert "R.output" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    with R.dataflow():\n"
        "        b = R.add(a, a)\n    return b\n", 4)
    assert "not bound in this dataflow block" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    with R.dataflow():\n"
        "        b = R.add(a, a)\n        R.output(c)\n    return b\n", 5, 18)
    assert "needs an `else`" in error_at(
        "@R.function\ndef f(c: R.Prim('bool'), a: R.Tensor((4,), 'float32')):\n"
        "    if c:\n        b = a\n    return a\n", 3)
    assert "same variable" in error_at(
        "@R.function\ndef f(c: R.Prim('bool'), a: R.Tensor((4,), 'float32')):\n"
        "    if c:\n        b = a\n    else:\n        d = a\n    return a\n", 6)
    assert "must be an @R.function" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    def g():\n        pass\n"
        "    return a\n", 3)
    assert "for loop is not supported" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    for i in range(3):\n"
        "        pass\n    return a\n", 3)
    assert "unknown @R.function option" in error_at(
        "@R.function(inline=True)\ndef f(a: R.Tensor((4,), 'float32')):\n    return a\n", 2)


def test_invalid_syntax_and_missing_metadata() -> None:
    assert "invalid Python syntax" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n    return a +\n", 3)
    assert "undefined variable 'metadata'" in error_at(
        "@R.function\ndef f(a: R.Tensor((4,), 'float32')):\n"
        "    b = R.add(a, metadata['relax.expr.Constant'][0])\n    return b\n", 3)


MODULE_ERRORS = '''
@I.ir_module
class Mod:
    @T.prim_func(private=True)
    def add(x: T.Buffer((4,), "float32"), y: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("y"):
                vi = T.axis.spatial(4, i)
                y[vi] = x[vi]

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        y = {call}
        return y

    @R.function
    def loop(x: R.Tensor((4,), "float32")):
        y = loop(x)
        return y
'''


def module_error(call: str, line: int) -> str:
    with pytest.raises(DiagnosticError) as info:
        I.parse(MODULE_ERRORS.format(call=call).replace("    def loop", "    def lp").replace(
            "loop(x)", "x"))
    assert info.value.span.line == line, str(info.value)
    return info.value.message


def test_module_errors() -> None:
    msg = module_error("cls.ad(x)", 13)
    assert "has no function 'ad'" in msg and "did you mean 'add'" in msg
    msg = module_error("R.call_tir(cls.add, (x, x), out_sinfo=R.Tensor((4,), 'float32'))", 13)
    assert "takes 2 parameter(s)" in msg
    with pytest.raises(DiagnosticError) as info:
        I.parse(MODULE_ERRORS.format(call="x"))
    assert "recursively" in info.value.message and info.value.span.line == 17


def test_errors_in_decorated_functions_use_file_lines() -> None:
    with pytest.raises(DiagnosticError) as info:
        @R.function
        def f(a: R.Tensor((4,), "float32")):
            b = R.add(a, undefined_thing)  # noqa: F821
            return b
    line = inspect.currentframe().f_lineno - 2
    assert info.value.span.line == line
    assert info.value.span.source.name == __file__
