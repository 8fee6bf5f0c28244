"""Layer names (named spans) through the pipeline: FuseOps gives a fused function the layers
of its bindings as ``source_layers``, FuseTIR carries them to the fused PrimFunc (several
when repeated layers share one), unfused kernels get their call sites' layers, mutator
passes keep spans on what they rewrite, and the VM executable records them per kernel."""

from __future__ import annotations

from tvm import relax
from tvm.ffi import assert_structural_equal
from tvm.ir.span import Span
from tvm.ir.transform import PassContext
from tvm.relax.transform import FuseOps, FuseTIR, LegalizeOps
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T
from vm_testing import requires_llvm


def name_layers(mod, names, func="main"):
    """``mod`` with the bindings of ``func`` whose variable is in ``names`` given a span
    naming that layer (what a frontend does)."""
    f = mod[func]
    blocks, line = [], 0
    for block in f.body.blocks:
        bindings = []
        for b in block.bindings:
            if b.var.name_hint in names:
                line += 1
                b = b.with_fields(span=Span("model", line, 1, name=names[b.var.name_hint]))
            bindings.append(b)
        blocks.append(block.with_fields(bindings=bindings))
    return mod.with_function(func, f.with_fields(body=f.body.with_fields(blocks=blocks)))


def binding_layers(func):
    return [b.span.name if b.span else None for blk in func.body.blocks for b in blk.bindings]


