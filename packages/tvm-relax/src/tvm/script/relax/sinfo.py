"""StructInfo constructors of the ``R`` namespace: ``R.Tensor``, ``R.Tuple``, ``R.Shape``,
``R.Object``, ``R.Prim``, ``R.Callable``.

Dimensions and prim values are ints, ``tvm.tir`` expressions, or *strings* naming symbolic
variables (``R.Tensor(("n", 4), "float32")``); a string may also hold an expression over
such names (``"n * 2"``).  While a function is parsed, strings resolve in that function's
:class:`SymbolScope` (the same name is the same variable; a new name makes a new ``int64``
variable), which is how a signature introduces its symbolic variables.
"""

from __future__ import annotations

import ast
import threading
import types
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Optional

from tvm.relax.expr import Expr, ShapeExpr
from tvm.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from tvm.script.parser_core import ExprEvaluator, Source, VarTable
from tvm.tir.expr import IntImm, PrimExpr, Var as TirVar, const

__all__ = [
    "Tensor", "Tuple", "Shape", "Object", "Prim", "Callable", "SymbolScope", "as_struct_info",
    "current_scope",
]


class SymbolScope:
    """The symbolic variables of one function, by name."""

    def __init__(self, env: Sequence[Mapping[str, Any]] = ()):
        self.vars: dict[str, TirVar] = {}
        self.env = list(env)

    def get(self, name: str, dtype: str = "int64") -> TirVar:
        """The variable ``name`` (created with ``dtype`` on first use)."""
        var = self.vars.get(name)
        if var is None:
            var = TirVar(name, dtype)
            self.vars[name] = var
        return var

    def add(self, name: str, var: TirVar) -> None:
        self.vars.setdefault(name, var)

    def eval_text(self, text: str, dtype: str = "int64") -> PrimExpr:
        """A dimension written as a string: a name or an expression over names."""
        if text.isidentifier():
            return self.get(text, dtype)
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as err:
            raise ValueError(f"invalid symbolic expression {text!r}: {err.msg}") from None
        evaluator = ExprEvaluator(Source(text.strip(), "<symbolic expression>"),
                                  VarTable([_Names(self, dtype)]))
        try:
            value = evaluator.eval(tree.body)
        except Exception as err:  # noqa: BLE001 - reported against the whole string
            raise ValueError(f"cannot evaluate symbolic expression {text!r}: "
                             f"{getattr(err, 'message', err)}") from None
        if isinstance(value, bool) or not isinstance(value, (int, PrimExpr)):
            raise ValueError(f"symbolic expression {text!r} is not an integer expression")
        return value


class _Names(Mapping):
    """Name lookup inside a symbolic-expression string: modules from the environment
    (``T.min``), every other name a symbolic variable."""

    def __init__(self, scope: SymbolScope, dtype: str):
        self.scope = scope
        self.dtype = dtype

    def _module(self, key: str) -> Any:
        for mapping in self.scope.env:
            value = mapping.get(key) if hasattr(mapping, "get") else None
            if isinstance(value, types.ModuleType):
                return value
        if key == "T":
            import tvm.script.tir as tir_script

            return tir_script
        return None

    def __getitem__(self, key: str) -> Any:
        if key in self.scope.vars:
            return self.scope.vars[key]
        module = self._module(key)
        return module if module is not None else self.scope.get(key, self.dtype)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def __iter__(self) -> Iterator[str]:
        return iter(self.scope.vars)

    def __len__(self) -> int:
        return len(self.scope.vars)


_STATE = threading.local()


def current_scope() -> Optional[SymbolScope]:
    stack = getattr(_STATE, "stack", None)
    return stack[-1] if stack else None


@contextmanager
def symbol_scope(scope: SymbolScope) -> Iterator[SymbolScope]:
    """Make strings in StructInfo constructors resolve in ``scope``."""
    stack = _STATE.__dict__.setdefault("stack", [])
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


def _prim(value: Any, what: str, dtype: str = "int64") -> PrimExpr:
    if isinstance(value, str):
        scope = current_scope() or SymbolScope()
        return scope.eval_text(value, dtype)
    if isinstance(value, bool):
        return const(value, "bool")
    if isinstance(value, int):
        return IntImm(dtype if dtype.startswith(("int", "uint")) else "int64", value)
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, float):
        return const(value, dtype if dtype.startswith(("float", "bfloat")) else "float32")
    raise TypeError(f"{what}: expected an int, a tir expression or a symbolic name string, got "
                    f"{type(value).__name__} {value!r}")


