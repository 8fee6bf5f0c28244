"""Sampling primitives: random decisions recorded in the trace.

Each takes a ``decision`` keyword: ``None`` samples one with the schedule's random state
(``Schedule(..., seed=...)``); a given decision is checked and used as is, which is how a
trace replays and how an auto-tuner tries mutated decisions
(``trace.with_decision(inst, d)``).

* ``sample_perfect_tile(loop, n, max_innermost_factor)`` -> ``n`` ExprRVs whose product is
  the loop's extent; decision: the list of factors.
* ``sample_categorical(candidates, probs)`` -> one ExprRV; decision: the chosen index.
* ``sample_compute_location(block)`` -> a LoopRV; decision: ``-2`` inline, ``-1`` root,
  ``k >= 0`` the ``k``-th candidate loop (outermost first) enclosing all consumers.
"""

from __future__ import annotations

import random
from typing import Any, Optional, Sequence

from . import analysis as A
from .error import ScheduleError
from .handles import BlockRV, ExprRV, LoopRV
from .instruction import Decided, instruction
from .state import INLINE_MARK, ROOT_MARK, StmtSRef

__all__ = ["SamplingMixin", "sample_perfect_tile_factors", "compute_location_candidates"]


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def sample_perfect_tile_factors(rng: random.Random, extent: int, n: int,
                                max_innermost_factor: Optional[int]) -> list[int]:
    """``n`` positive factors of ``extent`` (product exactly ``extent``), the innermost at
    most ``max_innermost_factor``: the innermost is drawn among the allowed divisors, the
    other prime factors are spread uniformly over the outer positions."""
    if n == 1:
        return [extent]
    limit = extent if max_innermost_factor in (None, -1) else max_innermost_factor
    divisors = [d for d in range(1, min(extent, limit) + 1) if extent % d == 0]
    inner = rng.choice(divisors)
    factors = [1] * (n - 1)
    for p in _prime_factors(extent // inner):
        factors[rng.randrange(n - 1)] *= p
    return factors + [inner]


def compute_location_candidates(sch: Any, block_sref: StmtSRef) -> tuple[bool, list[StmtSRef]]:
    """``(can_inline, loops)``: whether inlining is a candidate, and the loops (outermost
    first) under the block's scope that enclose all its consumers but not the block."""
    consumers = A.get_consumers(block_sref)
    can_inline = (
        A.is_complete_block(block_sref) and not A.is_output_block(sch.state, block_sref)
        and len(block_sref.block.writes) == 1
    )
    if not consumers:
        return can_inline, []
    chains = [A.get_loops(c) for c in consumers]
    common: list[StmtSRef] = []
    for level in zip(*chains):
        if all(s is level[0] for s in level):
            common.append(level[0])
        else:
            break
    own = {id(s) for s in A.get_loops(block_sref)}
    return can_inline, [s for s in common if id(s) not in own]


class SamplingMixin:
    """The sampling primitives of :class:`Schedule`."""

    @instruction("SamplePerfectTile", inputs=("loop",), attrs=("n", "max_innermost_factor"),
                 outputs="list", pure=True, decision=True)
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: Optional[Sequence[int]] = None) -> list[ExprRV]:
        """``n`` sampled factors whose product is the extent of ``loop`` (a constant)."""
        sref = self._loop_sref(loop, "sample_perfect_tile")
        if not isinstance(n, int) or n < 1:
            raise ScheduleError("sample_perfect_tile", f"n must be a positive int, got {n!r}")
        extent = A.loop_extent(sref)
        if extent is None:
            raise ScheduleError("sample_perfect_tile", "the loop extent "
                                f"{sref.loop.extent!r} is not a constant", sref)
        if decision is None:
            factors = sample_perfect_tile_factors(self._rng, extent, n, max_innermost_factor)
        else:
            factors = [int(f) for f in decision]
            prod = 1
            for f in factors:
                prod *= f
            limit = max_innermost_factor if max_innermost_factor not in (None, -1) else extent
            if len(factors) != n or prod != extent or min(factors) < 1 or factors[-1] > limit:
                raise ScheduleError(
                    "sample_perfect_tile", f"decision {list(decision)} is not {n} positive "
                    f"factors of {extent} with the innermost at most {limit}", sref,
                )
        return Decided([self._new_rv(f) for f in factors], tuple(factors))

    @instruction("SampleCategorical", attrs=("candidates", "probs"), outputs="one", pure=True,
                 decision=True)
    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: Optional[int] = None) -> ExprRV:
        """One of ``candidates`` drawn with probabilities ``probs``."""
        candidates = [int(c) for c in candidates]
        probs = [float(p) for p in probs]
        if not candidates or len(candidates) != len(probs):
            raise ScheduleError("sample_categorical", f"{len(candidates)} candidates and "
                                f"{len(probs)} probabilities; need as many, at least one")
        if min(probs) < 0 or sum(probs) <= 0:
            raise ScheduleError("sample_categorical", f"probabilities {probs} must be "
                                "non-negative with a positive sum")
        if decision is None:
            decision = self._rng.choices(range(len(candidates)), weights=probs)[0]
        elif not isinstance(decision, int) or not 0 <= decision < len(candidates):
            raise ScheduleError("sample_categorical", f"decision {decision!r} is not an index "
                                f"of the {len(candidates)} candidates")
        return Decided(self._new_rv(candidates[decision]), decision)

    @instruction("SampleComputeLocation", inputs=("block",), outputs="one", pure=True,
                 decision=True)
    def sample_compute_location(self, block: BlockRV, decision: Optional[int] = None
                                ) -> LoopRV:
        """Where ``block`` could be computed: a loop enclosing its consumers, or the special
        root / inline locations (``sch.get(rv)`` is then None; compute_at understands them)."""
        sref = self._block_sref(block, "sample_compute_location")
        can_inline, loops = compute_location_candidates(self, sref)
        choices = ([-2] if can_inline else []) + [-1] + list(range(len(loops)))
        if decision is None:
            decision = self._rng.choice(choices)
        elif decision not in choices:
            raise ScheduleError("sample_compute_location", f"decision {decision!r} is not one "
                                f"of the locations {choices}", sref)
        if decision == -2:
            rv = self._new_mark_rv(INLINE_MARK)
        elif decision == -1:
            rv = self._new_mark_rv(ROOT_MARK)
        else:
            rv = self._new_rv(loops[decision])
        return Decided(rv, decision)
