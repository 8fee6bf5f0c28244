"""IndexMap: a function from buffer indices to new buffer indices (a layout).

::

    m = IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))
    m.map_indices([x, y])            # [x // 4, y, x % 4]
    m.map_shape([16, 8])             # [4, 8, 4]
    repr(m)                          # "lambda i, j: (i // 4, j, i % 4)"

Used by ``Schedule.transform_layout``; it is an IR object, so it compares structurally
(indices bound by position), serialises to JSON and can be recorded in a trace.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

from tvm.ffi import Object, def_field, register_object

from .expr import PrimExpr, Range, Var, const, convert
from .stmt_functor import substitute

__all__ = ["IndexMap"]


@register_object("tir.IndexMap")
class IndexMap(Object):
    """``initial_indices -> final_indices`` (expressions over the initial indices)."""

    initial_indices: tuple = def_field()
    final_indices: tuple = ()

    @staticmethod
    def from_func(fn: Callable[..., Any], ndim: Optional[int] = None,
                  index_dtype: str = "int32") -> IndexMap:
        """Build from a Python function of the indices returning a tuple of expressions.

        The function's parameter names name the indices; a ``*args`` function needs
        ``ndim``."""
        if isinstance(fn, IndexMap):
            return fn
        if not callable(fn):
            raise TypeError(f"IndexMap.from_func expects a callable, got {type(fn).__name__}")
        params = list(inspect.signature(fn).parameters.values())
        names: list[str] = []
        for p in params:
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                if ndim is None:
                    raise ValueError("IndexMap.from_func: a *args function needs ndim")
                names.extend(f"i{k}" for k in range(len(names), ndim))
                break
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
        if ndim is not None and len(names) != ndim:
            raise ValueError(f"IndexMap.from_func: the function takes {len(names)} indices, "
                             f"the buffer has {ndim} dimensions")
        variables = [Var(n, index_dtype) for n in names]
        result = fn(*variables)
        if not isinstance(result, (tuple, list)):
            result = (result,)
        finals = []
        for k, e in enumerate(result):
            try:
                finals.append(convert(e))
            except TypeError:
                raise TypeError(f"IndexMap.from_func: output {k} of the function is "
                                f"{type(e).__name__} {e!r}, not an index expression") from None
        return IndexMap(tuple(variables), tuple(finals))

    @property
    def ndim_in(self) -> int:
        return len(self.initial_indices)

    @property
    def ndim_out(self) -> int:
        return len(self.final_indices)

    def map_indices(self, indices: Sequence[Any], analyzer: Any = None) -> list[PrimExpr]:
        """The final indices with the initial ones replaced by ``indices``."""
        if len(indices) != self.ndim_in:
            raise ValueError(f"IndexMap takes {self.ndim_in} indices, got {len(indices)}")
        vmap = {v: convert(i) for v, i in zip(self.initial_indices, indices)}
        out = [substitute(e, vmap) for e in self.final_indices]
        if analyzer is not None:
            out = [analyzer.simplify(e) for e in out]
        return out

    def map_ranges(self, ranges: Sequence[Range], analyzer: Any = None) -> list[Any]:
        """IntervalSets of each final index when the initial ones range over ``ranges``."""
        from tvm.arith import Analyzer, eval_set

        ana = analyzer if analyzer is not None else Analyzer()
        dom = dict(zip(self.initial_indices, ranges))
        return [eval_set(e, dom, ana) for e in self.final_indices]

    def map_shape(self, shape: Sequence[Any], analyzer: Any = None) -> list[PrimExpr]:
        """The shape of the buffer after the map: one past the largest final index, per
        dimension (ValueError if an index can be negative or is unbounded)."""
        from tvm.arith import Analyzer

        ana = analyzer if analyzer is not None else Analyzer()
        ranges = [Range(const(0, convert(s).dtype), convert(s)) for s in shape]
        out = []
        for k, s in enumerate(self.map_ranges(ranges, ana)):
            if not s.is_bounded() or not ana.can_prove(s.min_value >= 0):
                raise ValueError(f"IndexMap {self!r}: output {k} is not a bounded non-negative "
                                 f"index over the shape {list(shape)}")
            out.append(ana.simplify(s.max_value + 1))
        return out

    def __call__(self, *indices: Any) -> list[PrimExpr]:
        return self.map_indices(indices)

    def __repr__(self) -> str:
        args = ", ".join(v.name for v in self.initial_indices)
        outs = ", ".join(_text(e) for e in self.final_indices)
        if len(self.final_indices) == 1:
            outs += ","
        return f"lambda {args}: ({outs})"


def _text(e: PrimExpr) -> str:
    if isinstance(e, Var):
        return e.name
    try:
        return repr(e)
    except Exception:  # noqa: BLE001 - printing must not fail
        return object.__repr__(e)
