"""LowerAllocation: decide where each ``Allocate`` lives and keep it consistent with its buffer.

Every ``Allocate`` in ``global``/``local`` scope gets ``annotations["storage"]``:

* ``"stack"`` when its size is a constant and it is in ``local`` scope or takes at most
  ``tir.LowerAllocation.max_stack_bytes`` bytes (default 1024);
* ``"heap"`` otherwise (symbolic sizes included).

An annotation already present (``"stack"`` or ``"heap"``) is kept.  Allocations stay where
they are: one inside a parallel loop body is per-iteration (per-thread) storage.  Other
scopes (``shared``, ``warp``, ...) belong to device code generators and are not annotated.

When the ``Allocate`` is directly followed by the ``DeclBuffer`` of its variable, the two
must agree: same dtype, and a multi-dimensional allocation takes the 1-D (flattened)
buffer's shape; a buffer larger than its constant-size allocation is an error.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi.dtype import storage_bytes
from tvm.ir.transform import FunctionPass, PassContext, register_config_option

from ..expr import IntImm
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import Allocate, DeclBuffer
from ._common import prim_func_pass

__all__ = ["LowerAllocation", "lower_allocation", "STORAGE_KEY", "MAX_STACK_BYTES_KEY"]

STORAGE_KEY = "storage"
MAX_STACK_BYTES_KEY = "tir.LowerAllocation.max_stack_bytes"
_DEFAULT_MAX_STACK_BYTES = 1024

register_config_option(
    MAX_STACK_BYTES_KEY,
    int,
    _DEFAULT_MAX_STACK_BYTES,
    "Largest constant-size global-scope allocation (in bytes) that LowerAllocation places "
    "on the stack; larger or symbolic ones go to the heap.",
)


def _element_bytes(dtype: str) -> int:
    return storage_bytes(dtype)


def _constant_size(op: Allocate) -> Optional[int]:
    size = 1
    for extent in op.extents:
        if not isinstance(extent, IntImm):
            return None
        size *= extent.value
    return size


class _AllocationLowerer(StmtExprMutator):
    def __init__(self, max_stack_bytes: int) -> None:
        self.max_stack_bytes = max_stack_bytes

    def visit_allocate_(self, op: Allocate) -> Any:
        body = self.visit_stmt(op.body)
        dtype, extents = op.dtype, op.extents
        if isinstance(body, DeclBuffer) and body.buffer.data is op.buffer_var:
            buf = body.buffer
            if buf.dtype != dtype:
                raise ValueError(
                    f"LowerAllocation: allocation of {op.buffer_var.name!r} has dtype {dtype} "
                    f"but its DeclBuffer {buf.name!r} has dtype {buf.dtype}"
                )
            if len(buf.shape) == 1 and not buf.strides and len(extents) != 1:
                extents = tuple(buf.shape)
            needed = _constant_size(op.with_fields(extents=tuple(buf.shape)))
            have = _constant_size(op.with_fields(extents=extents))
            if needed is not None and have is not None and needed > have:
                raise ValueError(
                    f"LowerAllocation: allocation of {op.buffer_var.name!r} holds {have} "
                    f"elements but its DeclBuffer {buf.name!r} spans {needed}"
                )
        annotations = dict(op.annotations)
        storage = annotations.get(STORAGE_KEY)
        if storage is not None and storage not in ("stack", "heap"):
            raise ValueError(
                f"LowerAllocation: allocation of {op.buffer_var.name!r} has "
                f"annotations['storage'] = {storage!r}; expected 'stack' or 'heap'"
            )
        if storage is None and op.scope in ("global", "local", ""):
            size = _constant_size(op.with_fields(extents=extents))
            if size is not None and (
                op.scope == "local" or size * _element_bytes(dtype) <= self.max_stack_bytes
            ):
                annotations[STORAGE_KEY] = "stack"
            else:
                annotations[STORAGE_KEY] = "heap"
        if annotations == dict(op.annotations):
            annotations = op.annotations
        return op.with_fields(extents=extents, body=body, annotations=annotations)


def lower_allocation(func: PrimFunc, max_stack_bytes: Optional[int] = None) -> PrimFunc:
    """``func`` with every host allocation annotated ``stack`` or ``heap``.

    ``max_stack_bytes`` defaults to the PassContext option ``tir.LowerAllocation.max_stack_bytes``.
    """
    if max_stack_bytes is None:
        max_stack_bytes = PassContext.current().get_config(
            MAX_STACK_BYTES_KEY, _DEFAULT_MAX_STACK_BYTES
        )
    body = _AllocationLowerer(int(max_stack_bytes)).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def LowerAllocation() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_allocation`."""
    return prim_func_pass(lower_allocation, "tir.LowerAllocation")
