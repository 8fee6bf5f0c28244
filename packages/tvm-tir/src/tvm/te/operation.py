"""Building tensor expressions: placeholders, ``compute``, reduction axes and reducers.

    n = te.var("n")
    A = te.placeholder((n, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence, Union

from tvm.tir.expr import (
    IterVar, IterVarType, Max, Min, PrimExpr, Range, Reduce, SizeVar, Var, _canonical_dtype,
    convert, is_int_dtype,
)
from tvm.tir.expr import CommReducer as _CommReducer
from tvm.tir.expr import const as _const
from tvm.tir.functor import StmtExprVisitor
from tvm.tir.op import max_value, min_value

from .tensor import ComputeOp, PlaceholderOp, ProducerLoad, ReduceAxisVar, Tensor

__all__ = [
    "placeholder", "compute", "reduce_axis", "var", "size_var", "const", "thread_axis",
    "comm_reducer", "Reducer", "sum", "max", "min",
]

ShapeLike = Union[int, PrimExpr, Sequence[Union[int, PrimExpr]]]


# ---------------------------------------------------------------------------------------
# variables and constants

def var(name: str = "tindex", dtype: str = "int32") -> Var:
    """A symbolic scalar (a shape dimension or a scalar parameter)."""
    return Var(name, dtype)


def size_var(name: str = "size", dtype: str = "int32") -> SizeVar:
    """A symbolic scalar known to be non-negative (a shape dimension)."""
    return SizeVar(name, dtype)


def const(value: Any, dtype: Optional[str] = None) -> PrimExpr:
    """An immediate value (``int32`` for ints, ``float32`` for floats unless ``dtype``)."""
    return _const(value, dtype)


def thread_axis(dom: Any = None, tag: str = "", name: str = "") -> IterVar:
    """An iteration variable bound to a GPU thread index such as ``"threadIdx.x"``.

    ``thread_axis("threadIdx.x")`` is accepted too (the tag given first).
    """
    if isinstance(dom, str):
        if tag:
            raise TypeError(f"thread_axis: tag given twice ({dom!r} and {tag!r})")
        dom, tag = None, dom
    if not tag:
        raise ValueError("thread_axis needs a tag such as 'threadIdx.x' or 'blockIdx.y'")
    rng = None if dom is None else _to_range(dom, "thread_axis")
    v = Var(name or tag, rng.extent.dtype if rng is not None else "int32")
    return IterVar(rng, v, IterVarType.THREAD_INDEX, tag)


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """A reduction axis over ``dom``: ``(lo, hi)`` (half-open) or a :class:`~tvm.tir.Range`."""
    rng = _to_range(dom, f"reduce_axis {name!r}")
    return IterVar(rng, ReduceAxisVar(name, rng.extent.dtype), IterVarType.COMM_REDUCE)


def _to_range(dom: Any, where: str) -> Range:
    if isinstance(dom, Range):
        rng = dom
    elif isinstance(dom, (tuple, list)) and len(dom) == 2:
        lo, hi = dom
        if isinstance(lo, int) and isinstance(hi, int):
            if hi < lo:
                raise ValueError(f"{where}: empty domain ({lo}, {hi}); expected lo <= hi")
            rng = Range(lo, hi - lo) if lo != 0 else Range(0, hi)
        elif isinstance(lo, int) and lo == 0:
            rng = Range(0, hi)
        else:
            rng = Range(lo, convert(hi) - lo)
    else:
        raise TypeError(
            f"{where}: the domain must be a (lo, hi) pair or a tvm.tir.Range, got {dom!r}"
        )
    for part in (rng.min, rng.extent):
        if not is_int_dtype(part.dtype):
            raise TypeError(f"{where}: domain bounds must be integers, got {part!r} ({part.dtype})")
    return rng


# ---------------------------------------------------------------------------------------
# placeholder and compute

def _normalize_shape(shape: ShapeLike, where: str) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, PrimExpr)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{where}: shape must be a tuple of ints or expressions, got {shape!r}")
    out = []
    for pos, dim in enumerate(shape):
        if isinstance(dim, bool) or not isinstance(dim, (int, PrimExpr)):
            if hasattr(dim, "__index__"):
                dim = int(dim)
            else:
                raise TypeError(
                    f"{where}: shape[{pos}] must be an int or an integer expression, got {dim!r}"
                )
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"{where}: shape[{pos}] is negative ({dim})")
        dim = convert(dim)
        if not is_int_dtype(dim.dtype):
            raise TypeError(f"{where}: shape[{pos}] must be an integer, got {dim!r} ({dim.dtype})")
        out.append(dim)
    return tuple(out)


def placeholder(shape: ShapeLike, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the computation (a buffer parameter of the generated PrimFunc)."""
    shape = _normalize_shape(shape, f"te.placeholder {name!r}")
    op = PlaceholderOp(shape, _canonical_dtype(dtype), name)
    return op.output(0)


