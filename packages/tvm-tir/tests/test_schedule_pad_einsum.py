"""pad_einsum: before/after, preconditions, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, needs_llvm, script_module
from tvm import tir
from tvm.tir import ScheduleError

T = script_module()


@T.prim_func
def mm(A: T.Buffer((15, 7), "float32"), B: T.Buffer((7, 13), "float32"),
       C: T.Buffer((15, 13), "float32")):
    for i, j, k in T.grid(15, 13, 7):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def mm_padded(A: T.Buffer((15, 7), "float32"), B: T.Buffer((7, 13), "float32"),
              C: T.Buffer((15, 13), "float32")):
    A_pad = T.alloc_buffer((16, 8))
    B_pad = T.alloc_buffer((8, 13))
    C_pad = T.alloc_buffer((16, 13))
    for ax0, ax1 in T.grid(16, 8):
        with T.block("A_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_pad[v0, v1] = T.if_then_else(v0 < 15 and v1 < 7, A[v0, v1], T.float32(0.0))
    for ax0, ax1 in T.grid(8, 13):
        with T.block("B_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B_pad[v0, v1] = T.if_then_else(v0 < 7, B[v0, v1], T.float32(0.0))
    for i, j, k in T.grid(16, 13, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_pad[vi, vj] = T.float32(0.0)
            C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]
    for ax0, ax1 in T.grid(15, 13):
        with T.block("C_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            C[v0, v1] = C_pad[v0, v1]


@T.prim_func
def mm_reduction_padded(A: T.Buffer((15, 7), "float32"), B: T.Buffer((7, 13), "float32"),
                        C: T.Buffer((15, 13), "float32")):
    A_pad = T.alloc_buffer((15, 8))
    B_pad = T.alloc_buffer((8, 13))
    for ax0, ax1 in T.grid(15, 8):
        with T.block("A_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_pad[v0, v1] = T.if_then_else(v1 < 7, A[v0, v1], T.float32(0.0))
    for ax0, ax1 in T.grid(8, 13):
        with T.block("B_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B_pad[v0, v1] = T.if_then_else(v0 < 7, B[v0, v1], T.float32(0.0))
    for i, j, k in T.grid(15, 13, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]


@T.prim_func
def rowmax(A: T.Buffer((6, 7), "float32"), B: T.Buffer((6,), "float32")):
    for i, k in T.grid(6, 7):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], A[vi, vk])


@T.prim_func
def shifted(A: T.Buffer((8,), "float32"), B: T.Buffer((7,), "float32")):
    for i in range(7):
        with T.block("B"):
            vi = T.axis.spatial(7, i)
            B[vi] = A[vi + 1]


@T.prim_func
def ew(A: T.Buffer((5, 3), "float32"), B: T.Buffer((5, 3), "float32")):
    for i, j in T.grid(5, 3):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(3.0)


def test_pad_einsum_all_axes():
    sch = tir.Schedule(mm, debug_mask="all")
    c = sch.get_block("C")
    sch.pad_einsum(c, [4, 1, 4])
    assert_func_equal(sch, mm_padded)
    assert [int(iv.dom.extent) for iv in sch.get(c).iter_vars] == [16, 13, 8]
    check_replay(sch, mm)


def test_pad_einsum_reduction_axis_only_keeps_the_output():
    sch = tir.Schedule(mm, debug_mask="all")
    sch.pad_einsum(sch.get_block("C"), [1, 1, 8])
    assert_func_equal(sch, mm_reduction_padded)


def test_pad_einsum_without_padding_is_a_no_op():
    sch = tir.Schedule(mm, debug_mask="all")
    sch.pad_einsum(sch.get_block("C"), [5, 13, 7])
    assert_func_equal(sch, mm)


def test_pad_einsum_arguments():
    sch = tir.Schedule(mm)
    c = sch.get_block("C")
    with pytest.raises(ScheduleError, match="pad_einsum: block 'C': padding has 2 factors, the "
                       "block has 3 iteration variables"):
        sch.pad_einsum(c, [4, 4])
    with pytest.raises(ScheduleError, match="padding factors must be positive ints"):
        sch.pad_einsum(c, [4, 0, 4])


def test_pad_einsum_needs_plain_indices():
    sch = tir.Schedule(shifted)
    with pytest.raises(ScheduleError, match=r"A\[...\] index 0 is vi \+ 1, not an iteration "
                       "variable"):
        sch.pad_einsum(sch.get_block("B"), [4])


def test_pad_einsum_rejects_reductions_padding_would_change():
    sch = tir.Schedule(rowmax)
    with pytest.raises(ScheduleError, match="padding a reduction needs the update C = C \\+ rhs"):
        sch.pad_einsum(sch.get_block("B"), [1, 4])


def test_pad_einsum_needs_its_own_loop_nest():
    sch = tir.Schedule(mm)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 5])
    with pytest.raises(ScheduleError, match="perfect loop nest of its own"):
        sch.pad_einsum(sch.get_block("C"), [4, 1, 4])


@needs_llvm
@pytest.mark.parametrize("func, padding", [
    (mm, [4, 4, 4]), (mm, [1, 1, 8]), (mm, [16, 1, 1]), (ew, [4, 2]),
])
def test_padded_einsum_keeps_numbers(func, padding):
    sch = tir.Schedule(func, debug_mask="all")
    block = sch.get_block("C" if func is mm else "B")
    sch.pad_einsum(block, padding)
    check_numbers(func, sch)
