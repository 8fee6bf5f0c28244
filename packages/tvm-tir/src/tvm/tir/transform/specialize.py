"""Specialize: bind parameters of a PrimFunc to constants, expressions or concrete buffers.

``param_map`` maps parameters to what they become:

* a scalar parameter (a ``Var`` not in ``buffer_map``) -> a ``PrimExpr`` or Python number:
  the parameter is dropped from ``params`` and its value substituted everywhere;
* a buffer parameter (the handle ``Var`` in ``buffer_map``, or the ``Buffer`` itself) -> a
  ``Buffer``: the old buffer's shape, strides and ``elem_offset`` are unified with the new
  buffer's (a lone variable is bound to the matching entry; any other entry must provably
  equal it), and every variable so bound is substituted everywhere.  As in TVM, the buffer
  keeps its name and data variable, so the body's references stay consistent; its shape,
  strides and offset become the new buffer's.

A variable bound this way is rewritten in every buffer of the function (``buffer_map``,
block ``alloc_buffer``/``match_buffer``, ``DeclBuffer``, and the buffers of loads, stores and
regions, one rewritten ``Buffer`` object per original), and the rewritten expressions are
simplified.  Parameters bound through a buffer's shape are removed from ``params`` too.
"""

from __future__ import annotations

import numbers
from typing import Any, Mapping, Optional

from ..buffer import Buffer
from ..expr import Cast, IntImm, PrimExpr, Var, const
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt_functor import free_vars, substitute
from ._common import rebuild_buffer

__all__ = ["specialize"]


# --------------------------------------------------------------------------- the rewrite


class _Specializer(StmtExprMutator):
    """Substitutes bound variables, rebuilding each buffer once and simplifying every
    outermost expression that changed."""

    def __init__(self, vmap: Mapping[Var, PrimExpr]) -> None:
        self.vmap = vmap
        self.buffers: dict[Buffer, Buffer] = {}
        self._depth = 0
        from tvm.arith import Analyzer  # tvm.arith imports tvm.tir: not at module level

        self._analyzer = Analyzer()

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        self._depth += 1
        try:
            new = super().visit_expr(expr)
        finally:
            self._depth -= 1
        if new is not expr and self._depth == 0:
            new = self._analyzer.simplify(new)
        return new

    def visit_var_(self, v: Var) -> PrimExpr:
        return self.vmap.get(v, v)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        new = self.buffers.get(buffer)
        if new is None:
            # A buffer first met inside an expression: its shape is simplified on its own.
            depth, self._depth = self._depth, 0
            try:
                new = rebuild_buffer(buffer, self.visit_expr, buffer.data)
            finally:
                self._depth = depth
            self.buffers[buffer] = new
        return new


# --------------------------------------------------------------------------- binding


def _describe(key: Any) -> str:
    if isinstance(key, Var):
        return f"{key.name!r} ({key.dtype})"
    if isinstance(key, Buffer):
        return f"buffer {key.name!r}"
    return f"{key!r} ({type(key).__name__})"


def _coerce(value: Any, dtype: str, what: str) -> PrimExpr:
    """``value`` as an expression of ``dtype`` (constants re-typed, other expressions cast)."""
    if isinstance(value, PrimExpr):
        if value.dtype == dtype:
            return value
        if isinstance(value, IntImm):
            return const(value.value, dtype)
        return Cast(dtype, value)
    if isinstance(value, numbers.Number):
        try:
            return const(value.item() if hasattr(value, "item") else value, dtype)
        except (TypeError, ValueError) as err:
            raise ValueError(f"specialize: {what} cannot take the value {value!r}: {err}") from None
    raise TypeError(
        f"specialize: {what} must be given a PrimExpr, number or Buffer, got "
        f"{type(value).__name__} ({value!r})"
    )


