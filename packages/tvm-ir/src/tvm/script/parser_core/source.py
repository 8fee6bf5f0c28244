"""Source text of a TVMScript definition, with the mapping back to the user's file.

A :class:`Source` holds the (dedented) text of one decorated function or class, where that
text sits in its file (first line, removed indentation), and turns Python ``ast`` positions
into :class:`~tvm.ir.span.Span` objects that point at the user's file: 1-based lines and
columns, columns counted in characters (``ast`` counts UTF-8 bytes).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from tvm.ir.diagnostics import DiagnosticError, register_source
from tvm.ffi.structural import deep_recursion
from tvm.ir.span import SourceName, Span

__all__ = ["Source"]


class Source:
    """The text of one TVMScript definition and its place in a file.

    ``text`` is parseable on its own (the common indentation of the definition removed);
    line 1 of ``text`` is line ``start_line`` of file ``name`` and every non-blank line lost
    ``indent`` leading characters.  ``trusted`` is True only for the source of a Python
    definition (the user's own code, evaluated with its full environment); script text is
    data and is evaluated under :mod:`~tvm.script.parser_core.vocabulary`'s rules.
    """

    __slots__ = ("text", "name", "start_line", "indent", "trusted", "_lines", "_ascii",
                 "_source_name")

    def __init__(self, text: str, name: str = "<string>", start_line: int = 1, indent: int = 0,
                 trusted: bool = False):
        self.text = text
        self.trusted = trusted
        self.name = name
        self.start_line = start_line
        self.indent = indent
        self._lines = text.splitlines()
        self._ascii = text.isascii()
        self._source_name = SourceName(name)

    @classmethod
    def from_text(cls, text: str, name: str = "<string>") -> Source:
        """A source for script text; the text is registered so diagnostics can quote it."""
        if not isinstance(text, str):
            raise TypeError(f"TVMScript source must be a str, got {type(text).__name__}")
        register_source(name, text)
        lines = text.splitlines(keepends=True)
        indent = _common_indent(lines)
        if indent:
            text = "".join(_dedent_line(line, indent) for line in lines)
        return cls(text, name, 1, len(indent))

    @classmethod
    def from_object(cls, obj: Any) -> Source:
        """The source of a Python function or class, as ``inspect`` finds it."""
        try:
            lines, start = inspect.getsourcelines(obj)
        except (OSError, TypeError) as err:
            what = getattr(obj, "__qualname__", repr(obj))
            raise OSError(
                f"cannot read the source of {what} to parse it as TVMScript ({err}); define it "
                "in a file, or pass the script text to tvm.script.tir.parse(text)"
            ) from None
        name = inspect.getsourcefile(obj) or inspect.getfile(obj)
        indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())] if lines else ""
        text = "".join(_dedent_line(line, indent) for line in lines)
        return cls(text, name, max(start, 1), len(indent), trusted=True)

    def parse(self) -> ast.Module:
        """The Python AST of the text; a syntax error becomes a :class:`DiagnosticError`."""
        try:
            with deep_recursion():
                return ast.parse(self.text)
        except (RecursionError, MemoryError):  # CPython's parser gives up on deep nesting
            raise DiagnosticError(
                "the script is nested too deeply for Python's parser",
                Span(self._source_name, self.start_line, self.indent + 1, 0, 0)) from None
        except SyntaxError as err:
            line = err.lineno or 1
            col = err.offset or 1
            span = Span(
                self._source_name, self.start_line + line - 1, col + self.indent, 0, 0
            )
            raise DiagnosticError(f"invalid Python syntax: {err.msg}", span) from None

    # -- positions ---------------------------------------------------------------------------
    def _column(self, line: int, byte_col: int) -> int:
        """1-based character column in the file for an ``ast`` byte offset on ``line``."""
        if not self._ascii and 1 <= line <= len(self._lines):
            text = self._lines[line - 1]
            if not text.isascii():
                byte_col = len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        return byte_col + self.indent + 1

    def span(self, node: Any) -> Span | None:
        """The span of an ``ast`` node in the user's file (None for nodes without one)."""
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        col = self._column(line, node.col_offset)
        end_line = getattr(node, "end_lineno", None) or line
        end_col_offset = getattr(node, "end_col_offset", None)
        end_col = self._column(end_line, end_col_offset) if end_col_offset is not None else col
        if (end_line, end_col) < (line, col):
            end_line, end_col = line, col
        first = self.start_line - 1
        return Span(self._source_name, first + line, col, first + end_line, end_col)

    def error(self, message: str, node: Any = None) -> DiagnosticError:
        """A :class:`DiagnosticError` at ``node`` (raise it)."""
        return DiagnosticError(message, self.span(node) if node is not None else None)

    def segment(self, node: Any) -> str:
        """The source text of ``node`` (for messages), or its unparsed form."""
        text = ast.get_source_segment(self.text, node)
        return text if text is not None else ast.unparse(node)


def _dedent_line(line: str, indent: str) -> str:
    if line.startswith(indent):
        return line[len(indent) :]
    if not line.strip():
        return "\n" if line.endswith("\n") else ""
    return line


def _common_indent(lines: list[str]) -> str:
    """The indentation of the first non-blank, non-comment line."""
    for line in lines:
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return line[: len(line) - len(stripped)]
    return ""
