"""Helpers for the graph-pass tests: build one-function modules, list bindings, run numpy."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pytest

from tvm import relax
from tvm.ffi import assert_structural_equal
from tvm.ir.target import host_target
from tvm.relax.transform.numpy_eval import run_function_with_numpy

requires_host_jit = pytest.mark.skipif(
    host_target(allow_none=True) is None, reason="no host JIT target (e.g. tvm-target-llvm) installed"
)


def tensor(shape: Sequence[Any], dtype: str = "float32") -> relax.TensorStructInfo:
    return relax.TensorStructInfo(list(shape), dtype)


def make_mod(
    params: Sequence[relax.Var],
    body: Callable[..., Any],
    dataflow: bool = True,
    name: str = "main",
) -> Any:
    """A module with one function ``name(params)``; ``body(bb, *params)`` emits bindings and
    returns the output (emitted as the dataflow block's output)."""
    bb = relax.BlockBuilder()
    with bb.function(name, list(params)):
        if dataflow:
            with bb.dataflow():
                out = bb.emit_output(body(bb, *params))
        else:
            out = body(bb, *params)
        bb.emit_func_output(out)
    return bb.get()


def fresh(*sinfos: Any) -> list[relax.Var]:
    return [relax.Var(f"p{i}", s) for i, s in enumerate(sinfos)]


def bindings(mod: Any, name: str = "main") -> list:
    return [b for block in mod[name].body.blocks for b in block.bindings]


def op_names(mod: Any, name: str = "main") -> list[str]:
    """Operator names of the bound calls, in order (``var`` / ``tuple`` / ... for others)."""
    out = []
    for b in bindings(mod, name):
        v = b.value
        if isinstance(b, relax.MatchCast):
            out.append("MatchCast")
        elif isinstance(v, relax.Call):
            out.append(getattr(v.op, "name", type(v.op).__name__))
        else:
            out.append(type(v).__name__)
    return out


def assert_same(actual: Any, expected: Any) -> None:
    assert_structural_equal(actual, expected)


def run(mod: Any, *inputs: Any, name: str = "main") -> Any:
    return run_function_with_numpy(mod[name], *inputs)


def assert_same_values(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_values(x, y, rtol, atol)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
