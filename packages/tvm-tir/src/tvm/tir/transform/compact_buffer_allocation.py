"""CompactBufferAllocation: place ``shared``/``local`` buffers where they are used, at the
size they are used.

Schedules stage data with ``cache_read(block, i, "shared")`` / ``cache_write(..., "local")``;
the cache buffer is allocated by the scope (root) block at the full size of the original
buffer.  Run after LowerOpaqueBlock and LowerThreadBinding (so every thread axis has one
variable per kernel), for every ``Allocate`` (+ its ``DeclBuffer``) whose scope is neither
``global`` nor empty, this pass

* finds the innermost loop or kernel launch attribute enclosing every access (their lowest
  common ancestor) and moves the allocation to the top of its body — but not into a serial
  loop whose iterations may carry a value in the buffer: a ``local`` buffer (a scan's running
  total read before it is written in the iteration), any buffer updated in place (an
  accumulator, ``C[i] = C[i] + ...``: a reduction loop around it must not re-create it), and
  any buffer on a CPU (no launch attribute), where only ``parallel`` loops have independent
  iterations;
* shrinks each dimension to the span of indices accessed there, when that span has a
  constant length, and shifts the accesses by the span's start.  The loops inside the
  ancestor are relaxed to their ranges; thread indices are relaxed for ``shared`` buffers
  (all threads of a block share one copy) and stay fixed for ``local`` ones (each thread has
  its own)::

      A_shared = T.alloc_buffer((1024, 1024), scope="shared")   # at the root
      ... A_shared[by * 32 + i, ko * 8 + k] ...

  becomes, inside ``for ko``::

      A_shared = T.alloc_buffer((32, 8), scope="shared")
      ... A_shared[i, k] ...

A buffer whose accesses cannot be bounded keeps its shape.  A ``shared``/``local`` buffer
that is never used (a scratch scalar of a loop-level kernel that one variant of the kernel
does not need) is dropped: left in place it would stay outside every kernel on a GPU target,
where the host cannot allocate it.  ``global`` buffers are left where they are (on a GPU
target they are device workspaces allocated by the host).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.transform import FunctionPass

from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Var
from ..function import PrimFunc
from ..functor import StmtExprMutator, StmtExprVisitor
from ..stmt import Allocate, AttrStmt, BufferStore, DeclBuffer, For, ForKind, Stmt
from ..stmt_functor import pre_order_visit
from ._common import prim_func_pass

__all__ = ["CompactBufferAllocation", "compact_buffer_allocation"]


def _is_thread_attr(stmt: Any) -> bool:
    return isinstance(stmt, AttrStmt) and stmt.attr_key == "thread_extent" \
        and isinstance(stmt.node, IterVar)


def _is_thread_idx(stmt: Any) -> bool:
    return _is_thread_attr(stmt) and stmt.node.thread_tag.startswith("threadIdx")


class _Accesses(StmtExprVisitor):
    """Every access of one buffer variable with its enclosing loops and launch attributes."""

    def __init__(self, data: Var) -> None:
        self.data = data
        self.scopes: list[Stmt] = []
        self.sites: list[tuple[list[Stmt], tuple]] = []
        self.updated_in_place = False  # a store whose value loads the buffer itself

    def visit_for_(self, op: For) -> None:
        self.visit(op.min)
        self.visit(op.extent)
        self.scopes.append(op)
        self.visit_stmt(op.body)
        self.scopes.pop()

    def visit_attr_stmt_(self, op: AttrStmt) -> None:
        if not _is_thread_attr(op):
            self.generic_visit(op)
            return
        self.scopes.append(op)
        self.visit_stmt(op.body)
        self.scopes.pop()

    def visit_buffer_load_(self, op: BufferLoad) -> None:
        if op.buffer.data is self.data:
            self.sites.append((list(self.scopes), tuple(op.indices)))
        self.generic_visit(op)

    def visit_buffer_store_(self, op: BufferStore) -> None:
        if op.buffer.data is self.data:
            self.sites.append((list(self.scopes), tuple(op.indices)))
            before = len(self.sites)
            self.generic_visit(op)
            self.updated_in_place = self.updated_in_place or len(self.sites) > before
            return
        self.generic_visit(op)


def _uses(stmt: Stmt, data: Var) -> bool:
    """Whether ``stmt`` refers to the buffer variable ``data`` at all (an access, or the
    variable itself: ``address_of``, ``tvm_access_ptr``, a call argument)."""
    found = []

    def visit(node: Any) -> bool:
        if node is data or (isinstance(node, (BufferLoad, BufferStore, DeclBuffer))
                            and node.buffer.data is data):
            found.append(node)
        return not found

    pre_order_visit(stmt, visit)
    return bool(found)


def _domain(scope: Stmt) -> tuple[Var, Range]:
    if isinstance(scope, For):
        return scope.loop_var, Range(scope.min, scope.extent)
    return scope.node.var, Range(IntImm(scope.value.dtype, 0), scope.value)


def _lca_depth(chains: list[list[Stmt]]) -> int:
    depth = 0
    while all(len(c) > depth for c in chains) and all(c[depth] is chains[0][depth]
                                                       for c in chains):
        depth += 1
    first = chains[0]
    # inside a launch nest (blockIdx.x { threadIdx.x { ... } }): use its innermost attribute
    while 0 < depth < len(first) and _is_thread_attr(first[depth - 1]) \
            and first[depth - 1].body is first[depth] and _is_thread_attr(first[depth]):
        depth += 1
    return depth


def _outside_serial_loops(chain: list[Stmt], depth: int, in_kernel: bool) -> int:
    """``depth`` capped so that the allocation stays outside the first loop inside a kernel
    (a thread's private buffer keeps its value from one iteration to the next); on a CPU
    (no launch attribute at all) outside the first loop that is not ``parallel`` (the
    iterations of a parallel loop are independent: each gets its own copy)."""
    cpu = not in_kernel and not any(_is_thread_attr(s) for s in chain)
    for k in range(depth):
        if _is_thread_attr(chain[k]):
            in_kernel = True
        elif isinstance(chain[k], For) and (in_kernel or (
                cpu and chain[k].kind != ForKind.PARALLEL)):
            return k
    return depth


def _plan(alloc: Allocate, decl: DeclBuffer, outer_threads: list[AttrStmt]
          ) -> Optional[tuple[Optional[Stmt], Buffer, list[PrimExpr]]]:
    """(LCA loop or launch attribute, compacted buffer, per-dimension offsets), or None to
    leave the allocation alone."""
    from tvm.arith import Analyzer, eval_set, union

    buf = decl.buffer
    if buf.strides or buf.axis_separators:
        return None
    acc = _Accesses(alloc.buffer_var)
    acc.visit_stmt(decl.body)
    if not acc.sites:
        return None
    depth = _lca_depth([scopes for scopes, _ in acc.sites])
    on_cpu = not outer_threads and not any(_is_thread_attr(s) for s in acc.sites[0][0])
    if alloc.scope == "local" or alloc.scope.startswith("local.") or on_cpu or \
            acc.updated_in_place:
        depth = _outside_serial_loops(acc.sites[0][0], depth, bool(outer_threads))
    lca = acc.sites[0][0][depth - 1] if depth else None
    shared = alloc.scope == "shared"
    ana = Analyzer()
    outer = dict(_domain(t) for t in outer_threads if shared and _is_thread_idx(t))
    per_access = []
    for scopes, indices in acc.sites:
        if len(indices) != len(buf.shape):
            return None
        dom = dict(outer)
        for k, sc in enumerate(scopes):
            relax = (shared and _is_thread_idx(sc)) or (k >= depth and not _is_thread_attr(sc))
            if relax:
                var, rng = _domain(sc)
                dom[var] = rng
        per_access.append([eval_set(i, dom, ana) for i in indices])
    shape: list[PrimExpr] = []
    offsets: list[PrimExpr] = []
    changed = False
    for dim, sets in zip(buf.shape, zip(*per_access)):
        s = union(list(sets), ana)
        ext = ana.simplify(s.max_value - s.min_value + 1) if s.is_bounded() else None
        if not isinstance(ext, IntImm) or ext.value <= 0 or (
                isinstance(dim, IntImm) and ext.value >= dim.value):
            shape.append(dim)
            offsets.append(IntImm(dim.dtype, 0))
            continue
        shape.append(IntImm(dim.dtype, ext.value))
        offsets.append(ana.simplify(s.min_value))
        changed = True
    if not changed and lca is None:
        return None
    new_buf = buf.with_fields(shape=tuple(shape)) if changed else buf
    return lca, new_buf, offsets


class _Rewrite(StmtExprMutator):
    def __init__(self, old: Var, new: Buffer, offsets: list[PrimExpr]) -> None:
        self.old = old
        self.new = new
        self.offsets = offsets

    def _shift(self, indices: tuple) -> tuple:
        return tuple(i if (isinstance(o, IntImm) and o.value == 0) else i - o
                     for i, o in zip(indices, self.offsets))

    def visit_buffer_load_(self, op: BufferLoad) -> Any:
        op = self.generic_mutate(op)
        if op.buffer.data is self.old:
            return BufferLoad(self.new, self._shift(op.indices), span=op.span)
        return op

    def visit_buffer_store_(self, op: BufferStore) -> Any:
        op = self.generic_mutate(op)
        if op.buffer.data is self.old:
            return BufferStore(self.new, op.value, self._shift(op.indices), span=op.span)
        return op

    def visit_decl_buffer_(self, op: DeclBuffer) -> Any:
        if op.buffer.data is self.old:
            return self.visit_stmt(op.body)
        return self.generic_mutate(op)


class _Place(StmtExprMutator):
    """Puts an allocation at the top of a loop's (or launch attribute's) body."""

    def __init__(self, key: Any, alloc: Allocate, buf: Buffer) -> None:
        self.key = key
        self.alloc = alloc
        self.buf = buf
        self.done = False

    def _wrap(self, op: Any) -> Any:
        self.done = True
        body = DeclBuffer(self.buf, op.body)
        return op.with_fields(body=self.alloc.with_fields(extents=tuple(self.buf.shape),
                                                          body=body))

    def visit_for_(self, op: For) -> Any:
        if op.loop_var is self.key:
            return self._wrap(op)
        return self.generic_mutate(op)

    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        if op.node is self.key:
            return self._wrap(op)
        return self.generic_mutate(op)


class _Compactor(StmtExprMutator):
    def __init__(self) -> None:
        self.threads: list[AttrStmt] = []

    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        if not _is_thread_attr(op):
            return self.generic_mutate(op)
        self.threads.append(op)
        try:
            return self.generic_mutate(op)
        finally:
            self.threads.pop()

    def visit_allocate_(self, op: Allocate) -> Any:
        body = self.visit_stmt(op.body)
        if op.scope in ("global", "") or not (isinstance(body, DeclBuffer)
                                              and body.buffer.data is op.buffer_var):
            return op if body is op.body else op.with_fields(body=body)
        if not _uses(body.body, op.buffer_var):
            return body.body  # never used: nothing to allocate
        plan = _plan(op, body, self.threads)
        if plan is None:
            return op if body is op.body else op.with_fields(body=body)
        lca, new_buf, offsets = plan
        inner: Stmt = _Rewrite(op.buffer_var, new_buf, offsets).visit_stmt(body.body)
        if lca is not None:
            placer = _Place(lca.loop_var if isinstance(lca, For) else lca.node, op, new_buf)
            out = placer.visit_stmt(inner)
            if placer.done:
                return out
        return op.with_fields(extents=tuple(new_buf.shape), body=DeclBuffer(new_buf, inner))


def compact_buffer_allocation(func: PrimFunc) -> PrimFunc:
    """``func`` with its non-global allocations moved to and shrunk for their uses."""
    body = _Compactor().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def CompactBufferAllocation() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`compact_buffer_allocation`."""
    return prim_func_pass(compact_buffer_allocation, "tir.CompactBufferAllocation")
