"""TVMScript text of TIR expressions and attribute values.

The text must read back as the same expression, so the printer avoids Python folding
constants on the way back: ``Add(1, 2)`` prints as ``T.Add(1, 2)`` (``1 + 2`` would read back
as ``3``), int32 and bool constants print as plain literals, every other constant as
``T.<dtype>(value)``.
"""

from __future__ import annotations

from typing import Any

from tvm.ffi import Object
from tvm.ffi.object import generic_repr
from tvm.ffi.dtype import parse_dtype
from tvm.ir.op import Op
from tvm.script.parser_core import PREC, float_literal, python_value, str_literal, wrap
from tvm.tir.buffer import Buffer
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Broadcast, BufferLoad, Call, Cast, Div, FloatImm, FloorDiv,
    FloorMod, IntImm, IterVar, Let, Max, Min, Mod, Mul, Not, Or, PrimExpr, Ramp, Range, Select,
    Shuffle, StringImm, Sub, Var, is_float_dtype, with_lanes,
)
from tvm.tir.op import FLOAT_MATH

__all__ = ["ExprPrinter", "dtype_text"]

_ATOM = PREC["atom"]
_BINARY = {Add: ("+", PREC["+"]), Sub: ("-", PREC["+"]), Mul: ("*", PREC["*"]),
           FloorDiv: ("//", PREC["*"]), FloorMod: ("%", PREC["*"])}
_COMPARE = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}
_BITWISE = {"bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2, "shift_left": 2,
            "shift_right": 2, "bitwise_not": 1}


def dtype_text(dtype: str) -> str:
    """``T.float32`` (or ``T.var("...")``-style fallback for unusual names)."""
    return f"T.{dtype}" if dtype.replace("_", "").isalnum() else f"T.var({str_literal(dtype)})"


def _is_literal(e: Any) -> bool:
    """Whether ``e`` prints as a bare Python literal (which Python would fold)."""
    return isinstance(e, IntImm) and e.dtype in ("int32", "bool")


