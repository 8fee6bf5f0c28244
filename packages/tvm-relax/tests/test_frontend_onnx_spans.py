"""The ONNX importer names each node's bindings in spans, and the graph passes, LegalizeOps
and fusion keep those names (the kernels' ``source_layers``).  Skipped without ``onnx``."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tvm.ir.transform import PassContext  # noqa: E402
from tvm.relax.expr import Call, Function  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402
from tvm.relax.transform import (  # noqa: E402
    AnnotateTIROpPattern,
    FuseOps,
    FuseTIR,
    LegalizeOps,
    get_default_graph_pipeline,
)
from tvm.tir import PrimFunc  # noqa: E402

RNG = np.random.default_rng(0)


def _init(name, shape):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype("float32"), name)


def conv_bn_model():
    """Conv -> BatchNormalization -> Relu -> Identity -> (unnamed) MaxPool -> Flatten -> Gemm,
    with a Shape -> Gather chain folded at import and a Dropout."""
    bn = [numpy_helper.from_array(np.abs(RNG.standard_normal(8)).astype("float32") + 0.5, n)
          for n in ("scale", "bias", "mean", "var")]
    inits = [_init("w", (8, 3, 3, 3)), _init("cb", (8,)), *bn, _init("fc_w", (10, 128)),
             _init("fc_b", (10,)),
             numpy_helper.from_array(np.array(0, "int64"), "zero")]
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], name="features/conv", pads=[1] * 4),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"],
                         name="features/bn"),
        helper.make_node("Relu", ["n"], ["r"], name="features/relu"),
        helper.make_node("Identity", ["r"], ["i"], name="features/identity"),
        helper.make_node("MaxPool", ["i"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["s"], name="shape_of"),
        helper.make_node("Gather", ["s", "zero"], ["batch"], name="batch_of"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Dropout", ["f"], ["d"], name="dropout"),
        helper.make_node("Gemm", ["d", "fc_w", "fc_b"], ["y"], name="classifier", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("batch", TensorProto.INT64, [])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


COMPUTING = ["features/conv", "features/bn", "features/relu", "MaxPool_4", "flatten",
             "classifier"]


def call_bindings(func):
    return [b for blk in func.body.blocks for b in blk.bindings if isinstance(b.value, Call)]


def test_every_binding_of_a_node_names_it():
    mod = from_onnx(conv_bn_model())
    calls = call_bindings(mod["main"])
    assert calls
    for b in calls:
        assert b.span is not None and b.span.source_name == "convnet"
        assert b.value.span is b.span  # the call carries it too
    names = [b.span.name for b in calls]
    # nodes in order; an unnamed node is named by its op type and position; Gemm with
    # transB emits several bindings, all of them named after it; Shape/Gather fold away
    assert list(dict.fromkeys(names)) == [
        "features/conv", "features/bn", "features/relu", "MaxPool_4", "flatten",
        "classifier"]
    assert names.count("classifier") > 1
    assert str(calls[0].span) == "convnet:features/conv"
    assert calls[0].span.line == 1 and calls[-1].span.line == 10  # the node's position


def test_graph_passes_and_legalization_keep_the_names():
    mod = from_onnx(conv_bn_model())
    with PassContext(opt_level=3):
        mod = get_default_graph_pipeline(3)(mod)
    calls = call_bindings(mod["main"])
    # BatchNormalization folded into the convolution's weights; every surviving call and
    # its binding still names its layer
    for b in calls:
        assert b.span is not None and b.span.name in COMPUTING and b.value.span is not None
    assert {b.span.name for b in calls} >= {"features/conv", "features/relu", "classifier"}
    legal = LegalizeOps()(mod)
    for b in call_bindings(legal["main"]):
        assert b.value.op.name == "relax.call_tir"
        assert b.span.name in COMPUTING and b.value.span.name == b.span.name


def test_kernels_know_their_layers_after_fusion():
    mod = from_onnx(conv_bn_model())
    with PassContext(opt_level=3):
        mod = get_default_graph_pipeline(3)(mod)
        mod = FuseTIR()(FuseOps()(AnnotateTIROpPattern()(LegalizeOps()(mod))))
    layers = {gv.name_hint: f.get_attr("source_layers") for gv, f in mod.items()
              if isinstance(f, PrimFunc)}
    assert all(layers.values()), layers  # every kernel names at least one layer
    conv = next(v for k, v in layers.items() if "conv2d" in k)
    assert conv[0] == "features/conv" and "features/relu" in conv
    seen = [n for v in layers.values() for n in v]
    assert len(seen) == len(set(seen))  # each layer in one kernel here
    assert set(seen) <= set(COMPUTING) and {"classifier", "MaxPool_4"} <= set(seen)
    assert not any(isinstance(f, Function) and f.get_attr("Primitive") for _, f in mod.items())


def _reshape_chain_model():
    inits = [numpy_helper.from_array(np.array([4, 6], "int64"), "s1"),
             numpy_helper.from_array(np.array([2, 12], "int64"), "s2"),
             numpy_helper.from_array(np.array(1.0, "float32"), "one")]
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="pre"),
             helper.make_node("Reshape", ["a", "s1"], ["r1"], name="reshape1"),
             helper.make_node("Reshape", ["r1", "s2"], ["r2"], name="reshape2"),
             helper.make_node("Mul", ["r2", "one"], ["m"], name="times_one"),
             helper.make_node("Transpose", ["m"], ["t1"], name="t1", perm=[1, 0]),
             helper.make_node("Transpose", ["t1"], ["t2"], name="t2", perm=[1, 0]),
             helper.make_node("Relu", ["t2"], ["y"], name="post")]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_simplified_calls_keep_their_layer():
    mod = from_onnx(_reshape_chain_model())
    with PassContext(opt_level=3):
        mod = get_default_graph_pipeline(3)(mod)
    # reshape(reshape(x)) -> reshape(x): the surviving call is the outer reshape's; x * 1
    # and the transpose pair vanish
    assert [(b.value.op.name, b.span.name, b.value.span.name)
            for b in call_bindings(mod["main"])] == [
        ("relax.nn.relu", "pre", "pre"), ("relax.reshape", "reshape2", "reshape2"),
        ("relax.nn.relu", "post", "post")]


def test_layout_transforms_name_the_layer_that_needs_them():
    from tvm.relax.transform import ConvertLayout

    mod = from_onnx(conv_bn_model())
    mod = ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(mod)
    calls = call_bindings(mod["main"])
    assert "relax.permute_dims" in [b.value.op.name for b in calls]
    for b in calls:
        assert b.span is not None and b.span.name in COMPUTING, (b.var.name_hint, b.value.op)
