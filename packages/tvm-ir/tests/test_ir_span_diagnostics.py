import pytest
from tvm.ffi import TVMError, from_json, structural_equal, to_json
from tvm.ir import (
    Diagnostic,
    DiagnosticContext,
    DiagnosticError,
    SourceName,
    Span,
    get_source,
    register_source,
    render_diagnostic,
)

SRC = "def f(a):\n    y = x + 1\n\treturn y\n"


def setup_module():
    register_source("model.py", SRC)


def test_span_fields_and_defaults():
    s = Span("model.py", 2, 9)
    assert isinstance(s.source, SourceName) and s.source_name == "model.py"
    assert (s.end_line, s.end_column) == (2, 9)
    assert str(s) == "model.py:2:9"
    assert structural_equal(s, Span(SourceName("model.py"), 2, 9, 2, 9))
    assert not structural_equal(s, Span("model.py", 2, 10))
    assert structural_equal(from_json(to_json(s)), s)


def test_span_merge():
    a = Span("m.py", 2, 5, 2, 8)
    b = Span("m.py", 1, 3, 1, 4)
    m = a.merge(b)
    assert (m.line, m.column, m.end_line, m.end_column) == (1, 3, 2, 8)
    with pytest.raises(ValueError, match="different sources"):
        a.merge(Span("other.py", 1, 1))


def test_span_errors():
    with pytest.raises(ValueError, match="line"):
        Span("m.py", -1, 0)
    with pytest.raises(ValueError, match="ends"):
        Span("m.py", 3, 5, 2, 1)
    with pytest.raises(TypeError, match="SourceName or str"):
        Span(3, 1, 1)
    with pytest.raises(TypeError):
        SourceName(5)


def test_diagnostic_error_with_caret():
    err = DiagnosticError("undefined variable 'x'", Span("model.py", 2, 9, 2, 10))
    assert isinstance(err, TVMError)
    text = str(err)
    lines = text.splitlines()
    assert lines[0] == "model.py:2:9: error: undefined variable 'x'"
    assert lines[1] == "    2 |     y = x + 1"
    assert lines[2] == "      |         ^"
    # caret sits under the x
    assert lines[2].index("^") == lines[1].index("x")


def test_caret_width_and_tabs():
    text = render_diagnostic("warning", "wide", Span("model.py", 2, 5, 2, 14))
    assert text.splitlines()[2].endswith("^" * 9)
    tab = render_diagnostic("error", "tabbed", Span("model.py", 3, 2, 3, 8))
    quoted, caret = tab.splitlines()[1:]
    assert caret.split("| ", 1)[1] == "\t^^^^^^"
    multi = render_diagnostic("error", "multi", Span("model.py", 1, 5, 2, 3))
    assert multi.splitlines()[2].endswith("^" * 5)  # to the end of line 1


def test_unknown_source_has_no_quote():
    err = DiagnosticError("oops", Span("<nowhere>", 4, 2))
    assert str(err) == "<nowhere>:4:2: error: oops"
    assert str(DiagnosticError("no span")) == "error: no span"


def test_file_fallback(tmp_path):
    path = tmp_path / "on_disk.py"
    path.write_text("a = 1\nb = c\n")
    out = str(DiagnosticError("bad", Span(str(path), 2, 5)))
    assert "b = c" in out and out.endswith("^")
    assert get_source(str(path)) is None


def test_context_collects():
    diag = DiagnosticContext()
    diag.warning("unused", Span("model.py", 1, 7, 1, 8))
    assert not diag.has_errors
    diag.raise_if_errors()
    diag.error("undefined", Span("model.py", 2, 9, 2, 10))
    diag.note("did you mean 'a'?")
    assert len(diag) == 3 and [d.level for d in diag] == ["warning", "error", "note"]
    with pytest.raises(DiagnosticError) as info:
        diag.raise_if_errors()
    text = str(info.value)
    assert info.value.message == "undefined"
    assert "model.py:1:7: warning: unused" in text
    assert "model.py:2:9: error: undefined" in text
    assert text.endswith("note: did you mean 'a'?")
    with pytest.raises(ValueError, match="level"):
        Diagnostic("fatal", "x")
    with pytest.raises(TypeError):
        register_source("x", 3)


def test_span_naming_a_model_layer():
    s = Span("resnet", 7, 1, name="/layer1/conv1/Conv")
    assert s.name == "/layer1/conv1/Conv" and str(s) == "resnet:/layer1/conv1/Conv"
    assert Span("resnet", 7, 1).name == ""
    assert structural_equal(from_json(to_json(s)), s)
    assert not structural_equal(s, Span("resnet", 7, 1, name="other"))
    assert s.merge(Span("resnet", 8, 1, name="/layer1/conv1/Conv")).name == s.name
    assert s.merge(Span("resnet", 8, 1, name="/layer1/relu")).name == ""
    with pytest.raises(TypeError, match="Span.name must be a str"):
        Span("resnet", 1, 1, name=3)
