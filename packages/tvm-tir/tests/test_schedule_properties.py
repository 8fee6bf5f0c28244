"""Hypothesis: random legal primitive sequences over random te.compute workloads keep the
program well formed, replay from their trace (text and JSON), and keep the numbers."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedule_util import check_same_numbers, llvm_available
from tvm import te, tir
from tvm.ffi import structural_equal
from tvm.tir import ForKind
from tvm.tir.analysis import verify_well_formed
from tvm.tir.schedule import Trace, analysis

HAS_LLVM = llvm_available()


@st.composite
def workloads(draw):
    """An elementwise chain or a matmul (+ epilogue) of small random constant shapes."""
    kind = draw(st.sampled_from(["elementwise", "matmul"]))
    dim = st.integers(1, 12)
    if kind == "elementwise":
        shape = tuple(draw(st.lists(dim, min_size=1, max_size=3)))
        A = te.placeholder(shape, name="A")
        B = te.compute(shape, lambda *i: A[i] * 2.0, name="B")
        C = te.compute(shape, lambda *i: B[i] + A[i], name="C")
        return te.create_prim_func([A, C])
    n, m, k = draw(dim), draw(dim), draw(dim)
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * 0.5, name="D")
    return te.create_prim_func([A, B, D])


def _perfect_runs(sch, loops):
    """Maximal runs of loops where each is the whole body of the previous one."""
    runs, cur = [], [loops[0]]
    for a, b in zip(loops, loops[1:]):
        if sch.get(a).body is sch.get(b):
            cur.append(b)
        else:
            runs.append(cur)
            cur = [b]
    runs.append(cur)
    return runs


def _kind(sch, loop):
    return sch.get(loop).kind


def _apply_random_step(sch, data):
    blocks = [sch.get_block(n) for n in ("B", "C", "D") if _has_block(sch, n)]
    block = data.draw(st.sampled_from(blocks))
    loops = sch.get_loops(block)
    if not loops:
        return
    op = data.draw(st.sampled_from(["split", "fuse", "reorder", "parallel", "vectorize",
                                    "unroll"]))
    loop = data.draw(st.sampled_from(loops))
    extent = sch.get(loop).extent.value
    if op == "split":
        factor = data.draw(st.integers(1, max(1, extent + 2)))
        factors = data.draw(st.sampled_from([[None, factor], [factor, None]]))
        sch.split(loop, factors=factors)
    elif op == "fuse":
        runs = [r for r in _perfect_runs(sch, loops) if len(r) >= 2]
        runs = [[lp for lp in r if _kind(sch, lp) == ForKind.SERIAL] for r in runs]
        runs = [r for r in runs if len(r) >= 2 and all(
            sch.get(a).body is sch.get(b) for a, b in zip(r, r[1:]))]
        if runs:
            run = data.draw(st.sampled_from(runs))
            start = data.draw(st.integers(0, len(run) - 2))
            stop = data.draw(st.integers(start + 2, len(run)))
            sch.fuse(*run[start:stop])
    elif op == "reorder":
        runs = [r for r in _perfect_runs(sch, loops) if len(r) >= 2]
        if runs:
            run = data.draw(st.sampled_from(runs))
            sch.reorder(*data.draw(st.permutations(run)))
    elif op in ("parallel", "vectorize"):
        sref = sch.get_sref(loop)
        ok = analysis.is_data_par_loop(sref) and _kind(sch, loop) == ForKind.SERIAL
        # one concurrent loop per nest, and vectorize only innermost loops
        nest = [sch.get_sref(lp) for lp in loops]
        ok = ok and not any(s.loop.kind in (ForKind.PARALLEL, ForKind.VECTORIZED)
                            for s in nest)
        ok = ok and not any(s.loop.kind != ForKind.SERIAL
                            for s in analysis.blocks_under(sref) for s in [s]
                            if s.is_loop)
        if op == "vectorize":
            ok = ok and loop is loops[-1] and extent <= 16 and not _guarded(sch, block)
        if ok:
            getattr(sch, op)(loop)
    elif op == "unroll" and extent <= 16 and _kind(sch, loop) == ForKind.SERIAL:
        sch.unroll(loop)


def _guarded(sch, block):
    pred = sch.get_sref(block).realize.predicate
    return not (isinstance(pred, tir.IntImm) and pred.value == 1)


def _has_block(sch, name):
    return any(s.is_block and s.block.name_hint == name
               for s in sch.state.iter_srefs(sch.func_working_on))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(func=workloads(), data=st.data())
def test_random_sequences_keep_structure_and_replay(func, data):
    sch = tir.Schedule(func, debug_mask="all", seed=0)
    for _ in range(data.draw(st.integers(1, 6))):
        _apply_random_step(sch, data)
    verify_well_formed(sch.mod["main"], allow_blocks=True)
    replayed = tir.Schedule(func)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(replayed)
    assert structural_equal(replayed.mod, sch.mod)
    by_text = tir.Schedule(func)
    exec(str(sch.trace), {"sch": by_text})  # noqa: S102
    assert structural_equal(by_text.mod, sch.mod)
    if HAS_LLVM:
        check_same_numbers(func, sch.mod)
