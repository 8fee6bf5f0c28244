"""LegalizeOps: lower every Relax operator call to ``call_tir`` of a TIR PrimFunc.

::

    mod = relax.transform.LegalizeOps()(mod)
    # lv = R.matmul(a, b)  ->  lv = R.call_tir(matmul, (a, b), out_sinfo=R.Tensor((128, 512)))

Each operator's lowering is its ``FLegalize`` attribute, declared next to the operator
(``@spec.legalize`` in its family module): ``fn(bb, call) -> Expr``, usually
``bb.call_te(te_compute, *call.args, ...)`` which adds a PrimFunc named after the operator
to the module (structurally equal PrimFuncs are added once; clashing names get a suffix).
Symbolic shapes carry over: the PrimFunc's buffers use the same shape variables.

Override a lowering per run with ``LegalizeOps(customize_legalize_map={"relax.add": fn})``
or globally with :func:`register_legalize` (``override=True`` to replace a default).

Calls are left as they are (a warning with ``enable_warning=True``) when the operator has
no legalization, or when an argument or the result has an unknown shape or dtype (make
them known with ``match_cast`` first), unless the operator sets the op attribute
``"RequiresArgumentShapes"`` to False (operators with data-dependent output shapes, whose
lowering binds the result's shape at run time with ``match_cast``).  A lowering may return
an expression that calls other operators; those are legalized too.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, Optional

from tvm.ffi import StructuralMap, structural_equal
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass

from ..analysis.struct_info_analysis import prim_equal
from ..block_builder import BlockBuilder
from ..expr import Call, Constant, Expr, Function, ShapeExpr, Tuple, Var
from ..expr_functor import ExprMutator
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo

__all__ = ["LegalizeOps", "register_legalize", "get_legalize", "LegalizeFunc"]

LegalizeFunc = Callable[[BlockBuilder, Call], Expr]

# Functions produced for external code generators are not lowered to TIR.
_SKIP_FUNC_ATTRS = ("Codegen", "Composite")
_MAX_DEPTH = 16


def register_legalize(
    op_name: str, legal_func: Optional[LegalizeFunc] = None, *, override: bool = False
) -> Any:
    """Set ``legal_func`` as the legalization of ``op_name`` (also usable as a decorator).

    Replacing an existing legalization needs ``override=True``.
    """
    op = Op.get(op_name)

    def register(fn: LegalizeFunc) -> LegalizeFunc:
        if not callable(fn):
            raise TypeError(f"register_legalize({op_name!r}): expected a callable, got {fn!r}")
        existing = op.get_attr("FLegalize")
        if existing is not None and existing is not fn and not override:
            raise ValueError(
                f"{op_name} already has a legalization ({_describe(existing)}); pass "
                "override=True to replace it"
            )
        op.set_attr("FLegalize", fn)
        return fn

    return register(legal_func) if legal_func is not None else register


def get_legalize(op_name: str) -> Optional[LegalizeFunc]:
    """The registered legalization of ``op_name`` (None if it has none)."""
    return Op.get(op_name).get_attr("FLegalize")


def _describe(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _known(sinfo: Optional[StructInfo]) -> bool:
    """Every tensor in ``sinfo`` has a known shape and dtype."""
    if isinstance(sinfo, TensorStructInfo):
        return sinfo.shape_values is not None and not sinfo.is_unknown_dtype
    if isinstance(sinfo, TupleStructInfo):
        return all(_known(f) for f in sinfo.fields)
    return True


class _Legalizer(ExprMutator):
    def __init__(self, mod: IRModule, custom: Mapping[str, LegalizeFunc], warn: bool):
        super().__init__(mod)
        self.custom = dict(custom)
        self.warn = warn
        self.skipped: dict[str, str] = {}
        # (op, attrs, sinfo_args, argument StructInfo / constants) -> (args, lowered call):
        # a chain of identical calls builds its PrimFunc once
        self._lowered: StructuralMap = StructuralMap()

    def _lookup(self, op: Op) -> Optional[LegalizeFunc]:
        return self.custom.get(op.name) or op.get_attr("FLegalize")

    def visit_call_(self, call: Call) -> Expr:
        new = super().visit_call_(call)
        return self._legalize(new, 0) if isinstance(new.op, Op) else new

    def _legalize(self, call: Call, depth: int) -> Expr:
        bb = self.builder_
        call = bb.normalize(call)
        op = call.op
        fn = self._lookup(op)
        if fn is None:
            if op.get_attr("FInferStructInfo") is not None and not op.name.startswith(
                ("relax.call_", "relax.builtin.", "relax.vm.", "relax.memory.")
            ):
                self.skipped.setdefault(op.name, "it has no legalization")
            return call
        # "RequiresArgumentShapes" False: a data-dependent op whose lowering handles unknown
        # shapes itself (it returns the call unchanged when it cannot lower it).
        if op.get_attr("RequiresArgumentShapes") is not False and not (
            _known(call.struct_info)
            and all(_known(getattr(a, "struct_info_", None)) for a in call.args)
        ):
            self.skipped.setdefault(
                op.name, "an argument or the result has an unknown shape or dtype"
            )
            return call
        key = _cache_key(call)
        hit = self._lowered.get(key) if key is not None else None
        if hit is not None:
            reused = _rebind(hit[1], hit[0], call.args)
            if isinstance(reused, Call) and reused.span is not call.span:
                reused = reused.with_fields(span=call.span)
            if reused is not None:
                return reused
        out = fn(bb, call)
        if out is call or out is None:
            return call
        if not isinstance(out, Expr):
            raise TypeError(
                f"the legalization of {op.name} ({_describe(fn)}) returned "
                f"{type(out).__name__}; expected a Relax expression"
            )
        out = self._keep_struct_info(out, call.struct_info)
        if depth < _MAX_DEPTH:
            out = self._legalize_tree(out, depth + 1)
        if key is not None and _rebind(out, call.args, call.args) is not None and \
                not _new_symbols(out, call):
            self._lowered[key] = (call.args, out)
        return out

    def _legalize_tree(self, expr: Expr, depth: int) -> Expr:
        """Legalize the operator calls a lowering returned (innermost first)."""
        if isinstance(expr, Tuple):
            fields = [self._legalize_argument(f, depth) for f in expr.fields]
            if all(a is b for a, b in zip(fields, expr.fields)):
                return expr
            return Tuple(fields, span=expr.span)
        if not isinstance(expr, Call):
            return expr
        args = [self._legalize_argument(a, depth) for a in expr.args]
        if any(a is not b for a, b in zip(args, expr.args)):
            expr = Call(expr.op, args, expr.attrs, expr.sinfo_args, span=expr.span)
        if isinstance(expr.op, Op):
            return self._legalize(expr, depth)
        return expr

    def _legalize_argument(self, expr: Expr, depth: int) -> Expr:
        if isinstance(expr, (Call, Tuple)):
            return self.builder_.normalize_argument(self._legalize_tree(expr, depth))
        return expr

    def _keep_struct_info(self, out: Expr, old: StructInfo) -> Expr:
        """A ``call_tir`` keeps the call's (simpler, symbolic) StructInfo when provably equal."""
        if not (isinstance(out, Call) and isinstance(out.op, Op) and out.op.name == "relax.call_tir"):
            return out
        new = out.sinfo_args[0]
        if new is old or structural_equal(new, old):
            return out
        if not _same_shapes(new, old, self.builder_.analyzer):
            return out
        return Call(out.op, out.args, out.attrs, [old], span=out.span)


