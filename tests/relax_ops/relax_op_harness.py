"""Run a Relax operator call through LegalizeOps and the llvm target, on numpy inputs.

``run_op(make, inputs)`` declares one Relax parameter per input (its shape may be given
symbolically), emits ``make(*params)``, legalizes the function and evaluates the resulting
``call_tir`` bindings with the PrimFuncs compiled by ``tvm.tir.build(..., target="llvm")``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
from tvm import relax, tir
from tvm.arith import Analyzer
from tvm.ffi.dtype import from_numpy_dtype, to_numpy_dtype
from tvm.relax.transform import LegalizeOps
from tvm.tir.stmt_functor import substitute

_BUILT: dict[int, Any] = {}


def _shape_value(dim: Any, env: dict) -> int:
    value = Analyzer().simplify(substitute(dim, env))
    if not isinstance(value, tir.IntImm):
        raise AssertionError(f"output dimension {dim} is not determined by the inputs")
    return value.value


def _bind_shape(sinfo: relax.TensorStructInfo, shape: tuple, env: dict) -> None:
    for dim, n in zip(sinfo.shape_values, shape):
        if isinstance(dim, tir.Var) and dim not in env:
            env[dim] = tir.IntImm(dim.dtype, n)


def _alloc(sinfo: Any, env: dict) -> Any:
    if isinstance(sinfo, relax.TupleStructInfo):
        return tuple(_alloc(f, env) for f in sinfo.fields)
    shape = tuple(_shape_value(d, env) for d in sinfo.shape_values)
    return np.zeros(shape, to_numpy_dtype(sinfo.dtype))


def _flat(value: Any) -> list:
    return [x for v in value for x in _flat(v)] if isinstance(value, tuple) else [value]


def legalize(make: Callable[..., Any], params: Sequence[relax.Var]) -> Any:
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return LegalizeOps()(bb.get())


def run_op(
    make: Callable[..., Any],
    inputs: Sequence[Any],
    shapes: Optional[Sequence[Any]] = None,
    return_mod: bool = False,
) -> Any:
    """Evaluate ``make(*params)`` legalized; ``shapes`` overrides the parameters' shapes
    (e.g. with symbolic ``tir.Var`` dimensions).  Returns an array or a tuple of arrays."""
    arrays = [np.array(x, order="C") for x in inputs]  # keeps 0-d arrays 0-d
    params = [
        relax.Var(f"x{i}", relax.TensorStructInfo(
            list(shapes[i]) if shapes is not None and shapes[i] is not None else list(a.shape),
            from_numpy_dtype(a.dtype)))
        for i, a in enumerate(arrays)
    ]
    mod = legalize(make, params)
    func = mod["main"]
    env: dict = {}
    values: dict = {}
    for p, a in zip(func.params, arrays):
        _bind_shape(p.struct_info, a.shape, env)
        values[p] = a
    for block in func.body.blocks:
        for binding in block.bindings:
            values[binding.var] = _eval(binding.value, values, env, mod)
    result = _eval(func.body.body, values, env, mod)
    return (result, mod) if return_mod else result


def _eval(expr: Any, values: dict, env: dict, mod: Any) -> Any:
    if isinstance(expr, relax.Var):
        return values[expr]
    if isinstance(expr, relax.Constant):
        return expr.data
    if isinstance(expr, relax.Tuple):
        return tuple(_eval(f, values, env, mod) for f in expr.fields)
    if isinstance(expr, relax.TupleGetItem):
        return _eval(expr.tuple_value, values, env, mod)[expr.index]
    if isinstance(expr, relax.PrimValue):
        return Analyzer().simplify(substitute(expr.value, env))
    if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.call_tir":
        gv, args = expr.args[0], expr.args[1]
        inputs = [_eval(a, values, env, mod) for a in args.fields]
        for a, arr in zip(args.fields, inputs):
            if isinstance(a.struct_info, relax.TensorStructInfo):
                _bind_shape(a.struct_info, arr.shape, env)
        outs = _alloc(expr.sinfo_args[0], env)
        scalars = []
        if len(expr.args) > 2:
            scalars = [_shape_value(v, env) for v in expr.args[2].values]
        prim = mod[gv]
        key = id(prim)
        if key not in _BUILT:
            _BUILT[key] = (prim, tir.build(prim, target="llvm"))
        _BUILT[key][1]["main"](*inputs, *_flat(outs), *scalars)
        return outs
    raise AssertionError(f"unexpected expression after legalization: {expr!r}")


def call_tir_names(mod: Any) -> list[str]:
    """Names of the PrimFuncs the main function calls, in order."""
    names = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(v, relax.Call) and getattr(v.op, "name", "") == "relax.call_tir":
                names.append(v.args[0].name_hint)
    return names
