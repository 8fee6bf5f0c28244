"""tvm.relax.explore: graph extraction, the kernel each binding ends in, the layout."""

from __future__ import annotations

import time

import pytest
from explore_testing import Small, small_model
from tvm import relax
from tvm.ir.span import Span
from tvm.relax import explore
from tvm.relax.transform import AnnotateTIROpPattern, FuseOps, FuseTIR, LegalizeOps
from tvm.script import ir as I
from tvm.script import relax as R


def stages_of(mod):
    legal = AnnotateTIROpPattern()(LegalizeOps()(mod))
    fused = FuseOps()(legal)
    return legal, fused, FuseTIR()(fused)


def test_graph_of_lists_inputs_constants_bindings_and_output():
    g = explore.graph_of(Small)
    kinds = [(n.name, n.kind, n.op) for n in g.nodes]
    assert kinds == [
        ("x", "input", "input"), ("w", "input", "input"), ("m", "op", "matmul"),
        ("const0", "constant", "constant"), ("b", "op", "add"), ("r", "op", "nn.relu"),
        ("t", "tuple", "tuple"), ("g", "get_item", "get_item[0]"), ("output", "output", "output"),
    ]
    by = {n.name: n for n in g.nodes}
    assert (by["m"].shape, by["m"].dtype) == ("8x4", "float32")
    assert by["const0"].shape == "scalar" and by["const0"].inputs == []
    assert by["m"].attrs == {"out_dtype": "void"}
    edges = {(g.node(s).name, g.node(d).name) for s, d in g.edges}
    assert edges == {("x", "m"), ("w", "m"), ("m", "b"), ("const0", "b"), ("b", "r"),
                     ("r", "t"), ("m", "t"), ("t", "g"), ("g", "output")}
    assert [g.node(i).name for i in g.inputs] == ["x", "w"]
    assert [g.node(i).name for i in g.outputs] == ["output"]
    assert g.kernels == []  # high-level operators are not kernels yet
    assert g.find("r") is by["r"]
    with pytest.raises(KeyError, match="no node 'nope'"):
        g.find("nope")


def test_graph_of_rejects_bad_input():
    with pytest.raises(TypeError, match="IRModule or a relax.Function"):
        explore.graph_of("main")
    with pytest.raises(KeyError, match="no function 'f'"):
        explore.graph_of(Small, "f")
    legal, _, _ = stages_of(Small)
    prim = next(gv.name_hint for gv, f in legal.functions.items() if gv.name_hint != "main")
    with pytest.raises(TypeError, match="not a Relax function"):
        explore.graph_of(legal, prim)
    with pytest.raises(TypeError, match="kernels must be an IRModule"):
        explore.graph_of(Small, kernels=Small["main"])


def test_every_binding_gets_the_kernel_it_was_fused_into():
    pytest.importorskip("onnx")
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(small_model())
    legal, fused, lowered = stages_of(mod)
    for after in (fused, lowered):  # FuseOps (Relax functions) and FuseTIR (PrimFuncs)
        g = explore.graph_of(mod, kernels=after)
        ops = {n.op: n.kernel for n in g.nodes if n.kind == "op"}
        assert ops == {
            "nn.conv2d": "fused_conv2d_add_relu", "add": "fused_conv2d_add_relu",
            "nn.relu": "fused_conv2d_add_relu", "reshape": "reshape",
            "matmul": "fused_matmul_sigmoid", "sigmoid": "fused_matmul_sigmoid",
        }
        assert all(n.kernel is None for n in g.nodes if n.kind in ("input", "constant", "output"))
        # a node also names the binding that calls its kernel
        assert {n.call for n in g.nodes if n.kernel == "fused_conv2d_add_relu"} == {"r"}
    after = explore.graph_of(lowered)
    calls = [(n.name, n.op, n.kernel) for n in after.nodes if n.kind == "kernel"]
    assert calls == [("r", "fused_conv2d_add_relu", "fused_conv2d_add_relu"),
                     ("f", "reshape", "reshape"),
                     ("y", "fused_matmul_sigmoid", "fused_matmul_sigmoid")]
    # the legalized module: each call_tir is its own kernel, fused ones map onward
    g = explore.graph_of(legal, kernels=lowered)
    assert {n.kernel for n in g.nodes if n.kind == "kernel"} == {
        "fused_conv2d_add_relu", "reshape", "fused_matmul_sigmoid"}