def _new_symbols(out: Expr, call: Call) -> bool:
    """Whether the lowered ``out`` mentions shape variables that neither the call's
    arguments nor its result know: sizes its lowering computed and bound at run time
    (``nonzero``'s count), which an identical later call must compute again."""
    from ..analysis.struct_info_analysis import tir_vars_in_struct_info

    known: set[int] = set()
    for sinfo in [call.struct_info] + [getattr(a, "struct_info_", None) for a in call.args]:
        if sinfo is not None:
            known.update(id(v) for v in tir_vars_in_struct_info(sinfo))
    sinfo = getattr(out, "struct_info_", None)
    return sinfo is not None and any(id(v) not in known for v in tir_vars_in_struct_info(sinfo))


def _cache_key(call: Call) -> Optional[tuple]:
    """What a lowering may depend on: the operator, its attributes and result types, and
    each argument's StructInfo (a constant's value too), and which arguments are one value.
    None for an argument that is not
    a variable, constant or tuple of those."""
    parts: list[Any] = []
    # which arguments are the same value (matmul(x, x) lowers to a one-input kernel)
    first: dict[int, int] = {}
    leaves = [f for a in call.args for f in (a.fields if isinstance(a, Tuple) else (a,))]
    aliasing = tuple(first.setdefault(id(v), k) for k, v in enumerate(leaves))
    for arg in call.args:
        if isinstance(arg, Constant):
            parts.append(arg)
        elif isinstance(arg, Var):
            parts.append(arg.struct_info)
        elif isinstance(arg, Tuple) and all(isinstance(f, Var) for f in arg.fields):
            parts.append(tuple(f.struct_info for f in arg.fields))
        elif isinstance(arg, ShapeExpr):
            parts.append(arg)
        else:
            return None
    return (call.op.name, call.attrs, tuple(call.sinfo_args), tuple(parts), aliasing)


