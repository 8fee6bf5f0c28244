"""The kernels' own heap allocations, served from the static workspace.

Code generation puts a kernel's small buffers on the stack and takes big ones (over
:data:`STACK_BYTES`, a packed weight, an accumulator) from ``aligned_alloc`` / ``free`` at
every call (``docs/abi.md``).  An AOT run must not touch the heap, and its kernels must be
the VM build's (so that the results are the same bits), so the kernels are not changed:
in the package their object's references to ``aligned_alloc`` and ``free`` are renamed
(``objcopy --redefine-sym``) to a bump allocator of the generated C over an *arena* at the
end of the workspace, reset before each kernel call; ``free`` does nothing.  Tasks of a
parallel loop allocate concurrently (an atomic add).

:func:`arena_bytes` bounds what one call of a kernel takes: every heap ``Allocate`` of the
lowered kernel, rounded as the code generator rounds it, times the trip count of the loops
around it.  A kernel whose bound is not a constant (a size or a trip count known only at
run time, a ``while`` loop) is an :class:`~tvm.relax.aot.plan.AOTError`.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi.dtype import storage_bytes
from tvm.ir.module import IRModule
from tvm.tir import expr as tir
from tvm.tir.function import PrimFunc

from .plan import AOTError

__all__ = ["arena_bytes", "STACK_BYTES", "ALLOC_ALIGN"]

#: buffers up to this size are stack slots (tvm.target.llvm.codegen_stmt.STACK_LIMIT)
STACK_BYTES = 16 * 1024
#: the code generator asks aligned_alloc for (bytes + ALLOC_ALIGN) & -ALLOC_ALIGN
ALLOC_ALIGN = 64


def _may_allocate(func: PrimFunc) -> bool:
    """Whether any block of ``func`` allocates a buffer that may be larger than the stack
    limit (a cheap test before lowering)."""
    from tvm.tir.stmt import Block
    from tvm.tir.stmt_functor import post_order_visit

    found = []

    def visit(node: Any) -> None:
        if isinstance(node, Block):
            for buf in node.alloc_buffers:
                n: Optional[int] = storage_bytes(buf.dtype)
                for d in buf.shape:
                    n = n * int(d.value) if n is not None and isinstance(d, tir.IntImm) else None
                if n is None or n > STACK_BYTES:
                    found.append(buf)

    post_order_visit(func.body, visit)
    return bool(found)


def arena_bytes(name: str, func: PrimFunc) -> int:
    """Bytes of heap one call of kernel ``name`` (a scheduled PrimFunc) allocates."""
    if not _may_allocate(func):
        return 0
    from tvm.tir.build import get_lowering_pipeline
    from tvm.tir.stmt import Allocate, For, While

    lowered = get_lowering_pipeline()(IRModule({"f": func}))["f"]

    def walk(node: Any, trips: Optional[int]) -> int:
        if isinstance(node, For):
            ext = node.extent
            inner = trips * int(ext.value) if trips is not None and isinstance(
                ext, tir.IntImm) else None
            return walk(node.body, inner)
        if isinstance(node, While):
            return walk(node.body, None)
        total = 0
        if isinstance(node, Allocate):
            count: Optional[int] = storage_bytes(node.dtype)
            for e in node.extents:
                count = count * int(e.value) if count is not None and isinstance(
                    e, tir.IntImm) else None
            if count is None or count > STACK_BYTES:
                if count is None or trips is None:
                    raise AOTError(
                        f"AOT: kernel {name} allocates {node.buffer_var.name} with a size or "
                        "a repeat count known only at run time; AOT needs a static bound "
                        "for its workspace")
                total += (count + ALLOC_ALIGN) // ALLOC_ALIGN * ALLOC_ALIGN * trips
        for child in _children(node):
            total += walk(child, trips)
        return total

    return walk(lowered.body, 1)


def _children(node: Any) -> list[Any]:
    from tvm.tir.stmt import SeqStmt, Stmt

    if isinstance(node, SeqStmt):
        return list(node.seq)
    out = []
    for key in ("body", "then_case", "else_case"):
        child = getattr(node, key, None)
        if isinstance(child, Stmt):
            out.append(child)
    return out
