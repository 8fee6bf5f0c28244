"""Symbolic shapes end to end: one compiled (and exported) artifact serves several sizes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402
from tvm.script import tir as T  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.runtime.vm import VirtualMachine, VMError  # noqa: E402


@I.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor(("n", 32), "float32"), w1: R.Tensor((32, 64), "float32"),
             b1: R.Tensor((64,), "float32"), w2: R.Tensor((64, 16), "float32"),
             y: R.Tensor(("n", 16), "float32")):
        with R.dataflow():
            h = R.matmul(x, w1)
            h1 = R.add(h, b1)
            h2 = R.nn.relu(h1)
            o = R.matmul(h2, w2)
            o1 = R.exp(o)
            s = R.subtract(o1, y)
            R.output(s)
        return s


def reference(x, w1, b1, w2, y):
    h = np.maximum(x.astype("float64") @ w1 + b1, 0)
    return np.exp(h @ w2) - y


def make_inputs(rows, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, 32), dtype="float32") * 0.1,
            rng.standard_normal((32, 64), dtype="float32") * 0.1,
            rng.standard_normal(64, dtype="float32") * 0.1,
            rng.standard_normal((64, 16), dtype="float32") * 0.1,
            rng.standard_normal((rows, 16), dtype="float32"))


@pytest.fixture(scope="module")
def executable():
    return relax.build(MLP, target="llvm")


def test_bytecode_binds_n_once_and_checks_it_after(executable):
    text = executable.as_text()
    assert "match_shape %0, [let n, 32]" in text
    assert "match_shape %4, [n, 16]" in text
    assert "size=(n * " in text  # allocation sizes follow n
    assert text.count("call fused_") == 2  # matmul+add+relu and matmul+exp+subtract


@pytest.mark.parametrize("rows", [1, 5, 37])
def test_one_executable_many_sizes(executable, rows):
    vm = VirtualMachine(executable, tvm.runtime.cpu())
    args = make_inputs(rows)
    out = vm["main"](*args)
    assert out.shape == (rows, 16)
    np.testing.assert_allclose(out.numpy(), reference(*args), rtol=1e-4, atol=1e-4)


def test_symbolic_dimension_must_agree_between_parameters(executable):
    vm = VirtualMachine(executable)
    x, w1, b1, w2, _ = make_inputs(4)
    with pytest.raises(VMError, match=r"main: parameter y has shape\[0\] = 3, expected n = 4"):
        vm["main"](x, w1, b1, w2, np.zeros((3, 16), "float32"))


def test_exported_symbolic_executable_runs_at_two_sizes(executable, tmp_path):
    path = tmp_path / "mlp.so"
    executable.export_library(path)
    vm = VirtualMachine(tvm.runtime.load_module(path))
    for rows in (2, 9):
        args = make_inputs(rows, seed=rows)
        np.testing.assert_allclose(vm["main"](*args).numpy(), reference(*args),
                                   rtol=1e-4, atol=1e-4)


@I.ir_module
class MatchCast:
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        m = T.int64()
        with R.dataflow():
            y = R.match_cast(x, R.Tensor((m, 8), "float32"))
            z = R.add(y, y)
            R.output(z)
        return z


def test_match_cast_checks_at_run_time(tmp_path):
    ex = relax.build(MatchCast, target="llvm")
    vm = VirtualMachine(ex)
    data = np.arange(24, dtype="float32").reshape(3, 8)
    np.testing.assert_array_equal(vm["main"](data).numpy(), data * 2)
    with pytest.raises(VMError, match=r"match_cast to y has shape\[1\] = 4, expected 8"):
        vm["main"](np.zeros((6, 4), "float32"))
