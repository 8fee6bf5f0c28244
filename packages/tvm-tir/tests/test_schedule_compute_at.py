"""compute_at / reverse_compute_at: before/after in TVMScript, preconditions, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, check_same_numbers, matmul, needs_llvm, script_module
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
def two_stage_at_i(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(16):
        for ax0 in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def two_stage_at_i_unit(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(16):
        for ax0, ax1 in T.grid(1, 16):
            with T.block("B"):
                vi = T.axis.spatial(16, i + ax0)
                vj = T.axis.spatial(16, ax1)
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def two_stage_reverse_at_i(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for ax0 in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def shifted(A: T.Buffer((16,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2.0)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.spatial(14, i)
            C[vi] = B[vi] + B[vi + 1] + B[vi + 2]


@T.prim_func
def shifted_at_i0(A: T.Buffer((16,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((16,))
    for i_0 in range(4):
        for ax0 in range(6):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + ax0)
                T.where(ax0 + i_0 * 4 <= 15)
                B[vi] = A[vi] * T.float32(2.0)
        for i_1 in range(4):
            with T.block("C"):
                vi = T.axis.spatial(14, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 14)
                C[vi] = B[vi] + B[vi + 1] + B[vi + 2]


@T.prim_func
def shifted_reverse_at_i0(A: T.Buffer((16,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((16,))
    for i_0 in range(4):
        for i_1 in range(4):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + i_1)
                B[vi] = A[vi] * T.float32(2.0)
        for ax0 in range(4):
            with T.block("C"):
                vi = T.axis.spatial(14, i_0 * 4 - 2 + ax0)
                T.where(2 <= ax0 + i_0 * 4)
                C[vi] = B[vi] + B[vi + 1] + B[vi + 2]


@T.prim_func
def shifted_backward(A: T.Buffer((16,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, 15 - i)
            B[vi] = A[vi] * T.float32(2.0)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.spatial(14, i)
            C[vi] = B[vi] + B[vi + 1] + B[vi + 2]


@T.prim_func
def three(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    C = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1.0)
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] + C[vi, vj]


@T.prim_func
def three_fused(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    C = T.alloc_buffer((8, 8))
    for i in range(8):
        for ax0 in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi, vj] = A[vi, vj] + T.float32(1.0)
        for ax0 in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                C[vi, vj] = A[vi, vj] * T.float32(2.0)
        for j in range(8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = B[vi, vj] + C[vi, vj]


@T.prim_func
def matmul_relu(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
                D: T.Buffer((8, 8), "float32")):
    C = T.alloc_buffer((8, 8))
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0.0))


@T.prim_func
def matmul_relu_at_j(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
                     D: T.Buffer((8, 8), "float32")):
    C = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        for ax0 in range(8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, ax0])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0.0))


@T.prim_func
def scan(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.scan(8, i)
            B[vi] = A[vi]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]


# -- before / after ---------------------------------------------------------------------------
def test_compute_at_drops_unit_loops():
    sch = tir.Schedule(two_stage, debug_mask="all")
    b = sch.get_block("B")
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(b, i)
    assert_func_equal(sch, two_stage_at_i)
    assert sch.get(b).name_hint == "B"  # the block handle survives the move
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(b)] == ["i", "ax0"]


def test_compute_at_preserve_unit_loops():
    sch = tir.Schedule(two_stage, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i, preserve_unit_loops=True)
    assert_func_equal(sch, two_stage_at_i_unit)


def test_reverse_compute_at():
    sch = tir.Schedule(two_stage, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    assert_func_equal(sch, two_stage_reverse_at_i)


def test_compute_at_infers_overlapping_region_and_clips_it():
    sch = tir.Schedule(shifted, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("C"))
    i0, _ = sch.split(i, factors=[None, 4])
    sch.compute_at(sch.get_block("B"), i0)
    assert_func_equal(sch, shifted_at_i0)


def test_reverse_compute_at_runs_each_point_once_after_its_inputs():
    sch = tir.Schedule(shifted, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, factors=[None, 4])
    sch.reverse_compute_at(sch.get_block("C"), i0)
    assert_func_equal(sch, shifted_reverse_at_i0)


@pytest.mark.parametrize("index", [-2, 0])
def test_compute_at_index_picks_the_position(index):
    sch = tir.Schedule(three, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("D"))
    sch.compute_at(sch.get_block("C"), i)
    sch.compute_at(sch.get_block("B"), i, index=index)
    assert_func_equal(sch, three_fused)
    check_replay(sch, three)


def test_compute_at_of_a_reduction():
    sch = tir.Schedule(matmul_relu, debug_mask="all")
    _, j = sch.get_loops(sch.get_block("D"))
    sch.compute_at(sch.get_block("C"), j)
    assert_func_equal(sch, matmul_relu_at_j)


def test_compute_at_root_and_inline_marks():
    sch = tir.Schedule(two_stage, debug_mask="all")
    b = sch.get_block("B")
    root = sch.sample_compute_location(b, decision=-1)
    sch.compute_at(b, root)
    assert_func_equal(sch, two_stage)
    inline = sch.sample_compute_location(b, decision=-2)
    sch.compute_at(b, inline)
    assert [s.block.name_hint for s in sch.state.iter_srefs("main") if s.is_block] == \
        ["root", "C"]
    check_replay(sch, two_stage)


def test_compute_at_sampled_loop_replays():
    sch = tir.Schedule(matmul(8, 8, 8, with_epilogue=True), debug_mask="all", seed=1)
    c = sch.get_block("C")
    loc = sch.sample_compute_location(c, decision=1)
    sch.compute_at(c, loc)
    assert sch.get(sch.get_loops(c)[1]).loop_var.name == "j"
    check_replay(sch, matmul(8, 8, 8, with_epilogue=True))


# -- preconditions ------------------------------------------------------------------------------
def test_loop_enclosing_the_block_is_rejected():
    sch = tir.Schedule(two_stage)
    b = sch.get_block("B")
    i, _ = sch.get_loops(b)
    with pytest.raises(ScheduleError, match="compute_at: block 'B', loop 'i': the loop already "
                       "encloses the block"):
        sch.compute_at(b, i)


def test_loop_of_another_scope_is_not_a_location():
    sch = tir.Schedule(two_stage)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.blockize(j)
    with pytest.raises(ScheduleError, match="not an ancestor-compatible location"):
        sch.compute_at(sch.get_block("B"), j)


def test_all_consumers_must_be_under_the_loop():
    @T.prim_func
    def two_consumers(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
                      D: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi]
        for i in range(8):
            with T.block("D"):
                vi = T.axis.spatial(8, i)
                D[vi] = B[vi]

    sch = tir.Schedule(two_consumers)
    (i,) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"all consumers of the block must be under the "
                       r"loop; 'D' are not"):
        sch.compute_at(sch.get_block("B"), i)


def test_output_block_has_nothing_to_compute_at():
    sch = tir.Schedule(two_stage)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="has no consumer"):
        sch.compute_at(sch.get_block("C"), i)
    with pytest.raises(ScheduleError, match="has no producer"):
        sch.reverse_compute_at(sch.get_block("B"), sch.get_loops(sch.get_block("C"))[0])


def test_incomplete_block_is_rejected():
    sch = tir.Schedule(scan)
    (i,) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="neither complete nor a reduction block"):
        sch.compute_at(sch.get_block("B"), i)


def test_index_out_of_range():
    sch = tir.Schedule(three)
    i, _ = sch.get_loops(sch.get_block("D"))
    with pytest.raises(ScheduleError, match=r"index 5 is not a legal position: it must be in "
                       r"\[0, 0\]"):
        sch.compute_at(sch.get_block("C"), i, index=5)


# -- numbers ------------------------------------------------------------------------------------
@needs_llvm
def test_tiled_matmul_with_compute_at_keeps_numbers():
    func = matmul(16, 12, 8, with_epilogue=True)
    sch = tir.Schedule(func, debug_mask="all")
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, i1, j1)
    sch.compute_at(sch.get_block("C"), j0)
    check_same_numbers(func, sch.mod)


def test_reverse_compute_at_follows_a_backward_producer():
    sch = tir.Schedule(shifted_backward, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, factors=[None, 4])
    sch.reverse_compute_at(sch.get_block("C"), i0)
    c = sch.get_sref(sch.get_block("C"))
    # the producer writes B[12 - 4*i0 : 16 - 4*i0]; C runs where its first input is made
    assert str(c.realize.iter_values[0]) == "12 - i_0 * 4 + ax0"


@needs_llvm
@pytest.mark.parametrize("func", [shifted, shifted_backward])
def test_reverse_compute_at_keeps_numbers(func):
    sch = tir.Schedule(func, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, factors=[None, 3])
    sch.reverse_compute_at(sch.get_block("C"), i0)
    check_numbers(func, sch)


@needs_llvm
@pytest.mark.parametrize("reverse", [False, True])
def test_overlapping_regions_keep_numbers(reverse):
    sch = tir.Schedule(shifted, debug_mask="all")
    block = "B" if reverse else "C"
    (i,) = sch.get_loops(sch.get_block(block))
    i0, _ = sch.split(i, factors=[None, 3])
    if reverse:
        sch.reverse_compute_at(sch.get_block("C"), i0)
    else:
        sch.compute_at(sch.get_block("B"), i0)
    check_numbers(shifted, sch)


@T.prim_func
def blocked_write_back(A: T.Buffer((64, 8), "float32"), C: T.Buffer((64, 8), "float32")):
    # B holds A's rows blocked by 16: B[i // 16, j, i % 16] (a transformed cache_write)
    B = T.alloc_buffer((4, 8, 16))
    for io, j, ii in T.grid(4, 8, 16):
        with T.block("B"):
            vo, vj, vi = T.axis.remap("SSS", [io, j, ii])
            B[vo, vj, vi] = A[vo * 16 + vi, vj] * T.float32(2.0)
    for i, j in T.grid(64, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 16, vj, vi % 16]


def test_reverse_compute_at_inverts_a_blocked_layout():
    """The write-back of a block of 16 rows runs those 16 rows only, not all 64 (which
    would repeat work and race once the loop runs in parallel)."""
    sch = tir.Schedule(blocked_write_back, debug_mask="all")
    io = sch.get_loops(sch.get_block("B"))[0]
    sch.reverse_compute_at(sch.get_block("C"), io)
    c = sch.get_sref(sch.get_block("C"))
    assert str(c.realize.iter_values[0]) == "io * 16 + ax0"
    assert [sch.get(lp).extent.value for lp in sch.get_loops(sch.get_block("C"))] == [4, 16, 8]
    sch.parallel(io)  # exact regions: legal


@needs_llvm
def test_blocked_write_back_in_parallel_keeps_numbers():
    sch = tir.Schedule(blocked_write_back, debug_mask="all")
    io = sch.get_loops(sch.get_block("B"))[0]
    sch.reverse_compute_at(sch.get_block("C"), io)
    sch.parallel(io)
    check_numbers(blocked_write_back, sch)


@T.prim_func
def blocked_shifted_read(A: T.Buffer((64, 8), "float32"), C: T.Buffer((64, 8), "float32")):
    B = T.alloc_buffer((4, 8, 16))
    for io, j, ii in T.grid(4, 8, 16):
        with T.block("B"):
            vo, vj, vi = T.axis.remap("SSS", [io, j, ii])
            B[vo, vj, vi] = A[vo * 16 + vi, vj] * T.float32(2.0)
    for i, j in T.grid(64, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 16, vj, (vi + 1) % 16]


def test_parallel_rejects_a_block_writing_the_same_place_every_iteration():
    sch = tir.Schedule(blocked_shifted_read, debug_mask="all")
    io = sch.get_loops(sch.get_block("B"))[0]
    # (vi + 1) % 16 cannot be inverted to a range of vi: C runs all its points in every
    # iteration of io (correct serially), which parallel must refuse
    sch.reverse_compute_at(sch.get_block("C"), io)
    assert [sch.get(lp).extent.value for lp in sch.get_loops(sch.get_block("C"))] == [4, 64, 8]
    with pytest.raises(ScheduleError, match="same place in every iteration"):
        sch.parallel(io)


@T.prim_func
def with_sums(A: T.Buffer((16, 16), "float32"), W: T.Buffer((16,), "float32"),
              D: T.Buffer((16, 16), "float32")):
    # S: a reduction of the constant alone, ahead of the kernel (a zero-point correction)
    S = T.alloc_buffer((1,))
    B = T.alloc_buffer((16, 16))
    for k in range(16):
        with T.block("S"):
            vk = T.axis.reduce(16, k)
            with T.init():
                S[0] = T.float32(0.0)
            S[0] = S[0] + W[vk]
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] - S[0]


@T.prim_func
def with_sums_at_i(A: T.Buffer((16, 16), "float32"), W: T.Buffer((16,), "float32"),
                   D: T.Buffer((16, 16), "float32")):
    S = T.alloc_buffer((1,))
    B = T.alloc_buffer((16, 16))
    for k in range(16):
        with T.block("S"):
            vk = T.axis.reduce(16, k)
            with T.init():
                S[0] = T.float32(0.0)
            S[0] = S[0] + W[vk]
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for ax0 in range(16):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                D[vi, vj] = B[vi, vj] - S[0]


@T.prim_func
def sums_after(A: T.Buffer((16, 16), "float32"), W: T.Buffer((16,), "float32"),
               D: T.Buffer((16, 16), "float32")):
    S = T.alloc_buffer((1,))
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for k in range(16):
        with T.block("S"):
            vk = T.axis.reduce(16, k)
            with T.init():
                S[0] = T.float32(0.0)
            S[0] = S[0] + W[vk]
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] - S[0]


def test_reverse_compute_at_takes_a_producer_finished_before_the_loop():
    sch = tir.Schedule(with_sums, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("D"), i)
    assert_func_equal(sch, with_sums_at_i)
    check_replay(sch, with_sums)
    late = tir.Schedule(sums_after, debug_mask="all")
    i, _ = late.get_loops(late.get_block("B"))
    with pytest.raises(ScheduleError, match="under the loop or run before it; 'S' run after"):
        late.reverse_compute_at(late.get_block("D"), i)
