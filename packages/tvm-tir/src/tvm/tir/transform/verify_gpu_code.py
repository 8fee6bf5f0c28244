"""VerifyGPUCode: reject GPU functions that cannot run (after LowerThreadBinding).

Outside kernels a GPU function runs on the host, which cannot touch device memory, so:

* a buffer access outside any kernel is an error naming the enclosing (unbound) loop, e.g.
  ``add: loop 'i' is not bound to a GPU thread axis, but its body writes buffer 'B' ...``.

Inside each kernel the launch must fit the target (attributes of the current target, see
:class:`~._gpu.GPULimits`):

* threadIdx extents are constants, their product is at most ``max_num_threads`` and each
  is within ``max_thread_dims``;
* the ``shared`` allocations (constant-sized) total at most ``max_shared_memory_per_block``
  bytes;
* no ``global``-scope allocation and no parallel loop inside a kernel.

The pass changes nothing; it raises :class:`GPUCodeError`.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.transform import FunctionPass

from ..expr import BufferLoad, IterVar
from ..function import PrimFunc
from ..functor import StmtExprVisitor
from ..stmt import Allocate, AttrStmt, BufferStore, For, ForKind
from ._common import prim_func_pass
from ..expr_util import const_int
from ._gpu import GPULimits, dtype_bytes, gpu_limits, is_thread_tag, tag_axis

__all__ = ["VerifyGPUCode", "verify_gpu_code", "GPUCodeError"]


class GPUCodeError(ValueError):
    """A GPU function that cannot be launched as written."""


class _KernelCheck(StmtExprVisitor):
    def __init__(self, fname: str, limits: GPULimits) -> None:
        self.fname = fname
        self.limits = limits
        self.shared_bytes = 0
        self.threads: dict[str, int] = {}

    def visit_attr_stmt_(self, op: AttrStmt) -> None:
        if op.attr_key == "thread_extent" and isinstance(op.node, IterVar):
            tag = op.node.thread_tag
            if is_thread_tag(tag):
                ext = const_int(op.value)
                if ext is None:
                    raise GPUCodeError(
                        f"{self.fname}: {tag} has the extent {op.value}, which is not a "
                        "constant; the threads of a block must be known at compile time "
                        "(split the loop by a constant factor before binding it)"
                    )
                if ext <= 0:
                    raise GPUCodeError(f"{self.fname}: {tag} has extent {ext}; expected > 0")
                limit = self.limits.max_thread_dims[tag_axis(tag)]
                if ext > limit:
                    raise GPUCodeError(
                        f"{self.fname}: {tag} = {ext} exceeds the target's limit of {limit} "
                        f"threads in that dimension (max_thread_dims) for target "
                        f"{self.limits.target!r}"
                    )
                self.threads[tag] = ext
        self.generic_visit(op)

    def visit_allocate_(self, op: Allocate) -> None:
        if op.scope == "shared":
            count = 1
            for e in op.extents:
                c = const_int(e)
                if c is None:
                    raise GPUCodeError(
                        f"{self.fname}: shared buffer {op.buffer_var.name!r} has the symbolic "
                        f"size {tuple(op.extents)}; shared memory must have a constant size"
                    )
                count *= c
            self.shared_bytes += count * dtype_bytes(op.dtype)
        elif op.scope in ("global", ""):
            raise GPUCodeError(
                f"{self.fname}: buffer {op.buffer_var.name!r} is allocated inside a kernel in "
                "the 'global' scope; give it the 'shared' or 'local' scope "
                "(sch.set_scope / cache_read(..., 'shared')) or compute it outside the kernel"
            )
        self.generic_visit(op)

    def visit_for_(self, op: For) -> None:
        if op.kind == ForKind.PARALLEL:
            raise GPUCodeError(
                f"{self.fname}: loop {op.loop_var.name!r} is parallel inside a GPU kernel; "
                "bind it to a thread axis instead (sch.bind)"
            )
        self.generic_visit(op)

    def finish(self) -> None:
        total = 1
        for ext in self.threads.values():
            total *= ext
        if total > self.limits.max_num_threads:
            dims = ", ".join(f"{t}={e}" for t, e in sorted(self.threads.items()))
            raise GPUCodeError(
                f"{self.fname}: a kernel launches {total} threads per block ({dims}), more "
                f"than the target's max_num_threads = {self.limits.max_num_threads} "
                f"({self.limits.target!r}); use smaller thread extents"
            )
        if self.shared_bytes > self.limits.max_shared_memory_per_block:
            raise GPUCodeError(
                f"{self.fname}: a kernel allocates {self.shared_bytes} bytes of shared memory, "
                f"more than the target's max_shared_memory_per_block = "
                f"{self.limits.max_shared_memory_per_block} ({self.limits.target!r}); use "
                "smaller tiles"
            )


class _HostCheck(StmtExprVisitor):
    def __init__(self, fname: str, limits: GPULimits) -> None:
        self.fname = fname
        self.limits = limits
        self.loops: list[For] = []

    def visit_attr_stmt_(self, op: AttrStmt) -> None:
        if op.attr_key == "thread_extent" and isinstance(op.node, IterVar):
            check = _KernelCheck(self.fname, self.limits)
            check.visit_stmt(op)
            check.finish()
            return
        self.generic_visit(op)

    def visit_for_(self, op: For) -> None:
        self.loops.append(op)
        self.generic_visit(op)
        self.loops.pop()

    def _host_access(self, buffer: Any, verb: str) -> None:
        if self.loops:
            loop = self.loops[-1]
            kind = "" if loop.kind == ForKind.SERIAL else f" ({loop.kind.name.lower()})"
            raise GPUCodeError(
                f"{self.fname}: loop {loop.loop_var.name!r}{kind} is not bound to a GPU thread "
                f"axis, but its body {verb} buffer {buffer.name!r}; outside kernels the code "
                "runs on the host, which cannot access device memory. Bind the loop "
                "(sch.bind(loop, 'blockIdx.x') / 'threadIdx.x'), or let the target's default "
                "schedule handle the function"
            )
        raise GPUCodeError(
            f"{self.fname}: a statement outside any GPU kernel {verb} buffer {buffer.name!r}; "
            "the host cannot access device memory. Put the computation under loops bound to "
            "GPU thread axes (sch.bind)"
        )

    def visit_buffer_store_(self, op: BufferStore) -> None:
        self._host_access(op.buffer, "writes")

    def visit_buffer_load_(self, op: BufferLoad) -> None:
        self._host_access(op.buffer, "reads")


def verify_gpu_code(func: PrimFunc, limits: Optional[GPULimits] = None,
                    name: Optional[str] = None) -> PrimFunc:
    """Raise :class:`GPUCodeError` if ``func`` cannot run on the GPU; returns ``func``."""
    fname = name or func.attrs.get("global_symbol") or "main"
    _HostCheck(fname, limits or gpu_limits()).visit_stmt(func.body)
    return func


def VerifyGPUCode(target: Any = None) -> FunctionPass:  # noqa: N802
    """The pass form of :func:`verify_gpu_code` (limits of ``target``, default the current
    target)."""

    def run(func: PrimFunc) -> PrimFunc:
        return verify_gpu_code(func, gpu_limits(target))

    return prim_func_pass(run, "tir.VerifyGPUCode")