def _rebind(out: Expr, old_args: Any, new_args: Any) -> Optional[Expr]:
    """The lowered ``out`` of a call with ``old_args`` rewritten for ``new_args``; None
    when ``out`` refers to a variable that is not one of the arguments (a lowering that
    emitted bindings of its own is not reused)."""
    mapping: dict[int, Expr] = {}
    for old, new in zip(old_args, new_args):
        mapping[id(old)] = new
        if isinstance(old, Tuple) and isinstance(new, Tuple):
            for a, b in zip(old.fields, new.fields):
                mapping[id(a)] = b

    def walk(expr: Any) -> Any:
        if id(expr) in mapping:
            return mapping[id(expr)]
        if isinstance(expr, Var):
            raise LookupError
        if isinstance(expr, Tuple):
            fields = [walk(f) for f in expr.fields]
            if all(a is b for a, b in zip(fields, expr.fields)):
                return expr
            new = Tuple(fields, span=expr.span)
            object.__setattr__(new, "struct_info_", expr.struct_info_)
            return new
        if isinstance(expr, Call):
            args = [walk(a) for a in expr.args]
            if all(a is b for a, b in zip(args, expr.args)):
                return expr
            new = Call(expr.op, args, expr.attrs, expr.sinfo_args, span=expr.span)
            object.__setattr__(new, "struct_info_", expr.struct_info_)
            return new
        return expr

    try:
        return walk(out)
    except LookupError:
        return None


def _same_shapes(new: StructInfo, old: StructInfo, analyzer: Any) -> bool:
    if isinstance(new, TupleStructInfo) and isinstance(old, TupleStructInfo):
        return len(new.fields) == len(old.fields) and all(
            _same_shapes(a, b, analyzer) for a, b in zip(new.fields, old.fields)
        )
    if not (isinstance(new, TensorStructInfo) and isinstance(old, TensorStructInfo)):
        return False
    a, b = new.shape_values, old.shape_values
    return (
        new.dtype == old.dtype and a is not None and b is not None and len(a) == len(b)
        and all(prim_equal(x, y, analyzer) is True for x, y in zip(a, b))
    )


def LegalizeOps(  # noqa: N802 - pass constructors are CamelCase
    customize_legalize_map: Optional[Mapping[str, LegalizeFunc]] = None,
    enable_warning: bool = False,
) -> Any:
    """The pass lowering operator calls of every Relax function to ``call_tir``.

    ``customize_legalize_map`` maps operator names to legalizations used instead of the
    registered ones; ``enable_warning`` warns about calls left unchanged and why.
    """
    custom = dict(customize_legalize_map or {})
    for name, fn in custom.items():
        Op.get(name)  # unknown names fail early, with close matches
        if not callable(fn):
            raise TypeError(f"LegalizeOps: customize_legalize_map[{name!r}] is not callable")

    @module_pass(opt_level=0, name="LegalizeOps")
    def legalize_ops(mod: IRModule, ctx: PassContext) -> IRModule:
        mutator = _Legalizer(mod, custom, enable_warning)
        updates = []
        for gv, func in mod.items():
            if not isinstance(func, Function):
                continue
            if any(func.attrs.get(key) for key in _SKIP_FUNC_ATTRS):
                continue
            new = mutator.visit_expr(func)
            if new is not func:
                updates.append((gv, new))
        if not updates and not mutator.skipped:
            return mod
        for gv, new in updates:
            mutator.builder_.update_func(gv, new)
        if enable_warning and mutator.skipped:
            lines = "; ".join(f"{name}: {why}" for name, why in sorted(mutator.skipped.items()))
            warnings.warn(f"LegalizeOps left some calls unchanged ({lines})", stacklevel=2)
        return mutator.builder_.get() if updates else mod

    return legalize_ops
