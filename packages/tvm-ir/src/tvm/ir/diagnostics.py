"""Diagnostics: errors that point at source text.

``DiagnosticError("undefined variable 'x'", span)`` prints as::

    model.py:3:9: error: undefined variable 'x'
        3 |     y = x + 1
          |         ^

The source line is taken from the registry filled by :func:`register_source` (parsers
register the text they parse), falling back to the file on disk.  A
:class:`DiagnosticContext` collects several diagnostics and raises them together.
"""

from __future__ import annotations

import dataclasses
import linecache
from collections.abc import Iterator

from tvm.ffi import TVMError

from .span import Span

__all__ = [
    "Diagnostic",
    "DiagnosticContext",
    "DiagnosticError",
    "register_source",
    "get_source",
    "render_diagnostic",
]

_LEVELS = ("error", "warning", "note", "help")

# file name -> source text
_SOURCES: dict[str, str] = {}


def register_source(name: str, text: str) -> None:
    """Remember the text of source ``name`` so diagnostics can quote its lines."""
    if not isinstance(name, str) or not isinstance(text, str):
        raise TypeError("register_source(name, text) expects two strings")
    _SOURCES[name] = text


def get_source(name: str) -> str | None:
    """The registered text of ``name``, or None."""
    return _SOURCES.get(name)


def _source_line(name: str, line: int) -> str | None:
    text = _SOURCES.get(name)
    if text is not None:
        lines = text.splitlines()
        return lines[line - 1] if 1 <= line <= len(lines) else None
    got = linecache.getline(name, line) if line >= 1 else ""
    return got.rstrip("\n") if got else None


def render_diagnostic(level: str, message: str, span: Span | None) -> str:
    """``file:line:col: level: message`` followed by the quoted line and a caret, if known."""
    if span is None:
        return f"{level}: {message}"
    head = f"{span}: {level}: {message}"
    text = _source_line(span.source.name, span.line)
    if text is None:
        return head
    gutter = str(span.line)
    pad = " " * len(gutter)
    start = max(span.column, 1)
    if span.end_line == span.line and span.end_column > start:
        width = span.end_column - start
    elif span.end_line > span.line:
        width = max(len(text) - start + 1, 1)
    else:
        width = 1
    # Keep tabs where they are so the caret lines up with the quoted text.
    lead = "".join(c if c == "\t" else " " for c in text[: start - 1])
    lead += " " * max(start - 1 - len(text), 0)
    return f"{head}\n    {gutter} | {text}\n    {pad} | {lead}{'^' * width}"


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One message at one place: ``level`` is error, warning, note or help."""

    level: str
    message: str
    span: Span | None = None

    def __post_init__(self) -> None:
        if self.level not in _LEVELS:
            raise ValueError(f"diagnostic level must be one of {_LEVELS}, got {self.level!r}")

    def render(self) -> str:
        return render_diagnostic(self.level, self.message, self.span)


class DiagnosticError(TVMError):
    """An error at a source location; ``str`` quotes the source line with a caret.

    ``DiagnosticError(message, span)`` or, for several diagnostics at once,
    ``DiagnosticError.from_diagnostics([...])``.
    """

    def __init__(self, message: str, span: Span | None = None) -> None:
        super().__init__(message, span)
        self.message = message
        self.span = span
        self.diagnostics: tuple[Diagnostic, ...] = (Diagnostic("error", message, span),)

    @classmethod
    def from_diagnostics(cls, diagnostics: list[Diagnostic]) -> DiagnosticError:
        """One error carrying every diagnostic; the first error is the headline."""
        if not diagnostics:
            raise ValueError("from_diagnostics needs at least one diagnostic")
        first = next((d for d in diagnostics if d.level == "error"), diagnostics[0])
        err = cls(first.message, first.span)
        err.diagnostics = tuple(diagnostics)
        return err

    def __str__(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)


class DiagnosticContext:
    """Collects diagnostics (e.g. while parsing) and raises them together.

    ::

        diag = DiagnosticContext()
        diag.error("unknown op 'foo'", span)
        diag.note("defined here", other_span)
        diag.raise_if_errors()
    """

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def error(self, message: str, span: Span | None = None) -> None:
        self.emit(Diagnostic("error", message, span))

    def warning(self, message: str, span: Span | None = None) -> None:
        self.emit(Diagnostic("warning", message, span))

    def note(self, message: str, span: Span | None = None) -> None:
        self.emit(Diagnostic("note", message, span))

    @property
    def has_errors(self) -> bool:
        return any(d.level == "error" for d in self.diagnostics)

    def render(self) -> str:
        """Every collected diagnostic, in order."""
        return "\n".join(d.render() for d in self.diagnostics)

    def raise_if_errors(self) -> None:
        """Raise a :class:`DiagnosticError` carrying everything collected, if any is an error."""
        if self.has_errors:
            raise DiagnosticError.from_diagnostics(self.diagnostics)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.diagnostics)

    def __len__(self) -> int:
        return len(self.diagnostics)
