"""InjectStorageSync: barriers between the threads of a block that share memory.

Inside each kernel, ``tir.tvm_storage_sync(scope)`` is inserted before a statement that

* reads a buffer written since the last barrier (read after write), or
* writes a buffer read since the last barrier (write after read),

where "since the last barrier" follows program order, both branches of an ``if`` and two
trips around each loop (so a loop that loads a tile and then computes on it gets a barrier
between the two and another before the next load)::

    for ko in range(16):
        T.tvm_storage_sync("shared")      # the previous tile was read
        A_shared[...] = A[...]
        T.tvm_storage_sync("shared")      # the tile was written
        C_local[...] += A_shared[...] * ...

Tracked: ``shared`` buffers (barrier scope ``"shared"``) and ``global`` ones (scope
``"global"``, which also orders device memory, e.g. a row maximum written by thread 0 and
read by all).  Two accesses with the same index that uses every thread index touch one
element per thread, so they never conflict (``C[tx] = C[tx] + x``).

A barrier is placed in front of the outermost statement that conflicts, and only where
every thread of the block gets to: statements under a condition (or in a loop whose bounds)
depending on a thread index are treated as a whole and never receive a barrier inside.
Existing barriers are kept and reset the tracking of their scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.transform import FunctionPass

from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Var
from ..function import PrimFunc
from ..functor import StmtExprMutator, StmtExprVisitor
from ..stmt import (
    Allocate, AttrStmt, BufferStore, DeclBuffer, For, IfThenElse, LetStmt, SeqStmt, Stmt,
    stmt_seq,
)
from ..stmt_functor import free_vars, post_order_visit
from ._common import prim_func_pass
from ._gpu import is_storage_sync, is_thread_tag, storage_sync

__all__ = ["InjectStorageSync", "inject_storage_sync"]

_Access = tuple[Var, tuple]  # (data variable, indices)


@dataclass(frozen=True)
class _State:
    """Accesses since the last barrier: ``written`` and ``read`` (data var, indices)."""

    written: tuple = ()
    read: tuple = ()

    def union(self, other: _State) -> _State:
        return _State(_merge(self.written, other.written), _merge(self.read, other.read))

    def after_sync(self, scope: str, shared: set[Var]) -> _State:
        if scope != "shared":
            return _CLEAN
        return _State(tuple(a for a in self.written if a[0] not in shared),
                      tuple(a for a in self.read if a[0] not in shared))


_CLEAN = _State()


def _merge(a: tuple, b: tuple) -> tuple:
    out = list(a)
    for item in b:
        if not any(item[0] is x[0] and _same_index(item[1], x[1]) for x in out):
            out.append(item)
    return tuple(out)


def _same_index(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y or structural_equal(x, y) for x, y in zip(a, b))


class _SharedVars(StmtExprVisitor):
    def __init__(self) -> None:
        self.vars: set[Var] = set()

    def visit_allocate_(self, op: Allocate) -> None:
        if op.scope == "shared":
            self.vars.add(op.buffer_var)
        self.generic_visit(op)


class _Planner:
    def __init__(self, shared: set[Var], thread_vars: set[Var]) -> None:
        self.shared = shared
        self.thread_vars = thread_vars
        self.marks: dict[int, str] = {}
        self._cache: dict[int, _State] = {}

    def _tracked(self, buffer: Any) -> bool:
        return buffer.scope in ("shared", "global", "") or buffer.data in self.shared

    def accesses(self, node: Any) -> _State:
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        reads: list[_Access] = []
        writes: list[_Access] = []

        def visit(x: Any) -> None:
            if isinstance(x, BufferLoad) and self._tracked(x.buffer):
                reads.append((x.buffer.data, tuple(x.indices)))
            elif isinstance(x, BufferStore) and self._tracked(x.buffer):
                writes.append((x.buffer.data, tuple(x.indices)))

        post_order_visit(node, visit)
        out = _State(_merge((), tuple(writes)), _merge((), tuple(reads)))
        self._cache[key] = out
        return out

    def _own_element(self, a: _Access, b: _Access) -> bool:
        """Both accesses touch the same element, one per thread (its index uses every
        thread index), so no other thread is involved."""
        if not _same_index(a[1], b[1]):
            return False
        used = {v for i in a[1] for v in free_vars(i)}
        return bool(self.thread_vars) and self.thread_vars <= used

    def conflict(self, accesses: _State, state: _State) -> Optional[str]:
        """The barrier scope needed before ``accesses`` given ``state``, or None."""
        scope = None
        for mine, theirs in ((accesses.read, state.written), (accesses.written, state.read)):
            for a in mine:
                for b in theirs:
                    if a[0] is b[0] and not self._own_element(a, b):
                        if a[0] in self.shared:
                            scope = scope or "shared"
                        else:
                            return "global"
        return scope

    def uniform(self, expr: PrimExpr) -> bool:
        """Same value in every thread of a block (no thread index, no memory read)."""
        if any(v in self.thread_vars for v in free_vars(expr)):
            return False
        loads: list[Any] = []
        post_order_visit(expr, lambda x: loads.append(x) if isinstance(x, BufferLoad) else None)
        return not loads

    def scan(self, stmt: Stmt, state: _State) -> _State:
        if is_storage_sync(stmt):
            arg = stmt.value.args[0] if stmt.value.args else None
            return state.after_sync(getattr(arg, "value", "shared"), self.shared)
        acc = self.accesses(stmt)
        scope = self.conflict(acc, state)
        if scope is not None:
            if self.marks.get(id(stmt)) != "global":
                self.marks[id(stmt)] = scope
            state = state.after_sync(scope, self.shared)
        if isinstance(stmt, SeqStmt):
            for item in stmt.seq:
                state = self.scan(item, state)
            return state
        if isinstance(stmt, For) and self.uniform(stmt.min) and self.uniform(stmt.extent):
            first = self.scan(stmt.body, state)
            second = self.scan(stmt.body, first)
            return state.union(second)
        if isinstance(stmt, IfThenElse) and self.uniform(stmt.condition):
            then_state = self.scan(stmt.then_case, state)
            else_state = state if stmt.else_case is None else self.scan(stmt.else_case, state)
            return then_state.union(else_state)
        if isinstance(stmt, LetStmt):
            return self.scan(stmt.body, state.union(self.accesses(stmt.value)))
        if isinstance(stmt, (AttrStmt, Allocate, DeclBuffer)):
            return self.scan(stmt.body, state)
        return state.union(acc)


class _Inserter(StmtExprMutator):
    def __init__(self, marks: dict[int, str]) -> None:
        self.marks = marks

    def visit_stmt(self, stmt: Stmt) -> Stmt:
        new = super().visit_stmt(stmt)
        scope = self.marks.get(id(stmt))
        if scope is not None:
            return stmt_seq(storage_sync(scope), new)
        return new

    def visit_seq_stmt_(self, op: SeqStmt) -> Any:
        items = [self.visit_stmt(s) for s in op.seq]
        if all(a is b for a, b in zip(items, op.seq)):
            return op
        return stmt_seq(*items)


class _Kernels(StmtExprMutator):
    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        if not (op.attr_key == "thread_extent" and isinstance(op.node, IterVar)):
            return self.generic_mutate(op)
        thread_vars: set[Var] = set()
        shared = _SharedVars()
        shared.visit_stmt(op)

        def collect(x: Any) -> None:
            if isinstance(x, AttrStmt) and isinstance(x.node, IterVar) \
                    and is_thread_tag(x.node.thread_tag) and not (
                        isinstance(x.value, IntImm) and x.value.value == 1):
                thread_vars.add(x.node.var)

        post_order_visit(op, collect)
        planner = _Planner(shared.vars, thread_vars)
        planner.scan(op, _CLEAN)
        if not planner.marks:
            return op
        return _Inserter(planner.marks).visit_stmt(op)


def inject_storage_sync(func: PrimFunc, name: Optional[str] = None) -> PrimFunc:
    """``func`` with barriers between conflicting shared-memory accesses of its kernels."""
    body = _Kernels().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def InjectStorageSync() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`inject_storage_sync`."""
    return prim_func_pass(inject_storage_sync, "tir.InjectStorageSync")
