"""Expressions of the C-like printer (mixed into :class:`~.c_like.CLikePrinter`).

Every expression kind is printed by one method ``_p_<kind>(e, lane)``:

* ``lane is None``: print the (scalar, or in native vector mode whole-vector) value;
* ``lane`` is an int or a C expression string: print lane ``lane`` of a vector value, as a
  scalar.  Scalar sub-expressions of a vector expression print as themselves, so a kind
  only says how it combines its operands.

In ``vector_mode = "scalarize"`` (C) every vector value is printed lane by lane inside a
small loop over lanes, which the C compiler vectorizes; vector variables are C arrays.  In
``"native"`` mode (GPU languages) vector values use the language's vector types where
the printer knows how (``_v_<kind>``), and are otherwise assembled from their lanes.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from tvm.ir.base import GlobalVar

from ..buffer import Buffer
from ..expr import (
    Broadcast, BufferLoad, Call, IntImm, Let, PrimExpr, Ramp, Shuffle, Var,
)
from ..functor import snake_name
from .c_like_stmt import unparen
from .c_types import CodegenError, DType, c_string_literal, dtype_of

__all__ = ["ExprPrinterMixin", "Lane"]

Lane = Optional[Union[int, str]]

_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _lane_text(lane: Union[int, str]) -> str:
    return str(lane)


class ExprPrinterMixin:
    """Expression printing; relies on the state and hooks of :class:`CLikePrinter`."""

    # ------------------------------------------------------------------ dispatch
    def expr(self, e: PrimExpr) -> str:
        """C text of a scalar expression (or, in native vector mode, of a vector one)."""
        if not isinstance(e, PrimExpr):
            raise CodegenError(f"{self.language} codegen: expected an expression, got "
                               f"{type(e).__name__} {e!r}")
        d = dtype_of(e.dtype)
        if d.lanes > 1:
            if self.vector_mode != "native":
                raise CodegenError(
                    f"{self.language} codegen: the vector value {type(e).__name__} ({e.dtype}) "
                    "is used where only a scalar can appear"
                )
            return self._vector_expr(e)
        return self._dispatch(e)(e, None)

    def lane(self, e: PrimExpr, lane: Union[int, str]) -> str:
        """C text of lane ``lane`` of ``e`` (``e`` itself when it is a scalar)."""
        if dtype_of(e.dtype).lanes == 1:
            return self.expr(e)
        return self._dispatch(e)(e, lane)

    def sub(self, e: PrimExpr, lane: Lane) -> str:
        """An operand: the whole value (``lane is None``) or one lane of it."""
        return self.expr(e) if lane is None else self.lane(e, lane)

    def _dispatch(self, e: PrimExpr):
        table = type(self).__dict__.get("_expr_table")
        if table is None:
            table = {}
            type(self)._expr_table = table
        fn = table.get(type(e))
        if fn is None:
            for cls in type(e).__mro__:
                fn = getattr(type(self), f"_p_{snake_name(cls)}", None)
                if fn is not None:
                    break
            if fn is None:
                raise CodegenError(
                    f"{self.language} codegen: cannot print expression {type(e).__name__} "
                    f"({e!r}); it should have been lowered away"
                )
            table[type(e)] = fn
        return lambda node, lane: fn(self, node, lane)

    def _vector_expr(self, e: PrimExpr) -> str:
        handler = getattr(self, f"_v_{snake_name(type(e))}", None)
        if handler is not None:
            out = handler(e)
            if out is not None:
                return out
        d = dtype_of(e.dtype)
        return self.make_vector(d, [self.lane(e, i) for i in range(d.lanes)])

    # ------------------------------------------------------------------ leaves
    def _p_var(self, e: Var, lane: Lane) -> str:
        name = self.var_name(e)
        if lane is None:
            return name
        if self.vector_mode == "native":
            return self.vector_lane(name, dtype_of(e.dtype), lane)
        return f"{name}[{_lane_text(lane)}]"

    def _p_int_imm(self, e: IntImm, lane: Lane) -> str:
        return self.int_literal(e.value, dtype_of(e.dtype))

    def _p_float_imm(self, e: Any, lane: Lane) -> str:
        return self.float_literal(e.value, dtype_of(e.dtype))

    def _p_string_imm(self, e: Any, lane: Lane) -> str:
        return c_string_literal(e.value)

    # ------------------------------------------------------------------ casts
    def _p_cast(self, e: Any, lane: Lane) -> str:
        src, dst = dtype_of(e.value.dtype).element, dtype_of(e.dtype).element
        return self.cast(self.sub(e.value, lane), src, dst)

    def cast(self, value: str, src: DType, dst: DType) -> str:
        """Convert the scalar ``value`` from ``src`` to ``dst`` (C conversion semantics,
        half types through float32)."""
        if src.text == dst.text:
            return value
        f32 = dtype_of("float32")
        if src.is_half_like and self.half_via_float:
            value, src = self.half_to_float(value, src), f32
            if dst.text == src.text:
                return value
        if dst.is_half_like and self.half_via_float:
            return self.float_to_half(self.cast(value, src, f32), dst)
        if dst.is_handle and not src.is_handle:
            return f"(({self.type_name(dst)})(uintptr_t)({value}))"
        if src.is_handle and not dst.is_handle:
            return f"(({self.type_name(dst)})(uintptr_t)({value}))"
        return self.c_cast(self.type_name(dst), value)

    def to_float(self, value: str, d: DType) -> str:
        """``value`` of a half type as float32 (other types unchanged)."""
        return self.half_to_float(value, d) if d.is_half_like and self.half_via_float else value

    # ------------------------------------------------------------------ arithmetic
    def binop(self, op: str, a: str, b: str, d: DType) -> str:
        """``a op b`` of scalar dtype ``d`` with TIR semantics: half types compute in float
        and round back, narrow integers wrap to their width, ``%`` on floats is fmod."""
        if d.is_half_like and self.half_via_float:
            f32 = dtype_of("float32")
            inner = self.binop(op, self.half_to_float(a, d), self.half_to_float(b, d), f32)
            return self.float_to_half(inner, d)
        if d.is_float and op == "%":
            return f"{self.math_function('fmod', d)}({a}, {b})"
        if d.is_int and d.bits < 32:
            t = self.type_name(d)
            if d.is_unsigned:
                u32 = self.type_name(dtype_of("uint32"))
                wa, wb = unparen(self.c_cast(u32, a)), unparen(self.c_cast(u32, b))
                return self.c_cast(t, f"{wa} {op} {wb}")
            return self.c_cast(t, f"{a} {op} {b}")
        return f"({a} {op} {b})"

    def _arith(self, e: Any, lane: Lane, op: str) -> str:
        d = dtype_of(e.dtype).element
        return self.binop(op, self.sub(e.a, lane), self.sub(e.b, lane), d)

    def _p_add(self, e: Any, lane: Lane) -> str:
        return self._arith(e, lane, "+")

    def _p_sub(self, e: Any, lane: Lane) -> str:
        return self._arith(e, lane, "-")

    def _p_mul(self, e: Any, lane: Lane) -> str:
        return self._arith(e, lane, "*")

    def _p_div(self, e: Any, lane: Lane) -> str:
        return self._arith(e, lane, "/")

    def _p_mod(self, e: Any, lane: Lane) -> str:
        return self._arith(e, lane, "%")

    def _p_floor_div(self, e: Any, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        a, b = self.sub(e.a, lane), self.sub(e.b, lane)
        if d.is_float:
            fd = dtype_of("float32") if d.is_half_like else d
            q = f"{self.math_function('floor', fd)}(({self.to_float(a, d)} / {self.to_float(b, d)}))"
            return self.float_to_half(q, d) if fd is not d else q
        if d.is_unsigned or d.is_bool:
            return self.binop("/", a, b, d)
        return f"{self.helper_floordiv(d)}({a}, {b})"

    def _p_floor_mod(self, e: Any, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        a, b = self.sub(e.a, lane), self.sub(e.b, lane)
        if d.is_float:
            return f"{self.helper_float_floormod(d)}({a}, {b})"
        if d.is_unsigned or d.is_bool:
            return self.binop("%", a, b, d)
        return f"{self.helper_floormod(d)}({a}, {b})"

    def _p_min(self, e: Any, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        return f"{self.helper_minmax(d, True)}({self.sub(e.a, lane)}, {self.sub(e.b, lane)})"

    def _p_max(self, e: Any, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        return f"{self.helper_minmax(d, False)}({self.sub(e.a, lane)}, {self.sub(e.b, lane)})"

    # ------------------------------------------------------------------ comparisons & logic
    def compare(self, op: str, a: str, b: str, d: DType) -> str:
        """``a op b`` on operands of scalar dtype ``d``; a C bool."""
        return f"({self.to_float(a, d)} {op} {self.to_float(b, d)})"

    def _cmp(self, e: Any, lane: Lane, op: str) -> str:
        d = dtype_of(e.a.dtype).element
        return self.compare(op, self.sub(e.a, lane), self.sub(e.b, lane), d)

    def _p_eq(self, e: Any, lane: Lane) -> str:
        return self._cmp(e, lane, "==")

    def _p_ne(self, e: Any, lane: Lane) -> str:
        return self._cmp(e, lane, "!=")

    def _p_lt(self, e: Any, lane: Lane) -> str:
        return self._cmp(e, lane, "<")

    def _p_le(self, e: Any, lane: Lane) -> str:
        return self._cmp(e, lane, "<=")

    def _p_gt(self, e: Any, lane: Lane) -> str:
        return self._cmp(e, lane, ">")

    def _p_ge(self, e: Any, lane: Lane) -> str:
        return self._cmp(e, lane, ">=")

    def _p_and(self, e: Any, lane: Lane) -> str:
        return f"({self.sub(e.a, lane)} && {self.sub(e.b, lane)})"

    def _p_or(self, e: Any, lane: Lane) -> str:
        return f"({self.sub(e.a, lane)} || {self.sub(e.b, lane)})"

    def _p_not(self, e: Any, lane: Lane) -> str:
        return f"(!{self.sub(e.a, lane)})"

    def _p_select(self, e: Any, lane: Lane) -> str:
        c = self.sub(e.condition, lane)
        return self.conditional(c, self.sub(e.true_value, lane), self.sub(e.false_value, lane))

    # ------------------------------------------------------------------ let
    def _p_let(self, e: Let, lane: Lane) -> str:
        # The binding is hoisted in front of the statement being printed; every hoisting
        # gets its own C name, so a Let node printed twice never reads a stale value.
        name = self.bind_value(e.var, e.value)
        try:
            return self.sub(e.body, lane)
        finally:
            self.unbind_var(e.var, name)

    def bind_value(self, var: Var, value: PrimExpr) -> str:
        """Declare a fresh C variable for ``var`` holding ``value`` (a scalar, a native
        vector, or a C array of lanes in scalarize mode); returns its name."""
        d = dtype_of(var.dtype)
        if d.lanes > 1 and self.vector_mode != "native":
            name = self.declare_var(var)
            self.materialize(value, name, declare=True)
            self.st.vector_arrays.add(var)
            return name
        text = self.expr(value)
        name = self.declare_var(var)
        ctype = self.var_type(var)
        if d.is_handle and ctype != self.type_name(d):
            text = f"(({ctype})({text}))"
        self.emit(self.declaration(ctype, name, text))
        return name

    # ------------------------------------------------------------------ vectors
    def _p_ramp(self, e: Ramp, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        base = self.expr(e.base)
        if isinstance(lane, int):
            if lane == 0:
                return base
            if isinstance(e.stride, IntImm):
                return self.binop("+", base, self.literal(e.stride.value * lane, d), d)
            return self.binop("+", base, self.binop("*", self.expr(e.stride),
                                                    self.literal(lane, d), d), d)
        lane_text = lane if d.text == "int32" else self.c_cast(self.type_name(d), str(lane))
        if isinstance(e.stride, IntImm) and e.stride.value == 1:
            if isinstance(e.base, IntImm) and e.base.value == 0:
                return lane_text
            return self.binop("+", base, lane_text, d)
        step = self.binop("*", self.expr(e.stride), lane_text, d)
        if isinstance(e.base, IntImm) and e.base.value == 0:
            return step
        return self.binop("+", base, step, d)

    def _p_broadcast(self, e: Broadcast, lane: Lane) -> str:
        return self.expr(e.value)

    def _p_shuffle(self, e: Shuffle, lane: Lane) -> str:
        indices = [int(i) for i in e.indices]
        pieces: list[tuple[PrimExpr, int]] = []  # (vector, lane) of each concatenated lane
        for vec in e.vectors:
            n = dtype_of(vec.dtype).lanes
            pieces.extend((vec, j) for j in range(n))
        if lane is None:
            vec, j = pieces[indices[0]]
            return self.sub(vec, j) if dtype_of(vec.dtype).lanes > 1 else self.expr(vec)
        if isinstance(lane, int):
            vec, j = pieces[indices[lane]]
            return self.lane(vec, j) if dtype_of(vec.dtype).lanes > 1 else self.expr(vec)
        # A lane chosen at run time: concatenate the inputs into an array and index it.
        elem = dtype_of(e.dtype).element
        cat = self.st.names.fresh("shuffle")
        self.emit(f"{self.type_name(elem)} {cat}[{len(pieces)}];")
        offset = 0
        for vec in e.vectors:
            n = dtype_of(vec.dtype).lanes
            if n == 1:
                self.emit(f"{cat}[{offset}] = {self.expr(vec)};")
            else:
                self.materialize(vec, f"({cat} + {offset})" if offset else cat, declare=False)
            offset += n
        perm = self.st.names.fresh("perm")
        table = ", ".join(str(i) for i in indices)
        self.emit(f"const int32_t {perm}[{len(indices)}] = {{{table}}};")
        return f"{cat}[{perm}[{lane}]]"

    def materialize(self, value: PrimExpr, target: str, declare: bool) -> None:
        """Write every lane of the vector ``value`` into the C array ``target``."""
        d = dtype_of(value.dtype)
        if declare:
            self.emit(f"{self.type_name(d.element)} {target}[{d.lanes}];")
        lv = self.st.names.fresh("l")
        text = self.lane(value, lv)
        self.emit(f"for (int32_t {lv} = 0; {lv} < {d.lanes}; ++{lv}) {{ {target}[{lv}] = {text}; }}")
        self.st.names.release(lv)

    # ------------------------------------------------------------------ memory
    def flat_index(self, buffer: Buffer, indices: tuple) -> PrimExpr:
        """The element offset of ``buffer[indices]``: row-major (or by the buffer's strides)
        plus ``elem_offset``; a 1-D access of a flattened buffer is its index."""
        if len(indices) == 1:
            index = indices[0]
        elif not indices:
            index = IntImm("int32", 0)
        else:
            strides = list(buffer.strides)
            if not strides:
                strides = [None] * len(indices)
                acc: Any = 1
                for k in range(len(indices) - 1, -1, -1):
                    strides[k] = acc
                    dim = buffer.shape[k]
                    if isinstance(acc, int) and isinstance(dim, IntImm):
                        acc = dim.value * acc
                    else:
                        acc = dim if (isinstance(acc, int) and acc == 1) else dim * acc
            index = None
            for idx, stride in zip(indices, strides):
                unit = (isinstance(stride, int) and stride == 1) or \
                    (isinstance(stride, IntImm) and stride.value == 1)
                term = idx if unit else idx * stride
                index = term if index is None else index + term
        eo = buffer.elem_offset
        if eo is not None and not (isinstance(eo, IntImm) and eo.value == 0):
            index = index + eo
        return index

    def buffer_ptr(self, buffer: Buffer) -> str:
        """C pointer expression to the elements of ``buffer`` (cast when the data variable
        is declared with another element type; refused without ``pointer_casts``)."""
        elem = dtype_of(buffer.dtype).element
        name = self.var_name(buffer.data)
        have = self.st.ptr_elem.get(buffer.data)
        if have is not None and have.text == elem.text:
            return name
        if not self.pointer_casts:
            raise CodegenError(
                f"{self.language} codegen: function {self.st.name}: buffer {buffer.name!r} "
                f"reads its memory as {elem.text}, but the memory is "
                f"{have.text if have else 'used with several types'}; {self.language} "
                "cannot reinterpret a storage buffer")
        return f"(({self.pointer_type(elem, buffer.scope)}){name})"

    def element_index(self, buffer: Buffer, index: PrimExpr, lane: Lane) -> str:
        """C index (in elements of the buffer's scalar type) of one lane of an access."""
        bl = dtype_of(buffer.dtype).lanes
        il = dtype_of(index.dtype).lanes
        if bl == 1:
            return self.sub(index, lane) if il > 1 else self.expr(index)
        d = dtype_of(index.dtype).element
        if lane is None:
            raise CodegenError(f"{self.language} codegen: a {buffer.dtype} element of buffer "
                               f"{buffer.name!r} is a vector value")
        if isinstance(lane, int):
            outer, inner = lane // bl, lane % bl
        else:
            outer, inner = f"(({lane}) / {bl})", f"(({lane}) % {bl})"
        base = self.lane(index, outer) if il > 1 else self.expr(index)
        scaled = self.binop("*", base, self.int_literal(bl, d), d)
        inner_text = str(inner) if d.text == "int32" else self.c_cast(self.type_name(d), str(inner))
        return self.binop("+", scaled, inner_text, d)

    def _p_buffer_load(self, e: BufferLoad, lane: Lane) -> str:
        buf = e.buffer
        index = self.flat_index(buf, e.indices)
        self.note_buffer_use(buf)
        return self.load(buf, self.element_index(buf, index, lane))

    def load(self, buffer: Buffer, index: str) -> str:
        """Load one scalar element of ``buffer`` at C index ``index``."""
        return f"{self.buffer_ptr(buffer)}[{index}]"

    # ------------------------------------------------------------------ native vectors
    def _v_var(self, e: Var) -> str:
        return self.var_name(e)

    def _v_broadcast(self, e: Broadcast) -> str:
        return self.broadcast_vector(dtype_of(e.dtype), self.expr(e.value))

    def _v_let(self, e: Let) -> str:
        name = self.bind_value(e.var, e.value)
        try:
            return self.expr(e.body)
        finally:
            self.unbind_var(e.var, name)

    def _v_buffer_load(self, e: BufferLoad) -> Optional[str]:
        buf = e.buffer
        index = self.flat_index(buf, e.indices)
        if (dtype_of(buf.dtype).lanes == 1 and isinstance(index, Ramp)
                and isinstance(index.stride, IntImm) and index.stride.value == 1):
            self.note_buffer_use(buf)
            return self.vector_load(buf, self.expr(index.base), dtype_of(e.dtype))
        return None

    def _v_native_binop(self, e: Any, op: str) -> Optional[str]:
        d = dtype_of(e.dtype)
        if not self.vector_ops_native or d.is_half_like or (d.is_int and d.bits < 32) \
                or (d.is_float and op == "%"):
            return None
        return f"({self.expr(e.a)} {op} {self.expr(e.b)})"

    def _v_add(self, e: Any) -> Optional[str]:
        return self._v_native_binop(e, "+")

    def _v_sub(self, e: Any) -> Optional[str]:
        return self._v_native_binop(e, "-")

    def _v_mul(self, e: Any) -> Optional[str]:
        return self._v_native_binop(e, "*")

    def _v_div(self, e: Any) -> Optional[str]:
        return self._v_native_binop(e, "/")

    # ------------------------------------------------------------------ calls
    def _p_call(self, e: Call, lane: Lane) -> str:
        op = e.op
        if isinstance(op, GlobalVar):
            args = ", ".join(self.sub(a, lane) for a in e.args)
            return f"{self.function_symbol(op.name_hint)}({args})"
        name = getattr(op, "name", str(op))
        short = name[4:] if name.startswith("tir.") else name
        handler = getattr(self, f"intrin_{short}", None)
        if handler is None:
            return self.math_call(short, e, lane)
        return handler(e, lane)
