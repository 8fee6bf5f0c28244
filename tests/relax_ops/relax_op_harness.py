"""Run a Relax operator call through LegalizeOps and a target, on numpy inputs.

``run_op(make, inputs)`` declares one Relax parameter per input (its shape may be given
symbolically), emits ``make(*params)``, legalizes the function and evaluates the resulting
``call_tir`` bindings with the PrimFuncs compiled by ``tvm.tir.build(..., target=...)``.

The target is the one the suite's ``relax_target`` fixture set (:func:`use_target`; see
``conftest.py``): ``llvm``, or a GPU target (``opencl``, ``vulkan``, ``webgpu``), for which
each PrimFunc gets the default GPU schedule, the inputs are copied to the device, the
intermediate values stay there and the results are copied back to numpy.  Built kernels are
kept per target and PrimFunc (by structure), so a kernel a later case needs again is not
compiled again.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
from tvm import relax, tir
from tvm.arith import Analyzer
from tvm.ffi.dtype import from_numpy_dtype, to_numpy_dtype
from tvm.ffi.structural import structural_equal, structural_hash
from tvm.relax.transform import LegalizeOps
from tvm.tir.stmt_functor import substitute

#: every target the suite runs on, host first (the GPU ones where their device is present)
TARGETS = ("llvm", "opencl", "vulkan", "webgpu")

_state = {"target": "llvm"}
#: (target, structural hash) -> [(PrimFunc, runtime module)]
_BUILT: dict[tuple[str, int], list[tuple[Any, Any]]] = {}


def current_target() -> str:
    """The target :func:`run_op` builds for."""
    return _state["target"]


@contextlib.contextmanager
def use_target(target: str) -> Iterator[str]:
    """Build and run for ``target`` inside the block."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} of the operator suite (one of {TARGETS})")
    saved, _state["target"] = _state["target"], target
    try:
        yield target
    finally:
        _state["target"] = saved


def device() -> Any:
    """The runtime device of the current target."""
    import tvm.runtime as rt

    target = current_target()
    return rt.cpu() if target == "llvm" else rt.device(target)


def to_numpy(value: Any) -> Any:
    """Runtime tensors (on any device) as numpy arrays, through tuples."""
    import tvm.runtime as rt

    if isinstance(value, tuple):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, rt.Tensor):
        return value.numpy()
    return value


def _shape_value(dim: Any, env: dict) -> int:
    value = Analyzer().simplify(substitute(dim, env))
    if not isinstance(value, tir.IntImm):
        raise AssertionError(f"output dimension {dim} is not determined by the inputs")
    return value.value


def _bind_shape(sinfo: relax.TensorStructInfo, shape: tuple, env: dict) -> None:
    for dim, n in zip(sinfo.shape_values, shape):
        if isinstance(dim, tir.Var) and dim not in env:
            env[dim] = tir.IntImm(dim.dtype, n)


def _place(array: np.ndarray) -> Any:
    """``array`` where the current target's kernels read it: numpy for llvm, else a copy on
    the device."""
    if current_target() == "llvm":
        return array
    import tvm.runtime as rt

    return rt.tensor(array, device=device())


def _alloc(sinfo: Any, env: dict) -> Any:
    if isinstance(sinfo, relax.TupleStructInfo):
        return tuple(_alloc(f, env) for f in sinfo.fields)
    shape = tuple(_shape_value(d, env) for d in sinfo.shape_values)
    return _place(np.zeros(shape, to_numpy_dtype(sinfo.dtype)))


def _flat(value: Any) -> list:
    return [x for v in value for x in _flat(v)] if isinstance(value, tuple) else [value]


def legalize(make: Callable[..., Any], params: Sequence[relax.Var]) -> Any:
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return LegalizeOps()(bb.get())


def build(prim: tir.PrimFunc) -> Any:
    """``prim`` built for the current target (the default schedule of its plugin), cached."""
    target = current_target()
    key = (target, structural_hash(prim))
    entries = _BUILT.setdefault(key, [])
    for seen, module in entries:
        if structural_equal(seen, prim):
            return module
    module = tir.build(prim, target=target)
    entries.append((prim, module))
    return module


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
        values[p] = _place(a)
    for block in func.body.blocks:
        for binding in block.bindings:
            values[binding.var] = _eval(binding.value, values, env, mod)
    result = to_numpy(_eval(func.body.body, values, env, mod))
    return (result, mod) if return_mod else result


def _eval(expr: Any, values: dict, env: dict, mod: Any) -> Any:
    if isinstance(expr, relax.Var):
        return values[expr]
    if isinstance(expr, relax.Constant):
        return _place(np.asarray(expr.data))
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
        build(mod[gv])["main"](*inputs, *_flat(outs), *scalars)
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
