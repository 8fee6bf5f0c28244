"""compute_inline / reverse_compute_inline: before/after, preconditions, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, matmul, needs_llvm, script_module
from tvm import tir
from tvm.tir import ScheduleError

T = script_module()


@T.prim_func
def chain(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    C = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1.0)
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vj, vi] = B[vi, vj] * T.float32(2.0)
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] + B[vj, vi]


@T.prim_func
def chain_b_inlined(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    C = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vj, vi] = (A[vi, vj] + T.float32(1.0)) * T.float32(2.0)
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] + (A[vj, vi] + T.float32(1.0))


@T.prim_func
def chain_c_inlined(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1.0)
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vj, vi] * T.float32(2.0) + B[vj, vi]


@T.prim_func
def epilogue(A: T.Buffer((8, 4), "float32"), C: T.Buffer((4, 8), "float32")):
    B = T.alloc_buffer((8, 4))
    for i, j in T.grid(8, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(4, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi] + A[vj, vi]


@T.prim_func
def epilogue_inlined(A: T.Buffer((8, 4), "float32"), C: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(8, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vj, vi] = A[vi, vj] * T.float32(2.0) + A[vi, vj]


@T.prim_func
def offset_store(A: T.Buffer((8,), "float32"), C: T.Buffer((7,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(7):
        with T.block("B"):
            vi = T.axis.spatial(7, i)
            B[vi + 1] = A[vi]
    for i in range(7):
        with T.block("C"):
            vi = T.axis.spatial(7, i)
            C[vi] = B[vi + 1]


@T.prim_func
def loop_body(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            for k in range(2):  # noqa: B007 - a loop inside the block
                B[vi] = A[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]


@T.prim_func
def partial_consumer(A: T.Buffer((8,), "float32"), C: T.Buffer((4,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            C[vi] = B[vi]


# -- before / after ---------------------------------------------------------------------------
def test_compute_inline_into_two_consumers():
    sch = tir.Schedule(chain, debug_mask="all")
    d = sch.get_block("D")
    sch.compute_inline(sch.get_block("B"))
    assert_func_equal(sch, chain_b_inlined)
    assert sch.get(d).name_hint == "D"


def test_compute_inline_permuted_store():
    sch = tir.Schedule(chain, debug_mask="all")
    sch.compute_inline(sch.get_block("C"))
    assert_func_equal(sch, chain_c_inlined)
    check_replay(sch, chain)


def test_reverse_compute_inline_with_transposed_read():
    sch = tir.Schedule(epilogue, debug_mask="all")
    b = sch.get_block("B")
    sch.reverse_compute_inline(sch.get_block("C"))
    assert_func_equal(sch, epilogue_inlined)
    assert sch.get(b).writes[0].buffer.name == "C"
    check_replay(sch, epilogue)


def test_inlined_block_handle_is_invalid():
    sch = tir.Schedule(chain, debug_mask="all")
    b = sch.get_block("B")
    sch.compute_inline(b)
    with pytest.raises(ScheduleError, match="removed by compute_inline"):
        sch.get(b)


# -- preconditions ------------------------------------------------------------------------------
def test_reduction_block_cannot_be_inlined():
    sch = tir.Schedule(matmul(8, 8, 8, with_epilogue=True))
    with pytest.raises(ScheduleError, match="compute_inline: block 'C': the block is a "
                       "reduction block"):
        sch.compute_inline(sch.get_block("C"))


def test_output_block_cannot_be_inlined():
    sch = tir.Schedule(chain)
    with pytest.raises(ScheduleError, match="writes 'D', an output buffer"):
        sch.compute_inline(sch.get_block("D"))


def test_store_indices_must_be_iteration_variables():
    sch = tir.Schedule(offset_store)
    with pytest.raises(ScheduleError, match="indices must be distinct iteration variables"):
        sch.compute_inline(sch.get_block("B"))


def test_body_must_be_a_single_store():
    sch = tir.Schedule(loop_body)
    with pytest.raises(ScheduleError, match="body is not a single BufferStore"):
        sch.compute_inline(sch.get_block("B"))


def test_reverse_inline_needs_one_produced_input():
    sch = tir.Schedule(chain)
    with pytest.raises(ScheduleError, match=r"reverse_compute_inline: block 'D': the block must "
                       r"read exactly one buffer produced in its scope, it reads 2"):
        sch.reverse_compute_inline(sch.get_block("D"))


def test_reverse_inline_needs_the_only_reader():
    sch = tir.Schedule(chain)
    with pytest.raises(ScheduleError, match="'B' is also read by block 'D'"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_inline_needs_the_whole_output():
    sch = tir.Schedule(partial_consumer)
    with pytest.raises(ScheduleError, match="does not cover dimension 0 of 'B'"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_inline_into_a_reduction_is_rejected():
    sch = tir.Schedule(matmul(8, 8, 8, with_epilogue=True))
    with pytest.raises(ScheduleError, match="producer 'C' is a reduction block"):
        sch.reverse_compute_inline(sch.get_block("D"))


# -- numbers ------------------------------------------------------------------------------------
@needs_llvm
@pytest.mark.parametrize("step", ["B", "C", "both", "reverse"])
def test_inlining_keeps_numbers(step):
    func = chain if step != "reverse" else epilogue
    sch = tir.Schedule(func, debug_mask="all")
    if step in ("B", "both"):
        sch.compute_inline(sch.get_block("B"))
    if step in ("C", "both"):
        sch.compute_inline(sch.get_block("C"))
    if step == "reverse":
        sch.reverse_compute_inline(sch.get_block("C"))
    check_numbers(func, sch)


def test_inlining_the_only_block_of_a_block_is_rejected():
    sch = tir.Schedule(chain)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.blockize(i)
    with pytest.raises(ScheduleError, match="compute_inline: block 'B_o': the block would be "
                       "left empty"):
        sch.compute_inline(sch.get_block("B"))
