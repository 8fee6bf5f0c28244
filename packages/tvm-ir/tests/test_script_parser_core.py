"""Shared TVMScript machinery: sources and spans, the expression evaluator, decorators and
text entry points, and the printer helpers."""

from __future__ import annotations

import ast
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tvm.ir.diagnostics import DiagnosticError
from tvm.script.parser_core import (
    DocBuilder, ExprEvaluator, NameTable, Source, VarTable, float_literal, from_source,
    function_env, in_class_body, parse_definition, register_decorator, sanitize_name,
    str_literal,
)


def test_source_from_text_spans_and_dedent() -> None:
    src = Source.from_text("    def f():\n        return x + 1\n", "model.py")
    mod = src.parse()
    ret = mod.body[0].body[0]
    span = src.span(ret.value.left)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 16, 2, 17)
    assert str(src.error("bad", ret.value.left)).startswith("model.py:2:16: error: bad")


def test_source_columns_count_characters_not_bytes() -> None:
    src = Source.from_text("s = 'héé' + y\n")
    node = src.parse().body[0].value.right
    assert src.span(node).column == 13


def test_source_from_object_points_into_this_file() -> None:
    def sample():
        return value_here  # noqa: F821

    src = Source.from_object(sample)
    ret = src.parse().body[0].body[0]
    span = src.span(ret.value)
    line = open(__file__).read().splitlines()[span.line - 1]
    assert span.source_name == __file__
    assert line[span.column - 1:].startswith("value_here")


def test_source_errors() -> None:
    with pytest.raises(DiagnosticError, match="invalid Python syntax") as info:
        Source.from_text("x = (1,\n").parse()
    assert info.value.span.line == 1
    with pytest.raises(OSError, match="cannot read the source"):
        Source.from_object(len)


def test_var_table_scopes_and_suggestions() -> None:
    table = VarTable([{"outer": 1}])
    table.add("alpha", 2)
    with table.scope():
        table.add("beta", 3)
        assert table.get("beta") == 3 and table.get("outer") == 1 and table.get("len") is len
    assert table.get("beta", None) is None
    assert table.suggest("alpah") == "; did you mean 'alpha'?"
    assert table.suggest("zzz") == ""


def _evaluate(text: str, **names):
    """Evaluate as for a decorated Python definition (trusted: full Python semantics)."""
    src = Source.from_text(text)
    src.trusted = True
    node = src.parse().body[0].value
    return ExprEvaluator(src, VarTable([names], trusted=True)).eval(node)


def test_evaluator_python_semantics() -> None:
    assert _evaluate("a * 2 + b[1] - -c", a=3, b=[0, 5], c=1) == 12
    assert _evaluate("{'k': (x, *ys), **extra}", x=1, ys=[2, 3], extra={"z": 4}) == {
        "k": (1, 2, 3), "z": 4}
    assert _evaluate("1 < x <= 3 and not y", x=2, y=False) is True
    assert _evaluate("f(2, k=3)", f=lambda a, k: a * k) == 6
    assert _evaluate("[i * i for i in range(n)]", n=3) == [0, 1, 4]
    assert _evaluate("a if a > 0 else -a", a=-4) == 4
    assert _evaluate("m.pi", m=math) == math.pi


def test_evaluator_errors_have_locations() -> None:
    with pytest.raises(DiagnosticError, match="undefined variable 'q'") as info:
        _evaluate("1 + q")
    assert info.value.span.column == 5
    with pytest.raises(DiagnosticError, match="has no attribute 'pie'; did you mean m.pi") as info:
        _evaluate("m.pie", m=math)
    with pytest.raises(DiagnosticError, match=r"wrong arguments to f\(a, k\)"):
        _evaluate("f(1, 2, 3)", f=lambda a, k: 0)
    with pytest.raises(DiagnosticError, match="is not callable"):
        _evaluate("x(1)", x=3)
    with pytest.raises(DiagnosticError, match="unsupported Python syntax"):
        _evaluate("await x", x=1)


def test_decorator_registry_and_from_source() -> None:
    def toy(func=None, **options):
        return func

    def handler(node, source, env, options):
        evaluator = ExprEvaluator(source, VarTable(env))
        value = evaluator.eval(node.body[0].value)
        return (node.name, value, options)

    register_decorator(toy, handler)
    text = "@toy(scale=2)\ndef answer():\n    return base * 7\n"
    assert from_source(text, env={"toy": toy, "base": 6}) == ("answer", 42, {"scale": 2})
    src = Source.from_text(text)
    node = src.parse().body[0]
    assert parse_definition(node, src, [{"toy": toy, "base": 1}])[1] == 7
    with pytest.raises(DiagnosticError, match="has no TVMScript decorator"):
        from_source("def plain():\n    pass\n")
    with pytest.raises(DiagnosticError, match="import failed"):
        from_source("import not_a_module_anywhere\n")


def test_function_env_and_class_body_detection() -> None:
    import sys

    hidden = 5

    def inner():
        return hidden

    env = function_env(inner, sys._getframe())
    assert env[0] == {"hidden": 5} and env[-1] is globals()
    seen = {}

    class Probe:
        seen["class"] = in_class_body(sys._getframe())

    assert seen["class"] is True and in_class_body(sys._getframe()) is False
    assert Probe


def test_name_table_deduplicates_and_sanitizes() -> None:
    names = NameTable(["T"])
    a, b, c, d = object(), object(), object(), object()
    assert names.define(a, "i") == "i"
    assert names.define(b, "i") == "i_1"
    assert names.define(c, "i_1") == "i_2"
    assert names.define(d, "T") == "T_1"
    assert names.get(b) == "i_1" and b in names
    assert sanitize_name("threadIdx.x") == "threadIdx_x"
    assert sanitize_name("1abc") == "v_1abc"
    assert sanitize_name("lambda") == "lambda_"
    assert sanitize_name("") == "v"


def test_doc_builder_indents() -> None:
    doc = DocBuilder()
    doc.line("if x:")
    with doc.indent():
        doc.line("y = 1")
    doc.line("z = 2")
    assert doc.text() == "if x:\n    y = 1\nz = 2\n"


@given(st.text())
def test_str_literal_reads_back(value: str) -> None:
    assert ast.literal_eval(str_literal(value)) == value


@given(st.floats())
def test_float_literal_reads_back(value: float) -> None:
    read = float(ast.literal_eval(float_literal(value)))
    assert read == value or (math.isnan(read) and math.isnan(value))
