"""Compiled float kernels agree with numpy on NaN and signed zeros (maximum/minimum/clip/
relu/negative, max/min/argmax/argmin reductions), and the libm-backed unary/binary ops and
``logcumsumexp`` match numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tvm.runtime
from tvm import relax
from tvm.relax import op as _op
from tvm.relax.block_builder import BlockBuilder
from tvm.relax.expr import Var
from tvm.relax.struct_info import TensorStructInfo
from vm_testing import requires_llvm

pytestmark = requires_llvm


def _run(fn, *arrays: np.ndarray) -> np.ndarray:
    bb = BlockBuilder()
    params = [Var(f"x{i}", TensorStructInfo(list(a.shape), str(a.dtype)))
              for i, a in enumerate(arrays)]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(fn(*params))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.runtime.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in arrays]).numpy()


A = np.array([0.0, -0.0, np.nan, 1.0, -2.0, np.inf, np.nan], "float32")
B = np.array([-0.0, 0.0, 1.0, np.nan, 3.0, -np.inf, np.nan], "float32")


def _same(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("fn, ref", [  # NaN wins; on a tie (0.0 vs -0.0) x1 is kept, as torch
    (_op.maximum, lambda a, b: np.where(np.isnan(a) | (a >= b), a, b)),
    (_op.minimum, lambda a, b: np.where(np.isnan(a) | (a <= b), a, b)),
])
def test_binary_minmax_nan_and_zero_sign(fn, ref):
    _same(_run(fn, A, B), ref(A, B))


@pytest.mark.parametrize("fn, ref", [
    (_op.nn.relu, lambda x: np.where(x < 0, np.float32(0), x)),
    (_op.negative, np.negative),
    (lambda x: _op.clip(x, -1.0, 0.5), lambda x: np.clip(x, -1.0, 0.5)),
    (lambda x: _op.clip(x, 2.0, 1.0), lambda x: np.clip(x, 2.0, 1.0)),  # max wins
])
def test_unary_nan_and_zero_sign(fn, ref):
    _same(_run(fn, A), ref(A).astype("float32"))


def test_reductions_pick_nan():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0]], "float32")
    _same(_run(lambda t: _op.max(t, [1]), x), np.max(x, 1))
    _same(_run(lambda t: _op.min(t, [1]), x), np.min(x, 1))
    np.testing.assert_array_equal(_run(lambda t: _op.argmax(t, 1), x), np.argmax(x, 1))
    np.testing.assert_array_equal(_run(lambda t: _op.argmin(t, 1), x), np.argmin(x, 1))


X = np.array([-3.0, -1e-6, -0.0, 0.0, 2e-7, 0.5, 4.0, np.inf], "float32")


@pytest.mark.parametrize("name, ref", [
    ("exp2", np.exp2), ("expm1", np.expm1), ("log2", np.log2), ("log10", np.log10),
    ("log1p", np.log1p),
])
def test_new_unary(name, ref):
    with np.errstate(all="ignore"):
        _same(_run(getattr(_op, name), X), ref(X))


@pytest.mark.parametrize("name, ref", [
    ("atan2", np.arctan2), ("copysign", np.copysign), ("hypot", np.hypot),
])
def test_new_binary(name, ref):
    _same(_run(getattr(_op, name), A, B), ref(A, B))


def test_new_binary_rejects_integers():
    x = np.arange(3, dtype="int32")
    with pytest.raises(Exception, match="floating-point"):
        _run(_op.atan2, x, x)


def test_logcumsumexp():
    x = np.array([[-1000.0, 0.0, -np.inf, np.inf, np.inf, 3.0],
                  [1.0, 1.0, -np.inf, 2.0, 1.0, 0.0]], "float32")
    with np.errstate(all="ignore"):
        want = np.logaddexp.accumulate(x.astype("float64"), axis=1).astype("float32")
    _same(_run(lambda t: _op.logcumsumexp(t, 1), x), want)
    y = np.random.default_rng(0).normal(size=(3, 40)).astype("float32")
    np.testing.assert_allclose(_run(lambda t: _op.logcumsumexp(t, 0), y),
                               np.logaddexp.accumulate(y, axis=0), rtol=1e-5)
