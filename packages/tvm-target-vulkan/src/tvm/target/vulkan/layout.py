"""How a Vulkan kernel takes its parameters (shared by the code generator and the runtime).

Every tensor parameter is a storage buffer of descriptor set 0, bound in parameter order
(binding 0, 1, ...); the error record of a kernel with checks comes last.  Scalars live in
one push-constant block, in parameter order, each at the next offset aligned to its size
(std430 rules for scalars).  Imports nothing of the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["KernelLayout", "kernel_layout", "PUSH_CONSTANT_TYPES", "MAX_PUSH_CONSTANT_BYTES"]

#: scalar dtypes a push constant can hold -> (GLSL type, size in bytes)
PUSH_CONSTANT_TYPES = {
    "int32": ("int", 4), "uint32": ("uint", 4), "float32": ("float", 4),
    "int64": ("int64_t", 8), "uint64": ("uint64_t", 8), "float64": ("double", 8),
}
#: the push-constant space every Vulkan device provides (maxPushConstantsSize >= 128)
MAX_PUSH_CONSTANT_BYTES = 128


class LayoutError(ValueError):
    """A kernel whose parameters do not fit the Vulkan layout."""


@dataclass(frozen=True)
class KernelLayout:
    """``bindings[i]``: the binding of parameter ``i`` (None for a scalar);
    ``push[i]``: the push-constant byte offset of parameter ``i`` (None for a buffer);
    ``push_size``: bytes of the push-constant block; ``num_buffers``: storage buffers."""

    bindings: tuple
    push: tuple
    push_size: int
    num_buffers: int


def kernel_layout(params: list[dict[str, Any]], kernel: str = "?") -> KernelLayout:
    """The layout of a kernel launched with ``params`` (``kernel_params`` of its description:
    dicts with ``kind`` "handle"/"scalar" and ``dtype``)."""
    bindings, push = [], []
    nbuf = offset = 0
    for p in params:
        if p["kind"] == "handle":
            bindings.append(nbuf)
            push.append(None)
            nbuf += 1
            continue
        entry = PUSH_CONSTANT_TYPES.get(p["dtype"])
        if entry is None:
            raise LayoutError(f"vulkan: kernel {kernel} parameter {p.get('name')!r} is a "
                              f"{p['dtype']} scalar; push constants hold "
                              f"{', '.join(PUSH_CONSTANT_TYPES)}")
        size = entry[1]
        offset = (offset + size - 1) // size * size
        bindings.append(None)
        push.append(offset)
        offset += size
    if offset > MAX_PUSH_CONSTANT_BYTES:
        raise LayoutError(f"vulkan: kernel {kernel} has {offset} bytes of scalar parameters; "
                          f"push constants are limited to {MAX_PUSH_CONSTANT_BYTES}")
    return KernelLayout(tuple(bindings), tuple(push), offset, nbuf)
