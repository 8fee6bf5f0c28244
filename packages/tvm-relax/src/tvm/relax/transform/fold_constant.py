"""FoldConstant: evaluate calls whose arguments are all constants, at compile time.

::

    mod = relax.transform.FoldConstant()(mod)
    mod = relax.transform.FoldConstant(evaluator="numpy", max_elements=1 << 16)(mod)

A call is folded when its operator is pure, every argument is a constant (tensor
``Constant``, ``ShapeExpr`` / ``PrimValue`` of immediates, dtype and string immediates,
tuples of these) with at least one constant tensor among them, and its result is a tensor
(or tuple of tensors) of static shape with at most ``max_elements`` elements in all.
``call_tir`` of a PrimFunc of the module with constant inputs folds the same way; calls of
the weight-packing PrimFuncs of SplitLayoutRewritePreproc (attribute
``layout_rewrite_preproc``) fold whatever their size (they only reorder a constant).  The
value replaces the call; variables bound to constants are replaced by the constant in the
calls that use them, so chains fold in one walk; ``t[i]`` of a constant tuple (a folded
``split`` or ``batch_norm``) becomes the field; bindings left unused are removed.

How a call is evaluated (``evaluator``):

``"compile"``  the operator is legalized alone (its ``FLegalize``, as LegalizeOps would),
               the PrimFuncs are compiled for the host target of the plugin registry
               (:func:`tvm.ir.target.host_target`: an installed kind that JIT-compiles for
               this machine; cached per PrimFunc) and run: exactly the code the model
               would run;
``"numpy"``    the reference evaluators of :mod:`tvm.relax.transform.numpy_eval`;
``"auto"``     (default) compile when a host JIT target is installed, numpy otherwise or
               when the compiled route cannot handle the call.

A call nothing can evaluate is left as it is.  Never folded: impure calls, allocations
(``relax.builtin.*``, ``relax.memory.*``, ``relax.vm.*``), packed calls, and calls whose
arguments are only shapes or scalars (creation operators like ``zeros`` stay compact).
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from tvm.ffi import StructuralMap
from tvm.ffi.dtype import to_numpy_dtype
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.target import Target, UnknownTargetKindError, host_target
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.expr import FloatImm, IntImm
from tvm.tir.function import PrimFunc

from ..analysis.struct_info_analysis import get_static_shape
from ..expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    Function,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._graph_utils import map_relax_functions
from .numpy_eval import NumpyEvalError, constant_value, evaluate_with_numpy

__all__ = ["FoldConstant", "fold_constant", "DEFAULT_MAX_ELEMENTS"]

DEFAULT_MAX_ELEMENTS = 1 << 24
_EVALUATORS = ("auto", "compile", "numpy")
_NEVER_FOLDED_PREFIXES = ("relax.builtin.", "relax.memory.", "relax.vm.", "relax.call_dps_packed",
                          "relax.call_pure_packed")


class _CannotEvaluate(Exception):
    pass


# -- constant leaves --------------------------------------------------------------------------
def _is_constant_leaf(expr: Any) -> bool:
    if isinstance(expr, (Constant, DataTypeImm, StringImm)):
        return True
    if isinstance(expr, ShapeExpr):
        return all(isinstance(v, IntImm) for v in expr.values)
    if isinstance(expr, PrimValue):
        return isinstance(expr.value, (IntImm, FloatImm))
    if isinstance(expr, Tuple):
        return all(_is_constant_leaf(f) for f in expr.fields)
    return False


def _has_tensor(expr: Any) -> bool:
    if isinstance(expr, Constant):
        return True
    return isinstance(expr, Tuple) and any(_has_tensor(f) for f in expr.fields)


def _result_elements(sinfo: Any) -> Optional[int]:
    """Total elements of a static tensor (tuple) StructInfo, None if not static tensors."""
    if isinstance(sinfo, TupleStructInfo):
        sizes = [_result_elements(f) for f in sinfo.fields]
        return None if any(s is None for s in sizes) else sum(sizes)
    if isinstance(sinfo, TensorStructInfo) and not sinfo.is_unknown_dtype:
        shape = get_static_shape(sinfo)
        return None if shape is None else int(np.prod(shape, dtype=np.int64))
    return None


def _as_constant(value: Any, sinfo: Any) -> Expr:
    if isinstance(sinfo, TupleStructInfo):
        return Tuple([_as_constant(v, s) for v, s in zip(value, sinfo.fields)])
    array = np.asarray(np.asarray(value).astype(to_numpy_dtype(sinfo.dtype)), order="C")
    return Constant(array)


# -- the compiled route -----------------------------------------------------------------------
# host target string -> (PrimFunc -> compiled ``main``): structurally equal PrimFuncs (the same
# operator on the same shapes, folded again in another function or build) share one
# compilation per host target.
_COMPILED: dict[str, StructuralMap[Any]] = {}


def _packing_target(target: Target) -> Target:
    """The weight-packing PrimFuncs run once per build: compiled without optimisation (the
    kind's ``opt-level`` attribute, where it has one, set to 0), which halves their compile
    time."""
    attr = target.kind.resolve_attr("opt-level")
    if attr is None or target.kind.attrs[attr][0] is not int:
        return target
    return target.with_fields(attrs={**target.attrs, attr: 0})


def _compiled(func: PrimFunc, host: Target) -> Any:
    from tvm.tir.build import build

    func = func.without_attr("global_symbol")

    def compile_main() -> Any:
        target = _packing_target(host) if func.attrs.get("layout_rewrite_preproc") else host
        return build(func, target=target, name="main")["main"]

    # the attribute is part of the key, so packing functions never share an entry with others
    cache = _COMPILED.setdefault(str(host), StructuralMap(max_size=256))
    return cache.get_or_add(func, compile_main)


def _run_prim_func(func: PrimFunc, inputs: list[Any], out_sinfo: Any, scalars: list[int],
                   host: Target) -> Any:
    from tvm import runtime

    outs_sinfo = out_sinfo.fields if isinstance(out_sinfo, TupleStructInfo) else [out_sinfo]
    outs = []
    for s in outs_sinfo:
        shape = get_static_shape(s)
        if shape is None or not isinstance(s, TensorStructInfo):
            raise _CannotEvaluate("call_tir output of unknown shape")
        outs.append(runtime.empty(shape, s.dtype))
    args = [runtime.tensor(np.asarray(a, order="C")) for a in inputs]
    _compiled(func, host)(*args, *outs, *scalars)
    values = [o.numpy() for o in outs]
    return tuple(values) if isinstance(out_sinfo, TupleStructInfo) else values[0]


class _LegalizedInterpreter:
    """Evaluates the bindings a legalization produced (call_tir, tuples, numpy fallbacks),
    compiling PrimFuncs for ``host``."""

    def __init__(self, mod: IRModule, host: Target):
        self.mod = mod
        self.host = host
        self.values: dict[int, Any] = {}

    def eval(self, expr: Any) -> Any:
        if isinstance(expr, Var):
            if id(expr) not in self.values:
                raise _CannotEvaluate(f"unbound variable {expr.name_hint}")
            return self.values[id(expr)]
        if isinstance(expr, Tuple):
            return tuple(self.eval(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return self.eval(expr.tuple_value)[expr.index]
        if isinstance(expr, Call) and isinstance(expr.op, Op):
            if expr.op.name == "relax.call_tir":
                return self.call_tir(expr)
            args = [self.eval(a) for a in expr.args]
            value = evaluate_with_numpy(expr, list(args))
            if value is None:
                raise _CannotEvaluate(f"{expr.op.name} was not legalized")
            return value
        if _is_constant_leaf(expr):
            return constant_value(expr)
        raise _CannotEvaluate(f"cannot evaluate {type(expr).__name__}")

    def call_tir(self, call: Call) -> Any:
        gv = call.args[0]
        func = self.mod[gv] if isinstance(gv, GlobalVar) and gv in self.mod else None
        if not isinstance(func, PrimFunc):
            raise _CannotEvaluate("call_tir callee is not a PrimFunc of the module")
        inputs = [np.asarray(v) for v in self.eval(call.args[1])]
        scalars = list(self.eval(call.args[2])) if len(call.args) > 2 else []
        return _run_prim_func(func, inputs, call.sinfo_args[0], scalars, self.host)

    def run_function(self, func: Function) -> Any:
        for block in func.body.blocks:
            for b in block.bindings:
                if not isinstance(b, VarBinding):
                    raise _CannotEvaluate("match_cast in a legalization")
                self.values[id(b.var)] = self.eval(b.value)
        return self.eval(func.body.body)


def _evaluate_compiled(call: Call, host: Target) -> Any:
    from ..block_builder import BlockBuilder
    from .legalize_ops import LegalizeOps

    if call.op.get_attr("FLegalize") is None:
        raise _CannotEvaluate(f"{call.op.name} has no legalization")
    bb = BlockBuilder()
    with bb.function("main", [], private=True):
        out = bb.emit(call)
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    return _LegalizedInterpreter(mod, host).run_function(mod["main"])


# -- the pass ---------------------------------------------------------------------------------
class _Folder(ExprMutator):
    def __init__(self, mod: IRModule, evaluator: str, max_elements: int,
                 layout_rewrite_only: bool = False):
        super().__init__(mod)
        self.layout_rewrite_only = layout_rewrite_only
        self.mod = mod
        # the host JIT target the compiled route uses, None: numpy only
        self.host = None if evaluator == "numpy" else host_target(allow_none=evaluator == "auto")
        self.numpy_fallback = evaluator in ("auto", "numpy")
        self.max_elements = max_elements
        self.constants: dict[int, tuple[Var, Expr]] = {}
        self.folded = 0

    def _constant_of(self, expr: Any) -> Any:
        if isinstance(expr, Var):
            entry = self.constants.get(id(expr))
            if entry is not None and entry[0] is expr:
                return entry[1]
        if isinstance(expr, Tuple):
            fields = [self._constant_of(f) for f in expr.fields]
            if any(a is not b for a, b in zip(fields, expr.fields)):
                return Tuple(fields, span=expr.span)
        return expr

    def visit_call_(self, call: Call) -> Expr:
        new = super().visit_call_(call)
        args = [self._constant_of(a) for a in new.args]
        if any(a is not b for a, b in zip(args, new.args)):
            new = Call(new.op, args, new.attrs, new.sinfo_args, span=new.span)
        if not isinstance(new.op, Op) or not self._foldable(new):
            return new
        if self.layout_rewrite_only and not self._layout_rewrite(new):
            return new
        new = self.builder_.normalize(new)
        size = _result_elements(new.struct_info)
        if size is None or (size > self.max_elements and not self._layout_rewrite(new)):
            return new
        value = self._evaluate(new)
        if value is None:
            return new
        self.folded += 1
        return _as_constant(value, new.struct_info)

    def visit_tuple_get_item_(self, expr: TupleGetItem) -> Expr:
        new = super().visit_tuple_get_item_(expr)
        tup = self._constant_of(new.tuple_value)
        if isinstance(tup, Tuple) and _is_constant_leaf(tup) and 0 <= new.index < len(tup.fields):
            self.folded += 1
            return tup.fields[new.index]
        return new

    def _layout_rewrite(self, call: Call) -> bool:
        """A call_tir of a weight-packing PrimFunc (attribute ``layout_rewrite_preproc``)."""
        if call.op.name != "relax.call_tir" or not isinstance(call.args[0], GlobalVar):
            return False
        func = self.mod[call.args[0]] if call.args[0] in self.mod else None
        return isinstance(func, PrimFunc) and bool(func.attrs.get("layout_rewrite_preproc"))

    def _foldable(self, call: Call) -> bool:
        op = call.op
        if op.name.startswith(_NEVER_FOLDED_PREFIXES) or op.get_attr("FPurity") is False:
            return False
        if op.name == "relax.call_tir":
            return _is_constant_leaf(call.args[1]) and all(
                _is_constant_leaf(a) for a in call.args[2:]
            )
        return all(_is_constant_leaf(a) for a in call.args) and any(
            _has_tensor(a) for a in call.args
        )

    def _evaluate(self, call: Call) -> Any:
        if call.op.name == "relax.call_tir":
            if self.host is None:
                return None
            try:
                return _LegalizedInterpreter(self.mod, self.host).call_tir(call)
            except _CannotEvaluate:
                return None
        if self.host is not None:
            try:
                return _evaluate_compiled(call, self.host)
            except _CannotEvaluate:
                pass
            except Exception as err:  # noqa: BLE001 - an optimisation must not stop the build
                warnings.warn(
                    f"FoldConstant: evaluating {call.op.name} compiled for {self.host} failed "
                    f"({type(err).__name__}: {err}); trying numpy",
                    stacklevel=2,
                )
        if self.numpy_fallback:
            try:
                return evaluate_with_numpy(call, [constant_value(a) for a in call.args])
            except NumpyEvalError:
                return None
        return None

    def visit_var_binding_(self, binding: VarBinding) -> None:
        super().visit_var_binding_(binding)
        var = self.var_remap.get(binding.var, binding.var)
        value = self.builder_.lookup_binding(var) if isinstance(var, Var) else None
        if value is not None and _is_constant_leaf(value) and _has_tensor(value):
            self.constants[id(var)] = (var, value)


def fold_constant(
    func: Function,
    mod: Optional[IRModule] = None,
    evaluator: str = "auto",
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    layout_rewrite_only: bool = False,
) -> Function:
    """``func`` with constant calls evaluated (see the module docstring)."""
    from .dead_code_elimination import remove_unused_bindings

    folder = _Folder(mod if mod is not None else IRModule(), evaluator, max_elements,
                     layout_rewrite_only)
    new = folder.visit_expr(func)
    if not folder.folded:
        return func
    return remove_unused_bindings(new, mod)


def FoldConstant(  # noqa: N802 - pass constructors are CamelCase
    evaluator: str = "auto", max_elements: int = DEFAULT_MAX_ELEMENTS,
    layout_rewrite_only: bool = False,
) -> Any:
    """The constant-folding pass (module docstring); ``layout_rewrite_only`` folds only the
    calls of weight-packing PrimFuncs (``relax.build`` after SplitLayoutRewritePreproc)."""
    if evaluator not in _EVALUATORS:
        raise ValueError(f"FoldConstant: evaluator must be one of {_EVALUATORS}, got {evaluator!r}")
    if evaluator == "compile":
        try:
            host_target()
        except UnknownTargetKindError as err:
            raise ValueError(
                f"FoldConstant(evaluator='compile') compiles for the host target: {err} (or "
                "use evaluator='auto' / 'numpy')"
            ) from None
    if not isinstance(max_elements, int) or max_elements < 0:
        raise ValueError(f"FoldConstant: max_elements must be a non-negative int, got {max_elements!r}")

    @module_pass(opt_level=1, name="FoldConstant")
    def fold(mod: IRModule, ctx: PassContext) -> IRModule:
        return map_relax_functions(
            mod, lambda f, gv: fold_constant(f, mod, evaluator, max_elements,
                                             layout_rewrite_only)
        )

    return fold
