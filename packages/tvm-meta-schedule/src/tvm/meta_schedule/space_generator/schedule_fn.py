"""ScheduleFn: a design space written by hand, as a function of a Schedule.

::

    def space(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.split(i, sch.sample_perfect_tile(i, n=2))
    ctx = ms.TuneContext(func, target, space_generator=ScheduleFn(space))

The function changes ``sch`` in place (returns None), or returns a Schedule or a list of
Schedules (several design spaces).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from tvm.tir.schedule import Schedule

from .post_order_apply import _as_module, default_space
from .space_generator import SpaceGenerator

__all__ = ["ScheduleFn"]


class ScheduleFn(SpaceGenerator):
    """Design spaces from ``fn(sch) -> None | Schedule | list[Schedule]``; with
    ``include_default`` the target's default schedule comes first."""

    def __init__(self, fn: Callable[[Schedule], Any], sch_rules: Optional[list[Any]] = None,
                 postprocs: Optional[list[Any]] = None,
                 mutator_probs: Optional[dict[Any, float]] = None,
                 include_default: bool = False):
        if not callable(fn):
            raise TypeError(f"ScheduleFn: expected a function of a Schedule, got {fn!r}")
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.fn = fn
        self.include_default = include_default
        self.context: Any = None

    def initialize_with_tune_context(self, context: Any) -> None:
        from .defaults import initialize_space_parts

        super().initialize_with_tune_context(context)
        initialize_space_parts(self, context, rules=False)

    def generate_design_space(self, mod: Any) -> list[Schedule]:
        mod = _as_module(mod)
        rng = self.context.rng if self.context is not None else None
        seed = rng.randrange(1, 2**31 - 1) if rng is not None else None
        sch = Schedule(mod, seed=seed)
        result = self.fn(sch)
        if result is None:
            spaces = [sch]
        elif isinstance(result, Schedule):
            spaces = [result]
        elif isinstance(result, (list, tuple)) and all(isinstance(s, Schedule) for s in result):
            spaces = list(result)
        else:
            raise TypeError(f"ScheduleFn: {getattr(self.fn, '__name__', self.fn)!r} returned "
                            f"{type(result).__name__}; expected None, a Schedule or a list of "
                            "Schedules")
        if self.include_default and self.context is not None:
            space = default_space(mod, self.context.target, seed=seed)
            if space is not None:
                spaces.insert(0, space)
        return spaces
