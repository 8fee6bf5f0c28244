"""Helpers the rule families share: factor choice, parallel outer loops, vector inner loops.

Rules work on a :class:`tvm.tir.Schedule` through its recorded primitives, so the trace of
a default schedule prints and replays like a hand-written one.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from tvm.tir.schedule import ScheduleError
from tvm.tir.schedule.rules import loop_extent

__all__ = [
    "has_primitive", "try_primitive", "reorder", "largest_factor",
    "parallelize_outer", "vector_factor", "vectorize_innermost",
    "PARALLEL_MIN_WORK",
]


#: Below this many innermost iterations (times vector lanes) a kernel runs serially: a
#: parallel launch costs more than it saves.
PARALLEL_MIN_WORK = 1 << 14


def has_primitive(sch: Any, name: str) -> bool:
    """Whether the schedule class provides primitive ``name`` (``compute_at`` ...)."""
    return callable(getattr(type(sch), name, None))


def try_primitive(sch: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``sch.<name>(*args, **kwargs)``, or ``None`` when the primitive is missing or its
    preconditions fail (a ScheduleError; the schedule is rolled back)."""
    if not has_primitive(sch, name):
        return None
    try:
        result = getattr(sch, name)(*args, **kwargs)
    except ScheduleError:
        return None
    return True if result is None else result


def reorder(sch: Any, loops: Sequence[Any]) -> None:
    """``sch.reorder(*loops)`` unless there is nothing to reorder (fewer than two loops,
    or already in that order)."""
    loops = [lp for lp in loops if lp is not None]
    if len(loops) < 2:
        return
    srefs = [sch.get_sref(lp) for lp in loops]
    if all(a.is_ancestor_of(b) for a, b in zip(srefs, srefs[1:])) and \
            all(b.parent is a for a, b in zip(srefs, srefs[1:])):
        return
    sch.reorder(*loops)


def largest_factor(extent: Optional[int], candidates: Iterable[int]) -> Optional[int]:
    """The first candidate that divides ``extent`` (``None`` if none does or it is symbolic)."""
    if extent is None:
        return None
    for c in candidates:
        if c >= 1 and extent % c == 0:
            return c
    return None


def vector_factor(extent: Optional[int], lanes: int, max_vectors: int = 1) -> Optional[int]:
    """A vector length for a loop of ``extent``: ``lanes * v`` for the largest
    ``v <= max_vectors`` dividing it, else a power of two down to 4 lanes (a half or
    quarter register); ``None`` when nothing fits exactly."""
    if extent is None:
        return None
    cands = [lanes * v for v in range(max_vectors, 0, -1)]
    half = lanes // 2
    while half >= 4:
        cands.append(half)
        half //= 2
    return largest_factor(extent, cands)


def parallelize_outer(sch: Any, loops: Sequence[Any], tasks: int, work: Optional[int],
                      ) -> Optional[Any]:
    """Fuse the leading ``loops`` (perfectly nested, data-parallel) until the product of
    their constant extents reaches ``4 * tasks``, and make the result parallel.

    A symbolic extent counts as 1 (a batch size is often 1): the loops after it are fused
    too, so that ``batch x heads`` offers ``heads`` tasks when ``batch`` is 1; fusing stops
    after a second symbolic extent (``batch x seq``).  ``work`` estimates the iterations
    of the whole nest (``None``: unknown); a small nest stays serial.  Returns the parallel
    loop, or ``None``.
    """
    if not loops or tasks <= 1:
        return None
    if work is not None and work < PARALLEL_MIN_WORK:
        return None
    chosen = []
    total = 1
    symbolic = False
    for lp in loops:
        ext = loop_extent(sch, lp)
        chosen.append(lp)
        if ext is None and symbolic:
            break
        if ext is None:
            symbolic = True
        else:
            total *= ext
        if total >= 4 * tasks:
            break
    if total == 1 and not symbolic:
        return None
    loop = sch.fuse(*chosen) if len(chosen) > 1 else chosen[0]
    sch.parallel(loop)
    return loop


def vectorize_innermost(sch: Any, loop: Any, lanes: int, max_vectors: int = 1) -> Optional[Any]:
    """Split ``loop`` by a vector length (see :func:`vector_factor`) and vectorize the
    inner part; returns the outer loop (``loop`` itself when it was vectorized whole) or
    ``None`` when the extent has no vector factor (the loop stays serial: LLVM's own loop
    vectorizer may still widen it)."""
    ext = loop_extent(sch, loop)
    factor = vector_factor(ext, lanes, max_vectors)
    if factor is None or factor == 1:
        return None
    if factor == ext:
        sch.vectorize(loop)
        return loop
    outer, inner = sch.split(loop, [None, factor])
    sch.vectorize(inner)
    return outer
