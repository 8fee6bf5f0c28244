"""What the tuner's CPU rules need to know of the machine, asked through hook
``tvm_tir_cpu_info`` (the llvm plugin answers with its CPUInfo), so that the tuner never
imports a target plugin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["cpu_info", "GenericCPU"]


@dataclass(frozen=True)
class GenericCPU:
    """The CPU assumed when no plugin describes the target: 16-byte vectors, a few cores."""

    vector_bytes: int = 16
    vector_registers: int = 16
    num_cores: int = 1
    l1_bytes: int = 32 * 1024
    l2_bytes: int = 1024 * 1024
    fma_units: int = 2
    fma_latency: int = 4

    def lanes(self, dtype: str) -> int:
        from tvm.ffi.dtype import parse_dtype

        return max(1, self.vector_bytes * 8 // max(parse_dtype(dtype)[1], 8))


def cpu_info(target: Any) -> Any:
    """The CPU description of ``target`` (a Target or target string) from hook
    ``tvm_tir_cpu_info``, or :class:`GenericCPU` when no plugin answers."""
    from tvm import tir  # noqa: F401  (registers the tvm-tir hook specs)
    from tvm.ffi.plugin import call_hook
    from tvm.ir.target import as_target, target_kind_plugin
    from tvm.tir import hooks  # noqa: F401

    target = as_target(target)
    info = call_hook("tvm_tir_cpu_info", target=target,
                     owner=target_kind_plugin(target.kind_name))
    return info if info is not None else GenericCPU()


def num_cores(info: Any) -> int:
    """Cores a parallel loop should feed (at least 1)."""
    return max(1, int(getattr(info, "num_cores", 0) or 0))