class ExprPrinter:
    """Expression printing; the statement printer supplies names of variables and buffers."""

    def var_ref(self, v: Var) -> str:  # pragma: no cover - provided by the subclass
        raise NotImplementedError

    def buffer_ref(self, b: Buffer) -> str:  # pragma: no cover - provided by the subclass
        raise NotImplementedError

    def let_var(self, v: Var) -> str:  # pragma: no cover - provided by the subclass
        raise NotImplementedError

    # -- entry -------------------------------------------------------------------------------
    def ex(self, e: Any) -> str:
        return self.expr(e)[0]

    def expr(self, e: Any) -> tuple[str, int]:
        """``(text, precedence)`` of an expression."""
        method = _DISPATCH.get(type(e))
        if method is None:
            for cls in type(e).__mro__[1:]:
                method = _DISPATCH.get(cls)
                if method is not None:
                    break
        if method is None:
            if isinstance(e, (bool, int, float, str)):
                return self.value(e), _ATOM
            return _opaque(e), _ATOM
        return method(self, e)

    def args(self, items: Any) -> str:
        return ", ".join(self.ex(a) for a in items)

    # -- leaves ------------------------------------------------------------------------------
    def _var(self, e: Var) -> tuple[str, int]:
        return self.var_ref(e), _ATOM

    def _int(self, e: IntImm) -> tuple[str, int]:
        if e.dtype == "int32":
            return str(e.value), (PREC["unary"] if e.value < 0 else _ATOM)
        if e.dtype == "bool":
            return ("True" if e.value else "False"), _ATOM
        return f"{dtype_text(e.dtype)}({e.value})", _ATOM

    def _float(self, e: FloatImm) -> tuple[str, int]:
        return f"{dtype_text(e.dtype)}({float_literal(e.value)})", _ATOM

    def _string(self, e: StringImm) -> tuple[str, int]:
        return str_literal(e.value), _ATOM

    # -- operators ---------------------------------------------------------------------------
    def _node_call(self, name: str, *operands: Any) -> tuple[str, int]:
        return f"T.{name}({self.args(operands)})", _ATOM

    def prints_whole(self, e: Any) -> bool:
        """Whether binary node ``e`` prints on its own terms rather than as a link of the
        chain around it (two literals Python would fold print as a node call; a subclass
        that prints some nodes otherwise says so here)."""
        return _is_literal(e.a) and _is_literal(e.b)

    def _binary(self, e: Any) -> tuple[str, int]:
        if _is_literal(e.a) and _is_literal(e.b):
            return self._node_call(type(e).__name__, e.a, e.b)
        # the left spine of a chain (a + b + c ...) is walked iteratively: any length prints
        spine = []
        while type(e) in _BINARY and not self.prints_whole(e):
            spine.append(e)
            e = e.a
        text, prec = self.expr(e)
        for link in reversed(spine):
            sym, link_prec = _BINARY[type(link)]
            b, pb = self.expr(link.b)
            text, prec = f"{wrap(text, prec, link_prec)} {sym} {wrap(b, pb, link_prec + 1)}", \
                link_prec
        return text, prec

    def _div(self, e: Div) -> tuple[str, int]:
        if not is_float_dtype(e.dtype):
            return self._node_call("truncdiv", e.a, e.b)
        prec = PREC["*"]
        a, pa = self.expr(e.a)
        b, pb = self.expr(e.b)
        return f"{wrap(a, pa, prec)} / {wrap(b, pb, prec + 1)}", prec

    def _mod(self, e: Mod) -> tuple[str, int]:
        return self._node_call("truncmod", e.a, e.b)

    def _min(self, e: Min) -> tuple[str, int]:
        return self._node_call("min", e.a, e.b)

    def _max(self, e: Max) -> tuple[str, int]:
        return self._node_call("max", e.a, e.b)

    def _compare(self, e: Any) -> tuple[str, int]:
        if _is_literal(e.a) and _is_literal(e.b):
            return self._node_call(type(e).__name__, e.a, e.b)
        prec = PREC["compare"]
        a, pa = self.expr(e.a)
        b, pb = self.expr(e.b)
        return f"{wrap(a, pa, prec + 1)} {_COMPARE[type(e)]} {wrap(b, pb, prec + 1)}", prec

    def _and_or(self, e: Any) -> tuple[str, int]:
        if _is_literal(e.a) and _is_literal(e.b):
            return self._node_call(type(e).__name__, e.a, e.b)
        word = "and" if isinstance(e, And) else "or"
        prec = PREC[word]
        a, pa = self.expr(e.a)
        b, pb = self.expr(e.b)
        return f"{wrap(a, pa, prec)} {word} {wrap(b, pb, prec + 1)}", prec

    def _not(self, e: Not) -> tuple[str, int]:
        if _is_literal(e.a):
            return self._node_call("Not", e.a)
        prec = PREC["not"]
        a, pa = self.expr(e.a)
        return f"not {wrap(a, pa, prec)}", prec

    # -- other expressions -------------------------------------------------------------------
    def _cast(self, e: Cast) -> tuple[str, int]:
        return f"T.Cast({str_literal(e.dtype)}, {self.ex(e.value)})", _ATOM

    def _select(self, e: Select) -> tuple[str, int]:
        return self._node_call("Select", e.condition, e.true_value, e.false_value)

    def _load(self, e: BufferLoad) -> tuple[str, int]:
        return f"{self.buffer_ref(e.buffer)}[{self.indices(e.indices)}]", _ATOM

    def indices(self, indices: Any) -> str:
        return self.args(indices) if indices else "()"

    def _ramp(self, e: Ramp) -> tuple[str, int]:
        return f"T.Ramp({self.ex(e.base)}, {self.ex(e.stride)}, {e.lanes})", _ATOM

    def _broadcast(self, e: Broadcast) -> tuple[str, int]:
        return f"T.Broadcast({self.ex(e.value)}, {e.lanes})", _ATOM

    def _shuffle(self, e: Shuffle) -> tuple[str, int]:
        return f"T.Shuffle([{self.args(e.vectors)}], [{self.args(e.indices)}])", _ATOM

    def _let(self, e: Let) -> tuple[str, int]:
        value = self.ex(e.value)
        name = self.let_var(e.var)
        return f"T.Let({self.ex(e.body)}, where={{{name}: {value}}})", _ATOM

    def _call(self, e: Call) -> tuple[str, int]:
        op = e.op
        if not isinstance(op, Op):
            return _opaque(e), _ATOM
        name = op.name[4:] if op.name.startswith("tir.") else None
        args = e.args
        dt = e.dtype
        if name in FLOAT_MATH and len(args) == FLOAT_MATH[name] and is_float_dtype(dt) and all(
            a.dtype == dt for a in args
        ):
            return f"T.{name}({self.args(args)})", _ATOM
        if name in ("isnan", "isinf", "isfinite") and len(args) == 1 and is_float_dtype(
            args[0].dtype
        ) and dt == with_lanes("bool", parse_dtype(args[0].dtype)[2]):
            return f"T.{name}({self.ex(args[0])})", _ATOM
        if name == "if_then_else" and len(args) == 3 and args[1].dtype == args[2].dtype == dt:
            return f"T.if_then_else({self.args(args)})", _ATOM
        if name == "likely" and len(args) == 1 and args[0].dtype == dt:
            return f"T.likely({self.ex(args[0])})", _ATOM
        if name == "reinterpret" and len(args) == 1:
            return f"T.reinterpret({str_literal(dt)}, {self.ex(args[0])})", _ATOM
        if name in ("call_extern", "call_pure_extern") and args and isinstance(args[0], StringImm):
            rest = "".join(", " + self.ex(a) for a in args[1:])
            return f"T.{name}({str_literal(dt)}, {str_literal(args[0].value)}{rest})", _ATOM
        if name == "address_of" and len(args) == 1 and isinstance(args[0], BufferLoad) and (
            dt == "handle"
        ):
            return f"T.address_of({self.ex(args[0])})", _ATOM
        if name in _BITWISE and len(args) == _BITWISE[name] and all(a.dtype == dt for a in args):
            return f"T.{name}({self.args(args)})", _ATOM
        rest = "".join(", " + self.ex(a) for a in args)
        return f"T.call_intrin({str_literal(dt)}, {str_literal(op.name)}{rest})", _ATOM

    # -- attribute values --------------------------------------------------------------------
    def value(self, v: Any) -> str:
        """A Python/IR value inside an attribute dict, ``T.attr`` node or annotation.

        IR constants keep their type here (``T.int32(1)``, ``T.bool(True)``), so they read
        back as IR and not as Python numbers.
        """
        text = python_value(v, self.value)
        if text is not None:
            return text
        if isinstance(v, IntImm):
            text = repr(bool(v.value)) if v.dtype == "bool" else str(v.value)
            return f"{dtype_text(v.dtype)}({text})"
        if isinstance(v, StringImm):
            return f"T.StringImm({str_literal(v.value)})"
        if isinstance(v, PrimExpr):
            return self.ex(v)
        if isinstance(v, Buffer):
            return self.buffer_ref(v)
        if isinstance(v, IterVar):
            dom = "None" if v.dom is None else self.value(v.dom)
            return (f"T.iter_var({self.var_ref(v.var)}, {dom}, {str_literal(v.iter_type.name)}, "
                    f"{str_literal(v.thread_tag)})")
        if isinstance(v, Range):
            return f"T.Range({self.ex(v.min)}, {self.ex(v.extent)})"
        return _opaque(v)

    # -- ranges ------------------------------------------------------------------------------
    def stop(self, start: PrimExpr, extent: PrimExpr) -> str:
        """The text of ``start + extent``, folded for constants; reads back as that extent."""
        if isinstance(start, IntImm) and isinstance(extent, IntImm) and start.dtype == extent.dtype:
            from tvm.arith import const_fold

            return self.ex(const_fold.add(start, extent))
        if isinstance(start, IntImm) and start.value == 0:
            return self.ex(extent)
        prec = PREC["+"]
        a, pa = self.expr(start)
        b, pb = self.expr(extent)
        return f"{wrap(a, pa, prec)} + {wrap(b, pb, prec + 1)}"

    def region(self, region: Any) -> str:
        """``A[vi, 0:16]`` for a buffer region."""
        dims = []
        for rng in region.region:
            if isinstance(rng.extent, IntImm) and rng.extent.value == 1:
                dims.append(self.ex(rng.min))
            else:
                dims.append(f"{self.ex(rng.min)}:{self.stop(rng.min, rng.extent)}")
        return f"{self.buffer_ref(region.buffer)}[{', '.join(dims) if dims else '()'}]"


def _opaque(obj: Any) -> str:
    """Text for a value TVMScript has no syntax for (does not parse back)."""
    if isinstance(obj, Object):
        return f"<{generic_repr(obj, 1)}>"
    return f"<{obj!r}>"


_DISPATCH: dict[type, Any] = {
    Var: ExprPrinter._var, IntImm: ExprPrinter._int, FloatImm: ExprPrinter._float,
    StringImm: ExprPrinter._string, Cast: ExprPrinter._cast, Div: ExprPrinter._div,
    Mod: ExprPrinter._mod, Min: ExprPrinter._min, Max: ExprPrinter._max,
    And: ExprPrinter._and_or, Or: ExprPrinter._and_or, Not: ExprPrinter._not,
    Select: ExprPrinter._select, BufferLoad: ExprPrinter._load, Ramp: ExprPrinter._ramp,
    Broadcast: ExprPrinter._broadcast, Shuffle: ExprPrinter._shuffle, Let: ExprPrinter._let,
    Call: ExprPrinter._call,
}
for _cls in _BINARY:
    _DISPATCH[_cls] = ExprPrinter._binary
for _cls in _COMPARE:
    _DISPATCH[_cls] = ExprPrinter._compare
