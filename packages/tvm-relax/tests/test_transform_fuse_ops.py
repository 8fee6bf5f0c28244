"""FuseOps: before/after modules in TVMScript, the op pattern analysis of PrimFuncs, and the
agreement of fusion before and after legalization."""

from __future__ import annotations

import pytest
from tvm import te, tir
from tvm.ffi import assert_structural_equal
from tvm.ir.transform import PassContext
from tvm.relax import transform
from tvm.relax.transform import FuseOps, LegalizeOps, OpPatternKind, analyze_op_pattern
from tvm.relax.transform.fuse_ops import partition_block
from tvm.script import ir as I
from tvm.script import relax as R

K = OpPatternKind


def fuse(mod):
    return FuseOps()(mod)


# ---------------------------------------------------------------------------- op-level fusion


@I.ir_module
class Epilogue:
    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
             b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.add(lv, b)
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv


@I.ir_module
class EpilogueFused:
    @R.function(private=True)
    def fused_matmul_add_relu(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
                              b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.add(lv, b)
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
             b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        cls = EpilogueFused
        with R.dataflow():
            gv = cls.fused_matmul_add_relu(x, w, b)
            R.output(gv)
        return gv


def test_matmul_epilogue_fuses_into_one_function():
    assert_structural_equal(fuse(Epilogue), EpilogueFused)


@I.ir_module
class Diamond:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        with R.dataflow():
            e = R.exp(x)
            a = R.add(e, x)
            m = R.multiply(e, e)
            gv = R.subtract(a, m)
            R.output(gv)
        return gv


@I.ir_module
class DiamondFused:
    @R.function(private=True)
    def fused_exp_add_multiply_subtract(x: R.Tensor((4, 4), "float32")
                                        ) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            e = R.exp(x)
            a = R.add(e, x)
            m = R.multiply(e, e)
            gv = R.subtract(a, m)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = DiamondFused
        with R.dataflow():
            gv = cls.fused_exp_add_multiply_subtract(x)
            R.output(gv)
        return gv


def test_diamond_of_elementwise_ops_fuses_at_its_post_dominator():
    assert_structural_equal(fuse(Diamond), DiamondFused)


@I.ir_module
class TwoMatmuls:
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")
             ) -> R.Tensor((4, 4), "float32"):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.exp(a)
            c = R.matmul(b, w)
            gv = R.nn.relu(c)
            R.output(gv)
        return gv


@I.ir_module
class TwoMatmulsFused:
    @R.function(private=True)
    def fused_matmul_exp(x: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")
                         ) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.exp(a)
            R.output(b)
        return b

    @R.function(private=True)
    def fused_matmul_relu(b: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")
                          ) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            c = R.matmul(b, w)
            gv = R.nn.relu(c)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")
             ) -> R.Tensor((4, 4), "float32"):
        cls = TwoMatmulsFused
        with R.dataflow():
            b = cls.fused_matmul_exp(x, w)
            gv = cls.fused_matmul_relu(b, w)
            R.output(gv)
        return gv


def test_matmul_never_fuses_into_another_matmul():
    assert_structural_equal(fuse(TwoMatmuls), TwoMatmulsFused)


@I.ir_module
class ReduceAfterElementwise:
    @R.function
    def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            e = R.exp(x)
            s = R.sum(e, axis=[1])
            gv = R.sqrt(s)
            R.output(gv)
        return gv


def test_elementwise_fuses_into_reduction_but_not_past_it():
    out = fuse(ReduceAfterElementwise)
    names = sorted(gv.name_hint for gv in out.get_global_vars())
    assert names == ["fused_exp_sum", "main"]
    body = out["main"].body.blocks[0].bindings
    assert [type(b.value).__name__ for b in body] == ["Call", "Call"]
    assert body[1].value.op.name == "relax.sqrt"


@I.ir_module
class OutputInTheMiddle:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.add(a, x)
            R.output(a, b)
        return (a, b)


def test_value_used_after_the_block_ends_fusion():
    assert_structural_equal(fuse(OutputInTheMiddle), OutputInTheMiddle)


def test_opt_level_zero_disables_fusion():
    with PassContext(opt_level=0):
        assert fuse(Epilogue) is Epilogue
    assert FuseOps(fuse_opt_level=0)(Epilogue) is Epilogue


