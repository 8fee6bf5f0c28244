"""PostOrderApply: a kernel's design spaces from schedule rules, branching on candidates.

::

    ctx = ms.TuneContext(func, "llvm -num-cores=2", space_generator=PostOrderApply(), seed=0)
    spaces = ctx.generate_design_space()
    spaces[0]            # the target's default schedule (its trace does not sample)
    spaces[1:]           # the sampled spaces of the tuner's rules (SamplePerfectTile ...)

The first design space is the default schedule (the rules every plugin contributes for
the target, :func:`tvm.tir.schedule.rules.rules_for_target`, applied by the framework's
driver :func:`~tvm.tir.schedule.rules.apply_rules`), so the initial population of a search
holds the untuned code and tuning can only improve on it.  Then come the default rules'
alternatives (:func:`default_variants`, at most ``max_variants``: the same rules with the
other decisions their model of the machine is unsure of, such as the next register tiles
and cache blockings for caches half or twice the modelled size), fixed schedules the
first batch measures.

The sampled spaces: each rule in turn makes passes over the blocks of every schedule so
far, as the framework's driver does (a block nobody claimed whose structure fits is
offered on a copy, :func:`~tvm.tir.schedule.rules.driver.attempt`; a failure drops the
attempt), but *every* candidate a rule returns continues as its own schedule (MetaSchedule
style: the list of schedules grows, at most ``max_spaces``).  A rule with ``on_root`` set
(ParallelizeVectorizeUnroll) is offered the root block instead, once.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from tvm.tir.schedule import Schedule
from tvm.tir.schedule.rules import ScheduleRule, apply_rules, claims, root_blocks, strict_mode
from tvm.tir.schedule.rules.driver import attempt, sort_rules

from .space_generator import SpaceGenerator

__all__ = ["PostOrderApply", "apply_rules_branching", "default_space", "default_variants"]

logger = logging.getLogger("tvm.meta_schedule.space_generator")


def _as_module(mod: Any) -> Any:
    from tvm.ir.module import IRModule
    from tvm.tir.function import PrimFunc

    if isinstance(mod, PrimFunc):
        return IRModule({"main": mod})
    if isinstance(mod, IRModule):
        return mod
    raise TypeError(f"design space: expected a PrimFunc or IRModule, got {type(mod).__name__}")


def _root_block(sch: Any) -> Any:
    return sch.get_block(sch.state.root(sch.func_working_on).block.name_hint)


def default_space(mod: Any, target: Any, seed: Optional[int] = None) -> Optional[Schedule]:
    """The target's default schedule of ``mod``'s ``main`` as a Schedule whose trace replays
    it (None when no plugin gives rules for the target).  A function the default schedule
    leaves alone (no blocks, loops already transformed by hand) gives an empty trace."""
    from tvm.tir.schedule.rules import has_blocks, looks_scheduled, rules_for_target

    rules = rules_for_target(target)
    if not rules:
        return None
    mod = _as_module(mod)
    sch = Schedule(mod, seed=seed)
    func = sch.mod[sch.func_working_on]
    if has_blocks(func) and not looks_scheduled(func):
        try:
            trace = apply_rules(Schedule(mod), rules).trace
        except Exception as err:  # noqa: BLE001 - as the default build: a rule bug leaves it
            if strict_mode():
                raise
            logger.warning("default schedule failed, the untuned kernel stays unscheduled: "
                           "%s: %s", type(err).__name__, err)
            return sch
        trace.apply_to_schedule(sch)
    return sch


def default_variants(mod: Any, target: Any, max_spaces: int = 16) -> list[Schedule]:
    """The target's default rules with every alternative they offer
    (:meth:`ScheduleRule.candidates`: other register tiles, other cache blockings): fixed
    schedules (no sampling) besides the default one, structurally distinct from it and from
    each other.  They are the tuner's answer to a machine model that is off."""
    from tvm.ffi import structural_hash
    from tvm.tir.schedule.rules import has_blocks, looks_scheduled, rules_for_target

    rules = rules_for_target(target)
    mod = _as_module(mod)
    func = mod["main"]
    if not rules or not has_blocks(func) or looks_scheduled(func):
        return []
    try:
        found = apply_rules_branching(Schedule(mod), rules, max_spaces + 1, explore=True)
    except Exception as err:  # noqa: BLE001 - as the default build: a rule bug is logged
        if strict_mode():
            raise
        logger.warning("default rule alternatives failed: %s: %s", type(err).__name__, err)
        return []
    # the first is every rule's first candidate: the default schedule
    seen = {structural_hash(found[0].mod)}
    distinct = []
    for sch in found[1:]:
        key = structural_hash(sch.mod)
        if key not in seen:
            seen.add(key)
            distinct.append(sch)
    return distinct[:max_spaces]


