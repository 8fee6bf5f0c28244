"""The driver: a list of rules applied to every block of a PrimFunc or IRModule.

:func:`apply_rules` takes the rules in order (stably sorted by ``priority``, highest first).
Each rule makes passes over the blocks of the root in program order: a block not yet
claimed, for which ``rule.applies`` holds, is offered to the rule on a copy of the
schedule; on success the copy is kept (its first candidate) and the pass goes on with the
next block (one a change removed is passed over); on failure the attempt is dropped with a
log message on logger ``tvm.tir.schedule.rules`` and the block is offered again only in a
pass after one that changed some other block.  A rule is done when a pass changes nothing,
so a rule costs a pass over the blocks per round of changes (one round for a chain), not a
pass per change.

Every step is a recorded primitive, so the result carries one trace
(:attr:`RulesResult.trace`) that prints as Python and replays from JSON onto the
unscheduled function.  :func:`schedule_func` / :func:`schedule_module` wrap this for a
default schedule: functions marked ``tir.is_scheduled`` are left as they are, the result is
marked, and an unexpected error in a rule (a bug) leaves the function unscheduled with a
warning.  Set ``TVM_SCHEDULE_RULES_STRICT=1`` (:func:`strict_mode`, the one place that
reads it) to raise instead: tests do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from tvm.ffi import knobs

from ...function import PrimFunc
from ..error import InvalidHandleError, ScheduleError
from ..schedule import Schedule
from .blocks import root_blocks
from .rule import SCHEDULED_ATTR, RuleNotApplicable, ScheduleRule, claims, fork

__all__ = ["apply_rules", "schedule_func", "schedule_module", "explain", "strict_mode",
           "STRICT_ENV", "RulesResult", "attempt", "sort_rules"]

logger = logging.getLogger("tvm.tir.schedule.rules")

#: set to 1 to raise instead of logging when a rule fails (tests use it); declared in
#: tvm.ffi.knobs with the other debug knobs
STRICT_ENV = knobs.SCHEDULE_RULES_STRICT.name

#: what a rule may raise when it does not fit (the attempt is dropped, the next rule tried)
_DECLINED = (RuleNotApplicable, ScheduleError, ValueError, TypeError, NotImplementedError)


def strict_mode() -> bool:
    """Whether ``TVM_SCHEDULE_RULES_STRICT`` asks rule failures that look like bugs (any
    error but RuleNotApplicable and a primitive's ScheduleError) to be raised."""
    return bool(knobs.SCHEDULE_RULES_STRICT.get())


@dataclass
class RulesResult:
    """What :func:`apply_rules` made: the scheduled function, its schedule (whose trace
    replays it) and which rule scheduled each block (block name -> label)."""

    func: PrimFunc
    schedule: Any
    explain: dict[str, str] = field(default_factory=dict)

    @property
    def trace(self) -> Any:
        """The primitives that made :attr:`func` (lookups nothing used are left out)."""
        return self.schedule.trace.simplified()


def sort_rules(rules: Sequence[ScheduleRule]) -> list[ScheduleRule]:
    """``rules`` stably sorted by ``priority``, highest first."""
    return sorted(rules, key=lambda r: -getattr(r, "priority", 0))


def _block_names(sch: Any) -> set[str]:
    return {s.block.name_hint for s in sch.state.iter_srefs(sch.func_working_on) if s.is_block}


def attempt(rule: ScheduleRule, sch: Any, block: Any, reasons: Optional[list[str]] = None,
            where: str = "", explore: bool = False) -> Optional[list[Any]]:
    """``rule.apply`` (``rule.candidates`` when ``explore``: a tuner's design space) on a
    copy of ``sch`` (on ``sch`` itself for a ``single_primitive`` rule, which cannot leave it
    half-changed): its candidates with the claims made (the block and the blocks the rule
    created), or None when the rule declined (the reason appended to ``reasons``).  In
    strict mode an error that looks like a bug is raised."""
    trial = sch if rule.single_primitive and not explore else fork(sch)
    before = _block_names(sch)
    name = sch.get(block).name_hint
    try:
        out = rule.candidates(trial, block) if explore else rule.apply(trial, block)
    except _DECLINED as err:
        if strict_mode() and (isinstance(err, InvalidHandleError)
                              or not isinstance(err, (ScheduleError, RuleNotApplicable))):
            raise
        logger.info("schedule rule %s on block %r%s did not apply: %s", rule.name, name, where,
                    err)
        if reasons is not None:
            reasons.append(f"{rule.name}: {err}")
        return None
    if not out:
        if reasons is not None:
            reasons.append(f"{rule.name}: no candidate")
        return None
    if rule.claims_block:
        for cand in out:
            table = claims(cand)
            for new in sorted(_block_names(cand) - before):  # C_init, C_rf, packed copies
                table.setdefault(new, f"{rule.report} (created)")
            table.setdefault(name, rule.report)
    return out


def apply_rules(func: Any, rules: Sequence[ScheduleRule], name: str = "main") -> RulesResult:
    """Apply ``rules`` to the blocks of ``func`` (a PrimFunc, or a Schedule to continue);
    see the module docstring.  Raises only in strict mode."""
    sch = fork(func) if isinstance(func, Schedule) else Schedule(func)
    where = f" of {name}"
    for rule in sort_rules(rules):
        done_once: set[str] = set()   # blocks a non-claiming rule changed already
        failed: set[str] = set()
        progress = True
        while progress:
            progress = False
            for block in root_blocks(sch):
                try:
                    bname = sch.get(block).name_hint
                except InvalidHandleError:  # removed by a change earlier in this pass
                    continue
                if bname in claims(sch) or bname in failed or bname in done_once:
                    continue
                if not rule.applies(sch, block):
                    continue
                out = attempt(rule, sch, block, where=where)
                if out is None:
                    failed.add(bname)
                    continue
                sch = out[0]
                if not rule.claims_block:
                    done_once.add(bname)
                progress = True
            if progress:
                failed.clear()
    result = sch.mod[sch.func_working_on]
    return RulesResult(result, sch, dict(claims(sch)))


def schedule_func(func: PrimFunc, rules: Sequence[ScheduleRule], name: str = "main",
                  finish: Optional[Callable[[PrimFunc], PrimFunc]] = None) -> PrimFunc:
    """``func`` scheduled by ``rules`` (then ``finish``, a whole-function step of the
    target) and marked ``tir.is_scheduled``; a marked function is returned as is."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"schedule_func: expected a tir.PrimFunc, got {type(func).__name__}")
    if func.attrs.get(SCHEDULED_ATTR):
        return func
    try:
        scheduled = apply_rules(func, rules, name).func
    except Exception as err:  # noqa: BLE001 - a rule bug must not break the build
        if strict_mode():
            raise
        logger.warning("default schedule of %s failed, left unscheduled: %s: %s", name,
                       type(err).__name__, err)
        scheduled = func
    if finish is not None:
        scheduled = finish(scheduled)
    return scheduled.with_attr(SCHEDULED_ATTR, True)


def schedule_module(mod: Any, schedule: Callable[[PrimFunc, str], PrimFunc]) -> Any:
    """``mod`` with every PrimFunc not marked ``tir.is_scheduled`` replaced by
    ``schedule(func, name)`` (unchanged when none changes)."""
    changed = {}
    for gv, func in mod.items():
        if isinstance(func, PrimFunc) and not func.attrs.get(SCHEDULED_ATTR):
            new = schedule(func, gv.name_hint)
            if new is not func:
                changed[gv] = new
    return mod.with_functions(changed) if changed else mod


def explain(func: PrimFunc, rules: Sequence[ScheduleRule]) -> dict[str, str]:
    """Which rule schedules each block of ``func``: block name -> the rule's label
    (``"<label> (created)"`` for blocks a rule made)."""
    return apply_rules(func, rules).explain
