"""Operator infrastructure: one declaration per operator.

An operator is a :class:`tvm.ir.Op` (``Op.get("relax.add")``) with attributes:

* ``"FInferStructInfo"``: ``(call, block_builder) -> StructInfo``;
* ``"FLegalize"``: ``(block_builder, call) -> Expr`` lowering it to TIR (filled by LegalizeOps);
* ``"FNumpyEval"``: ``(call, *values) -> value``, its reference semantics on numpy values
  (FoldConstant's fallback and the import-time folding of frontends, see
  :mod:`tvm.relax.transform.numpy_eval`);
* ``"FPurity"``: whether it has no visible side effects (default True);
* ``"attrs_type"``: the :class:`Attrs` class of its attributes (or None);
* ``"arg_names"``: names of its inputs (used in error messages and by the printer/parser).

:func:`register_op` declares all of that next to the Python constructor, so an op family
module reads as one table::

    @register_op("relax.nn.softmax", inputs=("data",), attrs=SoftmaxAttrs)
    def softmax(data: Expr, axis: int = -1) -> Call:
        "Softmax along ``axis``."
        return make_call("relax.nn.softmax", [data], SoftmaxAttrs(axis=axis))

    @softmax.infer
    def _infer_softmax(call: Call, ctx: BlockBuilder) -> StructInfo:
        data = arg_tensor(call, 0)
        ...

    @softmax.legalize
    def _legalize_softmax(bb, call): ...

    @softmax.evaluate            # the same semantics on numpy values
    def _eval_softmax(call, x): ...

Inference helpers (:func:`arg_tensor`, :func:`arg_sinfo`, :func:`op_error`) raise
:class:`~tvm.relax.StructInfoError` naming the op, the argument and what was expected.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence

from tvm.ffi import Object, register_object
from tvm.ir.op import Op

from ..errors import StructInfoError
from ..expr import Call, as_expr
from ..struct_info import (
    PrimStructInfo,
    StructInfo,
    TensorStructInfo,
)

__all__ = [
    "Attrs",
    "OpSpec",
    "register_op",
    "get_op_spec",
    "make_call",
    "arg_sinfo",
    "arg_tensor",
    "op_error",
    "infer_struct_info_of_call",
]

InferFn = Callable[[Call, Any], StructInfo]


@register_object()
class Attrs(Object):
    """Base of operator attribute classes (declared objects with defaults).

    A subclass lists its fields with defaults, e.g.
    ``strides: tuple = (1, 1)``; construct with keywords: ``Conv2DAttrs(strides=(2, 2))``.
    """

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def keys(self) -> list[str]:
        return [info.name for info in self._field_infos]

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(f"{self._type_key} has no attribute {key!r}") from None


_SPECS: dict[str, OpSpec] = {}


class OpSpec:
    """Everything declared about one operator; calling it builds a :class:`Call`."""

    def __init__(
        self,
        name: str,
        constructor: Callable[..., Any],
        inputs: Optional[Sequence[str]],
        attrs_type: Optional[type],
        purity: bool,
    ):
        self.name = name
        self.op = Op.register(name)
        self.constructor = constructor
        self.inputs = tuple(inputs) if inputs is not None else None
        self.attrs_type = attrs_type
        functools.update_wrapper(self, constructor)
        self.op.set_attr("FPurity", purity)
        self.op.set_attr("attrs_type", attrs_type)
        self.op.set_attr("arg_names", self.inputs)
        self.op.set_attr("op_spec", self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.constructor(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<relax operator {self.name}>"

    def infer(self, fn: InferFn) -> InferFn:
        """Decorator: set ``fn(call, ctx)`` as the StructInfo inference (arity checked first)."""
        inputs = self.inputs
        name = self.name

        @functools.wraps(fn)
        def checked(call: Call, ctx: Any) -> StructInfo:
            if inputs is not None and len(call.args) != len(inputs):
                names = ", ".join(inputs)
                raise StructInfoError(
                    f"expects {len(inputs)} argument(s) ({names}), got {len(call.args)}",
                    op=name, span=call.span,
                )
            return fn(call, ctx)

        self.op.set_attr("FInferStructInfo", checked)
        return fn

    def legalize(self, fn: Callable[[Any, Call], Any]) -> Callable[[Any, Call], Any]:
        """Decorator: set ``fn(block_builder, call) -> Expr`` as the lowering to TIR."""
        self.op.set_attr("FLegalize", fn)
        return fn

    def evaluate(self, fn: Optional[Callable[..., Any]] = None, *,
                 symbolic: bool = False) -> Any:
        """Decorator (``@spec.evaluate`` or ``@spec.evaluate(symbolic=True)``): set
        ``fn(call, *values)`` as the op's numpy semantics.

        ``values`` are the arguments as numpy values (tensors as arrays, shapes as tuples of
        ints, scalars as numbers, tuples as tuples); the result must have the call's
        StructInfo (dtype and static shape), which the driver checks.  ``symbolic``: ``fn``
        also computes on object arrays of ints and symbolic ``PrimExpr`` (shape values
        known up to symbolic dimensions) without deciding anything about them.
        """

        def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
            self.op.set_attr("FNumpyEval", f)
            self.op.set_attr("FNumpyEvalSymbolic", bool(symbolic))
            return f

        return wrap if fn is None else wrap(fn)

    def set_attr(self, key: str, value: Any) -> OpSpec:
        self.op.set_attr(key, value)
        return self


_FROM_SIGNATURE: Any = object()


def register_op(
    name: str,
    *,
    inputs: Optional[Sequence[str]] = _FROM_SIGNATURE,
    attrs: Optional[type] = None,
    infer: Optional[InferFn] = None,
    purity: bool = True,
    legalize: Optional[Callable[[Any, Call], Any]] = None,
    evaluate: Optional[Callable[..., Any]] = None,
    **extra: Any,
) -> Callable[[Callable[..., Any]], OpSpec]:
    """Declare operator ``name`` with its Python constructor (the decorated function).

    ``inputs`` names the Relax arguments (``None``: any number, checked by ``infer``;
    default: the constructor's positional parameters without defaults); ``attrs`` is its Attrs class; ``infer`` and ``legalize``
    and ``evaluate`` (numpy semantics) may also be attached later with ``@spec.infer`` /
    ``@spec.legalize`` / ``@spec.evaluate``; ``extra`` sets
    further op attributes.
    """

    def wrap(constructor: Callable[..., Any]) -> OpSpec:
        names = inputs
        if names is _FROM_SIGNATURE:
            params = inspect.signature(constructor).parameters.values()
            names = [
                p.name for p in params
                if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            if any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(constructor).parameters.values()):
                names = None
        spec = OpSpec(name, constructor, names, attrs, purity)
        if infer is not None:
            spec.infer(infer)
        if legalize is not None:
            spec.legalize(legalize)
        if evaluate is not None:
            spec.evaluate(evaluate)
        for key, value in extra.items():
            spec.set_attr(key, value)
        _SPECS[name] = spec
        return spec

    return wrap


def get_op_spec(name: str) -> OpSpec:
    """The declaration of operator ``name`` (KeyError with close matches if unknown)."""
    spec = _SPECS.get(name)
    if spec is None:
        import difflib

        close = difflib.get_close_matches(name, list(_SPECS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown Relax operator {name!r}{hint}")
    return spec


def make_call(
    name: str,
    args: Sequence[Any],
    attrs: Any = None,
    sinfo_args: Sequence[StructInfo] = (),
) -> Call:
    """``Call(Op.get(name), args, attrs, sinfo_args)`` with Python values turned into Exprs."""
    op = Op.get(name)
    return Call(op, [as_expr(a, f"{name} argument") for a in args], attrs, sinfo_args)


# -- helpers for inference functions ---------------------------------------------------------
def _op_name(call: Call) -> str:
    op = call.op
    return op.name if isinstance(op, Op) else str(op)


def op_error(call: Call, message: str) -> StructInfoError:
    """A StructInfoError for ``call`` (raise it): names the op and carries the call's span."""
    return StructInfoError(message, op=_op_name(call), span=call.span)


def _arg_name(call: Call, index: int) -> str:
    names = call.op.get_attr("arg_names") if isinstance(call.op, Op) else None
    if names and index < len(names):
        return f"argument {names[index]!r}"
    return f"argument {index}"


def arg_sinfo(call: Call, index: int) -> StructInfo:
    """The StructInfo of argument ``index`` (an error if it was not inferred)."""
    arg = call.args[index]
    sinfo = getattr(arg, "struct_info_", None)
    if sinfo is None:
        raise op_error(call, f"{_arg_name(call, index)} has no StructInfo (not normalised)")
    return sinfo


def arg_tensor(call: Call, index: int, allow_prim: bool = False) -> TensorStructInfo:
    """The TensorStructInfo of argument ``index``; a clear error if it is not a tensor.

    With ``allow_prim``, a scalar (PrimStructInfo) is accepted as a 0-d tensor.
    """
    sinfo = arg_sinfo(call, index)
    if isinstance(sinfo, TensorStructInfo):
        return sinfo
    if allow_prim and isinstance(sinfo, PrimStructInfo):
        return TensorStructInfo([], sinfo.dtype)
    from ..analysis.struct_info_analysis import describe_struct_info

    expected = "a tensor or a scalar" if allow_prim else "a tensor"
    raise op_error(
        call, f"{_arg_name(call, index)} must be {expected}, got {describe_struct_info(sinfo)}"
    )


def infer_struct_info_of_call(call: Call, ctx: Any) -> StructInfo:
    """Run the op's ``FInferStructInfo`` (a clear error for ops without one)."""
    op = call.op
    fn = op.get_attr("FInferStructInfo")
    if fn is None:
        raise StructInfoError(
            "operator has no StructInfo inference (FInferStructInfo); is the module that "
            "declares it imported?",
            op=op.name, span=call.span,
        )
    return fn(call, ctx)


def normalize_axis(call: Call, axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end); an error if out of range."""
    if not -ndim <= axis < ndim:
        raise op_error(call, f"{what} {axis} is out of range for a tensor of {ndim} dimension(s)")
    return axis % ndim if ndim else 0
