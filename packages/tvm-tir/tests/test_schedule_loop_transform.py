"""split / fuse / reorder: before/after in TVMScript, preconditions, numbers."""

from __future__ import annotations

import pytest
from schedule_util import (
    assert_func_equal, check_same_numbers, elementwise, matmul, needs_llvm, script_module,
)
from tvm import tir
from tvm.tir import ScheduleError

T = script_module()


@T.prim_func
def ew(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_split_divisible(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i_0, i_1, j in T.grid(4, 32, 128):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 32 + i_1)
            vj = T.axis.spatial(128, j)
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_split_guarded(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i_0, i_1, j in T.grid(3, 48, 128):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 48 + i_1)
            vj = T.axis.spatial(128, j)
            T.where(i_0 * 48 + i_1 < 128)
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_fused(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i_j_fused in range(16384):
        with T.block("B"):
            vi = T.axis.spatial(128, i_j_fused // 128)
            vj = T.axis.spatial(128, i_j_fused % 128)
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_reordered(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for j, i in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def two_blocks(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1.0)
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] * T.float32(2.0)


# -- split ------------------------------------------------------------------------------------
def test_split_divisible_matches_script():
    sch = tir.Schedule(ew, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    outer, inner = sch.split(i, factors=[4, 32])
    assert_func_equal(sch, ew_split_divisible)
    assert sch.get(outer).extent.value == 4 and sch.get(inner).extent.value == 32


@pytest.mark.parametrize("factors", [[None, 32], [4, None], [4, 32]])
def test_split_infers_the_none_factor(factors):
    sch = tir.Schedule(ew, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=factors)
    assert_func_equal(sch, ew_split_divisible)


def test_split_non_divisible_adds_predicate():
    sch = tir.Schedule(ew, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 48])
    assert_func_equal(sch, ew_split_guarded)


def test_split_three_way_with_sampled_factors():
    sch = tir.Schedule(ew, debug_mask="all", seed=3)
    i, _ = sch.get_loops(sch.get_block("B"))
    factors = sch.sample_perfect_tile(i, n=3, max_innermost_factor=8)
    loops = sch.split(i, factors=factors)
    extents = [sch.get(lp).extent.value for lp in loops]
    assert extents == [sch.get(f) for f in factors]
    assert extents[0] * extents[1] * extents[2] == 128 and extents[2] <= 8
    with pytest.raises(ScheduleError, match="not a handle of this schedule"):
        tir.Schedule(ew).get(sch.get_block("B"))


def test_split_keeps_block_handle_and_invalidates_loop():
    sch = tir.Schedule(ew, debug_mask="all")
    b = sch.get_block("B")
    i, j = sch.get_loops(b)
    sch.split(i, factors=[2, 64])
    assert sch.get(b).name_hint == "B"
    assert sch.get(j).loop_var.name == "j"  # untouched loop keeps its handle
    with pytest.raises(ScheduleError, match="removed by split"):
        sch.get(i)


@T.prim_func
def shifted(A: T.Buffer((20,), "float32")):
    for i in range(4, 20):
        with T.block("A"):
            vi = T.axis.spatial(20, i)
            A[vi] = T.float32(1.0)


@T.prim_func
def shifted_split(A: T.Buffer((20,), "float32")):
    for i_0, i_1 in T.grid(4, 5):
        with T.block("A"):
            vi = T.axis.spatial(20, i_0 * 5 + i_1 + 4)
            T.where(i_0 * 5 + i_1 < 16)
            A[vi] = T.float32(1.0)


@T.prim_func
def shifted_fused(A: T.Buffer((20,), "float32")):
    for i_0_i_1_i_2_fused in range(16):
        with T.block("A"):
            vi = T.axis.spatial(20, i_0_i_1_i_2_fused + 4)
            A[vi] = T.float32(1.0)


def test_split_nonzero_min():
    sch = tir.Schedule(shifted, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("A"))
    sch.split(i, factors=[None, 5])
    assert_func_equal(sch, shifted_split)


def test_split_without_unit_iters_then_fuse():
    sch = tir.Schedule(shifted, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("A"))
    sch.split(i, factors=[4, 1, 4], preserve_unit_iters=False)
    sch.fuse(*sch.get_loops(sch.get_block("A")))
    assert_func_equal(sch, shifted_fused)


@pytest.mark.parametrize(
    "factors, match",
    [
        ([2, 32], "does not cover the loop extent"),
        ([None, None], "at most one factor may be None"),
        ([0, None], "factors must be positive"),
        ([], "must not be empty"),
    ],
)
def test_split_errors(factors, match):
    sch = tir.Schedule(ew, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    before = sch.mod
    with pytest.raises(ScheduleError, match=match) as info:
        sch.split(i, factors=factors)
    assert "split" in str(info.value) and "loop 'i'" in str(info.value)
    assert sch.mod is before and len(sch.trace) == 2  # rolled back, not recorded


def test_split_factors_must_be_a_list():
    sch = tir.Schedule(ew)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(TypeError, match="factors must be a list"):
        sch.split(i, factors=4)


# -- fuse -------------------------------------------------------------------------------------
def test_fuse_matches_script():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    fused = sch.fuse(i, j)
    assert_func_equal(sch, ew_fused)
    assert sch.get(fused).extent.value == 128 * 128


def test_split_then_fuse_roundtrip_extent():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    a, b = sch.split(i, factors=[8, 16])
    f = sch.fuse(a, b)
    assert sch.get(f).extent.value == 128
    assert sch.get(f).loop_var.name == "i_0_i_1_fused"


def test_fuse_requires_adjacent_loops():
    sch = tir.Schedule(two_blocks, debug_mask="all")
    (i, j) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="not adjacent"):
        sch.fuse(i, j)


def test_fuse_rejects_non_serial_and_duplicates():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="listed twice"):
        sch.fuse(i, i)
    sch.parallel(i)
    with pytest.raises(ScheduleError, match="only serial loops can be fused"):
        sch.fuse(i, j)


def test_fuse_wrong_order_is_rejected():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="not adjacent"):
        sch.fuse(j, i)


# -- reorder ----------------------------------------------------------------------------------
def test_reorder_matches_script_and_keeps_handles():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    sch.reorder(j, i)
    assert_func_equal(sch, ew_reordered)
    assert [sch.get(x).loop_var.name for x in sch.get_loops(sch.get_block("B"))] == ["j", "i"]
    assert sch.get(i).loop_var.name == "i"  # reorder keeps loop handles


def test_reorder_partial_leaves_unlisted_loops():
    sch = tir.Schedule(matmul(16, 16, 16), debug_mask="all")
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(k, i)  # j stays in the middle
    names = [sch.get(x).loop_var.name for x in sch.get_loops(sch.get_block("C"))]
    assert names == ["k", "j", "i"]


def test_reorder_errors():
    sch = tir.Schedule(two_blocks, debug_mask="all")
    (i, j) = sch.get_loops(sch.get_block("B"))
    (_, j2) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="not perfectly nested"):
        sch.reorder(j, i)
    with pytest.raises(ScheduleError, match="not in one loop nest"):
        sch.reorder(j, j2)
    with pytest.raises(ScheduleError, match="listed twice"):
        sch.reorder(i, i)


