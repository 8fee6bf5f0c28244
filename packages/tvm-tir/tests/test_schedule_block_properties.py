"""Hypothesis: random legal sequences of loop and block primitives (split, fuse, reorder,
vectorize, unroll, parallel, compute_at, reverse_compute_at, compute_inline, cache_read,
cache_write) over random te.compute workloads keep the program well formed, replay from
their trace, and keep the numbers.

A drawn primitive whose preconditions do not hold must raise ScheduleError and leave the
schedule unchanged (it is then simply not part of the sequence); any other exception fails.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedule_util import check_same_numbers, llvm_available
from tvm import te, tir
from tvm.ffi import structural_equal
from tvm.tir import ForKind, ScheduleError
from tvm.tir.analysis import verify_well_formed
from tvm.tir.schedule import Trace, analysis

HAS_LLVM = llvm_available()
_CONCURRENT = (ForKind.PARALLEL, ForKind.VECTORIZED)


@st.composite
def workloads(draw):
    """An elementwise chain, a matmul with an epilogue, or a row reduction."""
    kind = draw(st.sampled_from(["elementwise", "matmul", "reduction"]))
    dim = st.integers(1, 9)
    if kind == "elementwise":
        shape = tuple(draw(st.lists(dim, min_size=1, max_size=3)))
        A = te.placeholder(shape, name="A")
        B = te.compute(shape, lambda *i: A[i] * 2.0, name="B")
        C = te.compute(shape, lambda *i: B[i] + A[i], name="C")
        D = te.compute(shape, lambda *i: C[i] * B[i], name="D")
        return te.create_prim_func([A, D])
    if kind == "matmul":
        n, m, k = draw(dim), draw(dim), draw(dim)
        A = te.placeholder((n, k), name="A")
        B = te.placeholder((k, m), name="B")
        r = te.reduce_axis((0, k), name="k")
        C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
        D = te.compute((n, m), lambda i, j: C[i, j] * 0.5, name="D")
        return te.create_prim_func([A, B, D])
    n, k = draw(dim), draw(dim)
    A = te.placeholder((n, k), name="A")
    B = te.compute((n, k), lambda i, j: A[i, j] + 1.0, name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n,), lambda i: te.sum(B[i, r], axis=r), name="C")
    D = te.compute((n,), lambda i: C[i] * 2.0, name="D")
    return te.create_prim_func([A, D])


def _blocks(sch):
    return [s.block.name_hint for s in sch.state.iter_srefs(sch.func_working_on)
            if s.is_block and s.parent is not None]


def _all_loops(sch):
    return [s for s in sch.state.iter_srefs(sch.func_working_on) if s.is_loop]


def _perfect_runs(sch, loops):
    runs, cur = [], [loops[0]]
    for a, b in zip(loops, loops[1:]):
        if sch.get(a).body is sch.get(b):
            cur.append(b)
        else:
            runs.append(cur)
            cur = [b]
    runs.append(cur)
    return [r for r in runs if len(r) >= 2]


def _can_run_concurrently(sch, loop, vectorize):
    sref = sch.get_sref(loop)
    if sref.loop.kind != ForKind.SERIAL or not analysis.is_data_par_loop(sref):
        return False
    if any(a.is_loop and a.loop.kind in _CONCURRENT for a in sref.ancestors()):
        return False
    below = [s for s in sch.state.iter_srefs(sch.func_working_on) if sref.is_ancestor_of(s)]
    if any(s.is_loop and s.loop.kind != ForKind.SERIAL for s in below):
        return False
    if vectorize:
        blocks = [s for s in below if s.is_block]
        pred = blocks[0].realize.predicate if len(blocks) == 1 else None
        return len(below) == 1 and blocks and sref.loop.extent.value <= 16 and \
            isinstance(pred, tir.IntImm) and pred.value == 1
    return True


def _step(sch, data):
    names = _blocks(sch)
    name = data.draw(st.sampled_from(names))
    block = sch.get_block(name)
    loops = sch.get_loops(block)
    op = data.draw(st.sampled_from([
        "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "compute_at",
        "reverse_compute_at", "compute_inline", "cache_read", "cache_write",
    ]))
    if op in ("split", "fuse", "reorder", "parallel", "vectorize", "unroll") and not loops:
        return
    if op == "split":
        loop = data.draw(st.sampled_from(loops))
        extent = sch.get(loop).extent.value
        factor = data.draw(st.integers(1, extent + 1))
        sch.split(loop, factors=data.draw(st.sampled_from([[None, factor], [factor, None]])))
    elif op in ("fuse", "reorder"):
        runs = _perfect_runs(sch, loops)
        if op == "fuse":
            runs = [[lp for lp in r if sch.get(lp).kind == ForKind.SERIAL] for r in runs]
            runs = [r for r in runs if len(r) >= 2 and all(
                sch.get(a).body is sch.get(b) for a, b in zip(r, r[1:]))]
        if not runs:
            return
        run = data.draw(st.sampled_from(runs))
        if op == "fuse":
            start = data.draw(st.integers(0, len(run) - 2))
            sch.fuse(*run[start:data.draw(st.integers(start + 2, len(run)))])
        else:
            sch.reorder(*data.draw(st.permutations(run)))
    elif op in ("parallel", "vectorize"):
        loop = data.draw(st.sampled_from(loops))
        if _can_run_concurrently(sch, loop, op == "vectorize"):
            getattr(sch, op)(loop)
    elif op == "unroll":
        loop = data.draw(st.sampled_from(loops))
        if sch.get(loop).extent.value <= 16 and sch.get(loop).kind == ForKind.SERIAL:
            sch.unroll(loop)
    elif op in ("compute_at", "reverse_compute_at"):
        candidates = [s for s in _all_loops(sch)
                      if not any(s is a for a in sch.get_sref(block).ancestors())]
        if not candidates:
            return
        target = data.draw(st.sampled_from(candidates))
        loop = [lp for lp in sch.get_loops(sch.get_block(_owner(target)))
                if sch.get_sref(lp) is target][0]
        getattr(sch, op)(block, loop, preserve_unit_loops=data.draw(st.booleans()))
    elif op == "compute_inline":
        getattr(sch, data.draw(st.sampled_from(["compute_inline", "reverse_compute_inline"])))(
            block)
    else:
        regions = sch.get(block).reads if op == "cache_read" else sch.get(block).writes
        if not regions:
            return
        index = data.draw(st.integers(0, len(regions) - 1))
        scope = data.draw(st.sampled_from(["global", "local", "shared"]))
        getattr(sch, op)(block, index, scope)


def _owner(loop_sref):
    """The name of a block under the loop (to find its LoopRV through get_loops)."""
    for s in analysis.blocks_under(loop_sref, include_nested=False):
        return s.block.name_hint
    raise AssertionError("a loop without blocks")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(func=workloads(), data=st.data())
def test_random_block_schedules_keep_numbers(func, data):
    sch = tir.Schedule(func, debug_mask="all", seed=0)
    for _ in range(data.draw(st.integers(1, 8))):
        before = sch.mod
        n = len(sch.trace)
        try:
            _step(sch, data)
        except ScheduleError:  # rolled back and not recorded (lookups are)
            assert sch.mod is before
            assert all(inst.kind.pure for inst in sch.trace.insts[n:])
    verify_well_formed(sch.mod["main"], allow_blocks=True)
    replayed = tir.Schedule(func)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(replayed)
    assert structural_equal(replayed.mod, sch.mod)
    if HAS_LLVM:
        check_same_numbers(func, sch.mod)
