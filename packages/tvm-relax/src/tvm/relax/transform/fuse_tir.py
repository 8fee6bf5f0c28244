"""FuseTIR: turn each primitive Relax function (from FuseOps) into one PrimFunc.

::

    mod = relax.transform.FuseTIR()(relax.transform.FuseOps()(mod))

A primitive function whose body is a chain of ``call_tir`` bindings (plus tuple plumbing)
becomes a single PrimFunc of the same name (``fused_matmul_add``): its parameters are the
function's tensor parameters, then one output buffer per result, then any symbolic variable
that only the outputs' shapes mention.  Each called PrimFunc's body is inlined with its
buffers replaced (inputs by the buffers of the values passed, outputs by new buffers) and its
symbolic shape variables unified with the caller's; values passed between the calls become
``alloc_buffers`` of the root block; loop and block variables are renamed so that a PrimFunc
called twice stays well defined, and block names are made unique.  Callers then
``call_tir`` the fused PrimFunc; fused PrimFuncs that are structurally equal (the same
layer repeated) are kept once, under the first one's name.  A primitive function FuseTIR cannot merge (non-tensor
parameters, a result that is a parameter, an operator that was not legalized) is left as a
Relax function.  PrimFuncs no longer called are removed.

Source layers: a fused PrimFunc gets the ``source_layers`` of the primitive functions it
was made from (several, in module order, when repeated layers share it); every other
PrimFunc that a Relax function calls gets the layer names of its ``call_tir`` bindings'
spans, so each kernel of a model imported with spans names the layers it computes (the VM
executable records them for the profiler).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import StructuralMap
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.buffer import Buffer, decl_buffer
from tvm.tir.expr import BufferLoad, IntImm, PrimExpr, Var as TirVar, const
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import Block, BlockRealize, stmt_seq
from tvm.tir.stmt_functor import free_vars as tir_free_vars
from tvm.tir.stmt_functor import ir_transform, substitute
from tvm.tir.transform._common import rename_definitions

from ..analysis.struct_info_analysis import prim_equal
from ..analysis.var_analysis import all_global_vars
from ..expr import Call, Constant, Function, MatchCast, ShapeExpr, Tuple, TupleGetItem, Var
from ..expr_functor import ExprMutator, ExprVisitor
from ..op.call import call_tir
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._graph_utils import map_relax_functions
from ._lowering_utils import SOURCE_LAYERS, is_primitive, is_scalar_constant, layer_names
from .annotate_tir_op_pattern import prim_func_pattern

__all__ = ["FuseTIR", "fuse_primitive_function"]

_CALL_TIR = "relax.call_tir"


class _Unfusable(Exception):
    """The primitive function cannot become one PrimFunc (the reason is the message)."""


class _Scalar:
    """A one-element constant passed to a ``call_tir``: its value goes into the kernel."""

    def __init__(self, const_expr: Constant):
        self.dtype = str(const_expr.data.dtype)
        self.value = const_expr.data.reshape(()).item()


class _Inliner(StmtExprMutator):
    """Replaces buffers and variables in an inlined PrimFunc body; loads of the buffers in
    ``smap`` (one-element constants) become their values."""

    def __init__(self, bmap: dict[int, Buffer], vmap: dict[TirVar, PrimExpr],
                 smap: Optional[dict[int, PrimExpr]] = None):
        self.bmap = bmap
        self.vmap = vmap
        self.smap = smap or {}
        self.cache: dict[int, Buffer] = {}

    def visit_var_(self, v: TirVar) -> PrimExpr:
        return self.vmap.get(v, v)

    def visit_buffer_load_(self, load: BufferLoad) -> PrimExpr:
        value = self.smap.get(id(load.buffer))
        return value if value is not None else self.generic_mutate(load)

    def visit_block_(self, block: Block) -> Block:
        if self.smap:
            reads = tuple(r for r in block.reads if id(r.buffer) not in self.smap)
            if len(reads) != len(block.reads):
                block = block.with_fields(reads=reads)
        return self.generic_mutate(block)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        mapped = self.bmap.get(id(buffer))
        if mapped is not None:
            return mapped
        cached = self.cache.get(id(buffer))
        if cached is None:
            shape = tuple(self.visit_expr(s) for s in buffer.shape)
            cached = buffer if all(a is b for a, b in zip(shape, buffer.shape)) else \
                buffer.with_fields(shape=shape)
            self.cache[id(buffer)] = cached
        return cached


def _static_tensor(sinfo: Any, what: str) -> TensorStructInfo:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None or (
        sinfo.is_unknown_dtype
    ):
        raise _Unfusable(f"{what} is not a tensor of known shape and dtype")
    return sinfo


def _unify(fbuf: Buffer, target: Buffer, vmap: dict[TirVar, PrimExpr], where: str) -> None:
    if fbuf.dtype != target.dtype or len(fbuf.shape) != len(target.shape):
        raise _Unfusable(
            f"{where}: buffer {fbuf.name} is {fbuf.dtype}{list(fbuf.shape)}, the value passed "
            f"is {target.dtype}{list(target.shape)}"
        )
    for fd, td in zip(fbuf.shape, target.shape):
        if isinstance(fd, TirVar) and fd not in vmap:
            vmap[fd] = td
            continue
        if prim_equal(substitute(fd, vmap), td) is not True:
            raise _Unfusable(f"{where}: dimension {fd} of {fbuf.name} does not match {td}")


class _Fuser:
    def __init__(self, mod: IRModule, func: Function, name: str):
        self.mod = mod
        self.func = func
        self.name = name
        self.buffers: dict[int, Any] = {}  # relax var id -> Buffer or tuple of Buffers
        self.params: list[TirVar] = []
        self.buffer_map: dict[TirVar, Buffer] = {}
        self.allocs: list[Buffer] = []
        self.stmts: list[Any] = []
        self.names: set[str] = set()
        self.blocks: set[str] = set()
        self.pattern = 0

    def _fresh(self, hint: str) -> str:
        name, k = hint or "buf", 1
        while name in self.names:
            name = f"{hint}_{k}"
            k += 1
        self.names.add(name)
        return name

    def _param(self, var: Var, sinfo: TensorStructInfo) -> Buffer:
        name = self._fresh(var.name_hint)
        buf = decl_buffer(sinfo.shape_values, sinfo.dtype, name)
        handle = TirVar(name, "handle")
        self.params.append(handle)
        self.buffer_map[handle] = buf
        return buf

    def run(self) -> tuple[PrimFunc, list[TirVar]]:
        func = self.func
        for p in func.params:
            sinfo = _static_tensor(p.struct_info, f"parameter {p.name_hint}")
            self.buffers[id(p)] = self._param(p, sinfo)
        body = func.body
        result = body.body
        out_vars = list(result.fields) if isinstance(result, Tuple) else [result]
        if not all(isinstance(v, Var) for v in out_vars):
            raise _Unfusable("a result is not a variable")
        param_ids = {id(p) for p in func.params}
        if any(id(v) in param_ids for v in out_vars):
            raise _Unfusable("a parameter is returned as it is")
        # output buffers are parameters, made in result order
        self.outputs: dict[tuple[int, int], Buffer] = {}
        item_of: dict[int, tuple[int, int]] = {}
        for block in body.blocks:
            for b in block.bindings:
                if isinstance(b.value, TupleGetItem) and isinstance(b.value.tuple_value, Var):
                    item_of[id(b.var)] = (id(b.value.tuple_value), b.value.index)
        for v in out_vars:
            sinfo = _static_tensor(v.struct_info, f"result {v.name_hint}")
            key = item_of.get(id(v), (id(v), -1))
            self.outputs[key] = self._param(v, sinfo)
        n_inputs = len(func.params)
        for block in body.blocks:
            for b in block.bindings:
                self._binding(b)
        # symbolic variables only the outputs mention become scalar parameters
        known: set[int] = set()
        for h in self.params[:n_inputs]:
            for d in self.buffer_map[h].shape:
                known.update(id(v) for v in tir_free_vars(d))
        extra: list[TirVar] = []
        for h in self.params[n_inputs:]:
            for d in self.buffer_map[h].shape:
                for v in tir_free_vars(d):
                    if id(v) not in known:
                        known.add(id(v))
                        extra.append(v)
        root = Block((), (), (), "root", stmt_seq(*self.stmts), None, tuple(self.allocs))
        prim = PrimFunc(
            [*self.params, *extra], BlockRealize((), const(True), root),
            buffer_map=self.buffer_map,
            attrs={"tir.noalias": True, "op_pattern": int(self.pattern)},
        )
        return prim, extra

    def _binding(self, b: Any) -> None:
        if isinstance(b, MatchCast):
            raise _Unfusable("it contains a match_cast")
        value = b.value
        if isinstance(value, Var):
            self.buffers[id(b.var)] = self._lookup(value)
        elif isinstance(value, TupleGetItem):
            tup = self._lookup(value.tuple_value)
            if not isinstance(tup, tuple):
                raise _Unfusable("TupleGetItem of a non-tuple value")
            self.buffers[id(b.var)] = tup[value.index]
        elif isinstance(value, Tuple):
            self.buffers[id(b.var)] = tuple(self._lookup(f) for f in value.fields)
        elif isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == _CALL_TIR:
            self._call_tir(b.var, value)
        else:
            what = value.op.name if isinstance(value, Call) and isinstance(value.op, Op) else \
                type(value).__name__
            raise _Unfusable(f"binding {b.var.name_hint} is {what}, not a call_tir")

    def _lookup(self, value: Any) -> Any:
        if is_scalar_constant(value):
            return _Scalar(value)
        found = self.buffers.get(id(value))
        if found is None:
            raise _Unfusable(f"value {getattr(value, 'name_hint', value)!r} has no buffer")
        return found

    def _call_tir(self, var: Var, call: Call) -> None:
        gv = call.args[0]
        callee = self.mod[gv] if gv in self.mod else None
        if not isinstance(callee, PrimFunc):
            raise _Unfusable(f"@{gv.name_hint} is not a PrimFunc")
        self.pattern = max(self.pattern, int(prim_func_pattern(callee)))
        inputs = [self._lookup(a) for a in call.args[1].fields]
        if not all(isinstance(i, (Buffer, _Scalar)) for i in inputs):
            raise _Unfusable(f"a tuple is passed to @{gv.name_hint}")
        out_sinfo = call.sinfo_args[0]
        outs_sinfo = list(out_sinfo.fields) if isinstance(out_sinfo, TupleStructInfo) else [out_sinfo]
        outputs = []
        for k, s in enumerate(outs_sinfo):
            key = (id(var), k if isinstance(out_sinfo, TupleStructInfo) else -1)
            buf = self.outputs.get(key)
            if buf is None:
                s = _static_tensor(s, f"output {k} of @{gv.name_hint}")
                buf = decl_buffer(s.shape_values, s.dtype, self._fresh(var.name_hint))
                self.allocs.append(buf)
            outputs.append(buf)
        scalars = list(call.args[2].values) if len(call.args) > 2 else []
        self.buffers[id(var)] = tuple(outputs) if isinstance(out_sinfo, TupleStructInfo) else \
            outputs[0]
        self._inline(gv.name_hint, callee, inputs + outputs, scalars)

    def _inline(self, name: str, f: PrimFunc, bufs: list[Buffer], scalars: list[PrimExpr]) -> None:
        where = f"@{name}"
        n_buf = len(bufs)
        if len(f.params) != n_buf + len(scalars):
            raise _Unfusable(f"{where} takes {len(f.params)} parameters, {n_buf + len(scalars)} given")
        vmap: dict[TirVar, PrimExpr] = {}
        bmap: dict[int, Buffer] = {}
        smap: dict[int, PrimExpr] = {}
        for p, target in zip(f.params[n_buf:], scalars):
            vmap[p] = target
        for p, target in zip(f.params[:n_buf], bufs):
            fbuf = f.buffer_map.get(p)
            if fbuf is None:
                raise _Unfusable(f"{where}: parameter {p.name} has no buffer")
            if isinstance(target, _Scalar):
                if fbuf.dtype != target.dtype or not all(
                        isinstance(d, IntImm) and d.value == 1 for d in fbuf.shape):
                    raise _Unfusable(f"{where}: buffer {fbuf.name} is {fbuf.dtype}"
                                     f"{list(fbuf.shape)}, the value passed is a "
                                     f"{target.dtype} scalar constant")
                smap[id(fbuf)] = const(target.value, target.dtype)
                continue
            _unify(fbuf, target, vmap, where)
            bmap[id(fbuf)] = target
        body = f.body
        if isinstance(body, BlockRealize) and not body.block.iter_vars and \
                body.block.name_hint == "root":
            root = body.block
        else:
            root = Block((), (), (), "root", body, None, ())
        root = _Inliner(bmap, vmap, smap).visit_stmt(root)
        root = rename_definitions(root)
        root = ir_transform(root, postorder=self._rename_block, only_enable=(Block,))
        self.allocs.extend(root.alloc_buffers)
        self.stmts.append(root.body)

    def _rename_block(self, block: Block) -> Optional[Block]:
        if block.name_hint == "root" and not block.iter_vars:
            return None
        name, k = block.name_hint, 1
        while name in self.blocks:
            name = f"{block.name_hint}_{k}"
            k += 1
        self.blocks.add(name)
        return None if name == block.name_hint else block.with_fields(name_hint=name)


def fuse_primitive_function(mod: IRModule, func: Function, name: str
                            ) -> tuple[PrimFunc, list[TirVar]]:
    """The PrimFunc merging ``func``'s ``call_tir`` chain and its extra scalar parameters.

    Raises ValueError when the function cannot be merged (the reason says why).
    """
    try:
        return _Fuser(mod, func, name).run()
    except _Unfusable as err:
        raise ValueError(f"FuseTIR: cannot merge @{name}: {err}") from None


def _match_dims(pattern: Any, actual: Any, vmap: dict[TirVar, PrimExpr]) -> None:
    if isinstance(pattern, TensorStructInfo) and isinstance(actual, TensorStructInfo):
        pv, av = pattern.shape_values, actual.shape_values
        if pv is not None and av is not None and len(pv) == len(av):
            for p, a in zip(pv, av):
                if isinstance(p, TirVar) and p not in vmap:
                    vmap[p] = a
    elif isinstance(pattern, TupleStructInfo) and isinstance(actual, TupleStructInfo):
        for p, a in zip(pattern.fields, actual.fields):
            _match_dims(p, a, vmap)


class _CallRewriter(ExprMutator):
    def __init__(self, mod: IRModule, fused: dict[str, tuple[Function, list[TirVar]]],
                 gvs: dict[str, GlobalVar]):
        super().__init__(mod)
        self.fused = fused
        self.gvs = gvs

    def visit_call_(self, call: Call) -> Any:
        call = super().visit_call_(call)
        op = call.op
        if not isinstance(op, GlobalVar) or op.name_hint not in self.fused:
            return call
        func, extra = self.fused[op.name_hint]
        vmap: dict[TirVar, PrimExpr] = {}
        for p, a in zip(func.params, call.args):
            _match_dims(p.struct_info, a.struct_info, vmap)
        sinfo = self.builder_.normalize(call).struct_info if call.struct_info_ is None else \
            call.struct_info
        _match_dims(func.ret_struct_info, sinfo, vmap)
        outs = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
        tir_vars = ShapeExpr([substitute(v, vmap) for v in extra]) if extra else None
        return call_tir(self.gvs[op.name_hint], list(call.args), outs, tir_vars)


def FuseTIR() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass merging primitive functions into PrimFuncs (see the module docstring)."""

    @module_pass(opt_level=0, name="FuseTIR")
    def fuse_tir(mod: IRModule, ctx: PassContext) -> IRModule:
        fused: dict[str, tuple[Function, list[TirVar]]] = {}
        gvs: dict[str, GlobalVar] = {}
        inner: set[str] = set()
        # Repeated layers give structurally equal primitive functions: fuse the first only.
        # Distinct ones may still fuse to equal PrimFuncs: keep one of those too.
        by_function: StructuralMap[str] = StructuralMap()
        by_prim: StructuralMap[GlobalVar] = StructuralMap()
        # kept PrimFunc -> the layers of its functions (a dict: an ordered set)
        layers: dict[str, dict[str, None]] = {}
        out = mod
        for gv, func in list(mod.items()):
            if not is_primitive(func):
                continue
            name = gv.name_hint
            key = func.without_attr(SOURCE_LAYERS)  # repeated layers are still equal
            first = by_function.get(key)
            if first is not None:
                fused[name], gvs[name] = fused[first], gvs[first]
                layers.setdefault(gvs[name].name_hint, {}).update(
                    dict.fromkeys(func.get_attr(SOURCE_LAYERS) or ()))
                out = out.without_function(gv)
                continue
            try:
                prim, extra = _Fuser(mod, func, name).run()
            except _Unfusable:
                continue
            by_function[key] = name
            fused[name] = (func, extra)
            inner.update(g.name_hint for g in all_global_vars(func))
            out = out.without_function(gv)
            kept = by_prim.get(prim)
            if kept is None:
                kept = by_prim[prim] = GlobalVar(name)
                out = out.with_function(kept, prim)
            gvs[name] = kept
            layers.setdefault(kept.name_hint, {}).update(
                dict.fromkeys(func.get_attr(SOURCE_LAYERS) or ()))
        if fused:
            rewriter = _CallRewriter(out, fused, gvs)
            out = map_relax_functions(out, lambda func, gv: rewriter.visit_expr(func))
            out = _drop_unused(out, inner)
        return _annotate_source_layers(out, layers)

    return fuse_tir


