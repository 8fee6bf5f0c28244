"""Helpers shared by the schedule tests: workloads, structural checks, building and running."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tvm import te, tir
from tvm.ffi import assert_structural_equal


def matmul(n: int = 64, m: int = 64, k: int = 64, with_epilogue: bool = False) -> tir.PrimFunc:
    """``C = A @ B`` (plus ``D = C + 1`` with ``with_epilogue``) via te.create_prim_func."""
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    if not with_epilogue:
        return te.create_prim_func([A, B, C])
    D = te.compute((n, m), lambda i, j: C[i, j] + 1.0, name="D")
    return te.create_prim_func([A, B, D])


def elementwise(shape: tuple = (128, 128)) -> tir.PrimFunc:
    """``B = A * 2; C = B + 1`` over ``shape``."""
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda *idx: A[idx] * 2.0, name="B")
    C = te.compute(shape, lambda *idx: B[idx] + 1.0, name="C")
    return te.create_prim_func([A, C])


def func_of(sch_or_mod: Any, name: str = "main") -> tir.PrimFunc:
    mod = sch_or_mod.mod if isinstance(sch_or_mod, tir.Schedule) else sch_or_mod
    return mod[name]


def assert_func_equal(actual: Any, expected: tir.PrimFunc) -> None:
    """Structural equality of PrimFuncs, ignoring the global symbol (a script's def name)."""
    if isinstance(actual, tir.Schedule):
        actual = func_of(actual)
    assert_structural_equal(
        actual.with_attr("global_symbol", "f"), expected.with_attr("global_symbol", "f")
    )


def script_module() -> Any:
    """``tvm.script.tir`` (``T``), or skip when the TVMScript parser is unavailable."""
    return pytest.importorskip("tvm.script.tir")


def llvm_available() -> bool:
    try:
        import tvm.target.llvm.plugin as plugin
        from tvm.ffi.plugin import get_plugin_info, register_plugin
    except ImportError:
        return False
    if get_plugin_info("llvm") is None:
        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")
    return True


needs_llvm = pytest.mark.skipif(not llvm_available(), reason="tvm-target-llvm not importable")


def run(func_or_mod: Any, *arrays: np.ndarray) -> None:
    """Build with ``tir.build(..., "llvm")`` and call ``main`` on numpy arrays in place."""
    rt = tir.build(func_or_mod, target="llvm")
    rt["main"](*arrays)


def random_inputs(func: tir.PrimFunc, seed: int = 0) -> list[np.ndarray]:
    """One array per buffer parameter: random for inputs, zeros for the last (output)."""
    rng = np.random.default_rng(seed)
    out = []
    params = [func.buffer_map[p] for p in func.params if p in func.buffer_map]
    for k, buf in enumerate(params):
        shape = tuple(int(s) for s in buf.shape)
        if k == len(params) - 1:
            out.append(np.zeros(shape, buf.dtype))
        else:
            out.append(rng.random(shape).astype(buf.dtype))
    return out


def check_same_numbers(before: Any, after: Any, seed: int = 0) -> None:
    """Run ``before`` and ``after`` on the same inputs; outputs must agree."""
    func = before if isinstance(before, tir.PrimFunc) else before["main"]
    a = random_inputs(func, seed)
    b = [x.copy() for x in a]
    run(before, *a)
    run(after, *b)
    np.testing.assert_allclose(b[-1], a[-1], rtol=1e-5, atol=1e-5)
