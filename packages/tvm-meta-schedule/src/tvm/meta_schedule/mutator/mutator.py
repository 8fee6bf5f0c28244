"""Mutators: change one sampled decision of a trace (and nothing else)."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, Optional

__all__ = ["Mutator", "mutate_categorical"]


class Mutator(ABC):
    """``apply(trace, rng)`` returns a copy of ``trace`` with one decision of the kind the
    mutator handles changed (``trace.with_decision``), or None when it has nothing to change."""

    name: str = "mutator"

    def initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    @abstractmethod
    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        """A mutated copy of ``trace``, or None."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def mutate_categorical(trace: Any, insts: list[Any], rng: random.Random) -> Optional[Any]:
    """``trace`` with one of ``insts`` taking another of its candidates (a different value,
    with a positive probability); None when none has one."""
    options = []
    for inst in insts:
        attrs = dict(zip(inst.kind.attrs, inst.attrs))
        cands, probs = list(attrs["candidates"]), list(attrs["probs"])
        old = int(trace.decisions[inst])
        others = [k for k in range(len(cands)) if k != old and probs[k] > 0
                  and cands[k] != cands[old]]
        if others:
            options.append((inst, others))
    if not options:
        return None
    inst, others = options[rng.randrange(len(options))]
    return trace.with_decision(inst, others[rng.randrange(len(others))])
