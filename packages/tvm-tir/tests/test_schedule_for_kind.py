"""parallel / vectorize / unroll / bind and annotate / unannotate."""

from __future__ import annotations

import pytest
from schedule_util import (
    assert_func_equal, check_same_numbers, matmul, needs_llvm, script_module,
)
from tvm import tir
from tvm.tir import ForKind, IterVarType, ScheduleError

T = script_module()


@T.prim_func
def ew(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_kinds(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.parallel(128):
        for j in T.vectorized(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_bound(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.thread_binding(128, thread="blockIdx.x"):
        for j in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_annotated(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.serial(128, annotations={"pragma_unroll": 4}):
        for j in range(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"schedule_rule": "none"})
                B[vi, vj] = A[vi, vj] * T.float32(2.0)


def test_parallel_vectorize_match_script():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    sch.vectorize(j)
    assert_func_equal(sch, ew_kinds)
    assert sch.get(i).kind == ForKind.PARALLEL and sch.get(j).kind == ForKind.VECTORIZED


def test_unroll_sets_kind_and_keeps_handle():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    sch.unroll(j)
    assert sch.get(j).kind == ForKind.UNROLLED
    sch.unroll(j)  # idempotent
    assert len(sch.trace) == 4


def test_bind_matches_script():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    assert_func_equal(sch, ew_bound)
    loop = sch.get(j)
    assert loop.kind == ForKind.THREAD_BINDING
    assert loop.thread_binding.thread_tag == "threadIdx.x"
    assert loop.thread_binding.iter_type == IterVarType.THREAD_INDEX


@pytest.mark.parametrize("axis", ["blockIdx.w", "threadIdx", "warp", ""])
def test_bind_rejects_unknown_axes(axis):
    sch = tir.Schedule(ew)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="unknown thread axis"):
        sch.bind(i, axis)


@pytest.mark.parametrize("prim", ["parallel", "vectorize"])
def test_reduction_loop_cannot_run_concurrently(prim):
    sch = tir.Schedule(matmul(16, 16, 16), debug_mask="all")
    _, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError) as info:
        getattr(sch, prim)(k)
    msg = str(info.value)
    assert msg.startswith(f"{prim}: loop 'k'")
    assert "reduction iteration variable" in msg and "block 'C'" in msg
    assert sch.get(k).kind == ForKind.SERIAL


def test_bind_reduction_loop():
    sch = tir.Schedule(matmul(16, 16, 16), debug_mask="all")
    _, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="thread axis"):
        sch.bind(k, "blockIdx.x")
    sch.bind(k, "threadIdx.x")  # cross-thread reduction, as TVM allows
    assert sch.get(k).kind == ForKind.THREAD_BINDING


def test_split_reduction_loop_parts_stay_reduction():
    sch = tir.Schedule(matmul(16, 16, 16), debug_mask="all")
    _, _, k = sch.get_loops(sch.get_block("C"))
    ko, ki = sch.split(k, factors=[4, 4])
    with pytest.raises(ScheduleError, match="reduction"):
        sch.vectorize(ki)
    sch.unroll(ki)


# -- annotate ---------------------------------------------------------------------------------
def test_annotate_block_and_loop_match_script():
    sch = tir.Schedule(ew, debug_mask="all")
    b = sch.get_block("B")
    i, _ = sch.get_loops(b)
    sch.annotate(i, "pragma_unroll", 4)
    sch.annotate(b, ann_key="schedule_rule", ann_val="none")
    assert sch.get(b).annotations == {"schedule_rule": "none"}
    assert_func_equal(sch, ew_annotated)


def test_unannotate_restores_and_errors():
    sch = tir.Schedule(ew, debug_mask="all")
    b = sch.get_block("B")
    sch.annotate(b, "k", 1)
    sch.unannotate(b, "k")
    assert_func_equal(sch, ew)
    with pytest.raises(ScheduleError, match="there is no annotation 'k'"):
        sch.unannotate(b, "k")


def test_annotate_with_sampled_value_and_lists():
    sch = tir.Schedule(ew, seed=0)
    b = sch.get_block("B")
    v = sch.sample_categorical([16, 64], [0.0, 1.0])
    sch.annotate(b, "unroll", v)
    sch.annotate(b, "names", ["a", 1])
    ann = sch.get(b).annotations
    assert ann["unroll"].value == 64 and ann["names"] == ("a", 1)
    with pytest.raises(TypeError, match="annotate: the value"):
        sch.annotate(b, "bad", object())
    with pytest.raises(ScheduleError, match="non-empty str"):
        sch.annotate(b, "", 1)


@needs_llvm
def test_parallel_vectorize_unroll_numbers():
    func = matmul(32, 32, 16, with_epilogue=True)
    sch = tir.Schedule(func, debug_mask="all")
    i, j, k = sch.get_loops(sch.get_block("C"))
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(i, jo, k, ji)
    sch.parallel(i)
    sch.vectorize(ji)
    sch.unroll(k)
    di, dj = sch.get_loops(sch.get_block("D"))
    sch.parallel(di)
    sch.vectorize(dj)
    check_same_numbers(func, sch.mod)