class _Bindings:
    """Variable bindings collected from ``param_map``, with where each came from."""

    def __init__(self) -> None:
        self.values: dict[Var, PrimExpr] = {}
        self.origin: dict[Var, str] = {}
        self.checks: list[tuple[PrimExpr, PrimExpr, str]] = []  # old == new, to prove later
        self.repeats: list[tuple[Var, PrimExpr, str]] = []  # second values of a variable

    def bind(self, var: Var, value: PrimExpr, origin: str) -> None:
        if value is var:
            return
        value = _coerce(value, var.dtype, f"variable {var.name!r}")
        old = self.values.get(var)
        if old is None:
            self.values[var] = value
            self.origin[var] = origin
            return
        if not _provably_equal(old, value):
            # Decided once every binding is known (``n -> m`` and ``n -> 16`` agree if
            # ``m -> 16``).
            self.repeats.append((var, value, origin))

    def unify(self, old: Optional[PrimExpr], new: Optional[PrimExpr], origin: str) -> None:
        """Bind ``old`` (a lone variable) to ``new``, or record that they must be equal.
        ``None`` stands for a zero offset."""
        if old is new:
            return
        old = IntImm("int32", 0) if old is None else old
        new = IntImm(old.dtype, 0) if new is None else new
        if isinstance(old, Var):
            self.bind(old, new, origin)
        else:
            self.checks.append((old, new, origin))

    def resolve(self) -> dict[Var, PrimExpr]:
        """The bindings with bound variables inside values substituted (a chain ``n -> m``,
        ``m -> 16`` gives ``n -> 16``); then the recorded equalities are checked."""
        values = dict(self.values)
        for _ in range(len(values) + 1):
            new = {v: substitute(e, values) for v, e in values.items()}
            if all(new[v] is values[v] for v in values):
                break
            values = new
        else:
            names = ", ".join(sorted(v.name for v in values if _uses_any(values[v], values)))
            raise ValueError(f"specialize: cyclic bindings between variables {names}")
        from tvm.arith import Analyzer

        simplify = Analyzer().simplify
        for var, value, origin in self.repeats:
            first = values[var]
            if not _provably_equal(first, simplify(substitute(value, values))):
                raise ValueError(
                    f"specialize: conflicting values for variable {var.name!r}: "
                    f"{self.values[var]} (from {self.origin[var]}) and {value} (from {origin})"
                )
        for old, new_expr, origin in self.checks:
            have = simplify(substitute(old, values))
            if not _provably_equal(have, new_expr):
                shown = f"{old}" if have is old else f"{old} (here {have})"
                raise ValueError(
                    f"specialize: {origin}: {shown} does not match {new_expr}; only entries "
                    "that are a single variable can be bound"
                )
        # A permutation of variables resolves to identities: a renaming, nothing to bind.
        return {v: simplify(e) for v, e in values.items() if e is not v}


def _uses_any(expr: PrimExpr, values: Mapping[Var, Any]) -> bool:
    return any(v in values for v in free_vars(expr))


def _provably_equal(a: PrimExpr, b: PrimExpr) -> bool:
    if a is b:
        return True
    from tvm.arith import Analyzer

    if a.dtype != b.dtype:
        b = _coerce(b, a.dtype, "expression")
    return bool(Analyzer().can_prove_equal(a, b))


def _unify_buffer(old: Buffer, new: Buffer, param: Var, bindings: _Bindings) -> None:
    where = f"buffer {old.name!r} (parameter {param.name!r})"
    if old.dtype != new.dtype:
        raise ValueError(
            f"specialize: {where} has dtype {old.dtype}, the new buffer {new.name!r} has "
            f"{new.dtype}"
        )
    if len(old.shape) != len(new.shape):
        raise ValueError(
            f"specialize: {where} has {len(old.shape)} dimensions, the new buffer {new.name!r} "
            f"has {len(new.shape)}"
        )
    if len(old.strides) != len(new.strides):
        raise ValueError(
            f"specialize: {where} has strides {list(old.strides)}, the new buffer "
            f"{new.name!r} has {list(new.strides)}"
        )
    for attr in ("scope", "axis_separators"):
        if getattr(old, attr) != getattr(new, attr):
            raise ValueError(
                f"specialize: {where} has {attr} {getattr(old, attr)!r}, the new buffer "
                f"{new.name!r} has {getattr(new, attr)!r}"
            )
    for k, (o, n) in enumerate(zip(old.shape, new.shape)):
        bindings.unify(o, n, f"{where} shape[{k}]")
    for k, (o, n) in enumerate(zip(old.strides, new.strides)):
        bindings.unify(o, n, f"{where} strides[{k}]")
    bindings.unify(old.elem_offset, new.elem_offset, f"{where} elem_offset")