def test_max_fuse_depth_limits_groups():
    out = FuseOps(max_fuse_depth=2)(Diamond)
    fused = [gv.name_hint for gv in out.get_global_vars() if gv.name_hint != "main"]
    assert fused and all(len(out[name].body.blocks[0].bindings) <= 2 for name in fused)
    with pytest.raises(ValueError, match="max_fuse_depth"):
        FuseOps(max_fuse_depth=0)


def test_partition_block_reports_groups():
    groups = partition_block(Diamond["main"].body.blocks[0], Diamond)
    assert groups == [[0, 1, 2, 3]]


# ---------------------------------------------------------------------------- TIR level


@pytest.mark.parametrize("model", [Epilogue, Diamond, TwoMatmuls, ReduceAfterElementwise])
def test_fusing_legalized_calls_matches_legalizing_fused_ops(model):
    """FuseOps sees the same patterns in PrimFuncs (by analysis) as on the operators."""
    via_tir = fuse(LegalizeOps()(model))
    via_ops = LegalizeOps()(fuse(model))
    assert sorted(g.name_hint for g in via_tir.get_global_vars()) == sorted(
        g.name_hint for g in via_ops.get_global_vars()
    )
    assert_structural_equal(via_tir, via_ops)


def _prim(fcompute, *shapes):
    ins = [te.placeholder(s, "float32", f"in{i}") for i, s in enumerate(shapes)]
    return te.create_prim_func([*ins, fcompute(*ins)])


@pytest.mark.parametrize("fcompute,shapes,kind", [
    (lambda a: te.compute(a.shape, lambda i, j: a[i, j] * 2.0), [(4, 4)], K.ELEMWISE),
    (lambda a, b: te.compute(a.shape, lambda i, j: a[i, j] + b[j]), [(4, 4), (4,)], K.BROADCAST),
    # a size-1 dimension broadcast reads index 0 (per-channel scale of a conv output)
    (lambda a, b: te.compute(a.shape, lambda i, j: a[i, j] * b[i, 0]), [(4, 4), (4, 1)],
     K.BROADCAST),
    (lambda a, b: te.compute(a.shape, lambda i, j: a[i, j] * b[0, j]), [(4, 4), (1, 4)],
     K.BROADCAST),
    (lambda a: te.compute((4, 4), lambda i, j: a[j, i]), [(4, 4)], K.INJECTIVE),
    (lambda a, b: te.compute(a.shape, lambda i, j: a[i, j] * b[1, j]), [(4, 4), (2, 4)],
     K.INJECTIVE),
    (lambda a: te.compute((8,), lambda i: a[i // 2, i % 2]), [(4, 2)], K.INJECTIVE),
    (lambda a: te.compute((4,), lambda i: _row_sum(a, i)), [(4, 4)], K.COMM_REDUCE),
])
def test_prim_func_pattern_analysis(fcompute, shapes, kind):
    assert analyze_op_pattern(_prim(fcompute, *shapes)) == kind


def _row_sum(a, i):
    k = te.reduce_axis((0, 4), "k")
    return te.sum(a[i, k], axis=k)


def test_matmul_prim_func_is_out_elemwise_fusable():
    def mm(a, b):
        k = te.reduce_axis((0, 4), "k")
        return te.compute((4, 4), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k))

    assert analyze_op_pattern(_prim(mm, (4, 4), (4, 4))) == K.OUT_ELEMWISE_FUSABLE


def test_prim_func_without_blocks_is_opaque():
    from tvm.tir import For, ForKind, PrimFunc, decl_buffer

    i = tir.Var("i", "int32")
    buf = decl_buffer((4,), "float32", "A")
    handle = tir.Var("A", "handle")
    body = For(i, tir.const(0, "int32"), tir.const(4, "int32"), ForKind.SERIAL,
               tir.BufferStore(buf, tir.const(0.0, "float32"), (i,)))
    func = PrimFunc([handle], body, buffer_map={handle: buf})
    assert analyze_op_pattern(func) == K.OPAQUE


def test_annotate_tir_op_pattern_sets_the_attribute():
    mod = transform.AnnotateTIROpPattern()(LegalizeOps()(Epilogue))
    assert mod["matmul"].attrs["op_pattern"] == int(K.OUT_ELEMWISE_FUSABLE)
    assert mod["add"].attrs["op_pattern"] == int(K.BROADCAST)
    assert mod["relu"].attrs["op_pattern"] == int(K.ELEMWISE)
