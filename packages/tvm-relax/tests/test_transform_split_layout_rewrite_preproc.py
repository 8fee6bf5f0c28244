"""AnnotateLayoutFreeBuffers, SplitLayoutRewritePreproc and the layout-rewrite folding of
FoldConstant (before/after in TVMScript)."""

from __future__ import annotations

import numpy as np
import pytest
from tvm.ffi import assert_structural_equal
from tvm.relax.transform import (
    AnnotateLayoutFreeBuffers,
    FoldConstant,
    SplitLayoutRewritePreproc,
)
from tvm.relax.transform.split_layout_rewrite_preproc import (
    layout_free_params,
    remove_unused_preproc,
    split_prim_func,
)
from tvm.relax.vm import bind_params
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T
from tvm.tir import PrimFunc
from vm_testing import requires_llvm


@I.ir_module
class Packed:
    """A dense kernel whose schedule packs ``w`` into ``w_global[j // 4, k, j % 4]``."""

    @T.prim_func(private=True)
    def dense(x: T.Buffer((T.int64(2), T.int64(8)), "float32"),
              w: T.Buffer((T.int64(8), T.int64(8)), "float32"),
              y: T.Buffer((T.int64(2), T.int64(8)), "float32")):
        T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
        w_global = T.alloc_buffer((T.int64(2), T.int64(8), T.int64(4)), "float32")
        for ax0, ax1 in T.grid(T.int64(8), T.int64(8)):
            with T.block("w_global"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(w[v0, v1])
                T.writes(w_global[v0 // T.int64(4), v1, v0 % T.int64(4)])
                T.block_attr({"layout_rewrite_preproc": True})
                w_global[v0 // T.int64(4), v1, v0 % T.int64(4)] = w[v0, v1]
        for i, j, k in T.grid(T.int64(2), T.int64(8), T.int64(8)):
            with T.block("dense"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(x[vi, vk], w_global[vj // T.int64(4), vk, vj % T.int64(4)])
                T.writes(y[vi, vj])
                with T.init():
                    y[vi, vj] = T.float32(0.0)
                y[vi, vj] = y[vi, vj] + x[vi, vk] * w_global[vj // T.int64(4), vk, vj % T.int64(4)]

    @R.function
    def main(x: R.Tensor((2, 8), "float32"), w: R.Tensor((8, 8), "float32")
             ) -> R.Tensor((2, 8), "float32"):
        cls = Packed
        with R.dataflow():
            gv = R.call_tir(cls.dense, (x, w), out_sinfo=R.Tensor((2, 8), "float32"))
            R.output(gv)
        return gv


@I.ir_module
class Split:
    @T.prim_func(private=True)
    def dense(x: T.Buffer((T.int64(2), T.int64(8)), "float32"),
              w_global: T.Buffer((T.int64(2), T.int64(8), T.int64(4)), "float32"),
              y: T.Buffer((T.int64(2), T.int64(8)), "float32")):
        T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
        for i, j, k in T.grid(T.int64(2), T.int64(8), T.int64(8)):
            with T.block("dense"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(x[vi, vk], w_global[vj // T.int64(4), vk, vj % T.int64(4)])
                T.writes(y[vi, vj])
                with T.init():
                    y[vi, vj] = T.float32(0.0)
                y[vi, vj] = y[vi, vj] + x[vi, vk] * w_global[vj // T.int64(4), vk, vj % T.int64(4)]

    @T.prim_func(private=True)
    def dense_prepack1(w: T.Buffer((T.int64(8), T.int64(8)), "float32"),
                       w_global: T.Buffer((T.int64(2), T.int64(8), T.int64(4)), "float32")):
        T.func_attr({"tir.noalias": True, "tir.is_scheduled": True,
                     "layout_rewrite_preproc": True})
        for ax0, ax1 in T.grid(T.int64(8), T.int64(8)):
            with T.block("w_global"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(w[v0, v1])
                T.writes(w_global[v0 // T.int64(4), v1, v0 % T.int64(4)])
                T.block_attr({"layout_rewrite_preproc": True})
                w_global[v0 // T.int64(4), v1, v0 % T.int64(4)] = w[v0, v1]

    @R.function
    def main(x: R.Tensor((2, 8), "float32"), w: R.Tensor((8, 8), "float32")
             ) -> R.Tensor((2, 8), "float32"):
        cls = Split
        with R.dataflow():
            w_global_packed = R.call_tir(cls.dense_prepack1, (w,),
                                         out_sinfo=R.Tensor((2, 8, 4), "float32"))
            gv = R.call_tir(cls.dense, (x, w_global_packed),
                            out_sinfo=R.Tensor((2, 8), "float32"))
            R.output(gv)
        return gv


def test_split_moves_the_packing_block_into_its_own_prim_func():
    assert_structural_equal(SplitLayoutRewritePreproc()(Packed), Split)


def test_split_without_annotation_is_identity():
    dense = Packed["dense"]
    unmarked = _without_annotation(dense)
    mod = Packed.with_function("dense", unmarked)
    assert SplitLayoutRewritePreproc()(mod) is mod
    assert split_prim_func(unmarked) is None


def _without_annotation(func: PrimFunc) -> PrimFunc:
    from tvm.tir.stmt import Block
    from tvm.tir.stmt_functor import ir_transform

    def drop(node):
        if isinstance(node, Block) and node.annotations.get("layout_rewrite_preproc"):
            return node.with_fields(annotations={})
        return None

    return func.with_body(ir_transform(func.body, None, drop))


@I.ir_module
class ReadTwice:
    """``w`` is packed, and also read directly by a second block: it must stay a parameter,
    so nothing is split."""

    @T.prim_func(private=True)
    def f(w: T.Buffer((T.int64(8),), "float32"), y: T.Buffer((T.int64(8),), "float32")):
        T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
        w_global = T.alloc_buffer((T.int64(2), T.int64(4)), "float32")
        for ax0 in range(T.int64(8)):
            with T.block("w_global"):
                v0 = T.axis.spatial(T.int64(8), ax0)
                T.reads(w[v0])
                T.writes(w_global[v0 // T.int64(4), v0 % T.int64(4)])
                T.block_attr({"layout_rewrite_preproc": True})
                w_global[v0 // T.int64(4), v0 % T.int64(4)] = w[v0]
        for i in range(T.int64(8)):
            with T.block("y"):
                vi = T.axis.spatial(T.int64(8), i)
                T.reads(w_global[vi // T.int64(4), vi % T.int64(4)], w[vi])
                T.writes(y[vi])
                y[vi] = w_global[vi // T.int64(4), vi % T.int64(4)] + w[vi]


def test_split_keeps_a_buffer_still_read_by_the_kernel():
    assert split_prim_func(ReadTwice["f"]) is None


@I.ir_module
class TwoSites:
    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32"),
            c: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tir.noalias": True})
        for i in range(T.int64(4)):
            with T.block("c"):
                vi = T.axis.spatial(T.int64(4), i)
                c[vi] = a[vi] + b[vi]

    @R.function
    def main(x: R.Tensor((4,), "float32"), p: R.Tensor((4,), "float32"),
             q: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = TwoSites
        with R.dataflow():
            lv = R.call_tir(cls.add, (x, p), out_sinfo=R.Tensor((4,), "float32"))
            gv = R.call_tir(cls.add, (q, lv), out_sinfo=R.Tensor((4,), "float32"))
            R.output(gv)
        return gv


def test_layout_free_params_need_a_constant_at_every_site():
    ones = np.ones(4, "float32")
    mod = bind_params(TwoSites, {"p": ones})
    # site 1 passes the constant p as argument 1, site 2 passes lv: nothing is constant always
    assert layout_free_params(mod) == {}
    mod = bind_params(TwoSites, {"p": ones, "q": ones})
    # argument 0 is x at site 1; argument 1 is p then lv
    assert layout_free_params(mod) == {}
    assert "layout_free_buffers" not in AnnotateLayoutFreeBuffers()(mod)["add"].attrs


def test_annotate_marks_constant_parameters():
    mod = bind_params(Packed, {"w": np.ones((8, 8), "float32")})
    out = AnnotateLayoutFreeBuffers()(mod)
    assert list(out["dense"].attrs["layout_free_buffers"]) == [1]
    # an attribute set by the user is kept
    user = mod.with_function("dense", mod["dense"].with_attr("layout_free_buffers", []))
    assert list(AnnotateLayoutFreeBuffers()(user)["dense"].attrs["layout_free_buffers"]) == []


@requires_llvm
@pytest.mark.parametrize("max_elements", [1 << 24, 4])
def test_fold_computes_the_packed_constant_whatever_its_size(max_elements):
    w = np.arange(64, dtype="float32").reshape(8, 8)
    mod = SplitLayoutRewritePreproc()(bind_params(Packed, {"w": w}))
    folded = FoldConstant(evaluator="compile", max_elements=max_elements,
                          layout_rewrite_only=True)(mod)
    folded = remove_unused_preproc(folded)
    assert "dense_prepack1" not in folded
    text = folded["main"].script()
    assert "dense_prepack1" not in text
    (const,) = _constants(folded["main"])
    expected = w.reshape(2, 4, 8).transpose(0, 2, 1)  # [j // 4, k, j % 4] = w[j, k]
    np.testing.assert_array_equal(const, expected)


def _constants(func):
    from tvm.relax.expr_functor import ExprVisitor

    found = []

    class V(ExprVisitor):
        def visit_constant_(self, expr):
            found.append(np.asarray(expr.data))

    V().visit_expr(func)
    return found


@T.prim_func(private=True)
def uses_kernel_variable(w: T.Buffer((T.int64(8),), "float32"), y: T.Buffer((T.int64(8),),
                                                                               "float32"),
                         n: T.int64):
    T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
    w_global = T.alloc_buffer((T.int64(2), T.int64(4)), "float32")
    for ax0 in range(n):
        with T.block("w_global"):
            v0 = T.axis.spatial(T.int64(8), ax0)
            T.reads(w[v0])
            T.writes(w_global[v0 // T.int64(4), v0 % T.int64(4)])
            T.block_attr({"layout_rewrite_preproc": True})
            w_global[v0 // T.int64(4), v0 % T.int64(4)] = w[v0]
    for i in range(T.int64(8)):
        with T.block("y"):
            vi = T.axis.spatial(T.int64(8), i)
            T.reads(w_global[vi // T.int64(4), vi % T.int64(4)])
            T.writes(y[vi])
            y[vi] = w_global[vi // T.int64(4), vi % T.int64(4)]


def test_split_keeps_a_packing_loop_that_uses_kernel_variables():
    assert split_prim_func(uses_kernel_variable) is None


@I.ir_module
class PackedAndSummed:
    """An int8 kernel: ``w`` is packed and also summed (a zero-point correction, a reduction);
    both blocks read only ``w`` and are marked."""

    @T.prim_func(private=True)
    def qdense(x: T.Buffer((T.int64(2), T.int64(8)), "uint8"),
               w: T.Buffer((T.int64(8), T.int64(8)), "int8"),
               y: T.Buffer((T.int64(2), T.int64(8)), "int32")):
        T.func_attr({"tir.noalias": True, "tir.is_scheduled": True})
        w_sum = T.alloc_buffer((T.int64(8),), "int32")
        w_global = T.alloc_buffer((T.int64(2), T.int64(8), T.int64(4)), "int8")
        for j, k in T.grid(T.int64(8), T.int64(8)):
            with T.block("w_sum"):
                vj, vk = T.axis.remap("SR", [j, k])
                T.reads(w[vj, vk])
                T.writes(w_sum[vj])
                T.block_attr({"layout_rewrite_preproc": True})
                with T.init():
                    w_sum[vj] = 0
                w_sum[vj] = w_sum[vj] + T.Cast("int32", w[vj, vk])
        for ax0, ax1 in T.grid(T.int64(8), T.int64(8)):
            with T.block("w_global"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(w[v0, v1])
                T.writes(w_global[v0 // T.int64(4), v1, v0 % T.int64(4)])
                T.block_attr({"layout_rewrite_preproc": True})
                w_global[v0 // T.int64(4), v1, v0 % T.int64(4)] = w[v0, v1]
        for i, j, k in T.grid(T.int64(2), T.int64(8), T.int64(8)):
            with T.block("y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(x[vi, vk], w_global[vj // T.int64(4), vk, vj % T.int64(4)], w_sum[vj])
                T.writes(y[vi, vj])
                with T.init():
                    y[vi, vj] = -3 * w_sum[vj]
                y[vi, vj] = y[vi, vj] + T.Cast("int32", x[vi, vk]) * T.Cast(
                    "int32", w_global[vj // T.int64(4), vk, vj % T.int64(4)])

    @R.function
    def main(x: R.Tensor((2, 8), "uint8"), w: R.Tensor((8, 8), "int8")
             ) -> R.Tensor((2, 8), "int32"):
        cls = PackedAndSummed
        with R.dataflow():
            gv = R.call_tir(cls.qdense, (x, w), out_sinfo=R.Tensor((2, 8), "int32"))
            R.output(gv)
        return gv


def test_one_parameter_feeds_several_preprocs_a_reduction_among_them():
    split = SplitLayoutRewritePreproc()(PackedAndSummed)
    kernel = split["qdense"]
    names = [kernel.buffer_map[p].name for p in kernel.params]
    assert names == ["x", "w_sum", "w_global", "y"]  # in program order, where w was
    assert {"qdense_prepack1", "qdense_prepack1_1"} <= {gv.name_hint for gv in
                                                        split.get_global_vars()}
    text = split["main"].script()
    assert "w_sum_packed" in text and "w_global_packed" in text
    assert "(x, w_sum_packed, w_global_packed)" in text


@requires_llvm
def test_the_weight_sum_folds_to_a_constant():
    w = (np.arange(64) % 17 - 8).astype("int8").reshape(8, 8)
    mod = SplitLayoutRewritePreproc()(bind_params(PackedAndSummed, {"w": w}))
    folded = remove_unused_preproc(FoldConstant(evaluator="compile",
                                                layout_rewrite_only=True)(mod))
    consts = _constants(folded["main"])
    assert len(consts) == 2
    np.testing.assert_array_equal(consts[0], w.astype(np.int32).sum(axis=1))
    np.testing.assert_array_equal(consts[1], w.reshape(2, 4, 8).transpose(0, 2, 1))
