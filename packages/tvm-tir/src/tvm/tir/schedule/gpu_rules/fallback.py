"""The fallback GPU schedule: a valid launch for whatever the other rules cannot schedule.

A GPU function may not leave a buffer access outside a kernel (the host cannot touch device
memory), so every function must end up bound to thread axes, even slowly.  Three steps:

1. :func:`schedule_block_fallback` (rule ``fallback``), per block of the root (inside a
   :class:`Schedule`, so the primitives check legality): the loops at the top of the block's
   nest that only drive data-parallel iterations are fused, split by the block size and
   bound to ``blockIdx.x``/``threadIdx.x`` — a reduction gets one thread per output, its
   reduction loops stay serial in the thread;
2. rule ``single_thread`` (:class:`~tvm.tir.schedule.gpu_rules.SingleThreadRule`): a block
   still unbound (no data-parallel loops, a full reduction with a reducer threads cannot
   combine) gets two unit loops bound to one thread, when step 3 would do no better;
3. :func:`bind_unbound`, on the function: every top-level statement still outside any kernel
   (loop-level code with no blocks such as a scan, a sort or a scatter, or what step 2
   left) becomes a kernel of its own.  A loop nest is spread over threads when its iterations are provably
   independent (the loop is ``parallel``, or each iteration writes its own slice: every
   access to a written buffer indexes one dimension with the loop variable, and every
   ``local`` scratch buffer is written before it is read in the iteration); otherwise the
   statement runs on one thread (``blockIdx.x = threadIdx.x = 1``).  Root ``local`` buffers
   move into the kernel that uses them (statements sharing one share a kernel).
"""

from __future__ import annotations

from typing import Any, Optional

from ...buffer import Buffer
from ...expr import BufferLoad, Call, Cast, IntImm, IterVar, IterVarType, LT, PrimExpr, Var
from ...function import PrimFunc
from ...stmt import (
    Allocate, AttrStmt, Block, BlockRealize, BufferStore, DeclBuffer, Evaluate, For, ForKind,
    IfThenElse, LetStmt, SeqStmt, Stmt, While, stmt_seq,
)
from ...stmt_functor import free_vars, post_order_visit, substitute
from ..handles import BlockRV
from ..rules import RuleNotApplicable, loop_extent
from .common import GPUParams

__all__ = ["schedule_block_fallback", "bind_unbound", "is_local_scope"]

_ALIAS_OPS = ("tir.address_of", "tir.tvm_access_ptr")


def is_local_scope(scope: str) -> bool:
    """Whether buffers of ``scope`` are private to a thread."""
    return scope == "local" or scope.startswith("local.")


# --------------------------------------------------------------------------- per block


def schedule_block_fallback(sch: Any, block: BlockRV, params: GPUParams) -> None:
    """Bind the data-parallel loops at the top of ``block``'s nest (see the module
    docstring); :class:`RuleNotApplicable` when there are none."""
    realize = sch.get_sref(block).realize
    unsafe = {v for iv, val in zip(realize.block.iter_vars, realize.iter_values)
              if iv.iter_type != IterVarType.DATA_PAR for v in free_vars(val)}
    prefix = []
    for lp in sch.get_loops(block):
        loop = sch.get(lp)
        if loop.kind != ForKind.SERIAL or loop.loop_var in unsafe:
            break
        prefix.append(lp)
    if not prefix:
        raise RuleNotApplicable(f"block {realize.block.name_hint!r} has no data-parallel loop "
                                "at the top of its nest")
    fused = sch.fuse(*prefix) if len(prefix) > 1 else prefix[0]
    extent = loop_extent(sch, fused)
    threads = params.max_threads if extent is None else max(1, min(params.max_threads, extent))
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


# --------------------------------------------------------------------------- whole function


def _uncast(e: Any) -> Any:
    while isinstance(e, Cast):
        e = e.value
    return e


