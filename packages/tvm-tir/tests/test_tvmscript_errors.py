"""Parse errors point at the user's source (file, line, column) and say what is wrong."""

from __future__ import annotations

import pytest
from tvm.ir.diagnostics import DiagnosticError
from tvm.script import tir as T

HEADER = 'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((4, 4), "int32"), n: T.int32):\n'


def parse_error(body: str) -> DiagnosticError:
    """Parse ``HEADER + body`` and return the DiagnosticError it raises."""
    with pytest.raises(DiagnosticError) as info:
        T.parse(HEADER + body)
    return info.value


def where(err: DiagnosticError) -> tuple[int, int]:
    assert err.span is not None
    return err.span.line, err.span.column


def test_unknown_t_name_with_suggestion() -> None:
    err = parse_error("    A[0] = T.flaot32(1)\n")
    assert "has no attribute 'flaot32'" in err.message
    assert "did you mean T.float32?" in err.message
    assert where(err) == (2, 12)
    assert (err.span.end_line, err.span.end_column) == (2, 21)


def test_wrong_argument_count() -> None:
    err = parse_error("    A[0] = T.Select(n > 0, T.float32(1))\n")
    assert "wrong arguments to T.Select" in err.message
    assert "false_value" in err.message
    assert where(err) == (2, 12)
    err = parse_error("    A[0] = T.float32(0)\n    A[1] = T.exp(A[0], A[1])\n")
    assert "takes 1 argument(s), got 2" in err.message
    assert where(err) == (3, 12)


def test_undefined_variable_with_suggestion() -> None:
    err = parse_error("    for i in range(4):\n        B[i, 0] = nn + 1\n")
    assert err.message == "undefined variable 'nn'; did you mean 'n'?"
    assert where(err) == (3, 19)


def test_buffer_indexed_with_wrong_number_of_indices() -> None:
    err = parse_error("    B[0, 1] = B[0]\n")
    assert "buffer B has 2 dimension(s) but is indexed with 1 index(es)" in err.message
    assert where(err) == (2, 15)
    err = parse_error("    A[0, 1] = T.float32(0)\n")
    assert where(err) == (2, 5) and "indexed with 2" in err.message


def test_non_bool_conditions() -> None:
    err = parse_error("    if n:\n        A[0] = T.float32(1)\n")
    assert err.message == "an if condition must be a bool expression, got int32 (n)"
    assert where(err) == (2, 8)
    err = parse_error("    while n + 1:\n        A[0] = T.float32(1)\n")
    assert "a while condition must be a bool expression" in err.message and where(err) == (2, 11)
    err = parse_error("    assert n, 'bad'\n")
    assert "an assert condition" in err.message and where(err) == (2, 12)


def test_unsupported_python_syntax() -> None:
    err = parse_error("    try:\n        A[0] = T.float32(1)\n    except Exception:\n        pass\n")
    assert err.message == "unsupported Python syntax in TVMScript: try statement"
    assert where(err) == (2, 5)
    err = parse_error("    for i in range(4):\n        break\n")
    assert "break statement" in err.message and where(err) == (3, 9)
    err = parse_error("    for i in range(4):\n        A[i] = T.float32(0)\n    else:\n        pass\n")
    assert "for-else" in err.message
    err = parse_error("    A[0] = (x := T.float32(1))\n")
    assert "NamedExpr" in err.message and where(err) == (2, 13)


def test_type_errors_in_stores_and_lets() -> None:
    err = parse_error("    A[0] = n\n")
    assert err.message.startswith("cannot store a int32 value into buffer A of float32")
    assert where(err) == (2, 12)
    err = parse_error("    x: T.int64 = n\n")
    assert "cannot bind a int32 value to x: int64" in err.message and where(err) == (2, 5)
    err = parse_error("    n += 1\n")
    assert "TIR variables are immutable" in err.message


def test_bad_store_indices_are_located() -> None:
    """Found by the fuzzer: a store index that is no expression, or an int out of int64's
    range, raised a bare TypeError / ValueError with no location."""
    err = parse_error("    B[None, 0] = 1\n")
    assert "None" in err.message and where(err)[0] == 2
    err = parse_error("    B[2 ** 63, 0] = 1\n")
    assert "does not fit in int64" in err.message and where(err)[0] == 2


def test_block_misuse() -> None:
    err = parse_error("    T.reads(A[0:4])\n")
    assert err.message == "T.reads must be used directly inside a `with T.block(...)` body"
    assert where(err) == (2, 5)
    err = parse_error(
        "    for i in range(4):\n        with T.block('b'):\n"
        "            vi = T.axis.remap('S', [n])\n            A[vi] = T.float32(0)\n")
    assert "not the variable of an enclosing loop" in err.message and where(err) == (4, 13)
    err = parse_error("    with T.block('b'):\n        with T.init():\n            pass\n"
                      "        with T.init():\n            pass\n")
    assert "two T.init()" in err.message and where(err) == (5, 9)


def test_loops_and_targets() -> None:
    err = parse_error("    for i, j in T.grid(4, 4, 4):\n        pass\n")
    assert "makes 3 loop variable(s) but 2 name(s)" in err.message and where(err) == (2, 9)
    err = parse_error("    for i in [1, 2]:\n        pass\n")
    assert "a for loop iterates over range(...)" in err.message and where(err) == (2, 14)


def test_parameters_need_annotations_and_attrs_top_level() -> None:
    with pytest.raises(DiagnosticError, match="parameter 'x' needs a type annotation") as info:
        T.parse("def f(x):\n    pass\n")
    assert where(info.value) == (1, 7)
    err = parse_error("    for i in range(4):\n        T.func_attr({'a': 1})\n")
    assert "T.func_attr must be at the top level" in err.message
    with pytest.raises(DiagnosticError, match="private prim_func cannot set global_symbol"):
        T.parse("@T.prim_func(private=True)\ndef f():\n    T.func_attr({'global_symbol': 'g'})\n")


def test_syntax_error_in_text() -> None:
    with pytest.raises(DiagnosticError, match="invalid Python syntax") as info:
        T.parse("def f():\n    x = = 1\n")
    assert info.value.span.line == 2


def test_rendered_error_quotes_the_line_with_a_caret() -> None:
    err = parse_error("    A[0] = T.flaot32(1)\n")
    text = str(err)
    assert text.splitlines() == [
        "<string>:2:12: error: module 'T' (tvm.script.tir) has no attribute 'flaot32'; "
        "did you mean T.float32?",
        "    2 |     A[0] = T.flaot32(1)",
        "      |            ^^^^^^^^^",
    ]


def test_error_in_decorated_function_points_into_this_file() -> None:
    with pytest.raises(DiagnosticError) as info:

        @T.prim_func
        def bad(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = undefined_name  # noqa: F821 - the error under test

    span = info.value.span
    assert span.source_name == __file__
    line = open(__file__).read().splitlines()[span.line - 1]
    assert line[span.column - 1:].startswith("undefined_name")
    assert "undefined variable 'undefined_name'" in str(info.value)
    assert "A[i] = undefined_name" in str(info.value)


def test_indented_text_keeps_columns() -> None:
    text = "    def f(A: T.Buffer((4,), 'float32')):\n        A[0] = oops\n"
    with pytest.raises(DiagnosticError) as info:
        T.parse(text)
    assert where(info.value) == (2, 16)
