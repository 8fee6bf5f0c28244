"""Helpers for the VM tests that need no compiler: numpy "kernels" standing in for compiled
PrimFuncs, te builders named after them, and a check of the llvm target's availability."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from tvm import te, tir

import tvm.runtime
from tvm.runtime.vm import Executable


def te_add(a, b):
    return te.compute(a.shape, lambda *i: a(*i) + b(*i), name="T_add")


def te_mul(a, b):
    return te.compute(a.shape, lambda *i: a(*i) * b(*i), name="T_mul")


def te_sub(a, b):
    return te.compute(a.shape, lambda *i: a(*i) - b(*i), name="T_sub")


def te_neg(a):
    return te.compute(a.shape, lambda *i: tir.const(0.0, a.dtype) - a(*i), name="T_neg")


def te_matmul(a, b):
    k = te.reduce_axis((0, a.shape[1]), "k")
    return te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k),
                      name="T_matmul")


def te_add_bias(a, b):
    return te.compute(a.shape, lambda i, j: a[i, j] + b[j], name="T_add")


#: numpy implementations of the te builders, by PrimFunc name
NUMPY = {
    "add": np.add,
    "mul": np.multiply,
    "sub": np.subtract,
    "neg": np.negative,
    "matmul": np.matmul,
}


class NumpyKernels(tvm.runtime.Module):
    """A kernel library of numpy functions in destination-passing style."""

    type_key = "numpy_kernels"

    def __init__(self, impls: dict[str, Callable[..., np.ndarray]], num_outputs: int = 1):
        super().__init__()
        self.calls: list[str] = []
        for name, fn in impls.items():
            self._functions[name] = self._wrap(name, fn, num_outputs)

    def _wrap(self, name: str, fn: Callable, num_outputs: int) -> Callable:
        def kernel(*args):
            self.calls.append(name)
            ins = [a.numpy() if isinstance(a, tvm.runtime.Tensor) else a
                   for a in args[:-num_outputs]]
            nin = getattr(fn, "nin", len(ins))
            if len(ins) == 1 and nin == 2:  # emit_te passes a value given twice once
                ins = ins * 2
            result = fn(*ins)
            outs = args[-num_outputs:]
            results = result if isinstance(result, tuple) else (result,)
            for out, value in zip(outs, results):
                out.copyfrom(np.asarray(value, dtype=out.dtype))

        return kernel


def compile_with_numpy(mod, impls=None):
    """Lower ``mod`` for the VM and pair its bytecode with numpy kernels (no compiler)."""
    from tvm.relax.vm import codegen, vm_lowering_pipeline

    lowered = vm_lowering_pipeline()(mod)
    result = codegen(lowered, "numpy")
    lib = NumpyKernels(impls or _kernels_by_prefix(result.program["kernels"]))
    return Executable(result.program, result.constants, lib), lowered


def _kernels_by_prefix(names):
    out = {}
    for name in names:
        base = name.rstrip("0123456789")
        if base in NUMPY:
            out[name] = NUMPY[base]
    return out


def llvm_available() -> bool:
    try:
        from tvm.ir.target import Target

        Target("llvm")
        import llvmlite  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure means the target cannot be used here
        return False
    return True


requires_llvm = pytest.mark.skipif(not llvm_available(), reason="the llvm target is not installed")
