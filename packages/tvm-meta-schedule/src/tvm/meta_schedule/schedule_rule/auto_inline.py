"""AutoInline for the design space: the one inline step of the schedule-rule framework
(:class:`tvm.tir.schedule.rules.AutoInline`), also inlining constant-scalar producers."""

from __future__ import annotations

from typing import Any, Callable, Optional

from tvm.tir.schedule import rules

__all__ = ["AutoInline"]


class AutoInline(rules.AutoInline):
    """Inline data-parallel single-store blocks into their consumers (``compute_inline``);
    ``inlinable(sch, block)`` replaces the default test, as in the framework's rule."""

    name = "auto_inline"

    def __init__(self, inlinable: Optional[Callable[[Any, Any], bool]] = None):
        super().__init__(inlinable)
