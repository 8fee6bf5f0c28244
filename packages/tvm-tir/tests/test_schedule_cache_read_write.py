"""cache_read / cache_write: before/after in TVMScript, preconditions, trace, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_replay
from schedule_util import (
    assert_func_equal, check_same_numbers, llvm_available, matmul, needs_llvm, script_module,
)
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
def two_stage_cache_read(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    A_shared = T.alloc_buffer((16, 16), scope="shared")
    B_local = T.alloc_buffer((16, 16), scope="local")
    for ax0, ax1 in T.grid(16, 16):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_shared[v0, v1] = A[v0, v1]
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_shared[vi, vj] * T.float32(2.0)
    for ax0, ax1 in T.grid(16, 16):
        with T.block("B_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B_local[v0, v1] = B[v0, v1]
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B_local[vi, vj] + T.float32(1.0)


@T.prim_func
def two_stage_cache_write(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    B_local = T.alloc_buffer((16, 16), scope="local")
    C_local = T.alloc_buffer((16, 16), scope="local")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_local[vi, vj] = A[vi, vj] * T.float32(2.0)
    for ax0, ax1 in T.grid(16, 16):
        with T.block("B_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B[v0, v1] = B_local[v0, v1]
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C_local[vi, vj] = B[vi, vj] + T.float32(1.0)
    for ax0, ax1 in T.grid(16, 16):
        with T.block("C_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            C[v0, v1] = C_local[v0, v1]


@T.prim_func
def fused_cache_read(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    B_local = T.alloc_buffer((16, 16), scope="local")
    for i in range(16):
        for ax0 in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for ax0, ax1 in T.grid(1, 16):
            with T.block("B_local"):
                v0 = T.axis.spatial(16, i + ax0)
                v1 = T.axis.spatial(16, ax1)
                B_local[v0, v1] = B[v0, v1]
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B_local[vi, vj] + T.float32(1.0)


@T.prim_func
def two_readers(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
                D: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = A[vi] * T.float32(3.0)


@T.prim_func
def two_readers_one_cached(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
                           D: T.Buffer((8,), "float32")):
    A_global = T.alloc_buffer((8,))
    for ax0 in range(8):
        with T.block("A_global"):
            v0 = T.axis.spatial(8, ax0)
            A_global[v0] = A[v0]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = A_global[vi] * T.float32(3.0)


# -- before / after ---------------------------------------------------------------------------
def test_cache_read_input_and_intermediate():
    sch = tir.Schedule(two_stage, debug_mask="all")
    a_shared = sch.cache_read(sch.get_block("B"), 0, "shared")
    b_local = sch.cache_read(sch.get_block("C"), 0, "local")
    assert_func_equal(sch, two_stage_cache_read)
    assert sch.get(a_shared).name_hint == "A_shared"
    assert sch.get(b_local).name_hint == "B_local"
    assert sch.get(sch.get_block("B")).reads[0].buffer.scope == "shared"


def test_cache_write_both_blocks():
    sch = tir.Schedule(two_stage, debug_mask="all")
    b = sch.get_block("B")
    wb = sch.cache_write(b, 0, "local")
    sch.cache_write(sch.get_block("C"), 0, "local")
    assert_func_equal(sch, two_stage_cache_write)
    assert sch.get(wb).name_hint == "B_local"
    assert sch.get(b).writes[0].buffer.name == "B_local"  # the handle follows the block


def test_cache_read_goes_under_the_shared_loop():
    sch = tir.Schedule(two_stage, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    sch.cache_read(sch.get_block("C"), 0, "local")
    assert_func_equal(sch, fused_cache_read)


def test_cache_read_only_for_given_consumers():
    sch = tir.Schedule(two_readers, debug_mask="all")
    sch.cache_read(sch.get_block("D"), 0, "global", consumer_blocks=[sch.get_block("D")])
    assert_func_equal(sch, two_readers_one_cached)
    check_replay(sch, two_readers)


def test_cache_write_of_a_reduction_rewrites_init_and_update():
    sch = tir.Schedule(matmul(8, 8, 8), debug_mask="all")
    c = sch.get_block("C")
    sch.cache_write(c, 0, "local")
    block = sch.get(c)
    assert block.init.buffer.name == "C_local"
    assert block.body.buffer.name == "C_local"
    assert block.body.value.a.buffer.name == "C_local"
    names = [s.block.name_hint for s in sch.state.iter_srefs("main") if s.is_block]
    assert names == ["root", "C", "C_local"]


def test_block_names_stay_unique():
    sch = tir.Schedule(two_readers, debug_mask="all")
    x = sch.cache_read(sch.get_block("C"), 0, "global", consumer_blocks=[sch.get_block("C")])
    y = sch.cache_read(sch.get_block("D"), 0, "global", consumer_blocks=[sch.get_block("D")])
    assert {sch.get(x).name_hint, sch.get(y).name_hint} == {"A_global", "A_global_1"}


def test_trace_replays():
    sch = tir.Schedule(two_stage, debug_mask="all")
    sch.cache_read(sch.get_block("B"), 0, "shared")
    sch.cache_write(sch.get_block("C"), 0, "local")
    assert str(sch.trace).splitlines()[1] == \
        'b1 = sch.cache_read(b0, read_buffer_index=0, storage_scope="shared")'
    check_replay(sch, two_stage)


# -- preconditions ------------------------------------------------------------------------------
def test_cache_read_index_out_of_range():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match=r"cache_read: block 'B': read_buffer_index 3 is out "
                       r"of range: the block reads 1 buffer\(s\) \(A\)"):
        sch.cache_read(sch.get_block("B"), 3, "shared")
    assert len(sch.trace) == 1  # the failed primitive is not recorded


def test_cache_write_index_out_of_range():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="cache_write: block 'C': write_buffer_index -1"):
        sch.cache_write(sch.get_block("C"), -1, "local")


def test_invalid_storage_scope():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="invalid storage scope 'registers'"):
        sch.cache_read(sch.get_block("B"), 0, "registers")


def test_consumer_must_read_the_buffer():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="block 'B': the consumer block does not read "
                       "buffer 'B'"):
        sch.cache_read(sch.get_block("C"), 0, "local", consumer_blocks=[sch.get_block("B")])
    sch = tir.Schedule(two_readers)
    with pytest.raises(ScheduleError, match="consumer block does not read buffer 'C'"):
        sch.cache_write(sch.get_block("C"), 0, "local", consumer_blocks=[sch.get_block("D")])


def test_root_block_cannot_be_cached():
    sch = tir.Schedule(two_stage)
    root = sch.get_block("root")
    with pytest.raises(ScheduleError, match="out of range|root block"):
        sch.cache_read(root, 0, "shared")


# -- numbers ------------------------------------------------------------------------------------
@needs_llvm
def test_cache_read_write_keep_numbers():
    func = matmul(16, 16, 16, with_epilogue=True)
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    sch.cache_read(c, 0, "shared")
    sch.cache_read(c, 1, "local")
    sch.cache_write(c, 0, "local")
    sch.cache_read(sch.get_block("D"), 0, "global")
    check_same_numbers(func, sch.mod)


def _gpu_style(func):
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 4])
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    a = sch.cache_read(c, 0, "shared")
    b = sch.cache_read(c, 1, "shared")
    sch.compute_at(a, k0)
    sch.compute_at(b, k0)
    w = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(w, j0)
    return sch, a, w


def test_cache_then_compute_at_copies_tiles():
    sch, a, w = _gpu_style(matmul(16, 16, 16))
    a_loops = [sch.get(lp) for lp in sch.get_loops(a)]
    assert [lp.loop_var.name for lp in a_loops[:3]] == ["i_0", "j_0", "k_0"]
    assert [int(lp.extent) for lp in a_loops[3:]] == [4, 4]
    assert [int(sch.get(lp).extent) for lp in sch.get_loops(w)] == [4, 4, 4, 4]
    check_replay(sch, matmul(16, 16, 16))


@needs_llvm
def test_cache_then_compute_at_keeps_numbers():
    func = matmul(16, 16, 16)
    check_same_numbers(func, _gpu_style(func)[0].mod)


def test_cache_read_inside_a_block_copies_its_declared_region():
    func = matmul(16, 16, 16)
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, k, i1, j)
    sch.blockize(i1)
    index = [r.buffer.name for r in sch.get(c).reads].index("A")
    copy = sch.cache_read(c, index, "local")
    scope = sch.get_sref(copy).scope_block()
    assert scope.block.name_hint == "C_o" and scope.block.alloc_buffers[0].name == "A_local"
    assert [int(sch.get(lp).extent) for lp in sch.get_loops(copy)] == [4, 1]
    check_replay(sch, func)
    if llvm_available():
        check_same_numbers(func, sch.mod)