def compute(
    shape: ShapeLike,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: Optional[dict] = None,
) -> Union[Tensor, list[Tensor]]:
    """The tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    ``fcompute`` takes one index variable per dimension (named after its parameters) and
    returns an expression, or a tuple of expressions for several outputs (then a list of
    tensors is returned).  Parameters with default values are not index parameters.  A reduction (``te.sum(..., axis=k)``) must be the whole body.
    """
    where = f"te.compute {name!r}"
    shape = _normalize_shape(shape, where)
    if not callable(fcompute):
        raise TypeError(f"{where}: fcompute must be callable, got {type(fcompute).__name__}")
    arg_names = _fcompute_arg_names(fcompute, len(shape), where)
    axis = tuple(
        IterVar(Range(0, dim), Var(arg_name, dim.dtype), IterVarType.DATA_PAR)
        for arg_name, dim in zip(arg_names, shape)
    )
    result = fcompute(*[iv.var for iv in axis])
    bodies = list(result) if isinstance(result, (tuple, list)) else [result]
    if not bodies:
        raise ValueError(f"{where}: fcompute returned an empty tuple; return at least one value")
    converted = []
    for pos, body in enumerate(bodies):
        if isinstance(body, Tensor):
            raise TypeError(
                f"{where}: fcompute returned the tensor {body.name!r} itself (output {pos}); "
                "return an element of it, e.g. A[i, j]"
            )
        try:
            converted.append(convert(body))
        except TypeError:
            raise TypeError(
                f"{where}: fcompute must return expressions, output {pos} is "
                f"{type(body).__name__} {body!r}"
            ) from None
    reduce_axes = _check_bodies(converted, axis, where)
    op = ComputeOp(axis, reduce_axes, tuple(converted), name, tag, dict(attrs or {}))
    outputs = op.outputs
    return outputs[0] if len(outputs) == 1 else outputs


def _fcompute_arg_names(fcompute: Callable[..., Any], ndim: int, where: str) -> list[str]:
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):  # builtins without a signature: pass every index
        return [f"i{i}" for i in range(ndim)]
    names: list[str] = []
    varargs = False
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is p.empty:  # parameters with defaults keep them (closure idiom)
                names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            varargs = True
        elif p.kind == p.KEYWORD_ONLY and p.default is p.empty:
            raise TypeError(
                f"{where}: fcompute has the keyword-only parameter {p.name!r} without a default; "
                "it receives only the index variables"
            )
    if varargs:
        if len(names) > ndim:
            raise TypeError(
                f"{where}: fcompute takes at least {len(names)} index argument(s) but the shape "
                f"has {ndim} dimension(s)"
            )
        return names + [f"i{i}" for i in range(len(names), ndim)]
    if len(names) != ndim:
        raise TypeError(
            f"{where}: fcompute takes {len(names)} argument(s) ({', '.join(names) or 'none'}) "
            f"but the shape has {ndim} dimension(s); it needs one index argument per dimension"
        )
    return names


