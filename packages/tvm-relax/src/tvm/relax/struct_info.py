"""StructInfo: what Relax knows statically about a value.

* :class:`ObjectStructInfo` — any runtime object (nothing known);
* :class:`PrimStructInfo` — a scalar of ``dtype`` (optionally with a known ``value``);
* :class:`ShapeStructInfo` — a shape with ``ndim`` dimensions (optionally known ``values``);
* :class:`TensorStructInfo` — a tensor with ``dtype``, ``ndim`` and optionally its ``shape``;
* :class:`TupleStructInfo` — a tuple of values, one StructInfo per field;
* :class:`FuncStructInfo` — a function from ``params`` to ``ret``.

Symbolic dimensions are ``int64`` :class:`tvm.tir.Var` (``n = tir.Var("n", "int64")``).
Unknown parts are spelled ``dtype="void"``, ``ndim=-1`` and ``shape=None``/``values=None``.
Symbolic variables in a function's parameter StructInfo (and in ``FuncStructInfo.params``)
are *defined* there: structural equality maps them by position.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ffi import Object, def_field, ignore_field, register_object
from tvm.ffi.dtype import format_dtype, parse_dtype
from tvm.ir.span import Span
from tvm.tir.expr import IntImm, PrimExpr, const

__all__ = [
    "StructInfo",
    "ObjectStructInfo",
    "PrimStructInfo",
    "ShapeStructInfo",
    "TensorStructInfo",
    "TupleStructInfo",
    "FuncStructInfo",
    "canonical_dtype",
    "to_shape_value",
]

UNKNOWN_DTYPE = "void"


def canonical_dtype(dtype: Any, what: str = "dtype") -> str:
    """``dtype`` as a canonical string; ``None``/``""``/``"void"`` mean unknown (``"void"``)."""
    if dtype is None or dtype == "":
        return UNKNOWN_DTYPE
    if not isinstance(dtype, str):
        dtype = str(getattr(dtype, "dtype", dtype))
    try:
        return format_dtype(*parse_dtype(dtype))
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{what}: invalid dtype {dtype!r}: {err}") from None


def to_shape_value(value: Any, what: str = "shape") -> PrimExpr:
    """A shape dimension as an ``int64`` PrimExpr (Python ints and int32 constants convert)."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: a dimension must be an integer, got the bool {value!r}")
    if isinstance(value, int):
        if value < 0 and value != -1:
            raise ValueError(f"{what}: negative dimension {value}")
        return IntImm("int64", value)
    if hasattr(value, "__index__") and not isinstance(value, PrimExpr):
        return IntImm("int64", int(value.__index__()))
    if isinstance(value, PrimExpr):
        if value.dtype == "int64":
            return value
        if isinstance(value, IntImm):
            return IntImm("int64", value.value)
        if value.dtype.startswith("int") or value.dtype.startswith("uint"):
            return value.astype("int64")
        raise TypeError(f"{what}: a dimension must be an integer expression, got dtype {value.dtype}")
    raise TypeError(
        f"{what}: a dimension must be an int or an int64 tir expression, got "
        f"{type(value).__name__} {value!r}"
    )


@register_object()
class StructInfo(Object):
    """Base of all StructInfo kinds."""

    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def is_base_of(self, derived: StructInfo) -> bool:
        """Whether every value described by ``derived`` is also described by ``self``."""
        from .analysis.struct_info_analysis import is_base_of

        return is_base_of(self, derived)


@register_object("relax.ObjectStructInfo")
class ObjectStructInfo(StructInfo):
    """Any runtime object: the top of the StructInfo lattice."""


@register_object("relax.PrimStructInfo")
class PrimStructInfo(StructInfo):
    """A scalar: ``PrimStructInfo("int64")`` or with a known value ``PrimStructInfo(value=n)``."""

    dtype: str
    value: Optional[PrimExpr] = None

    def __init__(
        self,
        dtype: Optional[str] = None,
        value: Any = None,
        *,
        span: Optional[Span] = None,
    ):
        if value is not None:
            if not isinstance(value, PrimExpr):
                value = const(value, dtype)
            if dtype is not None and canonical_dtype(dtype) != value.dtype:
                value = value.astype(canonical_dtype(dtype))
            dtype = value.dtype
        if dtype is None:
            raise TypeError("PrimStructInfo needs a dtype or a value")
        object.__setattr__(self, "dtype", canonical_dtype(dtype, "PrimStructInfo"))
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "span", span)


@register_object("relax.ShapeStructInfo")
class ShapeStructInfo(StructInfo):
    """A shape value: ``ShapeStructInfo([n, 4])`` or ``ShapeStructInfo(ndim=2)``."""

    values: Optional[tuple] = None
    ndim: int = -1

    def __init__(
        self,
        values: Optional[Sequence[Any]] = None,
        ndim: int = -1,
        *,
        span: Optional[Span] = None,
    ):
        if values is not None:
            values = tuple(to_shape_value(v, "ShapeStructInfo") for v in values)
            if ndim not in (-1, len(values)):
                raise ValueError(
                    f"ShapeStructInfo: ndim={ndim} does not match the {len(values)} values given"
                )
            ndim = len(values)
        elif not isinstance(ndim, int) or ndim < -1:
            raise ValueError(f"ShapeStructInfo: ndim must be -1 (unknown) or >= 0, got {ndim!r}")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "ndim", ndim)
        object.__setattr__(self, "span", span)