def _next_block(rule: ScheduleRule, sch: Any, skip: frozenset) -> Optional[tuple[Any, str]]:
    """The first block of ``sch`` the rule may be offered: (handle, name), or None."""
    if getattr(rule, "on_root", False):
        root = _root_block(sch)
        name = sch.get(root).name_hint
        return (root, name) if name not in skip and rule.applies(sch, root) else None
    taken = claims(sch)
    for block in root_blocks(sch):
        name = sch.get(block).name_hint
        if name in taken or name in skip:
            continue
        if rule.applies(sch, block):
            return block, name
    return None


def apply_rules_branching(sch: Schedule, rules: Sequence[ScheduleRule],
                          max_spaces: int = 64, explore: bool = True) -> list[Schedule]:
    """``rules`` applied to ``sch`` keeping every candidate of every rule (see the module
    doc); the first schedule is the one of every rule's first candidate.  With ``explore``
    a rule is asked for all its candidates (:meth:`ScheduleRule.candidates`: the default
    rules add the alternatives their model of the target is unsure of), else for
    ``apply``'s."""
    schs = [sch]
    for rule in sort_rules(rules):
        out: list[Schedule] = []
        for start in schs:
            # (schedule, blocks failed since the last change, blocks done by a preparing rule)
            stack: list[tuple[Any, frozenset, frozenset]] = [(start, frozenset(), frozenset())]
            while stack:
                cur, failed, done = stack.pop()
                found = _next_block(rule, cur, failed | done)
                if found is None:
                    out.append(cur)
                    continue
                block, name = found
                cands = attempt(rule, cur, block, explore=explore)
                if cands is None:
                    stack.append((cur, failed | {name}, done))
                    continue
                if not rule.claims_block or getattr(rule, "on_root", False):
                    done = done | {name}
                room = max(1, max_spaces - len(out) - len(stack))
                for cand in reversed(cands[:room]):
                    stack.append((cand, frozenset(), done))
        if len(out) > max_spaces:
            logger.info("design space: %d schedules after rule %s, keeping %d", len(out),
                        rule.name, max_spaces)
        schs = out[:max_spaces]
    return schs


class PostOrderApply(SpaceGenerator):
    """Design spaces from ``sch_rules`` (default: :func:`.defaults.default_sch_rules` of the
    context's target), the default schedule first (``include_default``)."""

    def __init__(self, sch_rules: Optional[list[Any]] = None,
                 postprocs: Optional[list[Any]] = None,
                 mutator_probs: Optional[dict[Any, float]] = None,
                 include_default: bool = True, max_spaces: int = 64, max_variants: int = 16):
        super().__init__(sch_rules, postprocs, mutator_probs)
        if max_spaces < 1:
            raise ValueError(f"PostOrderApply: max_spaces must be >= 1, got {max_spaces}")
        self.include_default = include_default
        self.max_spaces = max_spaces
        self.max_variants = max_variants
        self.context: Any = None

    def initialize_with_tune_context(self, context: Any) -> None:
        from .defaults import initialize_space_parts

        super().initialize_with_tune_context(context)
        initialize_space_parts(self, context)

    def generate_design_space(self, mod: Any) -> list[Schedule]:
        if self.context is None:
            raise ValueError("PostOrderApply: initialize_with_tune_context first (or pass it "
                             "to a TuneContext)")
        mod = _as_module(mod)
        rng = self.context.rng
        spaces: list[Schedule] = []
        if self.include_default:
            space = default_space(mod, self.context.target, seed=rng.randrange(1, 2**31 - 1))
            if space is not None:
                spaces.append(space)
                spaces.extend(default_variants(mod, self.context.target, self.max_variants))
        if self.sch_rules:
            sch = Schedule(mod, seed=rng.randrange(1, 2**31 - 1))
            spaces.extend(apply_rules_branching(sch, self.sch_rules, self.max_spaces))
        return spaces