def _check_bodies(bodies: list[PrimExpr], axis: tuple, where: str) -> tuple:
    """Validate reductions in compute bodies; return the reduction axes."""
    first = bodies[0]
    if not isinstance(first, Reduce):
        for pos, body in enumerate(bodies):
            if isinstance(body, Reduce):
                raise ValueError(
                    f"{where}: output {pos} is a reduction but output 0 is not; either every "
                    "output is a component of one reduction or none is"
                )
            _ReduceUseChecker(where, allowed=()).visit_expr(body)
        return ()
    for pos, body in enumerate(bodies):
        if not isinstance(body, Reduce):
            raise ValueError(
                f"{where}: output 0 is a reduction but output {pos} is not; either every output "
                "is a component of one reduction or none is"
            )
        same = (
            body.combiner is first.combiner and _same_seq(body.source, first.source)
            and _same_seq(body.axis, first.axis) and body.condition is first.condition
            and _same_seq(body.init, first.init)
        )
        if not same:
            raise ValueError(
                f"{where}: outputs 0 and {pos} are different reductions; several outputs must "
                "be the components of one tuple reduction (one reducer call)"
            )
    if len(bodies) != len(first.source):
        raise ValueError(
            f"{where}: the reduction has {len(first.source)} component(s) but fcompute returned "
            f"{len(bodies)} output(s); return every component of a tuple reduction, in order"
        )
    for pos, body in enumerate(bodies):
        if body.value_index != pos:
            raise ValueError(
                f"{where}: output {pos} is component {body.value_index} of the reduction; "
                "return the components in order"
            )
    allowed = tuple(iv.var for iv in first.axis)
    for expr in (*first.source, first.condition):
        _ReduceUseChecker(where, allowed).visit_expr(expr)
    for expr in first.init:
        _ReduceUseChecker(where, allowed=(), context="the init value of a reduction").visit_expr(
            expr
        )
    return first.axis


