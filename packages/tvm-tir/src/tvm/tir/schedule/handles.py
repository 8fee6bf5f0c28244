"""Random variables (handles) a schedule hands out: BlockRV, LoopRV and ExprRV.

A handle is an opaque name for "the block C" or "the second loop around C"; the schedule's
symbol table resolves it to the current statement (through a :class:`StmtSRef`) each time
it is used, so a handle stays valid while primitives rebuild the (immutable) IR around it.
An :class:`ExprRV` is a ``tir.Var`` standing for a sampled integer; it can be used inside
expressions (``sch.split(l, [None, v0 * 2])``).
"""

from __future__ import annotations

from tvm.ffi import register_object

from ..expr import Var

__all__ = ["BlockRV", "LoopRV", "ExprRV", "RV"]


class _HandleRV:
    """Base of BlockRV and LoopRV: identity is the handle; there is no content."""

    __slots__ = ("__weakref__",)
    _prefix = "rv"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(0x{id(self):x})"


class BlockRV(_HandleRV):
    """A handle to a block."""

    __slots__ = ()
    _prefix = "b"


class LoopRV(_HandleRV):
    """A handle to a loop (or to the special locations ``root``/``inline`` of
    :meth:`Schedule.sample_compute_location`)."""

    __slots__ = ()
    _prefix = "l"


@register_object("tir.schedule.ExprRV")
class ExprRV(Var):
    """A handle to a sampled integer; a ``tir.Var`` so that it composes into expressions."""

    _is_var = True
    _prefix = "v"

    def __repr__(self) -> str:
        return f"ExprRV({self.name})"


RV = (BlockRV, LoopRV, ExprRV)
