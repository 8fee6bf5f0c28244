"""Operator calls (with their attributes) and their legalized modules print as TVMScript
and parse back to equal modules."""

import numpy as np
import pytest

from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.relax import TensorStructInfo, op
from tvm.relax.transform import LegalizeOps
from tvm.script import relax as R

n = tir.Var("n", "int64")
X = relax.Var("x", TensorStructInfo([n, 3, 8, 8], "float32"))
W = relax.Var("w", TensorStructInfo([4, 3, 3, 3], "float32"))
Q = relax.Var("q", TensorStructInfo([1, 4, 2, 8], "float32"))


def const(shape, dtype="float32"):
    return relax.const(np.ones(shape, dtype))


CASES = {
    "conv2d": lambda: op.nn.conv2d(X, W, strides=2, padding=(1, 0, 1, 2), out_dtype="float32"),
    "conv2d_transpose": lambda: op.nn.conv2d_transpose(X, const((3, 2, 3, 3)), strides=2,
                                                       output_padding=1),
    "max_pool2d": lambda: op.nn.max_pool2d(X, 2, 2, ceil_mode=True),
    "adaptive_avg_pool2d": lambda: op.nn.adaptive_avg_pool2d(X, (2, 3)),
    "attention": lambda: op.nn.attention(Q, Q, Q, const((1, 2, 4, 4)), causal_mask="TopLeft"),
    "layer_norm": lambda: op.nn.layer_norm(X, const(8), const(8), [-1], epsilon=1e-3),
    "batch_norm": lambda: op.nn.batch_norm(X, *[const(3)] * 4, axis=1),
    "pad": lambda: op.nn.pad(X, [0, 0, 0, 0, 1, 1, 2, 2], "reflect"),
    "split": lambda: op.split(X, [1, 2], axis=1),
    "concat": lambda: op.concat([X, X], axis=1),
    "strided_slice": lambda: op.strided_slice(X, [2, 3], [1, -1], [-1, 0], [1, -1]),
    "take": lambda: op.take(X, const(2, "int64"), axis=1, mode="wrap"),
    "scatter_elements": lambda: op.scatter_elements(X, const((1, 3, 8, 8), "int64"),
                                                    const((1, 3, 8, 8)), reduction="add"),
    "sum": lambda: op.sum(X, axis=[1, 2], keepdims=True),
    "argmax": lambda: op.argmax(X, axis=1),
    "cumsum": lambda: op.cumsum(X, 1, exclusive=True),
    "sort": lambda: op.sort(X, 1, descending=True),
    "topk": lambda: op.topk(X, 2, largest=False),
    "full": lambda: op.full([2, 3], relax.const(1.5, "float32")),
    "arange": lambda: op.arange(0, 5, 2),
    "eye": lambda: op.eye(3, 4, 1),
    "tril": lambda: op.tril(X, 1),
    "where": lambda: op.where(relax.const(True), X, X),
    "resize2d": lambda: op.image.resize2d(X, (4, 5), method="cubic", cubic_alpha=-0.75),
    "repeat": lambda: op.repeat(X, 2, axis=1),
    "squeeze": lambda: op.squeeze(op.expand_dims(X, 0), [0]),
    "col2im": lambda: op.nn.col2im(op.reshape(X, [n, 12, 16]), [3, 3], [2, 2], pads=1,
                                   strides=[1, 1]),
    "deform_conv2d": lambda: op.vision.deform_conv2d(X, const((1, 18, 6, 6)), W, strides=1),
    "deform_conv2d_mask": lambda: op.vision.deform_conv2d(
        X, const((1, 54, 4, 4)), W, const((1, 27, 4, 4)), strides=2, padding=1,
        offset_groups=3),
    "shape_to_tensor": lambda: op.call.shape_to_tensor([n * 3, 8]),
}


def module(make):
    bb = relax.BlockBuilder()
    with bb.function("main", [X, W, Q]):
        with bb.dataflow():
            out = bb.emit_output(make())
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_call_roundtrip(name):
    mod = module(CASES[name])
    assert_structural_equal(R.parse(mod.script()), mod)


@pytest.mark.parametrize("name", ["conv2d", "sort", "cumsum", "topk", "scatter_elements", "split",
                                  "col2im", "deform_conv2d_mask", "shape_to_tensor"])
def test_legalized_module_roundtrip(name):
    mod = LegalizeOps()(module(CASES[name]))
    assert_structural_equal(R.parse(mod.script()), mod)
