"""The schedule rule: what one step of a default schedule (or of a tuner's design space) is.

A :class:`ScheduleRule` looks at one block of a :class:`~tvm.tir.schedule.Schedule` and, when
the block's structure fits (:meth:`ScheduleRule.applies`), transforms it with recorded
Schedule primitives (:meth:`ScheduleRule.apply`).  ``apply`` returns a list of candidate
schedules in MetaSchedule's style: a rule that samples (``sch.sample_perfect_tile`` ...) may
return several, a tuner explores them, and the default build keeps the first, made with the
rule's best-known decisions for the target the rule was built for.  Target facts (vector
width, thread limits) are given to the rule's constructor, so one rule class serves every
target of its family.

A rule that finds part-way that it does not fit raises :class:`RuleNotApplicable`; a
primitive whose preconditions fail raises ScheduleError.  Either way the driver
(:mod:`.driver`) drops the attempt and offers the block to the next rule.

Which rule scheduled which block (the answer of ``explain``) is recorded with
:func:`claim`: the driver claims the block a rule succeeded on (with the rule's ``label``)
and the blocks the rule created; a rule claims the other blocks it scheduled together with
its anchor (an epilogue, a row of a softmax).  A claimed block is offered to no later rule.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

__all__ = ["ScheduleRule", "RuleNotApplicable", "FirstOf", "SCHEDULED_ATTR", "claim",
           "claims", "fork"]

#: PrimFunc attribute marking a function whose loops are scheduled (by a user or the rules);
#: the default schedule leaves such functions as they are.
SCHEDULED_ATTR = "tir.is_scheduled"


class RuleNotApplicable(Exception):
    """A rule finds, part-way, that it does not fit the block (the driver tries the next)."""


# block name -> label, per schedule (a side table: Schedule itself knows nothing of rules)
_CLAIMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def claims(sch: Any) -> dict[str, str]:
    """The blocks of ``sch`` claimed so far: block name -> label of the rule."""
    return _CLAIMS.setdefault(sch, {})


def claim(sch: Any, block: Any, label: str) -> None:
    """Record that ``block`` (a BlockRV or a block name) was scheduled as ``label``."""
    name = block if isinstance(block, str) else sch.get(block).name_hint
    claims(sch)[name] = label


def fork(sch: Any) -> Any:
    """``sch.copy()`` with its claims: for a rule that returns several candidates."""
    new = sch.copy()
    _CLAIMS[new] = dict(claims(sch))
    return new


class ScheduleRule:
    """A rule of the default schedule and of the tuner's design space.

    Subclasses set ``name`` and override :meth:`applies` (a cheap structural test) and
    :meth:`transform` (the primitives, on the schedule given), or :meth:`apply` to return
    several candidates.

    * ``label``: what ``explain`` reports for the block (default: ``name``);
    * ``claims_block``: False for a preparing rule (padding, a layout change) whose block
      must still be scheduled by a later rule; the driver then claims nothing and offers
      the block to the rule only once;
    * ``single_primitive``: True when :meth:`transform` runs exactly one schedule primitive
      and the rule gives one candidate; a failing primitive rolls the schedule back itself,
      so the driver tries such a rule in place instead of on a copy (copying a schedule is
      linear in the function, and a rule tried on every block of a long chain would make
      the default schedule quadratic);
    * ``priority``: rules contributed by plugins are sorted by it, highest first, stably (a
      vendor's tensorize rule above 0 runs before the target's own rules, a fallback below
      0 after them).
    """

    name: str = "rule"
    label: Optional[str] = None
    claims_block: bool = True
    single_primitive: bool = False
    priority: int = 0

    def applies(self, sch: Any, block: Any) -> bool:
        """Whether the block's structure fits the rule (no transformation)."""
        return True

    def apply(self, sch: Any, block: Any) -> list[Any]:
        """Candidate schedules (``sch`` may be transformed and returned); the first is the
        rule's best-known choice."""
        self.transform(sch, block)
        return [sch]

    def candidates(self, sch: Any, block: Any) -> list[Any]:
        """Every candidate a tuner should measure: :meth:`apply`'s first, then schedules with
        other decisions the rule's model of the target is unsure of (another register tile,
        another cache blocking).  The default schedule never asks (it keeps :meth:`apply`'s
        first); a tuner's design space does (``attempt(..., explore=True)``)."""
        return self.apply(sch, block)

    def transform(self, sch: Any, block: Any) -> None:
        """Schedule ``block`` in ``sch`` with the rule's default decisions."""
        raise NotImplementedError(f"schedule rule {self.name!r} defines neither apply nor "
                                  "transform")

    @property
    def report(self) -> str:
        return self.label or self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class FirstOf(ScheduleRule):
    """The first of ``rules`` that applies to a block and succeeds on it (tried in one pass
    over the blocks, so alternatives for one block are decided before the next block)."""

    def __init__(self, name: str, rules: Sequence[ScheduleRule]):
        self.name = name
        self.rules = list(rules)

    def applies(self, sch: Any, block: Any) -> bool:
        return any(r.applies(sch, block) for r in self.rules)

    def apply(self, sch: Any, block: Any) -> list[Any]:
        return self._first(sch, block, explore=False)

    def candidates(self, sch: Any, block: Any) -> list[Any]:
        return self._first(sch, block, explore=True)

    def _first(self, sch: Any, block: Any, explore: bool) -> list[Any]:
        from .driver import attempt

        reasons: list[str] = []
        for rule in self.rules:
            if not rule.applies(sch, block):
                continue
            out = attempt(rule, sch, block, reasons, explore=explore)
            if out:
                return out
        raise RuleNotApplicable("; ".join(reasons) or "no alternative applies")
