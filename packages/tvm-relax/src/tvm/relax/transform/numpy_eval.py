"""Evaluating a Relax operator call on numpy values with the op's own declared semantics.

Each operator declares its numpy semantics beside its StructInfo inference and legalization
(``@spec.evaluate``, op attribute ``FNumpyEval``; see :mod:`tvm.relax.op.base`).  This
module is the one driver that runs them: ``evaluate_with_numpy(call, args)`` computes one
call on numpy values (tensors as arrays, shapes as tuples of ints, scalars as Python
numbers, tuples as tuples) and checks the result against the call's StructInfo (dtype and
static shape).  FoldConstant uses it as its fallback evaluator and frontends use it to fold
shape computations while importing.

Ops that declare ``@spec.evaluate(symbolic=True)`` (integer arithmetic, data movement) also
evaluate numpy *object* arrays whose entries are ints or symbolic ``PrimExpr`` (a shape known
up to symbolic dimensions); with ``symbolic=True`` the driver passes such arrays to them
(and refuses them for the other ops) and returns object results as object arrays.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from tvm.ffi.dtype import to_numpy_dtype
from tvm.ir.op import Op

from ..analysis.struct_info_analysis import get_static_shape
from ..expr import Call, Constant, DataTypeImm, PrimValue, ShapeExpr, StringImm, Tuple
from ..op._numpy import NumpyEvalError
from ..struct_info import TensorStructInfo, TupleStructInfo

__all__ = [
    "get_numpy_evaluator",
    "evaluate_with_numpy",
    "NumpyEvalError",
    "constant_value",
    "run_function_with_numpy",
]


def get_numpy_evaluator(op: Any) -> Optional[Callable[..., Any]]:
    """The declared numpy semantics of ``op`` (an Op or its name), None if it has none."""
    if isinstance(op, str):
        op = Op.get(op) if Op.exists(op) else None
    return op.get_attr("FNumpyEval") if isinstance(op, Op) else None


def constant_value(expr: Any) -> Any:
    """The value of a constant leaf as evaluators take it: a tensor ``Constant`` as its
    array, a ``ShapeExpr`` of immediates as a tuple of ints, a ``PrimValue`` as a number, a
    dtype or string immediate as its string, a ``Tuple`` of these as a tuple."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, ShapeExpr) and all(hasattr(v, "value") for v in expr.values):
        return tuple(int(v.value) for v in expr.values)
    if isinstance(expr, PrimValue) and hasattr(expr.value, "value"):
        return expr.value.value
    if isinstance(expr, (DataTypeImm, StringImm)):
        return expr.value
    if isinstance(expr, Tuple):
        return tuple(constant_value(f) for f in expr.fields)
    raise NumpyEvalError(f"cannot evaluate {type(expr).__name__} with numpy")


def _conform(value: Any, sinfo: Any, name: str, symbolic: bool) -> Any:
    if isinstance(sinfo, TupleStructInfo):
        if not isinstance(value, (tuple, list)) or len(value) != len(sinfo.fields):
            raise NumpyEvalError(f"{name}: evaluator returned {type(value).__name__}, "
                                 f"expected a tuple of {len(sinfo.fields)}")
        return tuple(_conform(v, s, name, symbolic) for v, s in zip(value, sinfo.fields))
    if not isinstance(sinfo, TensorStructInfo):
        raise NumpyEvalError(f"{name}: only tensor results are evaluated")
    shape = get_static_shape(sinfo)
    array = np.asarray(value)
    if not (symbolic and array.dtype == object):
        array = array.astype(to_numpy_dtype(sinfo.dtype), copy=False)
    if shape is None or array.shape != shape:
        raise NumpyEvalError(f"{name}: evaluator returned shape {array.shape}, the call has {shape}")
    return np.asarray(array, order="C")


def _has_objects(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_has_objects(v) for v in value)
    return isinstance(value, np.ndarray) and value.dtype == object


def evaluate_with_numpy(call: Call, args: list[Any], symbolic: bool = False) -> Optional[Any]:
    """``call`` evaluated on ``args`` by its op's declared semantics (None if it has none).

    ``symbolic``: object-array results (symbolic shape values) are kept as object arrays.
    """
    fn = get_numpy_evaluator(call.op)
    if fn is None:
        return None
    if symbolic and not call.op.get_attr("FNumpyEvalSymbolic") and _has_objects(args):
        raise NumpyEvalError(f"{call.op.name}: its numpy semantics do not compute on "
                             "symbolic values")
    with np.errstate(all="ignore"):
        value = fn(call, *args)
    return _conform(value, call.struct_info, call.op.name, symbolic)


# -- whole functions (tests, debugging) -------------------------------------------------------
def run_function_with_numpy(func: Any, *inputs: Any) -> Any:
    """Evaluate a Relax function of operator calls on numpy inputs (reference semantics).

    Handles operator calls with a numpy evaluator, tuples, tuple lookups, constants, shapes
    and scalars, and ``match_cast`` (taken as the value); not calls of other functions.
    """
    from ..expr import SeqExpr, TupleGetItem, Var

    if len(inputs) != len(func.params):
        raise TypeError(f"the function takes {len(func.params)} input(s), got {len(inputs)}")
    env: dict[int, Any] = {id(p): np.asarray(v) for p, v in zip(func.params, inputs)}

    def ev(expr: Any) -> Any:
        if isinstance(expr, Var):
            return env[id(expr)]
        if isinstance(expr, Tuple):
            return tuple(ev(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return ev(expr.tuple_value)[expr.index]
        if isinstance(expr, SeqExpr):
            for block in expr.blocks:
                for b in block.bindings:
                    env[id(b.var)] = ev(b.value)
            return ev(expr.body)
        if isinstance(expr, Call):
            value = evaluate_with_numpy(expr, [ev(a) for a in expr.args])
            if value is None:
                raise NumpyEvalError(f"no numpy evaluator for {getattr(expr.op, 'name', expr.op)}")
            return value
        return constant_value(expr)

    return ev(func.body)
