"""Layout rewriting of layout-free buffers: weights packed once, at compile time.

A CPU schedule often copies an operand into a blocked layout before the kernel reads it
(the weights of a convolution, ``W[o // 16, i, kh, kw, o % 16]``).  When that operand is a
compile-time constant the copy need not run on every call.  Three steps, run by
``relax.build`` between fusion and VM lowering:

1. :func:`AnnotateLayoutFreeBuffers` marks each PrimFunc parameter that receives a Relax
   ``Constant`` at every ``call_tir`` site: the PrimFunc attribute
   ``"layout_free_buffers"`` lists their parameter indices;
2. the target's default schedule marks the block that repacks such a buffer with the block
   annotation ``"layout_rewrite_preproc"`` (the CPU contraction rule does);
3. :func:`SplitLayoutRewritePreproc` moves each marked block into a PrimFunc of its own
   (input: the original buffer, output: the packed one, which becomes a parameter of the
   kernel in place of the original) and rewrites the call sites::

       lv = R.call_tir(conv, (x, w), out_sinfo=...)
       # becomes
       w_packed = R.call_tir(conv_prepack1, (w,), out_sinfo=R.Tensor((4, 64, 3, 3, 16)))
       lv = R.call_tir(conv, (x, w_packed), out_sinfo=...)

   FoldConstant then evaluates ``conv_prepack1`` on the constant ``w`` at compile time
   (the preproc PrimFuncs carry ``"layout_rewrite_preproc"``, which lifts its size limit).

A marked block is split only when it forms a top-level loop nest of its own, reads one
parameter buffer, writes one internal buffer of static shape and uses no other variable of
the kernel, and when nothing but such marked blocks reads that parameter; otherwise it
stays where it is (the kernel then repacks per call, as before).  Several marked blocks may
read one parameter (an int8 kernel packs its weight and sums it for the zero-point
correction, a reduction with an ``init``): the first output takes the parameter's place,
the others follow it as new parameters, each computed by a preproc PrimFunc of its own.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.buffer import Buffer
from tvm.tir.expr import IntImm
from tvm.tir.expr import Var as TIRVar
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import Block, BlockRealize, stmt_seq
from tvm.tir.stmt_functor import free_vars, post_order_visit

from ..expr import Call, Constant, Expr, Tuple, Var, VarBinding
from ..expr_functor import ExprMutator, ExprVisitor
from ..struct_info import TensorStructInfo
from ._graph_utils import relax_functions

__all__ = [
    "AnnotateLayoutFreeBuffers",
    "SplitLayoutRewritePreproc",
    "layout_free_params",
    "split_prim_func",
    "remove_unused_preproc",
    "LAYOUT_FREE_ATTR",
    "PREPROC_ATTR",
]

#: PrimFunc attribute: indices of the parameters that only ever receive constants
LAYOUT_FREE_ATTR = "layout_free_buffers"
#: block annotation of a repacking block, and attribute of a split-off preproc PrimFunc
PREPROC_ATTR = "layout_rewrite_preproc"


# -- step 1: which parameters receive constants ---------------------------------------------
class _CallSites(ExprVisitor):
    """For each PrimFunc called by ``call_tir``: which input positions get a Constant at
    every site; PrimFuncs referenced in any other way are recorded as escaping."""

    def __init__(self) -> None:
        self.constant_args: dict[GlobalVar, set[int]] = {}
        self.escaped: set[GlobalVar] = set()
        self.bound: dict[int, Constant] = {}  # id(var) -> the Constant it is bound to

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if isinstance(binding.value, Constant):
            self.bound[id(binding.var)] = binding.value
        super().visit_var_binding_(binding)

    def visit_global_var_(self, expr: GlobalVar) -> None:
        self.escaped.add(expr)

    def visit_call_(self, call: Call) -> None:
        if not (isinstance(call.op, Op) and call.op.name == "relax.call_tir"
                and isinstance(call.args[0], GlobalVar)):
            super().visit_call_(call)
            return
        gv = call.args[0]
        args = call.args[1]
        fields = list(args.fields) if isinstance(args, Tuple) else [args]
        here = {k for k, a in enumerate(fields) if self._is_constant(a)}
        seen = self.constant_args.get(gv)
        self.constant_args[gv] = here if seen is None else seen & here
        for a in call.args[1:]:
            self.visit_expr(a)

    def _is_constant(self, expr: Expr) -> bool:
        return isinstance(expr, Constant) or (isinstance(expr, Var)
                                              and id(expr) in self.bound)


def layout_free_params(mod: IRModule) -> dict[GlobalVar, list[int]]:
    """PrimFunc -> indices of its parameters that receive a Relax ``Constant`` at every
    ``call_tir`` site of ``mod`` (PrimFuncs used otherwise, or never, are left out)."""
    sites = _CallSites()
    for _, func in relax_functions(mod, include_skipped=True):
        sites.visit_expr(func)
    out = {}
    for gv, positions in sites.constant_args.items():
        if gv in sites.escaped or not positions or gv not in mod:
            continue
        if isinstance(mod[gv], PrimFunc):
            out[gv] = sorted(positions)
    return out


def AnnotateLayoutFreeBuffers() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """Set ``"layout_free_buffers"`` on each PrimFunc whose parameters receive constants at
    every call site (see :func:`layout_free_params`); an existing attribute is kept."""

    @module_pass(opt_level=0, name="AnnotateLayoutFreeBuffers")
    def annotate(mod: IRModule, ctx: PassContext) -> IRModule:
        updates = {}
        for gv, positions in layout_free_params(mod).items():
            func = mod[gv]
            if func.attrs.get(LAYOUT_FREE_ATTR) is None:
                updates[gv] = func.with_attr(LAYOUT_FREE_ATTR, [int(p) for p in positions])
        return mod.with_functions(updates) if updates else mod

    return annotate


# -- step 3: split the marked blocks out ----------------------------------------------------
def _blocks(stmt: Any) -> list[Block]:
    found: list[Block] = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, Block) else None)
    return found


def _reads_buffer(stmt: Any, buf: Buffer) -> bool:
    return any(v is buf.data for v in free_vars(stmt))


def _static_shape(buf: Buffer) -> Optional[list[int]]:
    if not all(isinstance(d, IntImm) for d in buf.shape):
        return None
    return [int(d.value) for d in buf.shape]


def split_prim_func(func: PrimFunc) -> Optional[tuple[PrimFunc, list[tuple[int, PrimFunc]]]]:
    """``(kernel, [(param index, preproc), ...])``: ``func`` with its splittable
    ``"layout_rewrite_preproc"`` blocks moved out (see the module docstring), or None when
    it has none.  ``preproc`` takes the original buffer and writes the packed one; the
    kernel takes the packed buffers of one ``param index`` (in the order listed) where it
    took the original."""
    root = func.body
    if not isinstance(root, BlockRealize) or not isinstance(root.block, Block):
        return None
    block = root.block
    body = block.body
    stmts = list(body.seq) if hasattr(body, "seq") else [body]
    params = list(func.params)
    buffer_map = dict(func.buffer_map)
    by_buffer = {id(b): p for p, b in buffer_map.items()}
    allocs = list(block.alloc_buffers)
    # the splittable statements, grouped by the parameter they read (program order)
    groups: dict[int, list[tuple[Any, Buffer, Buffer]]] = {}
    for stmt in stmts:
        inner = _blocks(stmt)
        if len(inner) != 1 or not inner[0].annotations.get(PREPROC_ATTR):
            continue
        pre = inner[0]
        if len(pre.reads) != 1 or len(pre.writes) != 1:
            continue
        src, dst = pre.reads[0].buffer, pre.writes[0].buffer
        param = by_buffer.get(id(src))
        if param is None or not any(b is dst for b in allocs) or _static_shape(dst) is None:
            continue
        if any(v is not src.data and v is not dst.data for v in free_vars(stmt)):
            continue  # it uses other variables of the kernel (symbolic sizes): keep it
        groups.setdefault(params.index(param), []).append((stmt, src, dst))
    kept = list(stmts)
    splits: list[tuple[int, PrimFunc]] = []
    replaced: dict[int, list[TIRVar]] = {}
    for index, group in groups.items():
        moved = {id(stmt) for stmt, _, _ in group}
        rest = [s for s in kept if id(s) not in moved]
        src = group[0][1]
        if _reads_buffer(rest, src) or any(
                any(w.buffer is dst for w in b.writes)
                for _, _, dst in group for s in rest for b in _blocks(s)):
            continue
        kept = rest
        new_params = []
        for stmt, src, dst in group:
            new_param = TIRVar(dst.name, "handle")
            buffer_map[new_param] = dst
            new_params.append(new_param)
            allocs = [b for b in allocs if b is not dst]
            splits.append((index, _preproc_func(stmt, src, dst)))
        del buffer_map[params[index]]
        replaced[index] = new_params
    if not splits:
        return None
    params = [q for k, p in enumerate(params) for q in replaced.get(k, [p])]
    new_block = block.with_fields(body=stmt_seq(*kept), alloc_buffers=tuple(allocs))
    buffer_map = {p: buffer_map[p] for p in params if p in buffer_map}  # in parameter order
    kernel = PrimFunc(params, root.with_fields(block=new_block), func.ret_type, buffer_map,
                      func.attrs, span=func.span)
    return kernel, splits


class _SwapBuffers(StmtExprMutator):
    """Replaces buffers (and their data variables) by fresh copies."""

    def __init__(self, buffers: list[Buffer]):
        self.buffers = {id(b): b.with_fields(data=TIRVar(b.data.name, "handle"))
                        for b in buffers}
        self.vars = {id(b.data): self.buffers[id(b)].data for b in buffers}

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.buffers.get(id(buffer), buffer)

    def visit_var_(self, var: TIRVar) -> Any:
        return self.vars.get(id(var), var)


def _preproc_func(stmt: Any, src: Buffer, dst: Buffer) -> PrimFunc:
    """``src -> dst`` running ``stmt``, with buffers of its own (none shared with the
    kernel)."""
    swap = _SwapBuffers([src, dst])
    body = swap.visit_stmt(stmt)
    new_src, new_dst = swap.buffers[id(src)], swap.buffers[id(dst)]
    root = Block((), (), (), "root", body)
    p_src, p_dst = TIRVar(src.name, "handle"), TIRVar(dst.name, "handle")
    attrs = {"tir.noalias": True, "tir.is_scheduled": True, PREPROC_ATTR: True}
    return PrimFunc([p_src, p_dst], BlockRealize((), IntImm("bool", 1), root),
                    buffer_map={p_src: new_src, p_dst: new_dst}, attrs=attrs)


class _CallRewriter(ExprMutator):
    """Inserts the preproc calls before each call of a split kernel."""

    def __init__(self, mod: IRModule, plans: dict[GlobalVar, list[tuple[int, GlobalVar]]]):
        super().__init__(mod)
        self.mod = mod
        self.plans = plans

    def visit_call_(self, call: Call) -> Expr:
        new = super().visit_call_(call)
        if not (isinstance(new.op, Op) and new.op.name == "relax.call_tir"):
            return new
        plan = self.plans.get(new.args[0])
        if plan is None:
            return new
        args = new.args[1]
        fields = list(args.fields) if isinstance(args, Tuple) else [args]
        packed_of: dict[int, list[Expr]] = {}
        for index, pre_gv in plan:
            pre = self.mod[pre_gv]
            dst = pre.buffer_map[pre.params[1]]
            sinfo = TensorStructInfo(_static_shape(dst), dst.dtype)
            packed = Call(Op.get("relax.call_tir"), [pre_gv, Tuple([fields[index]])],
                          None, [sinfo])
            packed_of.setdefault(index, []).append(
                self.builder_.emit(packed, f"{dst.name}_packed"))
        fields = [q for k, f in enumerate(fields) for q in packed_of.get(k, [f])]
        return Call(new.op, [new.args[0], Tuple(fields), *new.args[2:]], new.attrs,
                    new.sinfo_args, span=new.span)


def SplitLayoutRewritePreproc() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """Move ``"layout_rewrite_preproc"`` blocks into PrimFuncs of their own and call them
    before their kernels (see the module docstring)."""

    @module_pass(opt_level=1, name="SplitLayoutRewritePreproc")
    def split(mod: IRModule, ctx: PassContext) -> IRModule:
        updates: dict[Any, Any] = {}
        pending: dict[GlobalVar, list[tuple[int, str]]] = {}
        taken = {gv.name_hint for gv in mod.get_global_vars()}
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            result = split_prim_func(func)
            if result is None:
                continue
            kernel, pres = result
            updates[gv] = kernel
            pending[gv] = []
            for index, pre in pres:
                name = _fresh(f"{gv.name_hint}_prepack{index}", taken)
                updates[name] = pre
                pending[gv].append((index, name))
        if not pending:
            return mod
        mod = mod.with_functions(updates)
        plans = {gv: [(i, mod.get_global_var(n)) for i, n in items]
                 for gv, items in pending.items()}
        rewriter = _CallRewriter(mod, plans)
        funcs = {gv: rewriter.visit_expr(f) for gv, f in relax_functions(mod, True)}
        return mod.with_functions({gv: f for gv, f in funcs.items() if f is not mod[gv]})

    return split


def _fresh(name: str, taken: set[str]) -> str:
    out, k = name, 1
    while out in taken:
        out, k = f"{name}_{k}", k + 1
    taken.add(out)
    return out


def remove_unused_preproc(mod: IRModule) -> IRModule:
    """``mod`` without the preproc PrimFuncs no Relax function calls any more (all folded)."""
    preproc = [gv for gv, f in mod.items()
               if isinstance(f, PrimFunc) and f.attrs.get(PREPROC_ATTR)]
    if not preproc:
        return mod
    sites = _CallSites()
    for _, func in relax_functions(mod, include_skipped=True):
        sites.visit_expr(func)
    used = set(sites.constant_args) | sites.escaped
    for gv in preproc:
        if gv not in used:
            mod = mod.without_function(gv)
    return mod
