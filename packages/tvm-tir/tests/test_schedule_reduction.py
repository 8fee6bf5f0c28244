"""decompose_reduction / rfactor: before/after, preconditions, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, check_same_numbers, matmul, needs_llvm, script_module
from tvm import te, tir
from tvm.tir import ScheduleError

T = script_module()


@T.prim_func
def rowsum(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_decomposed_at_k(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B_init"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.float32(0.0)
        for k in range(16):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_decomposed_at_i(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i_init in range(8):
        with T.block("B_init"):
            vi = T.axis.spatial(8, i_init)
            B[vi] = T.float32(0.0)
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_rf_inner(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    B_rf = T.alloc_buffer((8, 4))
    for i, k_0, k_1 in T.grid(8, 4, 4):
        with T.block("B_rf"):
            vi, vk_1, vk_0 = T.axis.remap("SSR", [i, k_1, k_0])
            with T.init():
                B_rf[vi, vk_1] = T.float32(0.0)
            B_rf[vi, vk_1] = B_rf[vi, vk_1] + A[vi, vk_0 * 4 + vk_1]
    for i, k_1 in T.grid(8, 4):
        with T.block("B"):
            vi, vk_1 = T.axis.remap("SR", [i, k_1])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] + B_rf[vi, vk_1]


@T.prim_func
def rowsum_rf_outer_guarded(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    B_rf = T.alloc_buffer((4, 8))
    for i, k_0, k_1 in T.grid(8, 4, 5):
        with T.block("B_rf"):
            vi, vk_0, vk_1 = T.axis.remap("SSR", [i, k_0, k_1])
            T.where(k_0 * 5 + k_1 < 16)
            with T.init():
                B_rf[vk_0, vi] = T.float32(0.0)
            B_rf[vk_0, vi] = B_rf[vk_0, vi] + A[vi, vk_0 * 5 + vk_1]
    for i, k_0 in T.grid(8, 4):
        with T.block("B"):
            vi, vk_0 = T.axis.remap("SR", [i, k_0])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] + B_rf[vk_0, vi]


@T.prim_func
def rowdiff(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] - A[vi, vk]


def _rowmax():
    A = te.placeholder((6, 20), name="A")
    k = te.reduce_axis((0, 20), name="k")
    B = te.compute((6,), lambda i: te.max(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


# -- decompose_reduction ----------------------------------------------------------------------
def test_decompose_reduction_at_the_reduction_loop():
    sch = tir.Schedule(rowsum, debug_mask="all")
    b = sch.get_block("B")
    _, k = sch.get_loops(b)
    init = sch.decompose_reduction(b, k)
    assert_func_equal(sch, rowsum_decomposed_at_k)
    assert sch.get(init).name_hint == "B_init"
    assert sch.get(b).init is None


def test_decompose_reduction_at_the_outer_loop_copies_it():
    sch = tir.Schedule(rowsum, debug_mask="all")
    b = sch.get_block("B")
    i, _ = sch.get_loops(b)
    sch.decompose_reduction(b, i)
    assert_func_equal(sch, rowsum_decomposed_at_i)
    check_replay(sch, rowsum)


def test_decompose_reduction_needs_an_init():
    sch = tir.Schedule(rowsum)
    b = sch.get_block("B")
    _, k = sch.get_loops(b)
    sch.decompose_reduction(b, k)
    with pytest.raises(ScheduleError, match="decompose_reduction: block 'B': the block has no "
                       "init"):
        sch.decompose_reduction(b, k)


def test_decompose_reduction_loop_must_enclose_the_block():
    sch = tir.Schedule(matmul(8, 8, 8, with_epilogue=True))
    i, _ = sch.get_loops(sch.get_block("D"))
    with pytest.raises(ScheduleError, match="the loop is not an ancestor of the block"):
        sch.decompose_reduction(sch.get_block("C"), i)


def test_decompose_reduction_loop_must_be_above_the_reduction():
    sch = tir.Schedule(matmul(8, 8, 8))
    c = sch.get_block("C")
    _, j, k = sch.get_loops(c)
    sch.reorder(k, j)
    with pytest.raises(ScheduleError, match="decompose_reduction: block 'C', loop 'j': the loop "
                       "is inside reduction loop 'k'"):
        sch.decompose_reduction(c, j)


# -- rfactor ----------------------------------------------------------------------------------
def test_rfactor_inner_loop():
    sch = tir.Schedule(rowsum, debug_mask="all")
    b = sch.get_block("B")
    _, k = sch.get_loops(b)
    _, k1 = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(k1, factor_axis=1)
    assert_func_equal(sch, rowsum_rf_inner)
    assert sch.get(rf).name_hint == "B_rf"
    assert sch.get(b).name_hint == "B"  # the handle now names the write-back block
    check_replay(sch, rowsum)


def test_rfactor_outer_loop_of_a_guarded_split():
    sch = tir.Schedule(rowsum, debug_mask="all")
    _, k = sch.get_loops(sch.get_block("B"))
    k0, _ = sch.split(k, factors=[None, 5])
    sch.rfactor(k0, factor_axis=0)
    assert_func_equal(sch, rowsum_rf_outer_guarded)


def test_rfactor_loop_must_be_a_reduction_loop():
    sch = tir.Schedule(rowsum)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="rfactor: loop 'i': the loop must drive reduction "
                       "iterations only"):
        sch.rfactor(i, 0)


def test_rfactor_loop_must_hold_one_block():
    sch = tir.Schedule(matmul(8, 8, 8, with_epilogue=True))
    i, _ = sch.get_loops(sch.get_block("D"))
    sch.compute_at(sch.get_block("C"), i)
    with pytest.raises(ScheduleError, match="must contain exactly one block, it contains 2"):
        sch.rfactor(i, 0)


def test_rfactor_factor_axis_out_of_range():
    sch = tir.Schedule(rowsum)
    _, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"factor_axis 3 is out of range \[-2, 1\]"):
        sch.rfactor(k, 3)


def test_rfactor_needs_a_known_reducer():
    sch = tir.Schedule(rowdiff)
    _, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="not a recognised reduction"):
        sch.rfactor(k, 0)


# -- numbers ----------------------------------------------------------------------------------
@needs_llvm
def test_rfactor_and_decompose_keep_numbers():
    sch = tir.Schedule(rowsum, debug_mask="all")
    _, k = sch.get_loops(sch.get_block("B"))
    k0, k1 = sch.split(k, factors=[None, 5])
    rf = sch.rfactor(k1, factor_axis=-1)
    i, k0, k1 = sch.get_loops(rf)
    sch.reorder(k1, i, k0)
    sch.parallel(k1)
    sch.decompose_reduction(rf, k0)
    check_numbers(rowsum, sch)


@needs_llvm
def test_rfactor_of_max_keeps_numbers():
    func = _rowmax()
    sch = tir.Schedule(func, debug_mask="all")
    _, k = sch.get_loops(sch.get_block("B"))
    _, k1 = sch.split(k, factors=[None, 8])
    sch.rfactor(k1, factor_axis=0)
    check_same_numbers(func, sch.mod)


@needs_llvm
def test_decompose_matmul_keeps_numbers():
    func = matmul(12, 8, 10, with_epilogue=True)
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.decompose_reduction(c, j)
    check_same_numbers(func, sch.mod)
