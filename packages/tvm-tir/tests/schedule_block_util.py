"""Helpers for the block-level primitive tests: trace replay checks."""

from __future__ import annotations

from typing import Any

from tvm import tir
from tvm.ffi import structural_equal
from tvm.tir.schedule import Trace


def check_replay(sch: tir.Schedule, func: Any, by_text: bool = True) -> None:
    """The trace of ``sch`` replays on a fresh schedule of ``func`` to the same module,
    through JSON and (``by_text``) through its printed Python."""
    replayed = tir.Schedule(func, debug_mask="all")
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(replayed)
    assert structural_equal(replayed.mod, sch.mod), str(sch.trace)
    if by_text:
        fresh = tir.Schedule(func)
        exec(str(sch.trace), {"sch": fresh})  # noqa: S102 - the trace is Python by design
        assert structural_equal(fresh.mod, sch.mod), str(sch.trace)


def check_numbers(func: tir.PrimFunc, sch_or_func: Any, seed: int = 0) -> None:
    """``func`` and the scheduled function compute the same (built with LLVM); TVMScript
    functions are renamed ``main`` first."""
    from schedule_util import check_same_numbers

    after = sch_or_func.mod["main"] if isinstance(sch_or_func, tir.Schedule) else sch_or_func
    check_same_numbers(func.with_attr("global_symbol", "main"),
                       after.with_attr("global_symbol", "main"), seed)
