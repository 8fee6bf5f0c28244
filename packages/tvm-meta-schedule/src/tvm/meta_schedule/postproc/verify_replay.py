"""VerifyTraceReplay: reject a candidate its own trace does not reproduce.

A tuning record is the trace; a candidate whose trace raises when replayed onto the
unscheduled kernel, or replays to another function, could be measured but never applied
from the database.  The kernel is the tune context's ``mod`` (or the one given).
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.tir.schedule import Schedule

from .postproc import Postproc

__all__ = ["VerifyTraceReplay"]

logger = logging.getLogger("tvm.meta_schedule.postproc")


class VerifyTraceReplay(Postproc):
    """See the module doc."""

    name = "verify_trace_replay"

    def __init__(self, mod: Optional[Any] = None):
        self.mod = mod

    def initialize_with_tune_context(self, context: Any) -> None:
        super().initialize_with_tune_context(context)
        if self.mod is None:
            self.mod = context.mod

    def apply(self, sch: Any) -> bool:
        if self.mod is None:
            raise ValueError("VerifyTraceReplay: no kernel to replay onto; give mod= or "
                             "initialize it with a tune context")
        fresh = Schedule(self.mod)
        try:
            sch.trace.apply_to_schedule(fresh)
        except Exception as err:  # noqa: BLE001 - any failure means: not reproducible
            logger.info("candidate rejected: its trace does not replay: %s: %s",
                        type(err).__name__, err)
            return False
        name = sch.func_working_on
        return bool(structural_equal(fresh.mod[name], sch.mod[name]))