def _same_seq(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class _ReduceUseChecker(StmtExprVisitor):
    """Rejects nested reductions and reduction axes used outside their reduction."""

    def __init__(self, where: str, allowed: tuple, context: str = "") -> None:
        self.where = where
        self.allowed = {id(v) for v in allowed}
        self.context = context

    def visit_reduce_(self, op: Reduce) -> None:
        raise ValueError(
            f"{self.where}: a reduction (over "
            f"{', '.join(iv.var.name for iv in op.axis)}) must be the whole body of the compute, "
            "not part of a larger expression or of another reduction; compute it in its own "
            "te.compute and use the result"
        )

    def visit_var_(self, v: Var) -> None:
        if isinstance(v, ReduceAxisVar) and id(v) not in self.allowed:
            place = self.context or "outside of a reduction over it"
            raise ValueError(
                f"{self.where}: the reduction axis {v.name!r} is used {place}; "
                f"use it inside te.sum/te.max/...(..., axis={v.name}) of this compute"
            )

    def visit_producer_load_(self, op: ProducerLoad) -> None:
        for index in op.indices:
            self.visit_expr(index)


# ---------------------------------------------------------------------------------------
# reducers

class Reducer:
    """A commutative reduction such as ``te.sum``, made by :func:`comm_reducer`.

    ``reducer(expr, axis=k, where=cond, init=value)`` reduces ``expr`` over the reduction
    axes ``k`` (one or a list); ``expr`` may be a tuple for a tuple reduction (argmax), which
    then returns a tuple of :class:`~tvm.tir.Reduce` components.  ``reducer(a, b, ...)`` on
    plain expressions combines them directly (``te.max(x, 0.0)``).
    """

    def __init__(self, fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str):
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.name = name
        self.__name__ = name
        self.__doc__ = f"The {name!r} reduction (see tvm.te.Reducer)."

    def __repr__(self) -> str:
        return f"te.comm_reducer({self.name!r})"

    def __call__(
        self, expr: Any, axis: Any = None, where: Any = None, init: Any = None, *rest: Any
    ) -> Any:
        if axis is None:
            raise TypeError(f"te.{self.name}: missing the reduction axis (axis=k)")
        if isinstance(axis, IterVar) or (
            isinstance(axis, (list, tuple)) and axis and all(isinstance(a, IterVar) for a in axis)
        ):
            if rest:
                raise TypeError(f"te.{self.name}: unexpected extra arguments {rest!r}")
            return self._reduce(expr, axis, where, init)
        if isinstance(axis, (list, tuple)):
            raise TypeError(
                f"te.{self.name}: axis must be reduction axes made by te.reduce_axis, got {axis!r}"
            )
        # Direct combination of plain values: te.max(a, b, c).
        values = [expr, axis] + [v for v in (where, init, *rest) if v is not None]
        out = convert(values[0]) if not isinstance(values[0], PrimExpr) else values[0]
        for v in values[1:]:
            out = self.fcombine(out, v)
        return out

    def _reduce(self, expr: Any, axis: Any, where: Any, init: Any) -> Any:
        who = f"te.{self.name}"
        axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
        for iv in axes:
            if iv.iter_type != IterVarType.COMM_REDUCE:
                raise TypeError(
                    f"{who}: axis {iv.var.name!r} is not a reduction axis (it is "
                    f"{iv.iter_type.name}); make reduction axes with te.reduce_axis"
                )
        if len({id(iv) for iv in axes}) != len(axes):
            raise ValueError(f"{who}: a reduction axis appears twice in axis={axes!r}")
        is_tuple = isinstance(expr, (tuple, list))
        exprs = [_as_expr(e, who, "the reduced value") for e in (expr if is_tuple else [expr])]
        if not exprs:
            raise ValueError(f"{who}: nothing to reduce (an empty tuple)")
        dtypes = [e.dtype for e in exprs]
        combiner = self._combiner(dtypes)
        cond = _const(True) if where is None else _as_expr(where, who, "where")
        if cond.dtype != "bool":
            raise TypeError(f"{who}: where= must be a boolean condition, got {cond!r} ({cond.dtype})")
        inits: tuple = ()
        if init is not None:
            init_list = list(init) if isinstance(init, (tuple, list)) else [init]
            if len(init_list) != len(exprs):
                raise ValueError(
                    f"{who}: init has {len(init_list)} value(s) for {len(exprs)} reduced value(s)"
                )
            inits = tuple(_typed(v, dt, who, "init") for v, dt in zip(init_list, dtypes))
        outs = tuple(
            Reduce(dt, combiner, tuple(exprs), axes, cond, i, inits) for i, dt in enumerate(dtypes)
        )
        return outs if is_tuple else outs[0]

    def _combiner(self, dtypes: list[str]) -> _CommReducer:
        who = f"te.{self.name}"
        n = len(dtypes)
        if n == 1:
            lhs, rhs = [Var("x", dtypes[0])], [Var("y", dtypes[0])]
            result = self.fcombine(lhs[0], rhs[0])
            identity = self.fidentity(dtypes[0])
        else:
            lhs = [Var(f"x{i}", dt) for i, dt in enumerate(dtypes)]
            rhs = [Var(f"y{i}", dt) for i, dt in enumerate(dtypes)]
            result = self.fcombine(tuple(lhs), tuple(rhs))
            identity = self.fidentity(*dtypes)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        identities = list(identity) if isinstance(identity, (tuple, list)) else [identity]
        if len(results) != n or len(identities) != n:
            raise ValueError(
                f"{who}: the combiner returned {len(results)} value(s) and the identity "
                f"{len(identities)} for {n} reduced value(s); both must return {n}"
            )
        results = [_typed(r, dt, who, f"combiner result {i}") for i, (r, dt) in
                   enumerate(zip(results, dtypes))]
        identities = [_typed(v, dt, who, f"identity {i}") for i, (v, dt) in
                      enumerate(zip(identities, dtypes))]
        return _CommReducer(tuple(lhs), tuple(rhs), tuple(results), tuple(identities))


def _as_expr(value: Any, who: str, what: str) -> PrimExpr:
    if isinstance(value, Tensor):
        raise TypeError(f"{who}: {what} is the tensor {value.name!r}; index it, e.g. A[i, k]")
    try:
        return convert(value)
    except TypeError:
        raise TypeError(f"{who}: {what} must be an expression, got {value!r}") from None


def _typed(value: Any, dtype: str, who: str, what: str) -> PrimExpr:
    if not isinstance(value, PrimExpr):
        if isinstance(value, (bool, int, float)):
            return _const(value, dtype)
        value = _as_expr(value, who, what)
    if value.dtype != dtype:
        raise TypeError(f"{who}: {what} has dtype {value.dtype}, expected {dtype} ({value!r})")
    return value


def comm_reducer(
    fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str = "reduce"
) -> Reducer:
    """Make a commutative reducer from a combiner and an identity.

    ``fcombine(x, y)`` combines two partial results (tuples of expressions for a tuple
    reduction); ``fidentity(dtype, ...)`` gives the identity element(s) for the dtypes.
    """
    if not callable(fcombine) or not callable(fidentity):
        raise TypeError("comm_reducer: fcombine and fidentity must be callables")
    return Reducer(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: x + y, lambda t: _const(0, t), name="sum")  # noqa: A001
min = comm_reducer(lambda x, y: Min(x, y), lambda t: max_value(t), name="min")  # noqa: A001
max = comm_reducer(lambda x, y: Max(x, y), lambda t: min_value(t), name="max")  # noqa: A001
