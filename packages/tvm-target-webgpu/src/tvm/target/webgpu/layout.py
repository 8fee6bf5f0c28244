"""How a WebGPU kernel takes its parameters (shared by the code generator, the runtime and
the JavaScript loader, which reads the same facts from the exported kernel descriptions).

Bind group 0 holds, in parameter order, one storage buffer per tensor parameter (binding
0, 1, ...), then the error record of a kernel with checks, then — when the kernel has
scalar parameters — one uniform buffer holding them all: each scalar is a 4-byte member at
byte offset ``4 * k`` (``k``: its position among the scalars), the block padded to 16
bytes.  WGSL has no 64-bit integers: an int64 scalar travels as an i32 (the launch checks
that it fits).  Imports nothing of the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["KernelLayout", "kernel_layout", "UNIFORM_TYPES", "LayoutError"]

#: scalar dtypes a kernel parameter may have -> (WGSL type, struct format character)
UNIFORM_TYPES = {"int32": ("i32", "i"), "uint32": ("u32", "I"), "float32": ("f32", "f"),
                 "int64": ("i32", "i")}


class LayoutError(ValueError):
    """A kernel whose parameters do not fit the WebGPU layout."""


@dataclass(frozen=True)
class KernelLayout:
    """``bindings[i]``: the binding of parameter ``i`` (None for a scalar); ``uniform[i]``:
    the byte offset of scalar parameter ``i`` in the uniform block (None for a buffer);
    ``uniform_binding``: the binding of the uniform block (None without scalars);
    ``uniform_size``: its bytes; ``num_storage``: storage buffers (the error record too)."""

    bindings: tuple
    uniform: tuple
    uniform_binding: Any
    uniform_size: int
    num_storage: int

    def to_json(self) -> dict[str, Any]:
        return {"bindings": list(self.bindings), "uniform": list(self.uniform),
                "uniform_binding": self.uniform_binding, "uniform_size": self.uniform_size,
                "num_storage": self.num_storage}


def kernel_layout(params: list[dict[str, Any]], kernel: str = "?") -> KernelLayout:
    """The layout of a kernel launched with ``params`` (``kernel_params`` of its description:
    dicts with ``kind`` "handle"/"scalar" and ``dtype``)."""
    bindings, uniform = [], []
    nbuf = nscalar = 0
    for p in params:
        if p["kind"] == "handle":
            bindings.append(nbuf)
            uniform.append(None)
            nbuf += 1
            continue
        if p.get("dtype") not in UNIFORM_TYPES:
            raise LayoutError(f"webgpu: kernel {kernel} parameter {p.get('name')!r} is a "
                              f"{p.get('dtype')} scalar; WGSL kernels take scalars of "
                              f"{', '.join(UNIFORM_TYPES)}")
        bindings.append(None)
        uniform.append(4 * nscalar)
        nscalar += 1
    size = (4 * nscalar + 15) // 16 * 16
    return KernelLayout(tuple(bindings), tuple(uniform), nbuf if nscalar else None, size, nbuf)
