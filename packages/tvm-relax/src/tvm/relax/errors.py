"""Errors raised while building, inferring and checking Relax programs."""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi.error import TVMError

__all__ = ["RelaxError", "StructInfoError", "NormalizeError", "WellFormedError"]


def _where(span: Any) -> str:
    if span is None:
        return ""
    return f" (at {span})"


class RelaxError(TVMError):
    """Base of Relax errors; ``span`` (a :class:`tvm.ir.Span`) is kept when known."""

    def __init__(self, message: str, span: Optional[Any] = None):
        super().__init__(message + _where(span))
        self.span = span


class StructInfoError(RelaxError, TypeError):
    """An operator or call whose arguments do not fit: wrong arity, shape, dtype or kind.

    ``op`` names the operator (``"relax.add"``) when the error comes from one.
    """

    def __init__(self, message: str, op: Optional[str] = None, span: Optional[Any] = None):
        prefix = f"{op}: " if op else ""
        super().__init__(prefix + message, span)
        self.op = op


class NormalizeError(RelaxError, ValueError):
    """A program that cannot be normalised (misused BlockBuilder scopes, bad nesting)."""


class WellFormedError(RelaxError, ValueError):
    """Raised by :func:`tvm.relax.analysis.verify_well_formed`; ``problems`` lists every finding."""

    def __init__(self, problems: list[str]):
        text = "\n  ".join(problems)
        super().__init__(f"the program is not well formed ({len(problems)} problem(s)):\n  {text}")
        self.problems = problems
