"""Deep graphs build: a long elementwise chain fuses into groups of up to 256 operators,
each a kernel whose expression nests 256 deep; passes and code generation walk it without
meeting Python's default recursion limit (they run under a raised one)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

import tvm  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax import BlockBuilder  # noqa: E402


def _chain(n: int) -> tvm.ir.IRModule:
    bb = BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = x
            for i in range(n):
                y = bb.emit(relax.op.add(y, relax.const(np.float32(1.0))) if i % 2
                            else relax.op.nn.relu(y))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def test_a_600_op_elementwise_chain_builds_and_runs():
    ex = relax.build(_chain(600), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    x = np.linspace(-3, 3, 32, dtype="float32").reshape(4, 8)
    want = x.copy()
    for i in range(600):
        want = want + 1 if i % 2 else np.maximum(want, 0)
    np.testing.assert_allclose(vm["main"](x).numpy(), want, rtol=1e-6)
    assert len(ex.kernel_lib.function_names) >= 2  # fused into groups of at most 256 ops


def test_a_20000_op_onnx_chain_builds_and_matches_onnxruntime():
    """The depth the robustness issue asks for: 20,000 operators import and build (in
    seconds, linear in the length; ``benchmarks/models.py --models chain20k`` times it)
    and compute what onnxruntime computes."""
    import sys
    from pathlib import Path

    ort = pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(Path(__file__).parent / "onnx"))
    import models
    from tvm.relax.frontend.onnx import from_onnx

    model = models.elementwise_chain(20000)
    ex = relax.build(from_onnx(model), target="llvm")
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    got = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](x).numpy()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