@register_object("relax.TensorStructInfo")
class TensorStructInfo(StructInfo):
    """A tensor: ``TensorStructInfo([n, 4], "float32")`` or ``TensorStructInfo(ndim=2)``.

    ``shape`` is ``None`` (unknown), a :class:`~tvm.relax.ShapeExpr` or a Relax variable of
    ShapeStructInfo; a Python list of dimensions is wrapped into a ShapeExpr.
    """

    shape: Optional[Any] = None
    dtype: str = UNKNOWN_DTYPE
    ndim: int = -1
    vdevice: Optional[Any] = None

    def __init__(
        self,
        shape: Any = None,
        dtype: Optional[str] = "float32",
        ndim: int = -1,
        vdevice: Optional[Any] = None,
        *,
        span: Optional[Span] = None,
    ):
        from .expr import Expr, ShapeExpr

        if shape is not None:
            if isinstance(shape, (list, tuple)):
                shape = ShapeExpr(shape)
            if not isinstance(shape, Expr):
                raise TypeError(
                    "TensorStructInfo: shape must be a list of dimensions, a ShapeExpr or a "
                    f"shape-typed Relax variable, got {type(shape).__name__}"
                )
            for i, dim in enumerate(shape_values_of(shape) or ()):
                if isinstance(dim, IntImm) and dim.value < 0:
                    raise ValueError(
                        f"TensorStructInfo: dimension {i} is {dim.value}; use a symbolic "
                        "tir.Var (or shape=None with ndim) for unknown dimensions"
                    )
            shape_ndim = _shape_ndim(shape)
            if ndim not in (-1, shape_ndim) and shape_ndim != -1:
                raise ValueError(
                    f"TensorStructInfo: ndim={ndim} does not match the shape's {shape_ndim} "
                    "dimensions"
                )
            if shape_ndim != -1:
                ndim = shape_ndim
        elif not isinstance(ndim, int) or ndim < -1:
            raise ValueError(f"TensorStructInfo: ndim must be -1 (unknown) or >= 0, got {ndim!r}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", canonical_dtype(dtype, "TensorStructInfo"))
        object.__setattr__(self, "ndim", ndim)
        object.__setattr__(self, "vdevice", vdevice)
        object.__setattr__(self, "span", span)

    @property
    def is_unknown_ndim(self) -> bool:
        return self.ndim == -1

    @property
    def is_unknown_dtype(self) -> bool:
        return self.dtype == UNKNOWN_DTYPE

    @property
    def shape_values(self) -> Optional[tuple[PrimExpr, ...]]:
        """The dimensions when known (from a ShapeExpr or a shape variable's StructInfo)."""
        return shape_values_of(self.shape)


def shape_values_of(shape: Any) -> Optional[tuple[PrimExpr, ...]]:
    """Dimensions of a ShapeExpr or shape-typed expression, or ``None`` if unknown."""
    if shape is None:
        return None
    from .expr import ShapeExpr

    if isinstance(shape, ShapeExpr):
        return shape.values
    sinfo = getattr(shape, "struct_info_", None)
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo.values
    return None


def _shape_ndim(shape: Any) -> int:
    values = shape_values_of(shape)
    if values is not None:
        return len(values)
    sinfo = getattr(shape, "struct_info_", None)
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo.ndim
    if sinfo is not None and not isinstance(sinfo, (ShapeStructInfo, ObjectStructInfo)):
        raise TypeError(
            f"TensorStructInfo: shape expression must have ShapeStructInfo, got "
            f"{type(sinfo).__name__}"
        )
    return -1


@register_object("relax.TupleStructInfo")
class TupleStructInfo(StructInfo):
    """A tuple: one StructInfo per field."""

    fields: tuple

    def __init__(self, fields: Sequence[StructInfo], *, span: Optional[Span] = None):
        fields = tuple(fields)
        for i, f in enumerate(fields):
            if not isinstance(f, StructInfo):
                raise TypeError(
                    f"TupleStructInfo: field {i} must be a StructInfo, got {type(f).__name__}"
                )
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "span", span)


@register_object("relax.FuncStructInfo")
class FuncStructInfo(StructInfo):
    """A function: ``FuncStructInfo([param sinfo...], ret, purity=True)``.

    ``params=None`` marks an opaque function (any arguments).  ``derive_func`` optionally
    names a global function (``tvm.ffi.register_func``) ``(call, block_builder) -> StructInfo``
    that computes the return StructInfo of an opaque function's calls.
    """

    params: Optional[tuple] = def_field(default=None)
    ret: StructInfo = None  # type: ignore[assignment]
    purity: bool = True
    derive_func: Optional[str] = None

    def __init__(
        self,
        params: Optional[Sequence[StructInfo]],
        ret: StructInfo,
        purity: bool = True,
        derive_func: Optional[str] = None,
        *,
        span: Optional[Span] = None,
    ):
        if params is not None:
            params = tuple(params)
            for i, p in enumerate(params):
                if not isinstance(p, StructInfo):
                    raise TypeError(
                        f"FuncStructInfo: parameter {i} must be a StructInfo, got {type(p).__name__}"
                    )
        if not isinstance(ret, StructInfo):
            raise TypeError(f"FuncStructInfo: ret must be a StructInfo, got {type(ret).__name__}")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "ret", ret)
        object.__setattr__(self, "purity", bool(purity))
        object.__setattr__(self, "derive_func", derive_func)
        object.__setattr__(self, "span", span)

    @staticmethod
    def opaque_func(
        ret: Optional[StructInfo] = None,
        derive_func: Optional[str] = None,
        purity: bool = False,
        *,
        span: Optional[Span] = None,
    ) -> FuncStructInfo:
        """A function whose parameters are unknown, returning ``ret`` (default: any object)."""
        return FuncStructInfo(None, ret or ObjectStructInfo(), purity, derive_func, span=span)

    @property
    def is_opaque(self) -> bool:
        return self.params is None