def _param_of(func: PrimFunc, key: Any) -> Var:
    if isinstance(key, Buffer):
        for param, buffer in func.buffer_map.items():
            if buffer is key:
                return param
        raise ValueError(
            f"specialize: buffer {key.name!r} is not a parameter buffer of the function "
            f"(its buffer_map holds {[b.name for b in func.buffer_map.values()]})"
        )
    if isinstance(key, Var):
        if any(p is key for p in func.params):
            return key
        raise ValueError(
            f"specialize: {_describe(key)} is not a parameter of the function (parameters: "
            f"{[p.name for p in func.params]})"
        )
    raise TypeError(
        f"specialize: param_map keys must be parameter Vars or parameter Buffers, got "
        f"{_describe(key)}"
    )


def _collect(func: PrimFunc, param_map: Mapping[Any, Any]) -> _Bindings:
    bindings = _Bindings()
    for key, value in param_map.items():
        param = _param_of(func, key)
        buffer = func.buffer_map.get(param)
        if isinstance(value, Buffer):
            if buffer is None:
                raise ValueError(
                    f"specialize: parameter {_describe(param)} is not bound to a buffer in "
                    f"buffer_map; it cannot be specialized with buffer {value.name!r}"
                )
            _unify_buffer(buffer, value, param, bindings)
            continue
        if buffer is not None or param.dtype == "handle":
            what = f"buffer {buffer.name!r}" if buffer is not None else "a handle"
            raise ValueError(
                f"specialize: parameter {param.name!r} is {what}; specialize it with a "
                f"tir.Buffer, not {value!r}"
            )
        bindings.bind(param, _coerce(value, param.dtype, f"parameter {param.name!r}"),
                      f"parameter {param.name!r}")
    return bindings


def _check_defined(params: tuple, buffer_map: Mapping[Var, Buffer],
                   vmap: Mapping[Var, PrimExpr]) -> None:
    """Values may use only variables the specialized function defines: its parameters and
    the lone-variable shape, stride and offset entries of its parameter buffers."""
    defined = set(params)
    for buffer in buffer_map.values():
        for e in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if isinstance(e, Var) and e not in vmap:
                defined.add(e)
    for var, value in vmap.items():
        for used in free_vars(value):
            if used not in defined:
                raise ValueError(
                    f"specialize: the value {value} given to {var.name!r} uses variable "
                    f"{used.name!r}, which is not a parameter (or buffer shape variable) of "
                    "the specialized function"
                )


# --------------------------------------------------------------------------- entry point


def specialize(func: PrimFunc, param_map: Mapping[Any, Any]) -> PrimFunc:
    """``func`` with the parameters in ``param_map`` bound (see the module docstring).

    Raises ValueError naming the parameter for a key that is not a parameter, a buffer
    handle given an expression, a scalar given a buffer, or conflicting bindings.
    """
    if not isinstance(func, PrimFunc):
        raise TypeError(f"specialize expects a tir.PrimFunc, got {type(func).__name__}")
    if not isinstance(param_map, Mapping):
        raise TypeError(
            f"specialize expects param_map to be a mapping, got {type(param_map).__name__}"
        )
    vmap = _collect(func, param_map).resolve()
    if not vmap:
        return func
    mutator = _Specializer(vmap)
    buffer_map = {p: mutator.visit_buffer(b) for p, b in func.buffer_map.items()}
    params = tuple(p for p in func.params if p not in vmap)
    _check_defined(params, buffer_map, vmap)
    body = mutator.visit_stmt(func.body)
    return func.with_fields(params=params, buffer_map=buffer_map, body=body)
