"""The contraction rule marks the packing copy of a layout-free parameter (PrimFunc
attribute ``layout_free_buffers``) with the block annotation ``layout_rewrite_preproc``,
and only that one."""

from __future__ import annotations

import pytest
from schedule_workloads import dense
from tvm.target.llvm.schedule_rules import CPUInfo, schedule_prim_func
from tvm.tir.stmt import Block
from tvm.tir.stmt_functor import post_order_visit

AVX2 = CPUInfo(vector_bytes=32, vector_registers=16, fma=True, num_cores=2)


def blocks(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return found


def annotated_blocks(func):
    return [b for b in blocks(func) if b.annotations.get("layout_rewrite_preproc")]


@pytest.mark.parametrize("free, marked", [([1], True), ([], False), (None, False),
                                          ([0], False)])
def test_packing_copy_is_marked_only_for_layout_free_weights(free, marked):
    func = dense(16, 64, 32)
    if free is not None:
        func = func.with_attr("layout_free_buffers", free)
    out = schedule_prim_func(func, AVX2)
    weight = func.buffer_map[func.params[1]]
    # the weight is packed [j // NR, k, j % NR] whether or not it is layout-free
    (copy,) = [b for b in blocks(out) if len(b.reads) == 1 and b.reads[0].buffer is weight]
    assert len(copy.writes[0].buffer.shape) == 3
    assert annotated_blocks(out) == ([copy] if marked else []), out.script()