def test_reorder_accepts_a_list():
    sch = tir.Schedule(ew)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.reorder([j, i])
    assert_func_equal(sch, ew_reordered)


# -- numbers ----------------------------------------------------------------------------------
@needs_llvm
def test_split_fuse_reorder_keep_matmul_numbers():
    func = matmul(24, 20, 12, with_epilogue=True)
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, 5])   # 24 = 5 * 5 - 1: guarded
    jo, ji = sch.split(j, factors=[4, 5])
    sch.reorder(io, jo, k, ii, ji)
    d = sch.get_block("D")
    f = sch.fuse(*sch.get_loops(d))
    sch.split(f, factors=[None, 7])
    check_same_numbers(func, sch.mod)


@needs_llvm
def test_elementwise_chain_numbers():
    func = elementwise((12, 10))
    sch = tir.Schedule(func, debug_mask="all")
    for name in ("B", "C"):
        i, j = sch.get_loops(sch.get_block(name))
        f = sch.fuse(i, j)
        sch.split(f, factors=[None, 16])
    check_same_numbers(func, sch.mod)


# -- symbolic extents -------------------------------------------------------------------------
def _symbolic():
    from tvm import te

    n = te.size_var("n")
    A = te.placeholder((n, 8), name="A")
    B = te.compute((n, 8), lambda i, j: A[i, j] + 1.0, name="B")
    return te.create_prim_func([A, B])


def test_split_symbolic_extent_infers_and_guards():
    sch = tir.Schedule(_symbolic(), debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="does not cover the loop extent n"):
        sch.split(i, factors=[4, 4])
    io, ii = sch.split(i, factors=[None, 4])
    text = sch.script()
    assert "(n + 3) // 4" in text and "T.where(i_0 * 4 + i_1 < n)" in text
    fused = sch.fuse(ii, j)
    assert sch.get(fused).extent.value == 32
    assert "T.where(i_0 * 4 + i_1_j_fused // 8 < n)" in sch.script()


@needs_llvm
def test_symbolic_split_numbers():
    import numpy as np
    from schedule_util import run

    sch = tir.Schedule(_symbolic(), debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    io, ii = sch.split(i, factors=[None, 4])
    sch.parallel(io)
    sch.fuse(ii, j)
    for rows in (1, 7, 12):
        a = np.random.rand(rows, 8).astype("float32")
        b = np.zeros_like(a)
        run(sch.mod, a, b)
        np.testing.assert_allclose(b, a + 1, rtol=1e-6)


def test_add_unit_loop_around_a_block_and_a_loop():
    from schedule_block_util import check_replay
    from tvm.tir.schedule.rules import loop_extent

    T = script_module()

    @T.prim_func
    def scalar(a: T.Buffer((4,), "float32"), b: T.Buffer((), "float32")):
        with T.block("B"):
            vi = T.axis.spatial(1, 0)  # noqa: F841
            b[()] = a[0] + a[3]

    @T.prim_func
    def expected(a: T.Buffer((4,), "float32"), b: T.Buffer((), "float32")):
        for u1 in range(1):  # noqa: B007
            for u0 in range(1):  # noqa: B007
                with T.block("B"):
                    vi = T.axis.spatial(1, 0)  # noqa: F841
                    b[()] = a[0] + a[3]

    sch = tir.Schedule(scalar, debug_mask="all")
    block = sch.get_block("B")
    inner = sch.add_unit_loop(block)
    outer = sch.add_unit_loop(inner)
    assert [loop_extent(sch, lp) for lp in sch.get_loops(block)] == [1, 1]
    assert sch.get(sch.get_loops(block)[0]) is sch.get(outer)
    assert_func_equal(sch, expected)
    check_replay(sch, scalar)
    with pytest.raises(ScheduleError, match="cannot add a loop around the root block"):
        sch.add_unit_loop(sch.get_block("root"))
