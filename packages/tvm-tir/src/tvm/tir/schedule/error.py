"""Errors raised by schedule primitives.

A :class:`ScheduleError` names the primitive, the block or loop it was applied to and the
reason, e.g.::

    ScheduleError: parallel: loop 'k' (block 'C'): the loop is bound to the reduction
    iteration variable 'vk' of block 'C'; only loops over data-parallel iterations can be
    parallel

A failed primitive leaves the schedule unchanged (see :meth:`Schedule._run_primitive`).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import TVMError

__all__ = ["ScheduleError", "InvalidHandleError", "describe_stmt"]


def describe_stmt(stmt: Any) -> str:
    """``block 'C'``, ``loop 'i'`` or the type of any other statement.  For the sref of a
    loop, the blocks below it are named too: ``loop 'k' (around block 'C')``."""
    from ..stmt import Block, BlockRealize, For
    from .state import StmtSRef

    if isinstance(stmt, StmtSRef):
        if stmt.mark:
            return f"the {stmt.mark!r} location"
        if stmt.is_loop:
            from .analysis import blocks_under

            blocks = [repr(b.block.name_hint) for b in blocks_under(stmt, include_nested=False)]
            if blocks:
                shown = ", ".join(blocks[:3]) + (", ..." if len(blocks) > 3 else "")
                plural = "s" if len(blocks) > 1 else ""
                return f"{describe_stmt(stmt.stmt)} (around block{plural} {shown})"
        stmt = stmt.stmt
    if isinstance(stmt, BlockRealize):
        stmt = stmt.block
    if isinstance(stmt, Block):
        return f"block {stmt.name_hint!r}"
    if isinstance(stmt, For):
        return f"loop {stmt.loop_var.name!r}"
    if stmt is None:
        return "<removed statement>"
    return type(stmt).__name__


class ScheduleError(TVMError, ValueError):
    """A schedule primitive's precondition does not hold (or its input is malformed).

    ``primitive`` is the primitive's name (``"split"``), ``subjects`` the statements it is
    about (blocks or loops, described by name), ``reason`` what is wrong and, ideally, what
    to do instead.
    """

    def __init__(self, primitive: str, reason: str, *subjects: Any, hint: Optional[str] = None):
        self.primitive = primitive
        self.reason = reason
        self.subjects = tuple(s for s in subjects if s is not None)
        self.hint = hint
        where = ", ".join(
            s if isinstance(s, str) else describe_stmt(s) for s in self.subjects
        )
        message = f"{primitive}: {where}: {reason}" if where else f"{primitive}: {reason}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidHandleError(ScheduleError):
    """A BlockRV/LoopRV/ExprRV that the schedule does not know, or whose statement was removed."""
