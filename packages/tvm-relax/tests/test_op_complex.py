"""relax.view_as_real / relax.view_as_complex: inference, errors, numpy semantics, and the
zero-copy VM builtins they lower to."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, tir
from tvm.relax import TensorStructInfo, op
from vm_testing import requires_llvm

import tvm.runtime


def _infer(expr, *params):
    bb = relax.BlockBuilder()
    with bb.function("f", list(params)):
        out = bb.emit(expr)
        bb.emit_func_output(out)
    return out.struct_info


def test_inference_adds_and_drops_the_pair_dimension():
    n = tir.Var("n", "int64")
    z = relax.Var("z", TensorStructInfo([n, 3], "complex64"))
    r = relax.Var("r", TensorStructInfo([n, 2], "float64"))
    s = _infer(op.view_as_real(z), z)
    assert s.dtype == "float32" and s.ndim == 3 and int(s.shape_values[-1]) == 2
    c = _infer(op.view_as_complex(r), r)
    assert c.dtype == "complex128" and c.ndim == 1


@pytest.mark.parametrize("make, sinfo, match", [
    (op.view_as_real, TensorStructInfo([3], "float32"), "complex64/complex128"),
    (op.view_as_complex, TensorStructInfo([3, 3], "float32"), "last dimension of 2"),
    (op.view_as_complex, TensorStructInfo([3, tir.Var("m", "int64")], "float32"),
     "last dimension of 2, got m"),
    (op.view_as_complex, TensorStructInfo([3, 2], "int32"), "float32/float64"),
    (op.view_as_complex, TensorStructInfo([], "float32"), "0-d"),
])
def test_inference_errors(make, sinfo, match):
    x = relax.Var("x", sinfo)
    with pytest.raises(Exception, match=match):
        _infer(make(x), x)


def test_numpy_semantics_round_trip():
    from tvm.relax.op.complex import _eval_view_as_complex, _eval_view_as_real

    z = (np.arange(6) + 1j * np.arange(6)[::-1]).astype("complex64").reshape(2, 3)
    r = _eval_view_as_real(None, z)
    assert r.dtype == np.float32 and r.shape == (2, 3, 2)
    np.testing.assert_array_equal(r[..., 1], z.imag)
    np.testing.assert_array_equal(_eval_view_as_complex(None, r), z)


def test_builtins_are_views_of_the_same_storage():
    from tvm.runtime.vm.builtins import get_builtin

    z = tvm.runtime.tensor(np.array([1 + 2j, -3 + 0.5j], dtype="complex128"))
    r = get_builtin("vm.builtin.view_as_real")(z)
    assert r.dtype == "float64" and tuple(r.shape) == (2, 2)
    np.testing.assert_array_equal(r.numpy(), [[1, 2], [-3, 0.5]])
    back = get_builtin("vm.builtin.view_as_complex")(r)
    np.testing.assert_array_equal(back.numpy(), z.numpy())
    with pytest.raises(TypeError, match="last dimension is 2"):
        get_builtin("vm.builtin.view_as_complex")(tvm.runtime.tensor(np.zeros((2, 3), "float32")))


@requires_llvm
def test_complex_function_boundary_on_the_vm():
    z = relax.Var("z", TensorStructInfo([4], "complex64"))
    bb = relax.BlockBuilder()
    with bb.function("main", [z]):
        with bb.dataflow():
            p = bb.emit(op.view_as_real(z))
            q = bb.emit(op.multiply(p, relax.const(np.array([2.0, -1.0], "float32"))))
            out = bb.emit_output(op.view_as_complex(q))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    a = np.array([1 + 1j, -2 + 0.5j, np.inf - 1j, 0j], dtype="complex64")
    got = vm["main"](tvm.runtime.tensor(a)).numpy()
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got, 2 * a.real - 1j * a.imag)