def _has_kernel(stmt: Stmt) -> bool:
    found = []

    def visit(n: Any) -> None:
        if (isinstance(n, For) and n.kind == ForKind.THREAD_BINDING) or (
                isinstance(n, AttrStmt) and n.attr_key == "thread_extent"):
            found.append(n)

    post_order_visit(stmt, visit)
    return bool(found)


def _accesses(stmt: Any) -> list[Any]:
    """Every BufferLoad/BufferStore under ``stmt`` (and alias calls, which defeat analysis)."""
    out: list[Any] = []

    def visit(n: Any) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            out.append(n)
        elif isinstance(n, Call) and getattr(n.op, "name", "") in _ALIAS_OPS:
            out.append(n)

    post_order_visit(stmt, visit)
    return out


def _flatten(stmt: Stmt) -> list[Stmt]:
    if isinstance(stmt, SeqStmt):
        return [s for item in stmt.seq for s in _flatten(item)]
    return [stmt]


def _thread_loop(tag: str, var: Var, extent: PrimExpr, body: Stmt) -> For:
    binding = IterVar(None, Var(tag, var.dtype), IterVarType.THREAD_INDEX, tag)
    return For(var, IntImm(var.dtype, 0), extent, ForKind.THREAD_BINDING, body,
               thread_binding=binding)


def _with_locals(body: Stmt, locals_: list[Buffer], name: str) -> Stmt:
    """``body`` in an opaque block that allocates ``locals_`` (inside the kernel)."""
    if not locals_:
        return body
    from ...analysis.block_region import infer_block_access_regions

    block = Block((), (), (), f"{name}_scratch", body, alloc_buffers=tuple(locals_))
    reads, writes = infer_block_access_regions(block)
    block = block.with_fields(reads=tuple(reads), writes=tuple(writes))
    return BlockRealize((), IntImm("bool", 1), block)


def _single_thread(body: Stmt, locals_: list[Buffer], name: str) -> Stmt:
    inner = _with_locals(body, locals_, name)
    tx = _thread_loop("threadIdx.x", Var(f"{name}_tx", "int32"), IntImm("int32", 1), inner)
    return _thread_loop("blockIdx.x", Var(f"{name}_bx", "int32"), IntImm("int32", 1), tx)


