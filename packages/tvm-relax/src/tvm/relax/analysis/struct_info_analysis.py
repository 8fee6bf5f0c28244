"""Reasoning over StructInfo: erasure, least common ancestor, base checks, call derivation.

* :func:`erase_to_well_defined` drops what refers to symbolic variables that are not
  defined in a scope (a function's return StructInfo may only use its parameters' ones);
* :func:`struct_info_lca` joins the StructInfo of two branches;
* :func:`struct_info_base_check` / :func:`is_base_of` decide whether a value of one
  StructInfo may be passed where another is expected (statically, or with a runtime check);
* :func:`derive_call_ret_struct_info` matches call arguments against a function's
  parameters, binding its symbolic variables, and instantiates the return StructInfo.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from tvm.arith import Analyzer
from tvm.ffi import structural_equal
from tvm.tir.expr import IntImm, PrimExpr, Var as TirVar
from tvm.tir.stmt_functor import free_vars, substitute

from ..errors import StructInfoError
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    shape_values_of,
)

__all__ = [
    "BaseCheckResult",
    "erase_to_well_defined",
    "struct_info_lca",
    "struct_info_base_check",
    "is_base_of",
    "derive_call_ret_struct_info",
    "get_static_shape",
    "tir_vars_in_struct_info",
    "definable_tir_vars_in_struct_info",
    "params_var_map",
    "prim_equal",
]

ShapeVarMap = Union[Mapping[TirVar, PrimExpr], Callable[[TirVar], Optional[PrimExpr]], None]


# -- symbolic variables ----------------------------------------------------------------------
def _prim_exprs(sinfo: StructInfo) -> list[PrimExpr]:
    """Every PrimExpr in a StructInfo, outermost first."""
    out: list[PrimExpr] = []

    def walk(s: StructInfo) -> None:
        if isinstance(s, PrimStructInfo) and s.value is not None:
            out.append(s.value)
        elif isinstance(s, ShapeStructInfo) and s.values is not None:
            out.extend(s.values)
        elif isinstance(s, TensorStructInfo):
            values = shape_values_of(s.shape)
            if values is not None:
                out.extend(values)
        elif isinstance(s, TupleStructInfo):
            for f in s.fields:
                walk(f)
        elif isinstance(s, FuncStructInfo):
            for p in s.params or ():
                walk(p)
            walk(s.ret)

    walk(sinfo)
    return out


def tir_vars_in_struct_info(sinfo: StructInfo) -> list[TirVar]:
    """All symbolic variables a StructInfo mentions, in order of first appearance."""
    seen: dict[int, TirVar] = {}
    for expr in _prim_exprs(sinfo):
        for v in free_vars(expr):
            seen.setdefault(id(v), v)
    return list(seen.values())


def definable_tir_vars_in_struct_info(sinfo: StructInfo) -> list[TirVar]:
    """Symbolic variables a value of this StructInfo defines: those that are a whole dimension
    (``(n, 4)`` defines ``n``; ``(n * 2,)`` defines nothing) or a PrimStructInfo value."""
    seen: dict[int, TirVar] = {}
    for expr in _prim_exprs(sinfo):
        if isinstance(expr, TirVar):
            seen.setdefault(id(expr), expr)
    return list(seen.values())


def params_var_map(params: Sequence[Any]) -> dict[TirVar, PrimExpr]:
    """Identity map of the symbolic variables of function parameters (for erasure)."""
    out: dict[TirVar, PrimExpr] = {}
    for p in params:
        sinfo = getattr(p, "struct_info_", None)
        if sinfo is not None:
            for v in tir_vars_in_struct_info(sinfo):
                out[v] = v
    return out


# -- erasure ---------------------------------------------------------------------------------
def _lookup(shape_var_map: ShapeVarMap, var: TirVar) -> Optional[PrimExpr]:
    if shape_var_map is None:
        return None
    if callable(shape_var_map) and not isinstance(shape_var_map, Mapping):
        return shape_var_map(var)
    return shape_var_map.get(var)


def _subst_defined(
    expr: PrimExpr, shape_var_map: ShapeVarMap, analyzer: Optional[Analyzer] = None
) -> Optional[PrimExpr]:
    """``expr`` with mapped variables substituted (and simplified), or None if it uses an
    unmapped one."""
    vmap = {}
    for v in free_vars(expr):
        value = _lookup(shape_var_map, v)
        if value is None:
            return None
        if value is not v:
            vmap[v] = value
    if not vmap:
        return expr
    return (analyzer or Analyzer()).simplify(substitute(expr, vmap))


def erase_to_well_defined(
    sinfo: StructInfo,
    shape_var_map: ShapeVarMap = None,
    var_map: Optional[Mapping[Any, Any]] = None,
    analyzer: Optional[Analyzer] = None,
) -> StructInfo:
    """``sinfo`` with every part that uses an undefined symbolic variable made unknown.

    A symbolic variable is defined when ``shape_var_map`` (a mapping or a function) gives it
    a value, which is substituted for it; map a variable to itself to keep it.  A tensor
    shape given by a Relax variable is kept when ``var_map`` maps that variable, otherwise it
    is replaced by the variable's known dimensions (or dropped).
    """
    from ..expr import ShapeExpr

    def dims(values: tuple) -> Optional[tuple]:
        new = [_subst_defined(v, shape_var_map, analyzer) for v in values]
        if any(v is None for v in new):
            return None
        return tuple(new)

    def erase(s: StructInfo) -> StructInfo:
        if isinstance(s, PrimStructInfo):
            if s.value is None:
                return s
            new = _subst_defined(s.value, shape_var_map, analyzer)
            if new is None:
                return PrimStructInfo(s.dtype, span=s.span)
            return s if new is s.value else PrimStructInfo(value=new, span=s.span)
        if isinstance(s, ShapeStructInfo):
            if s.values is None:
                return s
            new_vals = dims(s.values)
            if new_vals is None:
                return ShapeStructInfo(ndim=s.ndim, span=s.span)
            same = all(a is b for a, b in zip(new_vals, s.values))
            return s if same else ShapeStructInfo(new_vals, span=s.span)
        if isinstance(s, TensorStructInfo):
            if s.shape is None:
                return s
            shape = s.shape
            if not isinstance(shape, ShapeExpr):
                mapped = var_map.get(shape) if var_map else None
                if mapped is not None:
                    return s if mapped is shape else TensorStructInfo(
                        mapped, s.dtype, s.ndim, s.vdevice, span=s.span
                    )
                known = shape_values_of(shape)
                if known is None:
                    return TensorStructInfo(None, s.dtype, s.ndim, s.vdevice, span=s.span)
                shape = ShapeExpr(known)
            new_vals = dims(shape.values)
            if new_vals is None:
                return TensorStructInfo(None, s.dtype, s.ndim, s.vdevice, span=s.span)
            if shape is s.shape and all(a is b for a, b in zip(new_vals, shape.values)):
                return s
            return TensorStructInfo(ShapeExpr(new_vals), s.dtype, s.ndim, s.vdevice, span=s.span)
        if isinstance(s, TupleStructInfo):
            fields = [erase(f) for f in s.fields]
            return s if all(a is b for a, b in zip(fields, s.fields)) else TupleStructInfo(
                fields, span=s.span
            )
        if isinstance(s, FuncStructInfo):
            return s  # a function type binds its own symbolic variables
        return s

    return erase(sinfo)


# -- comparing PrimExprs ---------------------------------------------------------------------
def prim_equal(a: PrimExpr, b: PrimExpr, analyzer: Optional[Analyzer] = None) -> Optional[bool]:
    """True if ``a == b`` is provable, False if provably different, None if unknown."""
    if a is b or structural_equal(a, b):
        return True
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    analyzer = analyzer or Analyzer()
    if analyzer.can_prove_equal(a, b):
        return True
    diff = analyzer.simplify(a - b)
    if isinstance(diff, IntImm):
        return diff.value == 0
    return None


def _values_equal(a: tuple, b: tuple, analyzer: Optional[Analyzer]) -> bool:
    return len(a) == len(b) and all(prim_equal(x, y, analyzer) is True for x, y in zip(a, b))


# -- least common ancestor -------------------------------------------------------------------
def struct_info_lca(
    lhs: StructInfo, rhs: StructInfo, analyzer: Optional[Analyzer] = None
) -> StructInfo:
    """The most specific StructInfo describing values of both ``lhs`` and ``rhs``."""
    if lhs is rhs:
        return lhs
    if isinstance(lhs, ObjectStructInfo) or type(lhs) is not type(rhs):
        return ObjectStructInfo()
    if isinstance(lhs, PrimStructInfo):
        if lhs.dtype != rhs.dtype:
            return ObjectStructInfo()
        if lhs.value is not None and rhs.value is not None:
            if prim_equal(lhs.value, rhs.value, analyzer) is True:
                return lhs
        return lhs if lhs.value is None else PrimStructInfo(lhs.dtype)
    if isinstance(lhs, ShapeStructInfo):
        if lhs.ndim != rhs.ndim:
            return ShapeStructInfo(ndim=-1)
        if lhs.values is not None and rhs.values is not None:
            if _values_equal(lhs.values, rhs.values, analyzer):
                return lhs
        return ShapeStructInfo(ndim=lhs.ndim)
    if isinstance(lhs, TensorStructInfo):
        dtype = lhs.dtype if lhs.dtype == rhs.dtype else "void"
        ndim = lhs.ndim if lhs.ndim == rhs.ndim else -1
        shape = None
        if ndim != -1:
            lv, rv = lhs.shape_values, rhs.shape_values
            if lv is not None and rv is not None and _values_equal(lv, rv, analyzer):
                shape = lhs.shape
        if shape is lhs.shape and dtype == lhs.dtype and ndim == lhs.ndim:
            return lhs
        return TensorStructInfo(shape, dtype, ndim, lhs.vdevice if lhs.vdevice is rhs.vdevice else None)
    if isinstance(lhs, TupleStructInfo):
        if len(lhs.fields) != len(rhs.fields):
            return ObjectStructInfo()
        fields = [struct_info_lca(a, b, analyzer) for a, b in zip(lhs.fields, rhs.fields)]
        if all(a is b for a, b in zip(fields, lhs.fields)):
            return lhs
        return TupleStructInfo(fields)
    if isinstance(lhs, FuncStructInfo):
        purity = lhs.purity and rhs.purity
        if lhs.params is not None and rhs.params is not None and structural_equal(
            FuncStructInfo(lhs.params, ObjectStructInfo()), FuncStructInfo(rhs.params, ObjectStructInfo())
        ):
            ret = struct_info_lca(lhs.ret, rhs.ret, analyzer)
            if ret is lhs.ret and purity == lhs.purity:
                return lhs
            return FuncStructInfo(lhs.params, ret, purity)
        return FuncStructInfo.opaque_func(struct_info_lca(lhs.ret, rhs.ret, analyzer), purity=purity)
    return ObjectStructInfo()


# -- base checks -----------------------------------------------------------------------------
class BaseCheckResult(IntEnum):
    """How a value of the derived StructInfo fits where the base StructInfo is expected.

    ``FAIL_L0``: never fits (different kinds, or provably different dtype/ndim/dimension);
    ``FAIL_L1``: the derived StructInfo knows less (unknown dtype/ndim/shape): a runtime
    check (match_cast) is needed; ``FAIL_L2``: symbolic dimensions that cannot be proven
    equal; ``PASS``: statically fine.
    """

    FAIL_L0 = 0
    FAIL_L1 = 1
    FAIL_L2 = 2
    PASS = 3


def _combine(*results: BaseCheckResult) -> BaseCheckResult:
    return min(results, default=BaseCheckResult.PASS)


def _check_dims(base: Optional[tuple], derived: Optional[tuple], analyzer: Optional[Analyzer]
                ) -> BaseCheckResult:
    if base is None:
        return BaseCheckResult.PASS
    if derived is None:
        return BaseCheckResult.FAIL_L1
    if len(base) != len(derived):
        return BaseCheckResult.FAIL_L0
    result = BaseCheckResult.PASS
    for b, d in zip(base, derived):
        eq = prim_equal(b, d, analyzer)
        if eq is False:
            return BaseCheckResult.FAIL_L0
        if eq is None:
            result = BaseCheckResult.FAIL_L2
    return result


def struct_info_base_check(
    base: StructInfo, derived: StructInfo, analyzer: Optional[Analyzer] = None
) -> BaseCheckResult:
    """Whether ``derived`` values fit ``base`` (see :class:`BaseCheckResult`)."""
    if base is derived or isinstance(base, ObjectStructInfo):
        return BaseCheckResult.PASS
    if isinstance(derived, ObjectStructInfo):
        return BaseCheckResult.FAIL_L1
    if type(base) is not type(derived):
        return BaseCheckResult.FAIL_L0
    if isinstance(base, PrimStructInfo):
        if base.dtype != derived.dtype:
            return BaseCheckResult.FAIL_L0
        if base.value is None:
            return BaseCheckResult.PASS
        return _check_dims((base.value,), None if derived.value is None else (derived.value,),
                           analyzer)
    if isinstance(base, ShapeStructInfo):
        if base.ndim != -1 and derived.ndim == -1:
            return BaseCheckResult.FAIL_L1
        if base.ndim != -1 and base.ndim != derived.ndim:
            return BaseCheckResult.FAIL_L0
        return _check_dims(base.values, derived.values, analyzer)
    if isinstance(base, TensorStructInfo):
        result = BaseCheckResult.PASS
        if not base.is_unknown_dtype:
            if derived.is_unknown_dtype:
                result = BaseCheckResult.FAIL_L1
            elif base.dtype != derived.dtype:
                return BaseCheckResult.FAIL_L0
        if base.ndim != -1:
            if derived.ndim == -1:
                result = _combine(result, BaseCheckResult.FAIL_L1)
            elif base.ndim != derived.ndim:
                return BaseCheckResult.FAIL_L0
        if base.shape is not None:
            dims = _check_dims(base.shape_values, derived.shape_values, analyzer)
            if base.shape_values is None and derived.shape is not base.shape:
                dims = BaseCheckResult.FAIL_L2
            result = _combine(result, dims)
        return result
    if isinstance(base, TupleStructInfo):
        if len(base.fields) != len(derived.fields):
            return BaseCheckResult.FAIL_L0
        return _combine(*(struct_info_base_check(b, d, analyzer)
                          for b, d in zip(base.fields, derived.fields)))
    if isinstance(base, FuncStructInfo):
        if not base.purity and derived.purity:
            pass  # a pure function may stand in for an impure one
        elif base.purity and not derived.purity:
            return BaseCheckResult.FAIL_L0
        if base.params is None:
            return struct_info_base_check(base.ret, derived.ret, analyzer)
        if derived.params is None:
            return BaseCheckResult.FAIL_L1
        if len(base.params) != len(derived.params):
            return BaseCheckResult.FAIL_L0
        # Parameters are contravariant: the derived function must accept what base accepts.
        params = [struct_info_base_check(d, b, analyzer) for b, d in zip(base.params, derived.params)]
        return _combine(*params, struct_info_base_check(base.ret, derived.ret, analyzer))
    return BaseCheckResult.FAIL_L0


def is_base_of(base: StructInfo, derived: StructInfo, analyzer: Optional[Analyzer] = None) -> bool:
    """Whether every value of ``derived`` StructInfo statically fits ``base``."""
    return struct_info_base_check(base, derived, analyzer) == BaseCheckResult.PASS


# -- calls -----------------------------------------------------------------------------------
def _match_param(
    param: StructInfo,
    arg: StructInfo,
    bound: dict[TirVar, PrimExpr],
    analyzer: Analyzer,
    where: str,
) -> Optional[str]:
    """Bind the symbolic variables of ``param`` from ``arg``; an error message on mismatch."""

    def dims(pvals: Optional[tuple], avals: Optional[tuple]) -> Optional[str]:
        if pvals is None or avals is None:
            return None
        if len(pvals) != len(avals):
            return f"{where}: expects {len(pvals)} dimension(s), got {len(avals)}"
        for i, (p, a) in enumerate(zip(pvals, avals)):
            if isinstance(p, TirVar) and p not in bound:
                bound[p] = a
                continue
            expected = _subst_defined(p, lambda v: bound.get(v), analyzer)
            if expected is not None and prim_equal(expected, a, analyzer) is False:
                return f"{where}: dimension {i} must be {dim_str(expected)}, got {dim_str(a)}"
        return None

    if isinstance(param, ObjectStructInfo):
        return None
    check = struct_info_base_check(erase_to_well_defined(param), arg, analyzer)
    if check == BaseCheckResult.FAIL_L0:
        return f"{where}: expects {_describe(param)}, got {_describe(arg)}"
    if isinstance(param, TensorStructInfo) and isinstance(arg, TensorStructInfo):
        return dims(param.shape_values, arg.shape_values)
    if isinstance(param, ShapeStructInfo) and isinstance(arg, ShapeStructInfo):
        return dims(param.values, arg.values)
    if isinstance(param, PrimStructInfo) and isinstance(arg, PrimStructInfo):
        if param.value is not None and arg.value is not None:
            return dims((param.value,), (arg.value,))
        return None
    if isinstance(param, TupleStructInfo) and isinstance(arg, TupleStructInfo):
        for i, (p, a) in enumerate(zip(param.fields, arg.fields)):
            err = _match_param(p, a, bound, analyzer, f"{where}[{i}]")
            if err:
                return err
    return None


def derive_call_ret_struct_info(
    func_sinfo: FuncStructInfo,
    args: Sequence[Any],
    analyzer: Optional[Analyzer] = None,
    callee: str = "function",
    span: Any = None,
) -> StructInfo:
    """The StructInfo of calling a function of ``func_sinfo`` with ``args``.

    Symbolic variables of the parameters are bound from the arguments' StructInfo and
    substituted into the return StructInfo; what stays unbound is erased.  A provable
    mismatch (arity, kind, dtype, ndim or a constant dimension) raises StructInfoError.
    """
    if func_sinfo.params is None:
        return func_sinfo.ret
    if len(args) != len(func_sinfo.params):
        raise StructInfoError(
            f"calling {callee}: expects {len(func_sinfo.params)} argument(s), got {len(args)}",
            span=span,
        )
    analyzer = analyzer or Analyzer()
    bound: dict[TirVar, PrimExpr] = {}
    for i, (param, arg) in enumerate(zip(func_sinfo.params, args)):
        arg_sinfo = arg if isinstance(arg, StructInfo) else arg.struct_info
        err = _match_param(param, arg_sinfo, bound, analyzer, f"argument {i}")
        if err:
            raise StructInfoError(f"calling {callee}: {err}", span=span)
    return erase_to_well_defined(func_sinfo.ret, bound, analyzer=analyzer)


def _describe(sinfo: StructInfo) -> str:
    if isinstance(sinfo, TensorStructInfo):
        shape = sinfo.shape_values
        dims = "?" if shape is None and sinfo.ndim == -1 else (
            f"ndim={sinfo.ndim}" if shape is None else "(" + ", ".join(map(dim_str, shape)) + ")"
        )
        return f"Tensor[{dims}, {sinfo.dtype}]"
    if isinstance(sinfo, ShapeStructInfo):
        return f"Shape[ndim={sinfo.ndim}]"
    if isinstance(sinfo, PrimStructInfo):
        return f"Prim[{sinfo.dtype}]"
    if isinstance(sinfo, TupleStructInfo):
        return "Tuple[" + ", ".join(_describe(f) for f in sinfo.fields) + "]"
    if isinstance(sinfo, FuncStructInfo):
        return "Callable"
    return "Object"


def dim_str(d: PrimExpr) -> str:
    """A dimension for messages: ``4``, ``n`` or the expression."""
    if isinstance(d, IntImm):
        return str(d.value)
    if isinstance(d, TirVar):
        return d.name
    return repr(d)


describe_struct_info = _describe


def get_static_shape(sinfo: StructInfo) -> Optional[tuple[int, ...]]:
    """The shape of a tensor (or shape) StructInfo as ints, or None if not fully static."""
    if isinstance(sinfo, TensorStructInfo):
        values = sinfo.shape_values
    elif isinstance(sinfo, ShapeStructInfo):
        values = sinfo.values
    else:
        return None
    if values is None or not all(isinstance(v, IntImm) for v in values):
        return None
    return tuple(v.value for v in values)
