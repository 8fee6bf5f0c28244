"""The walkthrough end to end: R.matmul + R.add (128x256 @ 256x512 + 512) through relax.build,
the bytecode, the VM, input checks, profiling, and the exported executable."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.runtime.vm import Executable, VirtualMachine, VMError  # noqa: E402
from walkthrough_model import Walkthrough  # noqa: E402


@pytest.fixture(scope="module")
def executable():
    return relax.build(Walkthrough, target="llvm")


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((128, 256), dtype="float32"),
            rng.standard_normal((256, 512), dtype="float32"),
            rng.standard_normal(512, dtype="float32"))


def reference(x, w, b):
    return x.astype("float64") @ w.astype("float64") + b


def test_bytecode_has_the_walkthrough_instructions_in_order(executable):
    text = executable.as_text()
    expected = ["check_tensor_info", "match_shape", "alloc_storage", "alloc_tensor",
                "call fused_matmul_add", "ret"]
    positions = [text.index(word) for word in expected]
    assert positions == sorted(positions), text
    assert text.count("call ") == 1  # one fused kernel
    assert "size=262144" in text  # 128 * 512 * 4 bytes for the output


def test_numerics_match_numpy(executable, inputs):
    vm = relax.VirtualMachine(executable, tvm.runtime.cpu())
    out = vm["main"](*inputs)
    assert isinstance(out, tvm.runtime.Tensor)
    np.testing.assert_allclose(out.numpy(), reference(*inputs), rtol=1e-4, atol=1e-3)
    # Tensors are accepted as well as numpy arrays
    out2 = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
    np.testing.assert_array_equal(out2.numpy(), out.numpy())


def test_wrong_inputs_are_rejected_with_names(executable, inputs):
    vm = VirtualMachine(executable)
    x, w, b = inputs
    with pytest.raises(VMError) as info:
        vm["main"](np.zeros((128, 300), "float32"), w, b)
    msg = str(info.value)
    assert "parameter x" in msg and "= 300" in msg and "expected 256" in msg
    with pytest.raises(VMError, match="main: parameter b has dtype float64, expected float32"):
        vm["main"](x, w, b.astype("float64"))
    with pytest.raises(VMError, match="main: parameter w has ndim 1"):
        vm["main"](x, np.zeros(4, "float32"), b)


def test_profile_and_time_evaluator(executable, inputs):
    vm = VirtualMachine(executable)
    report = vm.profile("main", *inputs)
    row = report.row("fused_matmul_add")
    assert row.kind == "kernel" and row.count == 1 and 0 < row.total_s <= report.total_s
    assert "fused_matmul_add" in str(report)
    timing = vm.time_evaluator("main", number=2, repeat=3)(*inputs)
    assert len(timing.results) == 3
    assert timing.min <= timing.median <= timing.max and timing.mean > 0 and timing.std >= 0


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_export_and_load_round_trip(target, inputs, tmp_path):
    if target == "c":
        pytest.importorskip("tvm.target.c")
    ex = relax.build(Walkthrough, target=target)
    path = tmp_path / f"walkthrough_{target}.so"
    ex.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert isinstance(loaded, Executable)
    assert loaded.as_text() == ex.as_text()
    out = VirtualMachine(loaded, tvm.runtime.cpu())["main"](*inputs)
    np.testing.assert_allclose(out.numpy(), reference(*inputs), rtol=1e-4, atol=1e-3)
    # the exported file is still an ordinary shared library of kernels
    assert "fused_matmul_add" in loaded.kernel_lib.function_names
