"""Patterns, check and composite reader for matrix-product backends (BLAS-like libraries).

:func:`matmul_patterns` gives, most specific first, ``<backend>.dense_bias``,
``<backend>.matmul_bias`` (``add(matmul(a, b), bias)``), ``<backend>.dense``,
``<backend>.matmul``; in the dense ones ``b`` is ``permute_dims(w)`` of a 2-D ``w`` (a
linear layer: transposed B).  Their check (:func:`check_float32_matmul`) takes float32
tensors of static shape: ``a`` 2-D or 3-D, ``b`` 2-D (a 3-D ``a`` is then one product over
its rows) or 3-D of the same batch, the bias broadcast along the last axis only.
:func:`read_matmul_composite` reads a matched composite function back for code generation.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from ..analysis.struct_info_analysis import get_static_shape
from ..dpl import is_op, wildcard
from ..expr import Call, Function
from .registry import FusionPattern, PatternCheckContext

__all__ = ["matmul_patterns", "check_float32_matmul", "MatmulSpec", "read_matmul_composite",
           "static_shape", "composite_values", "float32_static_problem"]


def static_shape(e: Any) -> Optional[tuple[int, ...]]:
    """The static shape of an expression's tensor StructInfo, else None."""
    s = getattr(e, "struct_info_", None)
    return get_static_shape(s) if s is not None else None


def matmul_patterns(backend: str) -> list[FusionPattern]:
    """The four matmul patterns of ``backend`` (see the module docstring)."""
    out = []
    for bias in (True, False):
        for dense in (True, False):
            rhs = is_op("relax.permute_dims")(wildcard()) if dense else wildcard()
            mm = is_op("relax.matmul")(wildcard(), rhs)
            pat = is_op("relax.add")(mm, wildcard()) if bias else mm
            name = ("dense" if dense else "matmul") + ("_bias" if bias else "")
            out.append(FusionPattern(f"{backend}.{name}", pat, {"matmul": mm},
                                     check_float32_matmul))
    return out


def _permuted(b: Any, ctx: PatternCheckContext) -> Optional[Call]:
    v = ctx.bindings.get(b)
    if isinstance(v, Call) and getattr(v.op, "name", "") == "relax.permute_dims":
        return v
    return None


def float32_static_problem(backend: str, named: Any) -> Optional[str]:
    """Why the first of the ``(name, expression)`` pairs that is not a float32 tensor of
    static shape cannot go to ``backend`` (None when all are)."""
    for name, e in named:
        s = getattr(e, "struct_info_", None)
        dtype = getattr(s, "dtype", None)
        if dtype != "float32":
            return f"{name} has dtype {dtype}, {backend} takes float32"
        if static_shape(e) is None:
            return f"{name} has a symbolic or unknown shape {s}, {backend} needs static shapes"
    return None


def check_float32_matmul(ctx: PatternCheckContext) -> Optional[str]:
    """None if a float32 library matmul can compute the match, else why not."""
    backend = ctx.backend or "the library"
    mm = ctx.annotated["matmul"]
    a, b = mm.args
    perm = _permuted(b, ctx)
    problem = float32_static_problem(backend, (("output", ctx.root), ("lhs", a), ("rhs", b)))
    if problem:
        return problem
    sa, sb = static_shape(a), static_shape(b)
    if perm is not None:
        axes = getattr(perm.attrs, "axes", None)
        axes = None if axes is None else [int(getattr(x, "value", x)) for x in axes]
        if len(sb) != 2 or axes not in (None, [1, 0]):
            return f"permute_dims(axes={axes}) of a {len(sb)}-D rhs is not a transpose of a matrix"
    if len(sa) not in (2, 3) or len(sb) not in (2, 3) or (len(sa) == 2 and len(sb) == 3):
        return f"operand shapes {sa} x {sb}: {backend} takes 2-D or 3-D lhs and 2-D or 3-D rhs"
    if len(sa) == 3 and len(sb) == 3 and sa[0] != sb[0]:
        return f"batch sizes {sa[0]} and {sb[0]} differ (broadcast batch is not supported)"
    if ctx.root is not mm:
        bias = ctx.root.args[1]
        sbias = static_shape(bias)
        n = static_shape(ctx.root)[-1]
        if sbias is None or len(sbias) == 0 or sbias[-1] != n or any(d != 1 for d in sbias[:-1]):
            return f"bias of shape {sbias} is not broadcast along the last axis only"
        if getattr(getattr(bias, "struct_info_", None), "dtype", None) != "float32":
            return "bias is not float32"
    return None


@dataclasses.dataclass(frozen=True)
class MatmulSpec:
    """A matmul composite: parameter indices of ``a``, ``b`` (``w`` when ``trans_b``) and
    the optional bias."""

    a: int
    b: int
    bias: Optional[int]
    trans_b: bool


def composite_values(func: Function) -> tuple[dict[int, int], dict[int, Any], Any]:
    """What a reader of a composite function needs: parameter index by ``id``, bound value by
    variable ``id``, and the value of the result (its root call)."""
    index = {id(p): k for k, p in enumerate(func.params)}
    values: dict[int, Any] = {}
    for block in func.body.blocks:
        for b in block.bindings:
            values[id(b.var)] = b.value
    return index, values, values.get(id(func.body.body))


def read_matmul_composite(func: Function) -> MatmulSpec:
    """The :class:`MatmulSpec` of a composite function made from :func:`matmul_patterns`."""
    index, values, root = composite_values(func)
    bias = None
    if getattr(getattr(root, "op", None), "name", "") == "relax.add":
        mm_var, bias_arg = root.args
        bias = index[id(bias_arg)]
        root = values[id(mm_var)]
    if getattr(getattr(root, "op", None), "name", "") != "relax.matmul":
        raise ValueError(f"{func.attrs.get('Composite')}: not a matmul composite function")
    a, b = root.args
    trans = id(b) in values
    if trans:
        b = values[id(b)].args[0]
    return MatmulSpec(index[id(a)], index[id(b)], bias, trans)
