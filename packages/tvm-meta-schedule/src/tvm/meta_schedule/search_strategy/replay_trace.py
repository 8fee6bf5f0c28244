"""ReplayTrace: candidates made by replaying the design spaces with fresh random decisions."""

from __future__ import annotations

import random
from typing import Any, Optional

from ..measure_candidate import MeasureCandidate
from .search_strategy import SearchStrategy

__all__ = ["ReplayTrace", "replay_with_new_decisions", "trace_key"]


def trace_key(trace: Any) -> str:
    """What identifies a candidate: its trace as JSON (instructions and decisions)."""
    return trace.as_json()


def replay_with_new_decisions(mod: Any, design_space: Any, seed: int,
                              postprocs: Optional[list[Any]] = None) -> Optional[Any]:
    """A Schedule of ``mod`` replaying ``design_space``'s trace with every sampling
    instruction sampled anew (``seed`` seeds them), then ``postprocs``; None when a sampled
    decision makes a later step fail or a postproc rejects the candidate."""
    from tvm.tir.schedule import Schedule
    from tvm.tir.schedule.error import ScheduleError

    sch = Schedule(mod, seed=seed)
    try:
        design_space.trace.apply_to_schedule(
            sch, decision_provider=lambda inst, inputs, attrs, decision: None)
        for postproc in postprocs or ():
            if not postproc.apply(sch):
                return None
    except (ScheduleError, ValueError, TypeError):
        return None
    return sch


class ReplayTrace(SearchStrategy):
    """Each batch replays randomly chosen design spaces with new decisions (no cost model),
    skipping candidates already measured or proposed; a baseline, and the search of tests.

    ``max_fail_count``: consecutive replays that give nothing new before the search stops
    (a small design space is exhausted)."""

    def __init__(self, max_fail_count: int = 64) -> None:
        if max_fail_count < 1:
            raise ValueError(f"ReplayTrace: max_fail_count must be >= 1, got {max_fail_count}")
        self.max_fail_count = max_fail_count

    def pre_tuning(self, max_trials: int, num_trials_per_iter: int, design_spaces: list[Any],
                   database: Any = None, cost_model: Any = None) -> None:
        if max_trials < 0 or num_trials_per_iter < 1:
            raise ValueError(f"ReplayTrace: max_trials ({max_trials}) must be >= 0 and "
                             f"num_trials_per_iter ({num_trials_per_iter}) >= 1")
        if not design_spaces:
            raise ValueError("ReplayTrace: no design space to replay")
        ctx = getattr(self, "context", None)
        if ctx is None:
            raise RuntimeError("ReplayTrace: initialize_with_tune_context first")
        self.max_trials = max_trials
        self.num_trials_per_iter = num_trials_per_iter
        self.design_spaces = list(design_spaces)
        self.rng = random.Random(ctx.seed)
        self.postprocs = list(getattr(ctx.space_generator, "postprocs", None) or [])
        self.seen: set[str] = set()
        if database is not None:
            wl = database.lookup_workload(ctx.mod) if hasattr(database, "lookup_workload") \
                else (database.commit_workload(ctx.mod) if database.has_workload(ctx.mod)
                      else None)
            if wl is not None:
                for rec in database.get_all_tuning_records():
                    if rec.workload is wl:
                        self.seen.add(trace_key(rec.trace))
        self.trials = 0
        self.exhausted = False

    def generate_measure_candidates(self) -> Optional[list[MeasureCandidate]]:
        from ..arg_info import args_info

        if self.exhausted or self.trials >= self.max_trials:
            return None
        ctx = self.context
        want = min(self.num_trials_per_iter, self.max_trials - self.trials)
        out: list[MeasureCandidate] = []
        fails = 0
        while len(out) < want and fails < self.max_fail_count:
            space = self.design_spaces[self.rng.randrange(len(self.design_spaces))]
            sch = replay_with_new_decisions(ctx.mod, space, self.rng.randrange(1, 2**31 - 1),
                                            self.postprocs)
            key = None if sch is None else trace_key(sch.trace)
            if key is None or key in self.seen:
                fails += 1
                continue
            fails = 0
            self.seen.add(key)
            out.append(MeasureCandidate(sch, args_info(sch.mod["main"])))
        if not out:
            self.exhausted = True
            return None
        if len(out) < want:
            self.exhausted = True  # the space gave no more new candidates
        return out

    def notify_runner_results(self, candidates: list[Any], results: list[Any]) -> None:
        self.trials += len(candidates)
