"""Turn a tensor-expression graph into a block-level PrimFunc.

``create_prim_func([A, B, C])`` makes the PrimFunc that ``@T.prim_func`` TVMScript would
write for the same computation:

* each tensor argument becomes a handle parameter with a buffer in ``buffer_map`` (symbolic
  dimensions are bound there); each ``tir.Var`` argument a scalar parameter;
* each ``te.compute`` becomes a block named after it (names made unique) inside one serial
  loop per axis, spatial axes outside and reduction axes inside; block iteration variables
  are data-parallel or reduction variables bound to the loop variables;
* a reduction stores its identity (or ``init=``) in the block's ``init`` and updates
  ``C[i, j] = C[i, j] + ...``; a ``where=`` condition guards the update; a tuple reduction
  combines through let-bound temporaries and stores every component in one block;
* computed tensors that are not arguments are allocated by a root block named ``"root"``;
* block read/write regions are inferred (:mod:`tvm.tir.analysis.block_region`);
* attributes ``{"global_symbol": "main", "tir.noalias": True}``.

A reduction axis whose domain depends on another axis (``te.reduce_axis((0, i + 1))``) is
put in an enclosing block level (``<name>_l1`` ...), so that no block has iteration domains
depending on its own iteration variables.  A compute without axes gets one unit
data-parallel block variable, as in TVM.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ffi.dtype import DTypeCode, parse_dtype
from tvm.tir.analysis.block_region import infer_block_access_regions
from tvm.tir.buffer import Buffer, decl_buffer
from tvm.tir.expr import (
    BufferLoad, IntImm, IterVar, IterVarType, PrimExpr, Range, Reduce, Var, const,
)
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import (
    Block, BlockRealize, BufferStore, For, ForKind, IfThenElse, LetStmt, Stmt, stmt_seq,
)
from tvm.tir.stmt_functor import free_vars

from ._index_dtype import normalize_index_dtype
from .tensor import ComputeOp, Operation, PlaceholderOp, ProducerLoad, Tensor, tensor_key

__all__ = ["create_prim_func"]

# Compute attributes that describe the TE workload and are dropped from block annotations.
_DROPPED_ATTRS = ("const_matrix", "auto_scheduler_simplify_const_tensor_indices", "workload")


def create_prim_func(
    args: Sequence[Union[Tensor, Var]], index_dtype_override: Optional[str] = None
) -> PrimFunc:
    """The PrimFunc computing the tensors in ``args`` from the placeholders in ``args``.

    ``args`` lists the function's parameters in order: te tensors (inputs and outputs) and
    scalar ``tir.Var`` parameters.  ``index_dtype_override`` (e.g. ``"int64"``) makes every
    loop, block variable, buffer dimension and index use that integer type.
    """
    args = list(args)
    tensors = _check_args(args)
    if index_dtype_override is not None:
        code, bits, lanes = parse_dtype(index_dtype_override)
        if code not in (DTypeCode.INT, DTypeCode.UINT) or lanes != 1:
            raise ValueError(
                f"create_prim_func: index_dtype_override must be a scalar integer type such as "
                f"'int64', got {index_dtype_override!r}"
            )
    order, consumers = _post_dfs_order(tensors)
    ctx = _Context(args)
    stage_stmts: list[Stmt] = []
    for op in order:
        if isinstance(op, PlaceholderOp):
            tensor = op.output(0)
            if tensor_key(tensor) not in ctx.arg_index:
                reader = consumers.get(id(op))
                by = f" by te.compute {reader.name!r}" if reader is not None else ""
                raise ValueError(
                    f"create_prim_func: the placeholder {op.name!r} is read{by} but is not in "
                    "the argument list; add it to the arguments (inputs must be parameters)"
                )
            ctx.buffers[tensor_key(tensor)] = decl_buffer(op.shape, op.dtype, op.name)
        elif isinstance(op, ComputeOp):
            stage_stmts.append(_lower_compute(op, ctx))
        else:
            raise TypeError(
                f"create_prim_func: unsupported operation {type(op).__name__} ({op.name!r}); "
                "only te.placeholder and te.compute are supported"
            )

    params: list[Var] = []
    buffer_map: dict[Var, Buffer] = {}
    for arg in args:
        if isinstance(arg, Tensor):
            param = Var(f"var_{arg.name}", "handle")
            params.append(param)
            buffer_map[param] = ctx.buffers[tensor_key(arg)]
        else:
            params.append(arg)
    if not stage_stmts:
        raise ValueError(
            "create_prim_func: nothing to compute; the arguments must include at least one "
            "tensor made by te.compute"
        )
    root = Block((), (), (), "root", stmt_seq(*stage_stmts), None, tuple(ctx.root_alloc))
    attrs: dict[str, Any] = {"global_symbol": "main", "tir.noalias": True}
    if ctx.layout_free:
        attrs["layout_free_buffers"] = sorted(ctx.layout_free)
    func = PrimFunc(params, BlockRealize((), const(True), root), buffer_map=buffer_map,
                    attrs=attrs)
    if index_dtype_override is not None:
        func = normalize_index_dtype(func, index_dtype_override)
    func = func.with_body(_complete_regions(func.body))
    _check_defined(func, order)
    return func


# ---------------------------------------------------------------------------------------
# argument checks and graph order

def _check_args(args: list[Any]) -> list[Tensor]:
    tensors: list[Tensor] = []
    seen: dict[Any, int] = {}
    for pos, arg in enumerate(args):
        if isinstance(arg, Tensor):
            key = tensor_key(arg)
        elif isinstance(arg, Var):
            if arg.dtype == "handle":
                raise TypeError(
                    f"create_prim_func: argument {pos} is the handle variable {arg.name!r}; "
                    "pass te tensors for buffers and scalar tir.Vars for scalars"
                )
            key = id(arg)
        else:
            raise TypeError(
                f"create_prim_func: argument {pos} must be a te.Tensor or a tir.Var, got "
                f"{type(arg).__name__} {arg!r}"
            )
        if key in seen:
            what = arg.name
            raise ValueError(
                f"create_prim_func: {what!r} appears twice in the arguments "
                f"(positions {seen[key]} and {pos})"
            )
        seen[key] = pos
        if isinstance(arg, Tensor):
            tensors.append(arg)
    if not tensors:
        raise ValueError("create_prim_func: the arguments contain no te.Tensor")
    return tensors


def _post_dfs_order(tensors: list[Tensor]) -> tuple[list[Operation], dict[int, Operation]]:
    """Operations reachable from ``tensors``, producers before consumers.

    Also returns, per operation id, the first operation found reading it (for messages).
    """
    order: list[Operation] = []
    done: set[int] = set()
    consumers: dict[int, Operation] = {}
    for tensor in tensors:
        root = tensor.op
        if id(root) in done:
            continue
        stack: list[tuple[Operation, list[Tensor], int]] = [(root, root.input_tensors, 0)]
        on_stack = {id(root)}
        while stack:
            op, inputs, pos = stack[-1]
            if pos < len(inputs):
                stack[-1] = (op, inputs, pos + 1)
                child = inputs[pos].op
                consumers.setdefault(id(child), op)
                if id(child) in done:
                    continue
                if id(child) in on_stack:  # pragma: no cover - te graphs are acyclic by build
                    raise ValueError(f"create_prim_func: cycle through operation {child.name!r}")
                on_stack.add(id(child))
                stack.append((child, child.input_tensors, 0))
            else:
                stack.pop()
                on_stack.discard(id(op))
                done.add(id(op))
                order.append(op)
    return order, consumers


class _Context:
    def __init__(self, args: list[Any]):
        # tensor -> its parameter position
        self.arg_index = {tensor_key(a): i for i, a in enumerate(args) if isinstance(a, Tensor)}
        self.buffers: dict[tuple[int, int], Buffer] = {}
        self.root_alloc: list[Buffer] = []
        self.names: dict[str, int] = {}
        self.layout_free: set[int] = set()

    def fresh_name(self, base: str) -> str:
        if base not in self.names:
            self.names[base] = 0
            return base
        while True:
            self.names[base] += 1
            candidate = f"{base}_{self.names[base]}"
            if candidate not in self.names:
                self.names[candidate] = 0
                return candidate


# ---------------------------------------------------------------------------------------
# one compute stage

class _Scope:
    """One block level: its loops, block iteration variables and bindings."""

    def __init__(self) -> None:
        self.loops: list[tuple[Var, Range]] = []
        self.iter_vars: list[IterVar] = []
        self.bindings: list[PrimExpr] = []
        self.store_indices: list[PrimExpr] = []
        self.remap: dict[Var, PrimExpr] = {}


def _lower_compute(op: ComputeOp, ctx: _Context) -> Stmt:
    axes = list(op.axis) + list(op.reduce_axis)
    levels = _axis_levels(axes)
    scopes: list[_Scope] = []
    defined: set[int] = set()
    for level in range(max(levels.values(), default=0) + 1):
        scope = _Scope()
        prev = scopes[-1].remap if scopes else {}
        for axis in axes:
            index_dtype = axis.dom.extent.dtype
            name = axis.var.name
            if levels[id(axis)] == level:
                dom = _to_tir_range(axis.dom, prev, ctx)
                loop_var = Var(name, index_dtype)
                block_var = Var(f"v_{name}", index_dtype)
                scope.loops.append((loop_var, dom))
                _add_iter(scope, axis, IterVar(dom, block_var, axis.iter_type), loop_var)
                defined.add(id(axis))
            elif id(axis) in defined:
                outer = prev[axis.var]
                iv = IterVar(Range(outer, const(1, index_dtype)), Var(f"v_{name}", index_dtype),
                             axis.iter_type)
                _add_iter(scope, axis, iv, outer)
        scopes.append(scope)
    leaf = scopes[-1]
    if not leaf.iter_vars:
        leaf.iter_vars.append(IterVar(Range(0, 1), Var("vi"), IterVarType.DATA_PAR))
        leaf.bindings.append(const(0))

    buffers = _output_buffers(op, ctx)
    annotations = _annotations(op, ctx)
    reduce = op.body[0] if isinstance(op.body[0], Reduce) else None
    realizes: list[Stmt] = []
    if reduce is not None:
        block = Block(
            tuple(leaf.iter_vars), (), (), ctx.fresh_name(op.name),
            _reduce_body(reduce, buffers, leaf, ctx), _reduce_init(reduce, buffers, leaf, ctx),
            annotations=annotations,
        )
        realizes.append(BlockRealize(tuple(leaf.bindings), const(True), block))
    else:
        for i, (body, buffer) in enumerate(zip(op.body, buffers)):
            if i > 0:
                _renew(leaf, axes)
            value = _to_tir(body, leaf.remap, ctx)
            store = BufferStore(buffer, value, tuple(leaf.store_indices))
            name = ctx.fresh_name(op.name if len(buffers) == 1 else buffer.name)
            block = Block(tuple(leaf.iter_vars), (), (), name, store, annotations=annotations)
            realizes.append(BlockRealize(tuple(leaf.bindings), const(True), block))

    stmt = stmt_seq(*realizes)
    for depth in range(len(scopes) - 1, -1, -1):
        scope = scopes[depth]
        if depth < len(scopes) - 1:
            init = None
            if reduce is not None and any(
                iv.iter_type == IterVarType.COMM_REDUCE for iv in scope.iter_vars
            ):
                init = _reduce_init(reduce, buffers, scope, ctx)
            block = Block(tuple(scope.iter_vars), (), (), ctx.fresh_name(f"{op.name}_l{depth + 1}"),
                          stmt, init, annotations=annotations)
            stmt = BlockRealize(tuple(scope.bindings), const(True), block)
        for loop_var, dom in reversed(scope.loops):
            stmt = For(loop_var, dom.min, dom.extent, ForKind.SERIAL, stmt)
    return stmt


def _axis_levels(axes: list[IterVar]) -> dict[int, int]:
    """Nesting level per axis: 0, or one more than the deepest axis its domain uses."""
    by_var = {id(iv.var): iv for iv in axes}
    levels: dict[int, int] = {}

    def level(iv: IterVar) -> int:
        if id(iv) in levels:
            return levels[id(iv)]
        deps = [by_var[id(v)] for v in free_vars([iv.dom.min, iv.dom.extent]) if id(v) in by_var]
        levels[id(iv)] = max((level(d) + 1 for d in deps), default=0)
        return levels[id(iv)]

    for iv in axes:
        level(iv)
    return levels


def _add_iter(scope: _Scope, axis: IterVar, iv: IterVar, binding: PrimExpr) -> None:
    scope.iter_vars.append(iv)
    scope.bindings.append(binding)
    if axis.iter_type != IterVarType.COMM_REDUCE:
        scope.store_indices.append(iv.var)
    scope.remap[axis.var] = iv.var


def _renew(scope: _Scope, axes: list[IterVar]) -> None:
    """Fresh block variables for the next block of a multi-output compute (SSA)."""
    fresh = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type)
             for iv in scope.iter_vars]
    scope.iter_vars = fresh
    scope.store_indices = []
    for axis, iv in zip(axes, fresh):
        if axis.iter_type != IterVarType.COMM_REDUCE:
            scope.store_indices.append(iv.var)
        scope.remap[axis.var] = iv.var


def _output_buffers(op: ComputeOp, ctx: _Context) -> list[Buffer]:
    buffers = []
    for tensor in op.outputs:
        buffer = decl_buffer(tensor.shape, tensor.dtype, tensor.name)
        ctx.buffers[tensor_key(tensor)] = buffer
        if tensor_key(tensor) not in ctx.arg_index:
            ctx.root_alloc.append(buffer)
        buffers.append(buffer)
    return buffers


def _annotations(op: ComputeOp, ctx: _Context) -> dict[str, Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, Tensor):
            return ctx.buffers[tensor_key(value)] if tensor_key(value) in ctx.buffers else value
        return value

    out: dict[str, Any] = {}
    for key, value in op.attrs.items():
        if key in _DROPPED_ATTRS:
            continue
        if key == "layout_free_placeholders":
            kept = []
            for tensor in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(tensor, Tensor) and tensor_key(tensor) in ctx.arg_index:
                    ctx.layout_free.add(ctx.arg_index[tensor_key(tensor)])
                else:
                    kept.append(convert(tensor))
            if kept:
                out[key] = tuple(kept)
            continue
        if isinstance(value, (list, tuple)):
            out[key] = tuple(convert(v) for v in value)
        else:
            out[key] = convert(value)
    return out


def _reduce_init(reduce: Reduce, buffers: list[Buffer], scope: _Scope, ctx: _Context) -> Stmt:
    values = reduce.init if reduce.init else reduce.combiner.identity_element
    indices = tuple(scope.store_indices)
    return stmt_seq(*[
        BufferStore(buffer, _to_tir(value, scope.remap, ctx), indices)
        for buffer, value in zip(buffers, values)
    ])


def _reduce_body(reduce: Reduce, buffers: list[Buffer], scope: _Scope, ctx: _Context) -> Stmt:
    indices = tuple(scope.store_indices)
    lhs = [BufferLoad(buffer, indices) for buffer in buffers]
    rhs = []
    for buffer, source in zip(buffers, reduce.source):
        value = _to_tir(source, scope.remap, ctx)
        if value.dtype != buffer.dtype:  # pragma: no cover - guarded by the reducer
            raise TypeError(f"reduction into {buffer.name!r}: {value.dtype} vs {buffer.dtype}")
        rhs.append(value)
    combined = reduce.combiner(lhs, rhs)
    combined = list(combined) if isinstance(combined, (list, tuple)) else [combined]
    if len(buffers) == 1:
        body: Stmt = BufferStore(buffers[0], combined[0], indices)
    else:
        temps = [Var(f"v_{buffer.name}", buffer.dtype) for buffer in buffers]
        body = stmt_seq(*[BufferStore(b, t, indices) for b, t in zip(buffers, temps)])
        for temp, value in reversed(list(zip(temps, combined))):
            body = LetStmt(temp, value, body)
    cond = reduce.condition
    if not (isinstance(cond, IntImm) and cond.value == 1):
        body = IfThenElse(_to_tir(cond, scope.remap, ctx), body)
    return body


class _ToTIR(StmtExprMutator):
    """ProducerLoad -> BufferLoad, te axis variables -> block variables."""

    def __init__(self, remap: dict[Var, PrimExpr], ctx: _Context):
        self.remap = remap
        self.ctx = ctx

    def visit_var_(self, v: Var) -> PrimExpr:
        return self.remap.get(v, v)

    def visit_producer_load_(self, op: ProducerLoad) -> PrimExpr:
        buffer = self.ctx.buffers.get(tensor_key(op.producer))
        if buffer is None:  # pragma: no cover - the post-order visits producers first
            raise ValueError(f"create_prim_func: tensor {op.producer.name!r} has no buffer yet")
        return BufferLoad(buffer, tuple(self.visit_expr(i) for i in op.indices))

    def visit_reduce_(self, op: Reduce) -> PrimExpr:  # pragma: no cover - te.compute rejects it
        raise ValueError("create_prim_func: a reduction nested inside an expression")


def _to_tir(expr: PrimExpr, remap: dict[Var, PrimExpr], ctx: _Context) -> PrimExpr:
    return _ToTIR(remap, ctx).visit_expr(expr)


def _to_tir_range(dom: Range, remap: dict[Var, PrimExpr], ctx: _Context) -> Range:
    lo, extent = _to_tir(dom.min, remap, ctx), _to_tir(dom.extent, remap, ctx)
    return dom if lo is dom.min and extent is dom.extent else Range(lo, extent)




# ---------------------------------------------------------------------------------------
# completion: regions and the final well-formedness check

class _RegionFiller(StmtExprMutator):
    def visit_block_(self, block: Block) -> Block:
        block = self.generic_mutate(block)
        reads, writes = infer_block_access_regions(block)
        return block.with_fields(reads=reads, writes=writes)


def _complete_regions(root_realize: BlockRealize) -> BlockRealize:
    root = root_realize.block
    body = _RegionFiller().visit_stmt(root.body)
    return root_realize.with_fields(block=root.with_fields(body=body))


def _check_defined(func: PrimFunc, order: list[Operation]) -> None:
    defined: set[int] = {id(p) for p in func.params}
    for buffer in func.buffer_map.values():
        for dim in (*buffer.shape, *buffer.strides):
            if isinstance(dim, Var):
                defined.add(id(dim))
    axis_owner: dict[int, str] = {}
    for op in order:
        if isinstance(op, ComputeOp):
            for iv in (*op.axis, *op.reduce_axis):
                axis_owner[id(iv.var)] = op.name
    for v in free_vars(func.body):
        if v.dtype == "handle" or id(v) in defined:
            continue
        owner = axis_owner.get(id(v))
        if owner is not None:
            raise ValueError(
                f"create_prim_func: {v.name!r} is an axis of te.compute {owner!r} but is used "
                "outside of it; index the tensor of that compute instead"
            )
        raise ValueError(
            f"create_prim_func: the variable {v.name!r} ({v.dtype}) is used but not defined; "
            "pass it as a scalar argument or use it as a dimension of an argument's shape"
        )
