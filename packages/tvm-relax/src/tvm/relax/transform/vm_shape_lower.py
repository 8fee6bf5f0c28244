"""VMShapeLower: run-time checks of parameters and ``match_cast``, and symbolic shape binding.

For every parameter (and every ``match_cast``) it inserts calls of VM builtins that the code
generator turns into instructions:

* ``vm.builtin.check_tensor_info(x, ndim, dtype, ctx)`` (``check_shape_info``,
  ``check_prim_value``, ``check_tuple_info`` for other kinds; tuples are checked field by
  field through ``TupleGetItem``);
* ``vm.builtin.match_shape(x, R.shape([n, 256]), codes, ctx)``: one code per dimension,
  ``"I"`` compare with a constant, ``"S"`` store into the variable (its first occurrence
  defines it), ``"A"`` compare with an expression of defined variables, ``"N"`` nothing;
* ``vm.builtin.match_prim_value(v, R.prim_value(e), code, ctx)`` for symbolic scalars.

``ctx`` names what is checked (``"main: parameter x"``), so a wrong input fails with the
parameter, the expected and the given.  A dimension such as ``n + 1`` whose variables are
not known yet is checked after all parameters; a variable no parameter defines is an error
at compile time.  ``match_cast`` becomes a plain binding after its checks.  Shape
expressions used elsewhere (allocation sizes, ``R.shape([n * 4])``, ``tir_vars``) are left
as they are: the code generator evaluates them from the variables bound here.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.expr import IntImm, PrimExpr, Var as TirVar
from tvm.tir.stmt_functor import free_vars as tir_free_vars

from ..errors import RelaxError
from ..expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ._graph_utils import map_relax_functions

__all__ = ["VMShapeLower", "CHECK_BUILTINS"]

#: builtins inserted by this pass (the VM code generator turns them into instructions)
CHECK_BUILTINS = (
    "vm.builtin.check_tensor_info",
    "vm.builtin.check_shape_info",
    "vm.builtin.check_prim_value",
    "vm.builtin.check_tuple_info",
    "vm.builtin.match_shape",
    "vm.builtin.match_prim_value",
)


def _builtin(name: str, args: list[Any]) -> Call:
    call = Call(ExternFunc(name), args, None, [ObjectStructInfo()])
    object.__setattr__(call, "struct_info_", ObjectStructInfo())
    return call


def _describe(vars_: list[TirVar]) -> str:
    return ", ".join(sorted({v.name for v in vars_}))


class _Lowerer:
    def __init__(self, fname: str):
        self.fname = fname
        self.out: list[Binding] = []
        self.bound: set[int] = set()
        self.deferred: list[tuple[Any, list[PrimExpr], str, str]] = []

    # -- emitting -----------------------------------------------------------------------------
    def _emit(self, name: str, args: list[Any]) -> None:
        self.out.append(VarBinding(Var("_", ObjectStructInfo()), _builtin(name, args)))

    def check(self, value: Any, sinfo: StructInfo, ctx: str) -> None:
        if isinstance(sinfo, TensorStructInfo):
            dtype = "" if sinfo.is_unknown_dtype else sinfo.dtype
            self._emit("vm.builtin.check_tensor_info",
                       [value, PrimValue(sinfo.ndim), StringImm(dtype), StringImm(ctx)])
            values = sinfo.shape_values
            if values is not None and not isinstance(sinfo.shape, Var):
                self._match("vm.builtin.match_shape", value, list(values), ctx)
        elif isinstance(sinfo, ShapeStructInfo):
            self._emit("vm.builtin.check_shape_info",
                       [value, PrimValue(sinfo.ndim), StringImm(ctx)])
            if sinfo.values is not None:
                self._match("vm.builtin.match_shape", value, list(sinfo.values), ctx)
        elif isinstance(sinfo, PrimStructInfo):
            self._emit("vm.builtin.check_prim_value",
                       [value, StringImm(sinfo.dtype or ""), StringImm(ctx)])
            if sinfo.value is not None and not isinstance(sinfo.value, IntImm) and \
                    sinfo.dtype.startswith(("int", "uint")):
                self._match("vm.builtin.match_prim_value", value, [sinfo.value], ctx)
        elif isinstance(sinfo, TupleStructInfo):
            self._emit("vm.builtin.check_tuple_info",
                       [value, PrimValue(len(sinfo.fields)), StringImm(ctx)])
            for k, field in enumerate(sinfo.fields):
                if isinstance(field, ObjectStructInfo):
                    continue
                item = Var(f"{getattr(value, 'name_hint', 'tuple')}_{k}", field)
                get = TupleGetItem(value, k)
                object.__setattr__(get, "struct_info_", field)
                self.out.append(VarBinding(item, get))
                self.check(item, field, f"{ctx}[{k}]")

    def _match(self, builtin: str, value: Any, dims: list[PrimExpr], ctx: str) -> None:
        codes = []
        late = False
        for d in dims:
            if isinstance(d, IntImm):
                codes.append("I")
            elif isinstance(d, TirVar) and id(d) not in self.bound:
                codes.append("S")
                self.bound.add(id(d))
            elif all(id(v) in self.bound for v in tir_free_vars(d)):
                codes.append("A")
            else:
                codes.append("N")
                late = True
        if late:
            self.deferred.append((value, dims, "".join(codes), ctx))
        if any(c != "N" for c in codes):
            self._emit(builtin, [value, self._dims_expr(builtin, dims), StringImm("".join(codes)),
                                 StringImm(ctx)])

    @staticmethod
    def _dims_expr(builtin: str, dims: list[PrimExpr]) -> Any:
        return PrimValue(dims[0]) if builtin == "vm.builtin.match_prim_value" else ShapeExpr(dims)

    def resolve(self) -> None:
        """Check the dimensions that waited for variables defined later."""
        pending, self.deferred = self.deferred, []
        for value, dims, codes, ctx in pending:
            new_codes = []
            for d, c in zip(dims, codes):
                if c != "N":
                    new_codes.append("N")
                    continue
                missing = [v for v in tir_free_vars(d) if id(v) not in self.bound]
                if missing:
                    raise RelaxError(
                        f"VMShapeLower: {ctx} has dimension {d} whose symbolic variable(s) "
                        f"{_describe(missing)} no parameter defines; give a parameter (or a "
                        "match_cast) a plain dimension of that name"
                    )
                new_codes.append("A")
            builtin = "vm.builtin.match_prim_value" if len(dims) == 1 and isinstance(
                getattr(value, "struct_info_", None), PrimStructInfo) else "vm.builtin.match_shape"
            self._emit(builtin, [value, self._dims_expr(builtin, dims),
                                 StringImm("".join(new_codes)), StringImm(ctx)])

    # -- walking ------------------------------------------------------------------------------
    def seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = []
        for block in seq.blocks:
            saved, self.out = self.out, []
            for b in block.bindings:
                self.binding(b)
            new = BindingBlock(self.out, span=block.span) if not isinstance(
                block, DataflowBlock) else DataflowBlock(self.out, span=block.span)
            self.out = saved
            blocks.append(new)
        out = SeqExpr(blocks, seq.body, span=seq.span)
        object.__setattr__(out, "struct_info_", seq.struct_info_)
        return out

    def binding(self, b: Binding) -> None:
        if isinstance(b, MatchCast):
            self.check(b.value, b.struct_info, f"{self.fname}: match_cast to {b.var.name_hint}")
            self.resolve()
            self.out.append(VarBinding(b.var, b.value, span=b.span))
            return
        value = b.value
        if isinstance(value, If):
            outer = set(self.bound)
            then = self.seq(value.true_branch)
            self.bound = set(outer)
            other = self.seq(value.false_branch)
            self.bound = outer
            new_if = If(value.cond, then, other, span=value.span)
            object.__setattr__(new_if, "struct_info_", value.struct_info_)
            b = VarBinding(b.var, new_if, span=b.span)
        self.out.append(b)


def lower_function(func: Function, name: str) -> Optional[Function]:
    """``func`` with shape checks inserted (None when it has no body)."""
    if not isinstance(func.body, SeqExpr):
        return None
    low = _Lowerer(name)
    for p in func.params:
        low.check(p, p.struct_info, f"{name}: parameter {p.name_hint}")
    low.resolve()
    prologue = low.out
    low.out = []
    body = low.seq(func.body)
    if prologue:
        blocks = list(body.blocks)
        if blocks and not isinstance(blocks[0], DataflowBlock):
            blocks[0] = BindingBlock([*prologue, *blocks[0].bindings], span=blocks[0].span)
        else:
            blocks.insert(0, BindingBlock(prologue))
        body = SeqExpr(blocks, body.body, span=body.span)
        object.__setattr__(body, "struct_info_", func.body.struct_info_)
    attrs = {"relax.force_pure": True} if func.is_pure else {}
    new = func.with_fields(body=body)
    return new.with_attrs(attrs) if attrs else new


def VMShapeLower() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass (see the module docstring); run it after VMBuiltinLower."""

    @module_pass(opt_level=0, name="VMShapeLower")
    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        return map_relax_functions(mod, lambda func, gv: lower_function(func, gv.name_hint))

    return run
