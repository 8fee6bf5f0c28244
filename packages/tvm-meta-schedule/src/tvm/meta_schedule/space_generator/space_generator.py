"""Space generators: a kernel -> its design space (schedules whose traces sample)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

__all__ = ["SpaceGenerator"]


class SpaceGenerator(ABC):
    """Generates the design space of a kernel and carries what the search uses with it:
    ``sch_rules`` (ScheduleRule of :mod:`tvm.tir.schedule.rules`), ``postprocs`` (applied to
    every candidate; one that returns False rejects it) and ``mutator_probs`` (Mutator ->
    probability of being picked when a candidate is mutated).  Any of them left None gets
    the defaults for the context's target (cpu or gpu keys) in
    :meth:`initialize_with_tune_context`."""

    def __init__(self, sch_rules: Optional[list[Any]] = None,
                 postprocs: Optional[list[Any]] = None,
                 mutator_probs: Optional[dict[Any, float]] = None):
        self.sch_rules = sch_rules
        self.postprocs = postprocs
        self.mutator_probs = mutator_probs

    def initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    @abstractmethod
    def generate_design_space(self, mod: Any) -> list[Any]:
        """Schedules of ``mod`` (an IRModule, ``main`` unscheduled) with sampling traces;
        the first is the target's default schedule when there is one."""
