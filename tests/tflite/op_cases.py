"""The per-operator cases of tests/tflite: a registry of small float32 models, one per
builtin and option, each ``() -> (ModelBuilder, inputs)``, and the helpers that write them.
``cases_nn_math.py`` and ``cases_tensor.py`` register into :data:`CASES`; ``test_ops.py``
runs every case against LiteRT."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from model_builder import ModelBuilder

CASES: dict[str, Callable[[], tuple[ModelBuilder, list[np.ndarray]]]] = {}
#: builtins whose case lives in another test module
COVERED_ELSEWHERE = {"QUANTIZE", "DEQUANTIZE", "IF"}  # test_import.py


def case(name: str) -> Callable:
    def wrap(fn: Callable) -> Callable:
        CASES[name] = fn
        return fn
    return wrap


def rand(shape: Any, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def simple(builtin: str, shape: list[int], out_shape: Any = None, options: Any = None,
           consts: tuple = (), out_dtype: str = "float32", version: int = 1,
            x: Any = None) -> tuple[ModelBuilder, list[np.ndarray]]:
    """``builtin(input, *consts)`` on one float input of ``shape``."""
    m = ModelBuilder(seed=1)
    a = m.input(shape, "float32" if x is None else str(x.dtype))
    ins = [a] + [m.const(c) if not isinstance(c, int) else c for c in consts]
    y = m.tensor(shape if out_shape is None else out_shape, out_dtype)
    m.op(builtin, ins, [y], options, version=version)
    m.output(y)
    return m, [rand(shape) if x is None else x]


def binary(builtin: str, sa: list[int], sb: list[int], out: list[int], options: Any = None,
           out_dtype: str = "float32", positive: bool = False, dtype: str = "float32"
            ) -> tuple[ModelBuilder, list[np.ndarray]]:
    m = ModelBuilder()
    a, b = m.input(sa, dtype), m.input(sb, dtype)
    y = m.tensor(out, out_dtype)
    m.op(builtin, [a, b], [y], options)
    m.output(y)
    xa, xb = rand(sa, 1), rand(sb, 2)
    if positive:
        xa, xb = np.abs(xa) + 0.5, np.abs(xb) + 0.5
    if dtype == "bool":
        xa, xb = xa > 0, xb > 0
    if dtype == "int32":  # no zero divisors
        xa = np.round(xa * 20).astype(np.int32)
        xb = np.round(xb * 5).astype(np.int32)
        xb[xb == 0] = 3
    return m, [xa, xb]
