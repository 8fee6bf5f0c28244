"""What a kernel's arguments are (dtype and shape), and random inputs for measuring it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["TensorInfo", "args_info", "random_inputs"]


@dataclass(frozen=True)
class TensorInfo:
    """One tensor argument of a kernel: ``dtype`` (``"float32"``) and a static ``shape``."""

    dtype: str
    shape: tuple[int, ...]

    def as_json(self) -> list:
        return ["TENSOR", self.dtype, list(self.shape)]

    @staticmethod
    def from_json(value: Any) -> TensorInfo:
        if (not isinstance(value, list) or len(value) != 3 or value[0] != "TENSOR"
                or not isinstance(value[1], str) or not isinstance(value[2], list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                           for d in value[2])):
            raise ValueError(f"not a TensorInfo record: {value!r}")
        return TensorInfo(value[1], tuple(value[2]))


def args_info(func: Any) -> list[TensorInfo]:
    """The tensor arguments of a PrimFunc (or an IRModule's ``main``), in parameter order.

    Raises ValueError for a symbolic shape or a non-tensor parameter: a tuning task measures
    one concrete workload."""
    from tvm.ir.module import IRModule

    if isinstance(func, IRModule):
        func = func["main"]
    out: list[TensorInfo] = []
    for param in func.params:
        buf = func.buffer_map.get(param)
        if buf is None:
            raise ValueError(f"parameter {param.name_hint} of the kernel is not a buffer; a "
                             "tuning task takes tensor arguments only")
        shape = []
        for dim in buf.shape:
            value = getattr(dim, "value", None)
            if not isinstance(value, int):
                raise ValueError(f"buffer {buf.name} has a symbolic shape {list(buf.shape)}; "
                                 "tune a kernel with static shapes")
            shape.append(value)
        out.append(TensorInfo(str(buf.dtype), tuple(shape)))
    return out


def random_inputs(infos: Sequence[TensorInfo], seed: int = 0) -> list[np.ndarray]:
    """Reproducible random arrays for ``infos``: floats in [-1, 1), integers in a small
    range (so that index-like inputs stay mostly in bounds), booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for info in infos:
        dt = np.dtype(info.dtype) if info.dtype != "bool" else np.dtype(bool)
        if dt.kind == "f":
            arr = rng.uniform(-1.0, 1.0, size=info.shape).astype(dt)
        elif dt.kind in "iu":
            arr = rng.integers(0, 8, size=info.shape).astype(dt)
        elif dt.kind == "b":
            arr = rng.integers(0, 2, size=info.shape).astype(bool)
        else:
            raise ValueError(f"no random inputs for dtype {info.dtype}")
        out.append(arr)
    return out
