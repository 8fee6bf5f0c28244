"""Source locations: ``SourceName`` and ``Span``.

Lines and columns are 1-based; ``end_column`` is exclusive, so a span of one character at
column 5 is ``Span(src, 3, 5, 3, 6)``.  A span may also *name* what it covers (``name``: a
model layer, e.g. the ONNX node ``"/layer1/conv1/Conv"`` at position 7 of graph ``resnet``
is ``Span("resnet", 7, 1, name="/layer1/conv1/Conv")``); the compiler carries those names
to kernels and profiles as their source layers.  IR nodes keep spans in ``ignore`` fields, so spans
never affect structural equality of the IR, while a span compared on its own is a value.
"""

from __future__ import annotations

from tvm.ffi import Object, register_object, tree_field

__all__ = ["SourceName", "Span"]


@register_object("ir.SourceName")
class SourceName(Object):
    """The name of a source (a file path, ``"<string>"``, a model name)."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"SourceName.name must be a str, got {type(self.name).__name__}")

    def __str__(self) -> str:
        return self.name


@register_object("ir.Span")
class Span(Object):
    """A region of a source: ``Span(source, line, column, end_line=line, end_column=column,
    name="")``.

    ``source`` may be given as a plain string; it is wrapped in a :class:`SourceName`.
    ``name`` names the construct the span covers (a model layer); ``""`` for plain text.
    """

    source: SourceName
    line: int
    column: int
    end_line: int = tree_field(default=0)
    end_column: int = tree_field(default=0)
    name: str = tree_field(default="", kw_only=True)

    def __post_init__(self) -> None:
        if isinstance(self.source, str):
            object.__setattr__(self, "source", SourceName(self.source))
        elif not isinstance(self.source, SourceName):
            raise TypeError(
                f"Span.source must be a SourceName or str, got {type(self.source).__name__}"
            )
        if not isinstance(self.name, str):
            raise TypeError(f"Span.name must be a str, got {type(self.name).__name__}")
        for field in ("line", "column", "end_line", "end_column"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Span.{field} must be a non-negative int, got {value!r}")
        if self.end_line == 0:
            object.__setattr__(self, "end_line", self.line)
        if self.end_column == 0 and self.end_line == self.line:
            object.__setattr__(self, "end_column", self.column)
        if (self.end_line, self.end_column) < (self.line, self.column):
            raise ValueError(
                f"Span ends ({self.end_line}:{self.end_column}) before it starts "
                f"({self.line}:{self.column})"
            )

    @property
    def source_name(self) -> str:
        """The source's name as a string."""
        return self.source.name

    def merge(self, other: Span) -> Span:
        """The smallest span covering both (they must share a source)."""
        if other.source.name != self.source.name:
            raise ValueError(
                f"cannot merge spans of different sources {self.source.name!r} and "
                f"{other.source.name!r}"
            )
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        name = self.name if self.name == other.name else ""
        return Span(self.source, start[0], start[1], end[0], end[1], name=name)

    def __str__(self) -> str:
        if self.name:
            return f"{self.source.name}:{self.name}"
        return f"{self.source.name}:{self.line}:{self.column}"
