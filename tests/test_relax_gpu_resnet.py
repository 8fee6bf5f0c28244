"""ResNet-18 on OpenCL (pocl in CI) against llvm.

Two builds of the network, seeded random weights, test-sized for pocl on two CPU cores:

* from ONNX (``tests/onnx/models.py``'s ``resnet18`` through the ONNX frontend): first-stage
  width 16, 56x56 input, 10 classes.  ``TVM_TEST_FULL_RESNET=1`` runs the real size (width
  64, 224x224, 1000 classes; about a minute with pocl);
* directly with the BlockBuilder and ``relax.op`` (conv2d, batch_norm, relu, max_pool2d,
  adaptive_avg_pool2d, add, matmul): width 8, 32x32 input, so the GPU path is covered
  without onnx too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from relax_gpu_util import requires_opencl, run_both

pytest.importorskip("tvm.relax")

from tvm import relax  # noqa: E402
from tvm.relax import op  # noqa: E402

pytestmark = requires_opencl

FULL = os.environ.get("TVM_TEST_FULL_RESNET") == "1"


def _check(gpu, cpu):
    assert gpu.shape == cpu.shape
    scale = max(1.0, float(np.abs(cpu).max()))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-5 * scale)


def test_resnet18_from_onnx_matches_llvm():
    pytest.importorskip("onnx")
    frontend = pytest.importorskip("tvm.relax.frontend.onnx")
    sys.path.insert(0, str(Path(__file__).parent / "onnx"))
    try:
        from models import resnet18
    finally:
        sys.path.pop(0)
    width, size, classes = (64, 224, 1000) if FULL else (16, 56, 10)
    mod = frontend.from_onnx(resnet18(width=width, image_size=size, classes=classes))
    x = np.random.default_rng(1).standard_normal((1, 3, size, size)).astype("float32")
    gpu, cpu, ex = run_both(mod, x)
    assert gpu.shape == (1, classes)
    _check(gpu, cpu)
    assert len(ex.kernel_lib.function_names) > 10  # conv, pool, dense, ... kernels


# --------------------------------------------------------------------------- BlockBuilder


class _Net:
    """ResNet-18 emitted with the BlockBuilder; weights are Relax constants."""

    def __init__(self, bb: relax.BlockBuilder, seed: int = 0) -> None:
        self.bb = bb
        self.rng = np.random.default_rng(seed)

    def const(self, shape, scale=1.0, offset=0.0):
        data = (self.rng.standard_normal(shape) * scale + offset).astype("float32")
        return relax.const(data, "float32")

    def conv_bn(self, x, cin, cout, k, stride, relu=True):
        w = self.const((cout, cin, k, k), scale=np.sqrt(2.0 / (cin * k * k)))
        y = self.bb.emit(op.nn.conv2d(x, w, strides=stride, padding=k // 2))
        bn = op.nn.batch_norm(y, self.const((cout,), 0.1, 1.0), self.const((cout,), 0.1),
                              self.const((cout,), 0.1), relax.const(
                                  self.rng.uniform(0.5, 1.5, cout).astype("float32")))
        y = self.bb.emit(relax.TupleGetItem(self.bb.emit(bn), 0))
        return self.bb.emit(op.nn.relu(y)) if relu else y

    def forward(self, x, width, classes):
        bb = self.bb
        x = self.conv_bn(x, 3, width, 7, 2)
        x = bb.emit(op.nn.max_pool2d(x, pool_size=3, strides=2, padding=1))
        cin = width
        for stage in range(4):
            cout = width * 2**stage
            for b in range(2):
                stride = 2 if stage > 0 and b == 0 else 1
                y = self.conv_bn(x, cin, cout, 3, stride)
                y = self.conv_bn(y, cout, cout, 3, 1, relu=False)
                short = x if stride == 1 and cin == cout else self.conv_bn(x, cin, cout, 1,
                                                                           stride, relu=False)
                x = bb.emit(op.nn.relu(bb.emit(op.add(y, short))))
                cin = cout
        x = bb.emit(op.nn.adaptive_avg_pool2d(x, output_size=1))
        x = bb.emit(op.reshape(x, (1, cin)))
        x = bb.emit(op.matmul(x, self.const((cin, classes), scale=1.0 / np.sqrt(cin))))
        return bb.emit(op.add(x, self.const((classes,), 0.1)))


def resnet18_blockbuilder(width: int = 8, size: int = 32, classes: int = 10):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 3, size, size), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(_Net(bb).forward(x, width, classes))
        bb.emit_func_output(out)
    return bb.get()


def test_resnet18_from_the_block_builder_matches_llvm():
    mod = resnet18_blockbuilder()
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype("float32")
    gpu, cpu, _ = run_both(mod, x)
    assert gpu.shape == (1, 10)
    _check(gpu, cpu)
