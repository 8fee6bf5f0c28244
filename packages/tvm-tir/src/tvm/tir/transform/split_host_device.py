"""SplitHostDevice: outline each GPU kernel of a function into a device PrimFunc.

Input: a lowered function whose kernels are ``thread_extent`` attribute nests
(LowerThreadBinding).  Each kernel becomes a PrimFunc named ``<func>_kernel`` (then
``<func>_kernel_1``, ...) with

* ``params``: the data handles of the buffers it uses (the function's parameters in their
  order, then host-allocated workspaces) followed by the scalar variables it reads;
* ``attrs``: ``calling_conv = "device_kernel_launch"``, ``global_symbol``,
  ``tir.kernel_launch_params`` (the launch tags, blockIdx.x/y/z then threadIdx.x/y/z, as
  used), ``thread_extent`` (``[[tag, extent], ...]``), ``tir.noalias`` if the host had it;
* ``shared`` allocations hoisted to the top of the kernel (right inside the launch
  attributes): OpenCL and Metal only accept them at kernel function scope.

The kernel in the host function is replaced by a launch::

    T.tvm_call_packed("add_kernel", A.data, B.data, n, (n + 127) // 128, 128)

(the kernel's arguments, then one extent per launch tag), and the host function gets the
attribute ``tir.device_kernels`` (the names of the kernels it launches).  The host part
keeps its parameters and buffer map; the target's code generator turns it into the
argument checks and launches of the runtime module.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.module import IRModule
from tvm.ir.transform import Pass, module_pass

from ..buffer import Buffer
from ..expr import IterVar, Let, StringImm, Var
from ..function import PrimFunc
from ..functor import StmtExprMutator, StmtExprVisitor
from ..stmt import (
    Allocate, AttrStmt, DeclBuffer, Evaluate, For, LetStmt, SeqStmt, Stmt, stmt_seq,
)
from ..expr_util import const_int
from ._gpu import (
    KERNEL_CALLING_CONV, KERNELS_ATTR, LAUNCH_PARAMS_ATTR, THREAD_EXTENT_ATTR, THREAD_TAG_ORDER,
    call_op,
)

__all__ = ["SplitHostDevice", "split_host_device", "split_function", "is_device_kernel"]


def is_device_kernel(func: Any) -> bool:
    """Whether ``func`` is a device kernel made by SplitHostDevice."""
    return isinstance(func, PrimFunc) and func.attrs.get("calling_conv") == KERNEL_CALLING_CONV


class _Uses(StmtExprVisitor):
    """Variables a kernel uses but does not define, in first-use order."""

    def __init__(self) -> None:
        self.used: dict[Var, None] = {}
        self.bound: set[Var] = set()

    def visit_var_(self, v: Var) -> None:
        self.used.setdefault(v, None)

    def visit_size_var_(self, v: Var) -> None:
        self.used.setdefault(v, None)

    def visit_buffer(self, buffer: Buffer) -> None:
        self.used.setdefault(buffer.data, None)

    def visit_for_(self, op: For) -> None:
        self.bound.add(op.loop_var)
        self.generic_visit(op)

    def visit_let_stmt_(self, op: LetStmt) -> None:
        self.bound.add(op.var)
        self.generic_visit(op)

    def visit_let_(self, op: Let) -> None:
        self.bound.add(op.var)
        self.generic_visit(op)

    def visit_allocate_(self, op: Allocate) -> None:
        self.bound.add(op.buffer_var)
        self.generic_visit(op)

    def visit_attr_stmt_(self, op: AttrStmt) -> None:
        if isinstance(op.node, IterVar):
            self.bound.add(op.node.var)
            self.visit_expr(op.value)
            self.visit_stmt(op.body)
            return
        self.generic_visit(op)

    def free(self) -> list[Var]:
        return [v for v in self.used if v not in self.bound]


class _HoistShared(StmtExprMutator):
    """Removes shared allocations (and their DeclBuffer), remembering them."""

    def __init__(self) -> None:
        self.hoisted: list[tuple[Allocate, Optional[DeclBuffer]]] = []

    def visit_allocate_(self, op: Allocate) -> Any:
        body = self.visit_stmt(op.body)
        if op.scope != "shared":
            return op if body is op.body else op.with_fields(body=body)
        decl = None
        if isinstance(body, DeclBuffer) and body.buffer.data is op.buffer_var:
            decl, body = body, body.body
        self.hoisted.append((op, decl))
        return body

    def visit_seq_stmt_(self, op: SeqStmt) -> Any:
        items = [self.visit_stmt(x) for x in op.seq]
        if all(a is b for a, b in zip(items, op.seq)):
            return op
        return stmt_seq(*items)  # a hoisted allocation leaves its body in the sequence


def _launch_chain(kernel: AttrStmt) -> list[AttrStmt]:
    chain = [kernel]
    while isinstance(chain[-1].body, AttrStmt) and chain[-1].body.attr_key == "thread_extent" \
            and isinstance(chain[-1].body.node, IterVar):
        chain.append(chain[-1].body)
    return chain


class _Splitter(StmtExprMutator):
    def __init__(self, func: PrimFunc, fname: str) -> None:
        self.func = func
        self.fname = fname
        self.kernels: list[tuple[str, PrimFunc]] = []
        order = [func.buffer_map[p].data if p in func.buffer_map else p for p in func.params]
        self.param_rank = {v: i for i, v in enumerate(order)}

    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        if op.attr_key == "thread_extent" and isinstance(op.node, IterVar):
            return self._outline(op)
        return self.generic_mutate(op)

    def _outline(self, kernel: AttrStmt) -> Stmt:
        chain = _launch_chain(kernel)
        hoist = _HoistShared()
        inner = hoist.visit_stmt(chain[-1].body)
        for alloc, decl in reversed(hoist.hoisted):
            inner = decl.with_fields(body=inner) if decl is not None else inner
            inner = alloc.with_fields(body=inner)
        body: Stmt = inner
        for attr in reversed(chain):
            body = attr.with_fields(body=body)
        uses = _Uses()
        uses.visit_stmt(body)
        free = uses.free()
        handles = [v for v in free if v.dtype == "handle"]
        handles.sort(key=lambda v: self.param_rank.get(v, len(self.param_rank)))
        scalars = [v for v in free if v.dtype != "handle"]
        params = handles + scalars
        tags = {a.node.thread_tag: a for a in chain}
        for a in chain:
            if a.node.thread_tag not in THREAD_TAG_ORDER:
                raise ValueError(f"SplitHostDevice: {self.fname} launches a kernel over "
                                 f"{a.node.thread_tag!r}, which is not a launch axis")
        launch = [t for t in THREAD_TAG_ORDER if t in tags]
        nested = _all_thread_attrs(inner)
        if nested:
            tag = nested[0].node.thread_tag
            raise ValueError(
                f"SplitHostDevice: in {self.fname}, the launch axis {tag} is declared inside "
                "the kernel body instead of at its top (run LowerThreadBinding on loop-level "
                "code; write T.launch_thread calls first in a kernel)"
            )
        name = f"{self.fname}_kernel" + (f"_{len(self.kernels)}" if self.kernels else "")
        extents = [tags[t].value for t in launch]
        attrs = {
            "global_symbol": name,
            "calling_conv": KERNEL_CALLING_CONV,
            LAUNCH_PARAMS_ATTR: launch,
            THREAD_EXTENT_ATTR: [[t, const_int(e) if const_int(e) is not None else e]
                                 for t, e in zip(launch, extents)],
        }
        if self.func.attrs.get("tir.noalias"):
            attrs["tir.noalias"] = True
        self.kernels.append((name, PrimFunc(params, body, "void", {}, attrs, span=kernel.span)))
        return Evaluate(call_op("int32", "tir.tvm_call_packed", StringImm(name), *params,
                                *extents))


def _all_thread_attrs(stmt: Stmt) -> list[AttrStmt]:
    found: list[AttrStmt] = []

    class _V(StmtExprVisitor):
        def visit_attr_stmt_(self, op: AttrStmt) -> None:
            if op.attr_key == "thread_extent" and isinstance(op.node, IterVar):
                found.append(op)
            self.generic_visit(op)

    _V().visit_stmt(stmt)
    return found


def split_function(func: PrimFunc, name: Optional[str] = None) -> tuple[PrimFunc,
                                                                         list[tuple[str, PrimFunc]]]:
    """``(host function, [(kernel name, kernel), ...])`` of one function."""
    fname = name or func.attrs.get("global_symbol") or "main"
    splitter = _Splitter(func, fname)
    body = splitter.visit_stmt(func.body)
    host = func if body is func.body else func.with_body(body)
    if splitter.kernels:
        host = host.with_attr(KERNELS_ATTR, [n for n, _ in splitter.kernels])
    return host, splitter.kernels


def split_host_device(mod: IRModule) -> IRModule:
    """Every PrimFunc of ``mod`` split into its host part and its kernels."""
    funcs: dict[Any, Any] = {}
    changed = False
    names = {gv.name_hint for gv in mod.get_global_vars()}
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc) or is_device_kernel(func):
            funcs[gv] = func
            continue
        host, kernels = split_function(func, func.attrs.get("global_symbol") or gv.name_hint)
        funcs[gv] = host
        for kname, kfunc in kernels:
            if kname in names:
                raise ValueError(f"SplitHostDevice: the kernel name {kname!r} is already a "
                                 "function of the module")
            names.add(kname)
            funcs[kname] = kfunc
        changed = changed or bool(kernels)
    return IRModule(funcs, mod.attrs) if changed else mod


def SplitHostDevice() -> Pass:  # noqa: N802
    """The module pass form of :func:`split_host_device`."""
    return module_pass(lambda mod, ctx: split_host_device(mod), opt_level=0,
                       name="tir.SplitHostDevice")
