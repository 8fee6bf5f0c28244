"""CPU postprocessors: the parallel/vectorize/unroll annotations made real (traced), the
init of tiled reductions split off, and candidates rejected that vectorize badly, whose
trace does not replay, or whose primitives refuse."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

import space_cpu_workloads as W  # noqa: E402
from tvm import te, tir  # noqa: E402
from tvm.ffi import structural_equal  # noqa: E402
from tvm.meta_schedule.postproc import (  # noqa: E402
    Postproc, RewriteParallelVectorizeUnroll, RewriteReductionBlock, VerifyTraceReplay,
    VerifyVectorization, apply_postprocs,
)
from tvm.meta_schedule.schedule_rule import MultiLevelTiling  # noqa: E402
from tvm.tir.schedule.error import ScheduleError  # noqa: E402
from tvm.tir.stmt import For, ForKind  # noqa: E402
from tvm.tir.stmt_functor import pre_order_visit  # noqa: E402


@pytest.fixture(autouse=True)
def _strict_rules(monkeypatch):
    # a rule failing for another reason than not fitting is a bug: raise it
    monkeypatch.setenv("TVM_SCHEDULE_RULES_STRICT", "1")


def _add(n=64, m=48):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1.0, name="B")
    return te.create_prim_func([A, B])


def _loop_kinds(func):
    out = []

    def visit(node):
        if isinstance(node, For):
            out.append((node.loop_var.name, node.kind))
        return True

    pre_order_visit(func.body, visit)
    return out


def _annotated(func, par, vec, unroll):
    sch = tir.Schedule(func)
    root = sch.get_block("root")
    for key, value in (("parallel", par), ("vectorize", vec), ("unroll_explicit", unroll)):
        if value is not None:
            sch.annotate(root, f"meta_schedule.{key}", value)
    return sch


def test_rewrite_parallel_vectorize_unroll():
    func = _add()
    sch = _annotated(func, 16, 64, None)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(i, [None, 4])
    assert RewriteParallelVectorizeUnroll().apply(sch)
    kinds = dict(_loop_kinds(sch.mod["main"]))
    # 16 x 4 > 16: both outer loops fused into one parallel loop; the row vectorized
    assert list(kinds.values()) == [ForKind.PARALLEL, ForKind.VECTORIZED]
    assert not sch.get(sch.get_block("root")).annotations
    replayed = tir.Schedule(func)
    sch.trace.apply_to_schedule(replayed)
    assert structural_equal(replayed.mod["main"], sch.mod["main"])
    got = np.zeros((64, 48), "float32")
    x = W.inputs(func)[0]
    tir.build(sch.mod["main"].with_attr("tir.is_scheduled", True), target=W.TARGET)["main"](
        x, got)
    np.testing.assert_allclose(got, x + 1)


def test_parallel_extent_limits_the_fused_loops_and_unroll_counts_steps():
    sch = _annotated(_add(), 4, 8, 16)
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, [8, None])
    j0, j1 = sch.split(j, [None, 8])
    assert RewriteParallelVectorizeUnroll().apply(sch)
    kinds = _loop_kinds(sch.mod["main"])
    # i0 (8 > 4) alone in parallel, j1 (8 lanes) vectorized, j0 (6 steps) unrolled,
    # i1 (8 more: 48 > 16 steps) left serial
    assert [k for _, k in kinds] == [ForKind.PARALLEL, ForKind.SERIAL, ForKind.UNROLLED,
                                     ForKind.VECTORIZED]


def test_no_annotation_no_change():
    sch = tir.Schedule(_add())
    before = sch.mod["main"]
    assert RewriteParallelVectorizeUnroll().apply(sch)
    assert sch.mod["main"] is before or structural_equal(sch.mod["main"], before)


def test_a_loop_not_driving_the_stored_row_is_not_vectorized():
    sch = _annotated(_add(), None, 64, None)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.reorder(j, i)
    RewriteParallelVectorizeUnroll().apply(sch)
    assert all(k != ForKind.VECTORIZED for _, k in _loop_kinds(sch.mod["main"]))


def test_rewrite_reduction_block_only_touches_tiled_blocks():
    func = W.matmul_relu(32)
    sch = tir.Schedule(func)
    assert RewriteReductionBlock().apply(sch)
    assert structural_equal(sch.mod["main"], func)
    rule = MultiLevelTiling(reuse_write="no", pack_operands="no")
    (tiled,) = rule.apply(sch, sch.get_block("C"))
    assert RewriteReductionBlock().apply(tiled)
    names = [i.kind.name for i in tiled.trace.insts]
    assert "DecomposeReduction" in names
    assert tiled.get(tiled.get_block("C")).init is None


def test_verify_vectorization_rejects():
    verify = VerifyVectorization(max_lanes=32)
    sch = tir.Schedule(_add())
    i, j = sch.get_loops(sch.get_block("B"))
    ok = sch.copy()
    jo, ji = ok.split(ok.get_loops(ok.get_block("B"))[1], [None, 16])
    ok.vectorize(ji)
    assert verify.apply(ok)
    long = sch.copy()
    long.vectorize(long.get_loops(long.get_block("B"))[1])  # 48 lanes > 32
    assert not verify.apply(long)
    assert VerifyVectorization(max_lanes=64).apply(long)
    nested = sch.copy()
    nested.vectorize(nested.get_loops(nested.get_block("B"))[0])  # holds the j loop
    assert not verify.apply(nested)
    with pytest.raises(ValueError):
        VerifyVectorization(0)


def test_verify_trace_replay_rejects():
    func = _add(64, 48)
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(j, sch.sample_perfect_tile(j, n=2, decision=[3, 16]))
    assert VerifyTraceReplay(func).apply(sch)
    assert not VerifyTraceReplay(_add(64, 40)).apply(sch)  # another kernel
    inst = next(i for i in sch.trace.insts if i.kind.name == "SamplePerfectTile")
    sch.trace.decisions[inst] = (4, 12)  # replays, but to another function
    assert not VerifyTraceReplay(func).apply(sch)
    sch.trace.decisions[inst] = (5, 5)  # the replay raises (5 * 5 != 48)
    assert not VerifyTraceReplay(func).apply(sch)
    with pytest.raises(ValueError, match="no kernel"):
        VerifyTraceReplay().apply(sch)


class _Refuses(Postproc):
    name = "refuses"

    def apply(self, sch):
        raise ScheduleError("split", "refused")


class _Counts(Postproc):
    name = "counts"

    def __init__(self):
        self.calls = 0

    def apply(self, sch):
        self.calls += 1
        return True


def test_apply_postprocs_rejects_on_refusal_and_stops():
    counts = _Counts()
    sch = tir.Schedule(_add())
    assert not apply_postprocs(sch, [_Refuses(), counts])
    assert counts.calls == 0
    assert apply_postprocs(sch, [counts]) and counts.calls == 1