def test_kernels_match_by_name_and_through_multi_result_calls():
    """Separately parsed modules share no variables: names match; a kernel's results
    bound through TupleGetItem count as its own."""

    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.exp(x)
                b = R.sin(a)
                c = R.add(a, b)
                R.output(c)
            return c

    @I.ir_module
    class After:
        @R.function(private=True)
        def k(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"),
                                                         R.Tensor((4,), "float32")):
            R.func_attr({"Primitive": 1})
            with R.dataflow():
                a = R.exp(x)
                b = R.sin(a)
                R.output(a, b)
            return (a, b)

        @R.function
        def main(x: R.Tensor((4,), "float32")):
            cls = After
            with R.dataflow():
                t = cls.k(x)
                a = t[0]
                b = t[1]
                c = R.add(a, b)
                R.output(c)
            return c

    g = explore.graph_of(Before, kernels=After)
    assert {n.name: n.kernel for n in g.nodes if n.kind == "op"} == {"a": "k", "b": "k", "c": None}
    assert explore.kernel_assignment(Before["main"], After).keys() == {
        id(b.var) for b in Before["main"].body.blocks[0].bindings[:2]}


def test_source_layers_match_what_names_cannot():
    """A binding whose variable the kernel module does not know is matched by the source
    layer on its span against the kernels' ``source_layers`` attribute."""
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.exp(x), "e")
        bb.emit_func_output(out)
    mod = bb.get()
    func = mod["main"]
    block = func.body.blocks[0]
    binding = block.bindings[0]
    tagged = relax.VarBinding(binding.var, binding.value, span=Span("onnx/Exp_7", 1, 0))
    body = relax.SeqExpr([relax.DataflowBlock([tagged])], func.body.body)
    before = mod.with_function(mod.get_global_var("main"), func.with_fields(body=body))
    assert explore.graph_of(before).find("e").layers == ("onnx/Exp_7",)

    lowered = FuseTIR()(FuseOps()(AnnotateTIROpPattern()(LegalizeOps()(mod))))
    kname = next(gv.name_hint for gv in lowered.functions if gv.name_hint != "main")
    renamed = lowered.with_function(
        lowered.get_global_var(kname), lowered[kname].with_attr("source_layers", ["onnx/Exp_7"]))
    # a different variable and name in the kernel module's main
    main = renamed["main"]
    b0 = main.body.blocks[0].bindings[0]
    other = relax.Var("zz", b0.var.struct_info_)
    new_main = main.with_fields(body=relax.SeqExpr(
        [relax.DataflowBlock([relax.VarBinding(other, b0.value)])], other))
    renamed = renamed.with_function(renamed.get_global_var("main"), new_main)
    assert explore.graph_of(before, kernels=renamed).find("e").kernel == kname
    assert explore.graph_of(renamed).find("zz").layers == ("onnx/Exp_7",)
    without = lowered.with_function(lowered.get_global_var("main"), new_main)
    assert explore.graph_of(before, kernels=without).find("e").kernel is None


def chain(n):
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for _ in range(n - 1):
                v = bb.emit(relax.op.exp(v))
            v = bb.emit_output(relax.op.exp(v))
        bb.emit_func_output(v)
    return bb.get()


def test_layout_of_a_long_chain_is_fast_and_layered():
    g = explore.graph_of(chain(500))
    start = time.perf_counter()
    lay = explore.layout(g)
    assert time.perf_counter() - start < 5.0
    ys = [lay.boxes[n.id][1] for n in g.nodes]
    assert ys == sorted(ys) and len(set(ys)) == len(g.nodes)  # one rank per node
    assert len(lay.edges) == len(g.edges) == 501
    assert lay.height >= ys[-1]


def test_layout_keeps_nodes_of_a_rank_apart():
    g = explore.graph_of(Small)
    lay = explore.layout(g)
    by_rank: dict[float, list[tuple[float, float]]] = {}
    for x, y, w, _ in lay.boxes.values():
        by_rank.setdefault(y, []).append((x - w / 2, x + w / 2))
    for spans in by_rank.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    # the edge m -> t passes the ranks of b and r: it bends once in each
    m, t = g.find("m").id, g.find("t").id
    (pts,) = [p for s, d, p in lay.edges if (s, d) == (m, t)]
    assert [y for _, y in pts[1:-1]] == [lay.boxes[g.find(n).id][1] for n in ("b", "r")]
    assert min(x - w / 2 for x, _, w, _ in lay.boxes.values()) >= 0
    assert max(x + w / 2 for x, _, w, _ in lay.boxes.values()) <= lay.width
