"""transform_layout and IndexMap: before/after, padding, preconditions, trace, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, needs_llvm, script_module
from tvm import tir
from tvm.ffi import from_json, structural_equal, to_json
from tvm.tir import IndexMap, ScheduleError

T = script_module()


@T.prim_func
def two_stage(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def two_stage_packed(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((4, 8, 4))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi // 4, vj, vi % 4] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 4, vj, vi % 4] + T.float32(1.0)


@T.prim_func
def two_stage_input_transposed(A: T.Buffer((8, 16), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * T.float32(2.0)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1.0)


@T.prim_func
def odd(A: T.Buffer((6,), "float32"), C: T.Buffer((6,), "float32")):
    B = T.alloc_buffer((6,))
    for i in range(6):
        with T.block("B"):
            vi = T.axis.spatial(6, i)
            B[vi] = A[vi] * T.float32(2.0)
    for i in range(6):
        with T.block("C"):
            vi = T.axis.spatial(6, i)
            C[vi] = B[vi] + T.float32(1.0)


@T.prim_func
def odd_padded(A: T.Buffer((6,), "float32"), C: T.Buffer((6,), "float32")):
    B = T.alloc_buffer((2, 4))
    for ax0, ax1 in T.grid(2, 4):
        with T.block("B_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B[v0, v1] = T.float32(-1.0)
    for i in range(6):
        with T.block("B"):
            vi = T.axis.spatial(6, i)
            B[vi // 4, vi % 4] = A[vi] * T.float32(2.0)
    for i in range(6):
        with T.block("C"):
            vi = T.axis.spatial(6, i)
            C[vi] = B[vi // 4, vi % 4] + T.float32(1.0)


@T.prim_func
def tiled_reader(A: T.Buffer((16,), "float32"), C: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi * 4:vi * 4 + 4])
            C[vi] = A[vi * 4] + A[vi * 4 + 3]


# -- IndexMap ---------------------------------------------------------------------------------
def test_index_map_from_func():
    m = IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))
    assert repr(m) == "lambda i, j: (i // 4, j, i % 4)"
    assert [int(s) for s in m.map_shape([16, 8])] == [4, 8, 4]
    assert [int(s) for s in m.map_shape([18, 8])] == [5, 8, 4]
    assert structural_equal(from_json(to_json(m)), m)
    assert structural_equal(m, IndexMap.from_func(lambda a, b: (a // 4, b, a % 4)))
    one = IndexMap.from_func(lambda *idx: idx[::-1], ndim=3)
    assert repr(one) == "lambda i0, i1, i2: (i2, i1, i0)"
    with pytest.raises(ValueError, match="takes 2 indices, the buffer has 3"):
        IndexMap.from_func(lambda i, j: (j, i), ndim=3)
    with pytest.raises(ValueError, match="not a bounded non-negative index"):
        IndexMap.from_func(lambda i: (i - 1,)).map_shape([4])


# -- before / after ---------------------------------------------------------------------------
def test_transform_intermediate_layout():
    sch = tir.Schedule(two_stage, debug_mask="all")
    sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i, j: (i // 4, j, i % 4))
    assert_func_equal(sch, two_stage_packed)
    assert str(sch.trace).splitlines()[-1] == \
        'sch.transform_layout(b0, buffer=["write", 0], index_map=lambda i, j: ' \
        '(i // 4, j, i % 4))'
    check_replay(sch, two_stage)


def test_transform_parameter_by_name_changes_the_signature():
    sch = tir.Schedule(two_stage, debug_mask="all")
    sch.transform_layout(sch.get_block("B"), "A", lambda i, j: (j, i))
    assert_func_equal(sch, two_stage_input_transposed)
    check_replay(sch, two_stage)


def test_transform_with_padding_fills_it():
    sch = tir.Schedule(odd, debug_mask="all")
    b = sch.get_block("B")
    buf = sch.get(b).writes[0].buffer
    sch.transform_layout(b, buf, lambda i: (i // 4, i % 4), pad_value=-1.0)
    assert_func_equal(sch, odd_padded)
    check_replay(sch, odd, by_text=False)  # the pad value prints as T.float32(-1.0)


def test_regions_are_mapped_as_sets():
    sch = tir.Schedule(tiled_reader, debug_mask="all")
    sch.transform_layout(sch.get_block("C"), ("read", 0), lambda i: (i // 4, i % 4))
    region = sch.get(sch.get_block("C")).reads[0].region
    assert [(str(r.min), str(r.extent)) for r in region] == [("vi", "1"), ("0", "4")]


# -- preconditions ------------------------------------------------------------------------------
def test_wrong_arity():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="transform_layout: block 'B': .*takes 1 indices, "
                       "the buffer has 2"):
        sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i: (i,))


def test_not_injective():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="the index map is not injective"):
        sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i, j: (i % 4, j))


def test_pad_value_needs_padding_and_a_writer():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match="pad_value is given but the index map adds no "
                       "padding"):
        sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i, j: (j, i), 0.0)
    sch = tir.Schedule(odd)
    with pytest.raises(ScheduleError, match="'A' is an input of the function"):
        sch.transform_layout(sch.get_block("B"), ("read", 0), lambda i: (i // 4, i % 4), 0.0)


def test_bad_buffer_spec():
    sch = tir.Schedule(two_stage)
    with pytest.raises(ScheduleError, match=r"write buffer index 2 is out of range"):
        sch.transform_layout(sch.get_block("B"), ("write", 2), lambda i, j: (j, i))
    with pytest.raises(ScheduleError, match="the block does not access a buffer 'Z'"):
        sch.transform_layout(sch.get_block("B"), "Z", lambda i, j: (j, i))


# -- numbers ----------------------------------------------------------------------------------
@needs_llvm
@pytest.mark.parametrize("func, index_map, pad", [
    (two_stage, lambda i, j: (i // 4, j, i % 4), None),
    (two_stage, lambda i, j: (j, i), None),
    (odd, lambda i: (i // 4, i % 4), 0.0),
    (odd, lambda i: (i // 4, i % 4), None),
])
def test_transformed_layouts_keep_numbers(func, index_map, pad):
    sch = tir.Schedule(func, debug_mask="all")
    sch.transform_layout(sch.get_block("B"), ("write", 0), index_map, pad_value=pad)
    check_numbers(func, sch)
