"""``relax.nn.col2im``, ``relax.vision.deform_conv2d`` and ``relax.shape_to_tensor``: their
StructInfo (symbolic shapes, errors) and, through relax.build, numbers on symbolic shapes
(their numpy semantics on static ones are in test_op_numpy_semantics.py)."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, tir
from tvm.relax import StructInfoError, TensorStructInfo, op
from tvm.relax.op.call import shape_to_tensor
from tvm.relax.transform.numpy_eval import evaluate_with_numpy
from vm_testing import requires_llvm

import tvm.runtime

rng = np.random.default_rng(11)
n = tir.Var("n", "int64")


def infer(call):
    return relax.BlockBuilder().normalize(call).struct_info


def shape_of(sinfo):
    return [int(d) if isinstance(d, tir.IntImm) else str(d) for d in sinfo.shape_values]


def run(make, params, *inputs):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.runtime.cpu())
    return vm["main"](*inputs).numpy()


# -- shape_to_tensor ---------------------------------------------------------------------------
def test_shape_to_tensor_struct_info():
    sinfo = infer(shape_to_tensor([n * 2, 4]))
    assert sinfo.dtype == "int64" and shape_of(sinfo) == [2]
    with pytest.raises(StructInfoError, match="must be a shape value"):
        infer(op.call.make_call("relax.shape_to_tensor", [relax.const(np.zeros(2))]))


@requires_llvm
def test_shape_to_tensor_of_symbolic_values_runs():
    """The values' variables reach the kernel as scalar parameters (no tensor input)."""
    x = relax.Var("x", TensorStructInfo([n, 4], "float32"))
    out = run(lambda x: shape_to_tensor([n * 2, 4, n + 1]), [x], np.zeros((3, 4), "float32"))
    assert out.dtype == np.int64 and out.tolist() == [6, 4, 4]


# -- col2im ------------------------------------------------------------------------------------
def test_col2im_struct_info_and_errors():
    x = relax.Var("x", TensorStructInfo([n, 12, 15], "float32"))
    sinfo = infer(op.nn.col2im(x, [5, 6], [2, 3], dilations=[2, 1], pads=[1, 0, 1, 1],
                               strides=[1, 2]))
    assert shape_of(sinfo) == ["n", 2, 5, 6]
    with pytest.raises(StructInfoError, match="gives? 15 blocks"):
        infer(op.nn.col2im(relax.Var("y", TensorStructInfo([1, 12, 14], "float32")), [5, 6],
                           [2, 3], dilations=[2, 1], pads=[1, 0, 1, 1], strides=[1, 2]))
    with pytest.raises(StructInfoError, match="not a multiple of the block size 6"):
        infer(op.nn.col2im(relax.Var("y", TensorStructInfo([1, 13, 12], "float32")), [3, 4],
                           [2, 3]))
    with pytest.raises(ValueError, match="does not fit"):
        op.nn.col2im(x, [2, 2], [3, 1])


@requires_llvm
def test_col2im_with_a_symbolic_batch_matches_numpy():
    data = rng.standard_normal((2, 12, 15)).astype("float32")
    x = relax.Var("x", TensorStructInfo([n, 12, 15], "float32"))
    kw = dict(dilations=[2, 1], pads=[1, 0, 1, 1], strides=[1, 2])
    got = run(lambda x: op.nn.col2im(x, [5, 6], [2, 3], **kw), [x], data)
    static = relax.BlockBuilder().normalize(op.nn.col2im(relax.const(data), [5, 6], [2, 3], **kw))
    np.testing.assert_allclose(got, evaluate_with_numpy(static, [data]), rtol=1e-5, atol=1e-5)


# -- deform_conv2d -----------------------------------------------------------------------------
def _t(*shape):
    return relax.Var("t", TensorStructInfo(list(shape), "float32"))


def test_deform_conv2d_struct_info_and_errors():
    sinfo = infer(op.vision.deform_conv2d(_t(n, 4, 5, 5), _t(n, 36, 3, 3), _t(6, 2, 3, 3),
                                          _t(n, 18, 3, 3), strides=2, padding=1, groups=2,
                                          offset_groups=2))
    assert shape_of(sinfo) == ["n", 6, 3, 3]
    with pytest.raises(StructInfoError, match="offset channels is 18, expected 36"):
        infer(op.vision.deform_conv2d(_t(1, 4, 5, 5), _t(1, 18, 3, 3), _t(6, 2, 3, 3),
                                      strides=2, padding=1, groups=2, offset_groups=2))
    with pytest.raises(StructInfoError, match="offset height is 4, expected 3"):
        infer(op.vision.deform_conv2d(_t(1, 4, 5, 5), _t(1, 18, 4, 3), _t(6, 4, 3, 3)))
    with pytest.raises(StructInfoError, match="data channels is 4, expected 2"):
        infer(op.vision.deform_conv2d(_t(1, 4, 5, 5), _t(1, 18, 3, 3), _t(6, 2, 3, 3)))
    with pytest.raises(StructInfoError, match="expects 3 or 4 arguments"):
        infer(op.call.make_call("relax.vision.deform_conv2d", [_t(1, 4, 5, 5)],
                                op.vision.DeformConv2DAttrs()))


@requires_llvm
def test_deform_conv2d_with_a_symbolic_batch_matches_numpy():
    data = rng.standard_normal((2, 2, 4, 5)).astype("float32")
    offset = rng.uniform(-1.5, 1.5, (2, 8, 4, 3)).astype("float32")
    weight = rng.standard_normal((3, 2, 2, 2)).astype("float32")
    kw = dict(padding=[1, 0, 0, 0], dilation=[1, 2])
    params = [_t(n, 2, 4, 5), _t(n, 8, 4, 3), _t(3, 2, 2, 2)]
    got = run(lambda x, o, w: op.vision.deform_conv2d(x, o, w, **kw), params, data, offset,
              weight)
    static = relax.BlockBuilder().normalize(op.vision.deform_conv2d(
        relax.const(data), relax.const(offset), relax.const(weight), **kw))
    ref = evaluate_with_numpy(static, [data, offset, weight])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


# -- the ONNX importer emits these ops (no private kernels) ------------------------------------
@requires_llvm
def test_onnx_shape_of_a_symbolic_input_is_shape_to_tensor():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from tvm.relax.frontend.onnx import from_onnx

    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Cast", ["s"], ["y"], to=TensorProto.INT32)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(model)
    text = mod.script()
    assert "R.shape_to_tensor(" in text and "call_tir" not in text, text
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    out = vm["main"](np.zeros((5, 3), "float32")).numpy()
    assert out.dtype == np.int32 and out.tolist() == [5, 3]
