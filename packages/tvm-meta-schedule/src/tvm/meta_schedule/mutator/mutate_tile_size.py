"""MutateTileSize: move a factor of one sampled tiling to another tile position.

A ``SamplePerfectTile`` decision ``[f0, ..., fn-1]`` becomes one where a divisor ``d > 1``
of some ``fi`` moves to ``fj`` (``fi / d``, ``fj * d``): the product, so the loop's
extent, is kept, and the innermost factor stays within the instruction's
``max_innermost_factor``.
"""

from __future__ import annotations

import random
from typing import Any, Optional

from .mutator import Mutator

__all__ = ["MutateTileSize", "sampled_insts"]


def sampled_insts(trace: Any, kind: str) -> list[Any]:
    """The instructions of ``kind`` (``"SamplePerfectTile"`` ...) with a decision, in order."""
    return [i for i in trace.insts if i.kind.name == kind and i in trace.decisions]


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


def _moves(factors: tuple, limit: Optional[int]) -> list[tuple[int, int, int]]:
    """Every ``(i, j, d)``: move divisor ``d`` of ``factors[i]`` to position ``j``."""
    n = len(factors)
    out = []
    for i in range(n):
        for d in _divisors(factors[i]):
            for j in range(n):
                if j == i:
                    continue
                if j == n - 1 and limit is not None and limit > 0 and factors[j] * d > limit:
                    continue
                out.append((i, j, d))
    return out


class MutateTileSize(Mutator):
    """See the module doc; None when no tiling decision can change."""

    name = "mutate_tile_size"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        insts = sampled_insts(trace, "SamplePerfectTile")
        options = []
        for inst in insts:
            attrs = dict(zip(inst.kind.attrs, inst.attrs))
            factors = tuple(int(f) for f in trace.decisions[inst])
            moves = _moves(factors, attrs.get("max_innermost_factor"))
            if moves:
                options.append((inst, factors, moves))
        if not options:
            return None
        inst, factors, moves = options[rng.randrange(len(options))]
        i, j, d = moves[rng.randrange(len(moves))]
        new = list(factors)
        new[i] //= d
        new[j] *= d
        return trace.with_decision(inst, new)