class _MustWrite:
    """Whether each ``local`` buffer is written before it is read in one iteration (a
    must-analysis: a write inside a branch or a loop that may not run does not count)."""

    def __init__(self, buffers: set[Var]) -> None:
        self.buffers = buffers
        self.ok = True

    def reads(self, node: Any, defined: frozenset) -> None:
        def visit(n: Any) -> None:
            if isinstance(n, BufferLoad) and n.buffer.data in self.buffers \
                    and n.buffer.data not in defined:
                self.ok = False

        if node is not None:
            post_order_visit(node, visit)

    @staticmethod
    def _covers_all(store: BufferStore) -> bool:
        """A store into a buffer of one element writes all of it."""
        return all(isinstance(d, IntImm) and d.value == 1 for d in store.buffer.shape)

    def _loop_covered(self, loop: For) -> set[Var]:
        """Local 1-d buffers that ``for i in range(n): buf[i] = ...`` fills completely."""
        ext = loop.extent.value if isinstance(loop.extent, IntImm) else None
        if ext is None or not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            return set()
        out = set()
        body = loop.body
        while isinstance(body, LetStmt):
            body = body.body
        for s in _flatten(body):
            if (isinstance(s, BufferStore) and s.buffer.data in self.buffers
                    and len(s.indices) == 1 and _uncast(s.indices[0]) is loop.loop_var
                    and len(s.buffer.shape) == 1 and isinstance(s.buffer.shape[0], IntImm)
                    and s.buffer.shape[0].value == ext):
                out.add(s.buffer.data)
        return out

    def stmt(self, s: Any, defined: frozenset) -> frozenset:
        if isinstance(s, SeqStmt):
            for item in s.seq:
                defined = self.stmt(item, defined)
            return defined
        if isinstance(s, BufferStore):
            self.reads(s.value, defined)
            for i in s.indices:
                self.reads(i, defined)
            if s.buffer.data in self.buffers and self._covers_all(s):
                return defined | {s.buffer.data}
            return defined
        if isinstance(s, LetStmt):
            self.reads(s.value, defined)
            return self.stmt(s.body, defined)
        if isinstance(s, IfThenElse):
            self.reads(s.condition, defined)
            then = self.stmt(s.then_case, defined)
            other = self.stmt(s.else_case, defined) if s.else_case is not None else defined
            return then & other
        if isinstance(s, For):
            self.reads(s.min, defined)
            self.reads(s.extent, defined)
            inner = self.stmt(s.body, defined)
            runs = isinstance(s.extent, IntImm) and s.extent.value >= 1
            return (inner if runs else defined) | self._loop_covered(s)
        if isinstance(s, While):
            self.reads(s.condition, defined)
            self.stmt(s.body, defined)
            return defined
        if isinstance(s, (Allocate, DeclBuffer, AttrStmt)):
            for field in ("extents", "condition", "value"):
                for v in _as_list(getattr(s, field, None)):
                    self.reads(v, defined)
            return self.stmt(s.body, defined)
        if isinstance(s, BlockRealize):
            for v in s.iter_values:
                self.reads(v, defined)
            self.reads(s.predicate, defined)
            if s.block.init is not None:
                self.stmt(s.block.init, defined)
            return self.stmt(s.block.body, defined)
        if isinstance(s, Evaluate):
            self.reads(s.value, defined)
            return defined
        self.reads(s, defined)  # anything else: every read must already be defined
        return defined


def _as_list(v: Any) -> list[Any]:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _independent(var: Var, body: Stmt) -> bool:
    """Whether iterations of ``var`` touch disjoint slices of every non-local buffer that
    ``body`` writes (each access indexes one fixed dimension with exactly ``var``)."""
    accesses = _accesses(body)
    if any(isinstance(a, Call) for a in accesses):
        return False
    by_buffer: dict[Var, list[Any]] = {}
    written: set[Var] = set()
    for a in accesses:
        by_buffer.setdefault(a.buffer.data, []).append(a)
        if isinstance(a, BufferStore):
            written.add(a.buffer.data)
    for data in written:
        group = by_buffer[data]
        if is_local_scope(group[0].buffer.scope):
            continue
        ndims = {len(a.indices) for a in group}
        if len(ndims) != 1:
            return False
        ndim = ndims.pop()
        if not any(all(_uncast(a.indices[d]) is var for a in group) for d in range(ndim)):
            return False
    return True


