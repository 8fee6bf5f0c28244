"""Space generators: a kernel -> its design spaces (Schedules whose traces sample).

* :class:`PostOrderApply`: the target's default schedule, then the spaces of the schedule
  rules (:mod:`tvm.meta_schedule.schedule_rule`), branching on every candidate
* :class:`ScheduleFn`: a hand-written space
* :mod:`.defaults`: the rules, postprocessors and mutator probabilities of a target
"""

from __future__ import annotations

from .defaults import default_mutator_probs, default_postprocs, default_sch_rules
from .post_order_apply import PostOrderApply, apply_rules_branching, default_space
from .schedule_fn import ScheduleFn
from .space_generator import SpaceGenerator

__all__ = ["SpaceGenerator", "PostOrderApply", "ScheduleFn", "apply_rules_branching",
           "default_space", "default_sch_rules", "default_postprocs", "default_mutator_probs"]