def _dims(values: Any, what: str) -> list[PrimExpr]:
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{what}: expected a tuple or list of dimensions, got "
                        f"{type(values).__name__} {values!r}")
    return [_prim(v, f"{what}[{i}]") for i, v in enumerate(values)]


def _sinfo_ctor(fn: Any) -> Any:
    fn.__tvmscript_sinfo__ = True
    return fn


def as_struct_info(value: Any, what: str = "annotation") -> StructInfo:
    """A StructInfo from an annotation value (``R.Tensor`` alone means ``R.Tensor()``)."""
    if isinstance(value, StructInfo):
        return value
    if getattr(value, "__tvmscript_sinfo__", False) is True:
        return value()
    raise TypeError(f"{what} must be a StructInfo such as R.Tensor((n, 4), \"float32\"), got "
                    f"{type(value).__name__} {value!r}")


@_sinfo_ctor
def Tensor(  # noqa: N802 - TVMScript spelling
    shape: Any = None,
    dtype: Any = None,
    vdevice: Any = None,
    ndim: int = -1,
) -> TensorStructInfo:
    """A tensor: ``R.Tensor((n, 4), "float32")``, ``R.Tensor(ndim=2, dtype="float16")``,
    ``R.Tensor(s)`` with a shape-valued variable ``s``; the dtype defaults to unknown."""
    if vdevice is not None:
        raise ValueError("R.Tensor: virtual devices (vdevice) are not supported")
    if isinstance(shape, (list, tuple)):
        shape = ShapeExpr(_dims(shape, "R.Tensor shape"))
    elif shape is not None and not isinstance(shape, Expr):
        raise TypeError(f"R.Tensor: shape must be a tuple of dimensions or a shape variable, got "
                        f"{type(shape).__name__} {shape!r}")
    if not isinstance(ndim, int) or isinstance(ndim, bool):
        raise TypeError(f"R.Tensor: ndim must be an int, got {ndim!r}")
    return TensorStructInfo(shape, dtype, ndim)


@_sinfo_ctor
def Tuple(*fields: Any) -> TupleStructInfo:  # noqa: N802
    """A tuple: ``R.Tuple(R.Tensor((2,), "int32"), R.Object)``."""
    if len(fields) == 1 and isinstance(fields[0], list):
        fields = tuple(fields[0])
    return TupleStructInfo([as_struct_info(f, f"R.Tuple field {i}") for i, f in enumerate(fields)])


@_sinfo_ctor
def Shape(values: Any = None, ndim: int = -1) -> ShapeStructInfo:  # noqa: N802
    """A shape value: ``R.Shape([n, 4])``, ``R.Shape(ndim=2)``, ``R.Shape`` (unknown)."""
    if values is not None:
        return ShapeStructInfo(_dims(values, "R.Shape"))
    return ShapeStructInfo(None, ndim)


@_sinfo_ctor
def Object() -> ObjectStructInfo:  # noqa: N802
    """Any value (``R.Object``)."""
    return ObjectStructInfo()


@_sinfo_ctor
def Prim(dtype: Any = None, value: Any = None) -> PrimStructInfo:  # noqa: N802
    """A scalar: ``R.Prim("int64")``, ``R.Prim(value=n)``, ``R.Prim("bool", value="flag")``."""
    if dtype is not None and not isinstance(dtype, str):
        dtype = str(getattr(dtype, "dtype", dtype))
    if value is None:
        if dtype is None:
            raise TypeError("R.Prim needs a dtype or a value")
        return PrimStructInfo(dtype)
    return PrimStructInfo(dtype, _prim(value, "R.Prim value", dtype or "int64"))


@_sinfo_ctor
def Callable(  # noqa: N802
    params: Optional[Sequence[Any]] = None,
    ret: Any = None,
    purity: bool = True,
    derive_func: Optional[str] = None,
) -> FuncStructInfo:
    """A function: ``R.Callable((R.Tensor((n,), "float32"),), R.Tensor((n,), "float32"))``;
    ``params=None`` is a function of unknown parameters."""
    ret_sinfo = ObjectStructInfo() if ret is None else as_struct_info(ret, "R.Callable ret")
    if params is None:
        return FuncStructInfo(None, ret_sinfo, purity, derive_func)
    return FuncStructInfo([as_struct_info(p, f"R.Callable parameter {i}")
                           for i, p in enumerate(params)], ret_sinfo, purity, derive_func)