class _CallSiteLayers(ExprVisitor):
    """PrimFunc name -> the layer names of the ``call_tir`` bindings calling it."""

    def __init__(self) -> None:
        self.layers: dict[str, list[str]] = {}

    def visit_var_binding_(self, binding: Any) -> None:
        value = binding.value
        if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == _CALL_TIR \
                and isinstance(value.args[0], GlobalVar):
            layer_names([binding], self.layers.setdefault(value.args[0].name_hint, []))
        super().visit_var_binding_(binding)


def _annotate_source_layers(mod: IRModule, fused: dict[str, dict[str, None]]) -> IRModule:
    """``mod`` with ``source_layers`` on each PrimFunc that has layers and no such attribute:
    those of the functions fused into it, else those of its call sites."""
    sites = _CallSiteLayers()
    for _, func in mod.items():
        if isinstance(func, Function) and func.body is not None:
            sites.visit_expr(func)
    updates = {}
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc) or func.get_attr(SOURCE_LAYERS) is not None:
            continue
        names = fused.get(gv.name_hint) or sites.layers.get(gv.name_hint)
        if names:
            updates[gv] = func.with_attr(SOURCE_LAYERS, tuple(names))
    return mod.with_functions(updates) if updates else mod


def _drop_unused(mod: IRModule, candidates: set[str]) -> IRModule:
    """Remove the PrimFuncs in ``candidates`` (called by merged functions) no longer used."""
    used: set[str] = set()
    for _, func in mod.items():
        if isinstance(func, Function) and func.body is not None:
            used.update(g.name_hint for g in all_global_vars(func))
    for name in sorted(candidates - used):
        func = mod[name] if name in mod else None
        if isinstance(func, PrimFunc) and not (func.attrs and func.attrs.get("global_symbol")):
            mod = mod.without_function(name)
    return mod