def test_builder_spans_what_it_emits_and_mutators_keep_rewritten_spans():
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    layer, inner = Span("model", 1, 1, name="L"), Span("model", 2, 1, name="M")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            with bb.spanned(layer):
                bb.emit(relax.op.add(x, x), "a")
                # the nested add is bound first, by normalisation: spanned too
                b = bb.emit(relax.op.multiply(relax.op.add(x, x), x), "b")
                with bb.spanned(inner):
                    bb.emit(relax.op.negative(b), "n")
                with bb.spanned(None):  # keeps the enclosing span
                    bb.emit(relax.op.negative(b), "n2")
            c = bb.emit(relax.op.negative(b), "c")
            gv = bb.emit_output(c)
        bb.emit_func_output(gv)
    main = bb.get()["main"]
    bindings = main.body.blocks[0].bindings
    assert binding_layers(main) == ["L", "L", "L", "M", "L", None, None]
    assert [b.value.span.name for b in bindings[:5]] == ["L", "L", "L", "M", "L"]

    class Expand(relax.ExprMutator):
        """negative(v) -> subtract(add(v, v), v): a rewrite that adds a binding."""

        def visit_call_(self, call):
            call = super().visit_call_(call)
            if call.op.name != "relax.negative":
                return call
            v = call.args[0]
            return self.builder_.normalize(relax.op.subtract(relax.op.add(v, v), v))

    new = Expand().visit_expr(main)
    seen = [(b.value.op.name, b.span.name if b.span else None,
             b.value.span.name if b.value.span else None)
            for b in new.body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    # the added binding takes the span of the binding being rewritten; so does the new call
    assert seen[3:7] == [("relax.add", "M", "M"), ("relax.subtract", "M", "M"),
                         ("relax.add", "L", "L"), ("relax.subtract", "L", "L")]
    assert seen[7:] == [("relax.add", None, None), ("relax.subtract", None, None)]


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


EPILOGUE_LAYERS = {"lv": "fc/MatMul", "lv1": "fc/Add", "gv": "act"}


@I.ir_module
class EpilogueFused:
    @R.function(private=True)
    def fused_matmul_add_relu(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
                              b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        R.func_attr({"Primitive": 1, "source_layers": ("fc/MatMul", "fc/Add", "act")})
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


def test_fuse_ops_records_the_layers_of_the_group():
    fused = FuseOps()(name_layers(Epilogue, EPILOGUE_LAYERS))
    assert_structural_equal(fused, EpilogueFused)
    # the fused function's bindings keep their spans
    assert binding_layers(fused["fused_matmul_add_relu"]) == ["fc/MatMul", "fc/Add", "act"]


def test_without_named_spans_nothing_changes():
    # TVMScript spans are text positions, not layers: no attribute appears
    fused = FuseTIR()(FuseOps()(LegalizeOps()(Epilogue)))
    assert all(f.get_attr("source_layers") is None for _, f in fused.items())


@I.ir_module
class EpilogueTIR:
    @T.prim_func(private=True)
    def fused_matmul_add_relu(x: T.Buffer((T.int64(8), T.int64(16)), "float32"),
                              w: T.Buffer((T.int64(16), T.int64(4)), "float32"),
                              b: T.Buffer((T.int64(4),), "float32"),
                              gv: T.Buffer((T.int64(8), T.int64(4)), "float32")):
        T.func_attr({"tir.noalias": True, "op_pattern": 4,
                     "source_layers": ("fc/MatMul", "fc/Add", "act")})
        lv = T.alloc_buffer((T.int64(8), T.int64(4)), "float32")
        lv1 = T.alloc_buffer((T.int64(8), T.int64(4)), "float32")
        for i0, i1, k in T.grid(T.int64(8), T.int64(4), T.int64(16)):
            with T.block("T_matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(x[v_i0, v_k], w[v_k, v_i1])
                T.writes(lv[v_i0, v_i1])
                with T.init():
                    lv[v_i0, v_i1] = T.float32(0.0)
                lv[v_i0, v_i1] = lv[v_i0, v_i1] + x[v_i0, v_k] * w[v_k, v_i1]
        for i0, i1 in T.grid(T.int64(8), T.int64(4)):
            with T.block("T_add"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv[v_i0, v_i1], b[v_i1])
                T.writes(lv1[v_i0, v_i1])
                lv1[v_i0, v_i1] = lv[v_i0, v_i1] + b[v_i1]
        for i0, i1 in T.grid(T.int64(8), T.int64(4)):
            with T.block("T_relu"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv1[v_i0, v_i1])
                T.writes(gv[v_i0, v_i1])
                gv[v_i0, v_i1] = T.Select(lv1[v_i0, v_i1] < T.float32(0.0), T.float32(0.0), lv1[v_i0, v_i1])

    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
             b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        cls = EpilogueTIR
        with R.dataflow():
            gv = R.call_tir(cls.fused_matmul_add_relu, (x, w, b),
                            out_sinfo=R.Tensor((8, 4), "float32"))
            R.output(gv)
        return gv


def test_fuse_tir_carries_the_layers_to_the_kernel():
    legalized = LegalizeOps()(name_layers(Epilogue, EPILOGUE_LAYERS))
    # LegalizeOps keeps the spans of the bindings it rewrites
    assert binding_layers(legalized["main"]) == ["fc/MatMul", "fc/Add", "act"]
    assert_structural_equal(FuseTIR()(FuseOps()(legalized)), EpilogueTIR)


@I.ir_module
class TwoLayers:
    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
             w2: R.Tensor((16, 4), "float32"), b: R.Tensor((4,), "float32")):
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.add(lv, b)
            gv = R.nn.relu(lv1)
            lv2 = R.matmul(x, w2)
            lv3 = R.add(lv2, b)
            gv2 = R.nn.relu(lv3)
            out = (gv, gv2)
            R.output(out)
        return out


def test_repeated_layers_share_one_kernel_with_all_their_names():
    mod = name_layers(TwoLayers, {"lv": "l1/MatMul", "lv1": "l1/Add", "gv": "l1/Relu",
                                  "lv2": "l2/MatMul", "lv3": "l2/Add", "gv2": "l2/Relu"})
    fused = FuseOps()(LegalizeOps()(mod))
    groups = {gv.name_hint: f.get_attr("source_layers") for gv, f in fused.items()
              if f.get_attr("Primitive")}
    assert sorted(groups.values()) == [("l1/MatMul", "l1/Add", "l1/Relu"),
                                       ("l2/MatMul", "l2/Add", "l2/Relu")]
    out = FuseTIR()(fused)
    kernels = {gv.name_hint: f for gv, f in out.items() if gv.name_hint != "main"}
    assert list(kernels) == ["fused_matmul_add_relu"]  # still kept once
    assert kernels["fused_matmul_add_relu"].get_attr("source_layers") == (
        "l1/MatMul", "l1/Add", "l1/Relu", "l2/MatMul", "l2/Add", "l2/Relu")
    # the same PrimFunc as without layers, apart from the attribute
    plain = FuseTIR()(FuseOps()(LegalizeOps()(TwoLayers)))
    assert_structural_equal(
        out.with_function("fused_matmul_add_relu",
                          kernels["fused_matmul_add_relu"].without_attr("source_layers")),
        plain)


@I.ir_module
class Softmax:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            a = R.nn.softmax(x)
            c = R.nn.softmax(y)
            out = (a, c)
            R.output(out)
        return out


def test_unfused_kernels_get_their_call_sites_layers():
    mod = LegalizeOps()(name_layers(Softmax, {"a": "head1/Softmax", "c": "head2/Softmax"}))
    prims = [gv.name_hint for gv, f in mod.items() if gv.name_hint != "main"]
    assert prims == ["softmax"]  # one PrimFunc for both calls
    for level in (0, 3):  # also when nothing fuses (FuseOps off)
        with PassContext(opt_level=level):
            out = FuseTIR()(FuseOps()(mod))
        expected = mod.with_function(
            "softmax", mod["softmax"].with_attr("source_layers",
                                                ("head1/Softmax", "head2/Softmax")))
        assert_structural_equal(out, expected)
        assert out["softmax"].get_attr("source_layers") == ("head1/Softmax", "head2/Softmax")


@requires_llvm
def test_the_executable_records_each_kernels_layers():
    from tvm import relax

    ex = relax.build(name_layers(Epilogue, EPILOGUE_LAYERS), target="llvm")
    (kernel,) = ex.program["kernels"]
    assert ex.kernel_source_layers(kernel) == ("fc/MatMul", "fc/Add", "act")
    assert "kernel_info" not in relax.build(Epilogue, target="llvm").program