def _parallel_nest(loop: For, locals_: list[Buffer], params: GPUParams,
                   name: str) -> Optional[Stmt]:
    """``loop``'s independent leading loops fused and bound to threads, or None."""
    nest: list[For] = []
    s: Any = loop
    outer_vars: set[Var] = set()
    while (isinstance(s, For) and s.kind in (ForKind.SERIAL, ForKind.PARALLEL)
           and not (set(free_vars(s.min)) | set(free_vars(s.extent))) & outer_vars):
        nest.append(s)
        outer_vars.add(s.loop_var)
        s = s.body
    count = 0
    for lp in nest:
        if lp.kind != ForKind.PARALLEL and not _independent(lp.loop_var, loop.body):
            break
        count += 1
    if count == 0:
        return None
    nest = nest[:count]
    body = nest[-1].body
    check = _MustWrite({b.data for b in locals_})
    check.stmt(body, frozenset())
    if not check.ok:
        return None
    from tvm.arith import Analyzer

    ana = Analyzer()
    dtype = nest[0].loop_var.dtype

    def as_dtype(e: PrimExpr) -> PrimExpr:
        return e if e.dtype == dtype else Cast(dtype, e)

    total: PrimExpr = IntImm(dtype, 1)
    for lp in nest:
        total = total * as_dtype(lp.extent)
    total = ana.simplify(total)
    const_total = total.value if isinstance(total, IntImm) else None
    threads = params.max_threads if const_total is None else max(1, min(params.max_threads,
                                                                          const_total))
    bx, tx = Var(f"{name}_bx", dtype), Var(f"{name}_tx", dtype)
    fused = bx * IntImm(dtype, threads) + tx
    vmap: dict[Var, PrimExpr] = {}
    stride: PrimExpr = IntImm(dtype, 1)
    for k, lp in enumerate(reversed(nest)):
        value: PrimExpr = fused if k == 0 and len(nest) == 1 else fused // stride
        if k < len(nest) - 1:
            value = value % as_dtype(lp.extent)
        value = ana.simplify(value + as_dtype(lp.min))
        vmap[lp.loop_var] = value if value.dtype == lp.loop_var.dtype else \
            Cast(lp.loop_var.dtype, value)
        stride = ana.simplify(stride * as_dtype(lp.extent))
    inner: Stmt = _with_locals(substitute(body, vmap), locals_, name)
    if const_total is None or const_total % threads:
        inner = IfThenElse(LT(fused, total), inner)
    blocks = ana.simplify((total + IntImm(dtype, threads - 1)) // IntImm(dtype, threads))
    return _thread_loop("blockIdx.x", bx, blocks,
                        _thread_loop("threadIdx.x", tx, IntImm(dtype, threads), inner))


def bind_unbound(func: PrimFunc, params: GPUParams) -> PrimFunc:
    """``func`` with every top-level statement that is outside any kernel but touches a
    buffer made a kernel (see the module docstring); unchanged when there is none."""
    body = func.body
    root: Optional[Block] = None
    if isinstance(body, BlockRealize) and not body.iter_values:
        root = body.block
        units = _flatten(root.body)
    else:
        units = _flatten(body)
    allocs = list(root.alloc_buffers) if root is not None else []
    local_bufs = {b.data: b for b in allocs if is_local_scope(b.scope)}
    uses: list[set[Var]] = []
    for u in units:
        used = {a.buffer.data for a in _accesses(u) if not isinstance(a, Call)}
        uses.append(used & set(local_bufs))
    # statements sharing a root local buffer must share a kernel: merge their spans
    groups: list[list[int]] = []
    for i in range(len(units)):
        spans = [j for j in range(len(units)) if uses[i] & uses[j]]
        lo, hi = min([i, *spans]), max([i, *spans])
        if groups and lo <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
        else:
            groups.append([lo, hi])
    fname = str(func.attrs.get("global_symbol") or "main")
    new_units: list[Stmt] = []
    moved: set[Var] = set()
    changed = False
    for n, (lo, hi) in enumerate(groups):
        stmts = units[lo:hi + 1]
        if any(_has_kernel(s) for s in stmts) or not any(_accesses(s) for s in stmts):
            new_units.extend(stmts)
            continue
        used = set().union(*uses[lo:hi + 1])
        locals_ = [local_bufs[d] for d in local_bufs if d in used]
        moved |= used
        name = f"{fname}_k{n}"
        kernel = None
        if len(stmts) == 1 and isinstance(stmts[0], For):
            kernel = _parallel_nest(stmts[0], locals_, params, name)
        if kernel is None:
            kernel = _single_thread(stmt_seq(*stmts), locals_, name)
        new_units.append(kernel)
        changed = True
    if not changed:
        return func
    new_body = stmt_seq(*new_units)
    if root is None:
        return func.with_body(new_body)
    keep = tuple(b for b in allocs if b.data not in moved)
    return func.with_body(body.with_fields(block=root.with_fields(body=new_body,
                                                                   alloc_buffers=keep)))

