"""storage_align / set_scope: before/after (with a TVMScript round trip), preconditions."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, needs_llvm, script_module
from tvm import tir
from tvm.tir import ScheduleError

T = script_module()


@T.prim_func
def two_stage(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def two_stage_aligned(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.block_attr({"buffer_dim_align": ((0, 0, 16, 1), (0, 1, 32, 8))})
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def two_stage_shared(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), scope="shared")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1.0)


def test_storage_align_annotates_and_replaces_an_axis():
    sch = tir.Schedule(two_stage, debug_mask="all")
    b = sch.get_block("B")
    sch.storage_align(b, 0, axis=1, factor=32, offset=1)
    sch.storage_align(b, 0, axis=0, factor=16, offset=1)
    sch.storage_align(b, 0, axis=-1, factor=32, offset=8)  # replaces the axis-1 entry
    assert_func_equal(sch, two_stage_aligned)
    assert_func_equal(T.parse(sch.mod["main"].script()), two_stage_aligned)
    check_replay(sch, two_stage)


def test_set_scope_replaces_the_buffer_everywhere():
    sch = tir.Schedule(two_stage, debug_mask="all")
    sch.set_scope(sch.get_block("B"), 0, "shared")
    assert_func_equal(sch, two_stage_shared)
    assert sch.get(sch.get_block("C")).reads[0].buffer.scope == "shared"
    check_replay(sch, two_stage)


def test_set_scope_to_the_same_scope_is_a_no_op():
    sch = tir.Schedule(two_stage, debug_mask="all")
    sch.set_scope(sch.get_block("B"), 0, "global")
    assert_func_equal(sch, two_stage)


@pytest.mark.parametrize("args, message", [
    ((1, 0, 16, 0), r"buffer_index 1 is out of range: the block writes 1 buffer\(s\) \(B\)"),
    ((0, 2, 16, 0), "axis 2 is out of range for the 2-d buffer 'B'"),
    ((0, 0, 0, 0), "factor must be positive, got 0"),
    ((0, 0, 16, 16), r"offset must be in \[0, factor=16\), got 16"),
])
def test_storage_align_checks_its_arguments(args, message):
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="storage_align: block 'B': " + message):
        sch.storage_align(sch.get_block("B"), *args)


def test_parameter_buffers_are_rejected():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="'C' is not allocated inside the function"):
        sch.storage_align(sch.get_block("C"), 0, 0, 16, 0)
    with pytest.raises(ScheduleError, match="set_scope: block 'C': buffer 'C' is not allocated"):
        sch.set_scope(sch.get_block("C"), 0, "shared")


def test_set_scope_rejects_unknown_scopes():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="invalid storage scope 'fast'"):
        sch.set_scope(sch.get_block("B"), 0, "fast")


@needs_llvm
def test_annotations_keep_numbers():
    sch = tir.Schedule(two_stage, debug_mask="all")
    b = sch.get_block("B")
    sch.storage_align(b, 0, 0, 16, 1)
    sch.set_scope(b, 0, "local")
    check_numbers(two_stage, sch)
