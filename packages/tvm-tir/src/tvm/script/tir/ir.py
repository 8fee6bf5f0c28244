"""The functions and markers behind ``T.xxx`` in TVMScript.

Expression helpers (``T.exp``, ``T.Cast``, ``T.float32(1)``) build TIR directly.  Statement
helpers (``T.grid``, ``T.block``, ``T.reads``, ``T.allocate`` ...) return small marker
objects that the parser (:mod:`tvm.script.tir.parser`) turns into statements where they
appear; outside a ``@T.prim_func`` they are inert values.

Helpers that create named things (``T.Buffer``, ``T.alloc_buffer``, ``T.int32()`` ...)
accept a ``name`` keyword, which the parser fills from the assignment target.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Optional

from tvm.ffi.dtype import is_float_code, parse_dtype
from tvm.ir.op import Op
from tvm.tir import op as _op
from tvm.tir.buffer import Buffer as _Buffer
from tvm.tir.expr import (
    Broadcast as _Broadcast,
)
from tvm.tir.expr import (
    BufferLoad,
    IterVar,
    IterVarType,
    PrimExpr,
    Range,
    SizeVar,
    StringImm,
    Var,
    _canonical_dtype,
    _match_types,
    const,
    convert,
    element_of,
    with_lanes,
)
from tvm.tir.expr import Call as _Call
from tvm.tir.expr import Cast as _Cast
from tvm.tir.expr import Let as _Let
from tvm.tir.expr import Ramp as _Ramp
from tvm.tir.expr import Select as _Select
from tvm.tir.expr import Shuffle as _Shuffle
from tvm.tir.stmt import BufferRegion, Evaluate, ForKind

# ---------------------------------------------------------------------------------------
# helpers


def named(fn: Any) -> Any:
    """Mark ``fn`` as accepting ``name=``, filled by the parser from the assignment target."""
    fn.__tvmscript_named__ = True
    return fn


def dtype_str(dtype: Any) -> str:
    """A canonical dtype string from a string or a dtype constructor (``T.float32``)."""
    if isinstance(dtype, DTypeConstructor):
        return dtype.dtype
    if isinstance(dtype, str):
        return _canonical_dtype(dtype)
    text = getattr(dtype, "dtype", None)
    if isinstance(text, str):
        return _canonical_dtype(text)
    raise TypeError(f"expected a dtype such as 'float32' or T.float32, got {dtype!r}")


def expr_arg(value: Any) -> PrimExpr:
    """``convert`` that also takes Python strings (as :class:`StringImm`)."""
    if isinstance(value, str):
        return StringImm(value)
    return convert(value)


def _shape(shape: Any) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(convert(s) for s in shape)
    if isinstance(shape, (int, PrimExpr)):
        return (convert(shape),)
    raise TypeError(f"a buffer shape must be a tuple of ints or expressions, got {shape!r}")


def extent_of(start: Any, stop: Any) -> tuple[PrimExpr, PrimExpr]:
    """``(start, stop - start)`` with the difference folded when it is evident.

    Folds constants, ``0:stop`` and ``start:start + n``, so the printer's ``a:a + n`` and
    ``range(a, a + n)`` read back as the extent ``n``.
    """
    from tvm.arith import const_fold
    from tvm.tir.expr import Add, IntImm
    from tvm.tir.expr_util import same_expr

    a, b = _match_types(start, stop)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a, const_fold.sub(b, a)
    if isinstance(a, IntImm) and a.value == 0:
        return a, b
    if isinstance(b, Add) and same_expr(b.a, a):
        return a, b.b
    return a, b - a


# ---------------------------------------------------------------------------------------
# dtypes: T.float32 is a type annotation, a constant (T.float32(1)), a cast of an
# expression (T.float32(x)) and, called with nothing, a new variable (n = T.int64()).


class DTypeConstructor:
    """``T.<dtype>``: annotation, constant, cast, or (with no value) a new variable."""

    __slots__ = ("dtype",)
    __tvmscript_named__ = True

    def __init__(self, dtype: str):
        self.dtype = _canonical_dtype(dtype)

    def __call__(
        self, value: Any = dataclasses.MISSING, *, is_size_var: bool = False, name: str = "v"
    ) -> PrimExpr:
        if value is dataclasses.MISSING or (
            self.dtype == "handle" and not isinstance(value, PrimExpr)
        ):
            # T.handle("float32", "global") names a typed pointer: still a handle variable.
            return (SizeVar if is_size_var else Var)(name, self.dtype)
        if isinstance(value, PrimExpr):
            return value.astype(self.dtype)
        if isinstance(value, str):
            if not is_float_code(parse_dtype(self.dtype)[0]):
                raise TypeError(f"T.{self.dtype} takes a number, got the string {value!r}")
            return const(float(value), self.dtype)
        return const(value, self.dtype)

    def __repr__(self) -> str:
        return f"T.{self.dtype}"


_DTYPE_CACHE: dict[str, DTypeConstructor] = {}


def dtype_constructor(name: str) -> DTypeConstructor:
    """The ``T.<name>`` constructor (``int32``, ``float16x4``, ``bool``, ``handle`` ...)."""
    ctor = _DTYPE_CACHE.get(name)
    if ctor is None:
        ctor = DTypeConstructor(name)
        _DTYPE_CACHE[name] = ctor
    return ctor


@named
def var(dtype: Any, *, is_size_var: bool = False, name: str = "v") -> Var:
    """A new variable of any dtype (``T.var("float8_e4m3fn")``)."""
    return (SizeVar if is_size_var else Var)(name, dtype_str(dtype))


# ---------------------------------------------------------------------------------------
# buffers


def make_buffer(
    name: str,
    shape: Any,
    dtype: Any = "float32",
    data: Optional[Var] = None,
    strides: Any = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: int = 64,
    offset_factor: int = 1,
    axis_separators: Any = None,
) -> _Buffer:
    """A buffer named ``name``; its data handle is a new variable unless ``data`` is given."""
    if data is None:
        data = Var(name, "handle")
    elif not isinstance(data, Var):
        raise TypeError(f"buffer {name}: data must be a handle variable, got {data!r}")
    return _Buffer(
        data,
        dtype_str(dtype),
        _shape(shape),
        tuple(convert(s) for s in (strides or ())),
        None if elem_offset is None else convert(elem_offset),
        scope,
        int(align),
        int(offset_factor),
        tuple(int(a) for a in (axis_separators or ())),
        name,
    )


class BufferFactory:
    """``T.Buffer(shape, dtype, ...)``: a parameter annotation or a buffer over given data.

    ``T.Buffer[(128,), "float32"]`` is accepted too.
    """

    __tvmscript_named__ = True

    def __call__(
        self,
        shape: Any,
        dtype: Any = "float32",
        data: Optional[Var] = None,
        strides: Any = None,
        elem_offset: Any = None,
        scope: str = "global",
        align: int = 64,
        offset_factor: int = 1,
        axis_separators: Any = None,
        *,
        name: str = "buffer",
    ) -> _Buffer:
        return make_buffer(name, shape, dtype, data, strides, elem_offset, scope, align,
                           offset_factor, axis_separators)

    def __getitem__(self, args: Any) -> _Buffer:
        if (isinstance(args, tuple) and len(args) == 2
                and isinstance(args[1], (str, DTypeConstructor))):
            return self(args[0], args[1])
        return self(args)

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = BufferFactory()


@dataclasses.dataclass
class AllocBuffer:
    """``T.alloc_buffer``: a buffer allocated by the enclosing block (or the root block)."""

    buffer: _Buffer


@named
def alloc_buffer(
    shape: Any,
    dtype: Any = "float32",
    data: Optional[Var] = None,
    strides: Any = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: int = 64,
    offset_factor: int = 1,
    axis_separators: Any = None,
    *,
    name: str = "buffer",
) -> AllocBuffer:
    return AllocBuffer(make_buffer(name, shape, dtype, data, strides, elem_offset, scope, align,
                                   offset_factor, axis_separators))


@dataclasses.dataclass
class MatchBuffer:
    """``T.match_buffer``: binds a handle parameter, or (in a block) a buffer region."""

    source: Any
    buffer: _Buffer


@named
def match_buffer(
    param: Any,
    shape: Any = None,
    dtype: Any = "float32",
    data: Optional[Var] = None,
    strides: Any = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: int = 64,
    offset_factor: int = 1,
    axis_separators: Any = None,
    *,
    name: str = "buffer",
) -> MatchBuffer:
    if shape is None:
        region = as_region(param)
        shape = tuple(r.extent for r in region.region)
        dtype = region.buffer.dtype
    buf = make_buffer(name, shape, dtype, data, strides, elem_offset, scope, align, offset_factor,
                      axis_separators)
    return MatchBuffer(param, buf)


def as_region(value: Any) -> BufferRegion:
    """A buffer region from ``A[i, 0:4]`` (region or load) or a whole buffer ``A``."""
    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, BufferLoad):
        return BufferRegion(value.buffer, tuple(Range(i, 1) for i in value.indices))
    if isinstance(value, _Buffer):
        return BufferRegion.full_region(value)
    raise TypeError(f"expected a buffer region such as A[vi, 0:4], got {value!r}")


# ---------------------------------------------------------------------------------------
# loops


@dataclasses.dataclass
class LoopSpec:
    """One or more nested loops: ``for i, j in T.grid(4, 8)``."""

    kind: ForKind
    starts: list
    stops: list
    annotations: Optional[dict] = None
    thread: Any = None


def _loop(kind: ForKind, start: Any, stop: Any, annotations: Any, thread: Any = None) -> LoopSpec:
    if stop is None:
        start, stop = 0, start
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"loop annotations must be a dict, got {annotations!r}")
    return LoopSpec(kind, [start], [stop], annotations, thread)


def serial(start: Any, stop: Any = None, *, annotations: Optional[dict] = None) -> LoopSpec:
    """``for i in T.serial(n)`` / ``T.serial(start, stop)`` (also plain ``range``)."""
    return _loop(ForKind.SERIAL, start, stop, annotations)


def parallel(start: Any, stop: Any = None, *, annotations: Optional[dict] = None) -> LoopSpec:
    return _loop(ForKind.PARALLEL, start, stop, annotations)


def vectorized(start: Any, stop: Any = None, *, annotations: Optional[dict] = None) -> LoopSpec:
    return _loop(ForKind.VECTORIZED, start, stop, annotations)


def unroll(start: Any, stop: Any = None, *, annotations: Optional[dict] = None) -> LoopSpec:
    return _loop(ForKind.UNROLLED, start, stop, annotations)


def thread_binding(
    start: Any, stop: Any = None, thread: Any = None, *, annotations: Optional[dict] = None
) -> LoopSpec:
    """``for tx in T.thread_binding(32, thread="threadIdx.x")``."""
    if thread is None and isinstance(stop, str):
        stop, thread = None, stop
    if not isinstance(thread, (str, IterVar)):
        raise TypeError(f"T.thread_binding needs thread='threadIdx.x' (a tag), got {thread!r}")
    return _loop(ForKind.THREAD_BINDING, start, stop, annotations, thread)


def grid(*extents: Any) -> LoopSpec:
    """Nested serial loops from 0: ``for i, j, k in T.grid(m, n, k)``."""
    if not extents:
        raise TypeError("T.grid needs at least one extent")
    return LoopSpec(ForKind.SERIAL, [0] * len(extents), list(extents))


# ---------------------------------------------------------------------------------------
# blocks


@dataclasses.dataclass
class BlockSpec:
    name: str
    no_realize: bool = False


def block(name: str = "", no_realize: bool = False) -> BlockSpec:
    """``with T.block("C"):`` — a block; its iteration variables come from ``T.axis``."""
    if not isinstance(name, str):
        raise TypeError(f"T.block name must be a str, got {name!r}")
    return BlockSpec(name, no_realize)


class InitSpec:
    """``with T.init():`` — the reduction initialisation of the enclosing block."""


def init() -> InitSpec:
    return InitSpec()


@dataclasses.dataclass
class AxisSpec:
    """One block iteration variable: kind (S/R/O/scan), domain and binding."""

    kind: IterVarType
    dom: Any
    binding: Any
    dtype: str


_AXIS_KINDS = {"S": IterVarType.DATA_PAR, "R": IterVarType.COMM_REDUCE}


class _Axis:
    """``T.axis.spatial/reduce/scan/opaque/remap``."""

    @staticmethod
    def spatial(dom: Any, binding: Any = None, dtype: Any = "int32") -> AxisSpec:
        return AxisSpec(IterVarType.DATA_PAR, dom, binding, dtype_str(dtype))

    @staticmethod
    def reduce(dom: Any, binding: Any = None, dtype: Any = "int32") -> AxisSpec:
        return AxisSpec(IterVarType.COMM_REDUCE, dom, binding, dtype_str(dtype))

    @staticmethod
    def scan(dom: Any, binding: Any = None, dtype: Any = "int32") -> AxisSpec:
        return AxisSpec(IterVarType.ORDERED, dom, binding, dtype_str(dtype))

    @staticmethod
    def opaque(dom: Any, binding: Any = None, dtype: Any = "int32") -> AxisSpec:
        return AxisSpec(IterVarType.OPAQUE, dom, binding, dtype_str(dtype))

    @staticmethod
    def remap(kinds: str, bindings: Sequence[Any], dtype: Any = "int32") -> list[AxisSpec]:
        """``vi, vk = T.axis.remap("SR", [i, k])``: domains are the loops' ranges."""
        if not isinstance(kinds, str) or len(kinds) != len(bindings):
            raise TypeError(
                f"T.axis.remap needs one kind letter per binding, got {kinds!r} for "
                f"{len(bindings)} binding(s)"
            )
        out = []
        for kind, binding in zip(kinds, bindings):
            if kind not in _AXIS_KINDS:
                raise ValueError(
                    f"T.axis.remap kinds are 'S' (spatial) or 'R' (reduce), got {kind!r}")
            if not isinstance(binding, Var):
                raise TypeError(f"T.axis.remap binds loop variables, got {binding!r}")
            out.append(AxisSpec(_AXIS_KINDS[kind], None, binding, binding.dtype))
        return out

    S = spatial
    R = reduce


axis = _Axis()


@dataclasses.dataclass
class Reads:
    regions: list


@dataclasses.dataclass
class Writes:
    regions: list


def _regions(args: tuple) -> list:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    return [as_region(a) for a in args]


def reads(*regions: Any) -> Reads:
    """``T.reads(A[vi, 0:16], B)``: the regions the block reads."""
    return Reads(_regions(regions))


def writes(*regions: Any) -> Writes:
    """``T.writes(C[vi, vj])``: the regions the block writes."""
    return Writes(_regions(regions))


@dataclasses.dataclass
class Where:
    predicate: PrimExpr


def where(predicate: Any) -> Where:
    """``T.where(cond)``: the block runs only where ``cond`` holds."""
    return Where(convert(predicate))


@dataclasses.dataclass
class BlockAttr:
    attrs: dict


def block_attr(attrs: dict) -> BlockAttr:
    if not isinstance(attrs, dict):
        raise TypeError(f"T.block_attr takes a dict, got {attrs!r}")
    return BlockAttr(attrs)


@dataclasses.dataclass
class FuncAttr:
    attrs: dict


def func_attr(attrs: dict) -> FuncAttr:
    """``T.func_attr({"global_symbol": "main", "tir.noalias": True})``."""
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise TypeError(f"T.func_attr takes a dict with str keys, got {attrs!r}")
    return FuncAttr(attrs)


# ---------------------------------------------------------------------------------------
# scoped statements: `x = T.allocate(...)` takes the rest of the block as body; the
# `with T.allocate(...) as x:` form takes the with-body.


class Frame:
    """A statement that wraps a body."""


@dataclasses.dataclass
class AllocateFrame(Frame):
    var: Var
    extents: tuple
    dtype: str
    scope: str
    condition: PrimExpr
    annotations: dict


@named
def allocate(
    extents: Any, dtype: Any, scope: str = "global", condition: Any = True,
    annotations: Optional[dict] = None, *, name: str = "buf",
) -> AllocateFrame:
    """``ptr = T.allocate([16], "float32", "shared")``."""
    return AllocateFrame(Var(name, "handle"), _shape(extents), dtype_str(dtype), scope,
                         convert(condition), dict(annotations or {}))


@dataclasses.dataclass
class DeclBufferFrame(Frame):
    buffer: _Buffer
    allocate: bool


@named
def decl_buffer(
    shape: Any,
    dtype: Any = "float32",
    data: Optional[Var] = None,
    strides: Any = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: int = 64,
    offset_factor: int = 1,
    axis_separators: Any = None,
    *,
    name: str = "buffer",
) -> DeclBufferFrame:
    """``A = T.decl_buffer((16,), "float32")`` allocates and declares; with ``data=``
    it declares a view of existing memory."""
    buf = make_buffer(name, shape, dtype, data, strides, elem_offset, scope, align, offset_factor,
                      axis_separators)
    return DeclBufferFrame(buf, data is None)


@dataclasses.dataclass
class LetFrame(Frame):
    var: Var
    value: PrimExpr


@named
def LetStmt(value: Any, var: Optional[Var] = None, *, name: str = "v") -> LetFrame:  # noqa: N802
    """``with T.LetStmt(value) as x:`` — bind ``x`` for the body."""
    value = expr_arg(value)
    return LetFrame(var if var is not None else Var(name, value.dtype), value)


let = LetStmt


@dataclasses.dataclass
class LaunchThreadFrame(Frame):
    var: Var
    tag: Optional[str]
    extent: PrimExpr


@named
def launch_thread(thread: Any, extent: Any, *, name: Optional[str] = None) -> LaunchThreadFrame:
    """``tx = T.launch_thread("threadIdx.x", 32)`` or ``T.launch_thread(tx, 32)`` for a
    variable made by ``T.env_thread``."""
    extent = convert(extent)
    if isinstance(thread, str):
        return LaunchThreadFrame(Var(name or thread, extent.dtype), thread, extent)
    if isinstance(thread, Var):
        return LaunchThreadFrame(thread, None, extent)
    raise TypeError(
        f"T.launch_thread takes a thread tag or a T.env_thread variable, got {thread!r}")


@dataclasses.dataclass
class EnvThread:
    var: Var
    tag: str


@named
def env_thread(thread_tag: str, dtype: Any = "int32", *, name: Optional[str] = None) -> EnvThread:
    """``tx = T.env_thread("threadIdx.x")``: a thread variable for ``T.launch_thread``."""
    if not isinstance(thread_tag, str):
        raise TypeError(f"T.env_thread takes a thread tag string, got {thread_tag!r}")
    return EnvThread(Var(name or thread_tag, dtype_str(dtype)), thread_tag)


@dataclasses.dataclass
class AttrFrame(Frame):
    node: Any
    key: str
    value: PrimExpr


def attr(node: Any, attr_key: str, value: Any) -> AttrFrame:
    """``with T.attr(node, "pragma_x", 1):`` — an ``AttrStmt`` around the body."""
    if not isinstance(attr_key, str):
        raise TypeError(f"T.attr key must be a str, got {attr_key!r}")
    return AttrFrame(node, attr_key, expr_arg(value))


@dataclasses.dataclass
class AssertFrame(Frame):
    condition: PrimExpr
    message: str
    args: tuple


def Assert(condition: Any, message: str, args: Sequence[Any] = ()) -> AssertFrame:  # noqa: N802
    """``T.Assert(cond, "message %lld", [arg])`` (or Python's ``assert cond, "message"``)."""
    if not isinstance(message, str):
        raise TypeError(f"T.Assert message must be a str, got {message!r}")
    return AssertFrame(convert(condition), message, tuple(convert(a) for a in args))


# ---------------------------------------------------------------------------------------
# expressions


def evaluate(value: Any) -> Evaluate:
    """``T.evaluate(expr)``: an expression statement (usually a call)."""
    return Evaluate(expr_arg(value))


def Cast(dtype: Any, value: Any) -> PrimExpr:  # noqa: N802
    return _Cast(dtype_str(dtype), convert(value))


def Select(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:  # noqa: N802
    return _Select(condition, true_value, false_value)


def Ramp(base: Any, stride: Any, lanes: int) -> PrimExpr:  # noqa: N802
    return _Ramp(base, stride, int(lanes))


def Broadcast(value: Any, lanes: int) -> PrimExpr:  # noqa: N802
    return _Broadcast(value, int(lanes))


ramp = Ramp
broadcast = Broadcast


def Shuffle(vectors: Sequence[Any], indices: Sequence[Any]) -> PrimExpr:  # noqa: N802
    vectors = tuple(convert(v) for v in vectors)
    indices = tuple(convert(i) for i in indices)
    if not vectors:
        raise ValueError("T.Shuffle needs at least one vector")
    return _Shuffle(with_lanes(element_of(vectors[0].dtype), len(indices)), vectors, indices)


def Let(body: Any, where: dict) -> PrimExpr:  # noqa: N802
    """``T.Let(x + 1, where={x: value})``: a let expression (``x`` from ``T.int32()``)."""
    if not isinstance(where, dict) or len(where) != 1:
        raise TypeError("T.Let takes where={var: value} with exactly one binding")
    ((v, value),) = where.items()
    if not isinstance(v, Var):
        raise TypeError(f"T.Let binds a variable, got {v!r}")
    return _Let(v, value, body)


def call_intrin(dtype: Any, op_name: str, *args: Any) -> PrimExpr:
    """A call of any registered intrinsic: ``T.call_intrin("int32", "tir.clz", x)``."""
    op = Op.get(op_name if "." in op_name else f"tir.{op_name}")
    return _Call(dtype_str(dtype), op, tuple(expr_arg(a) for a in args))


def call_extern(dtype: Any, func_name: str, *args: Any) -> PrimExpr:
    """A call of the C function ``func_name``."""
    return call_intrin(dtype, "tir.call_extern", StringImm(func_name), *args)


def call_pure_extern(dtype: Any, func_name: str, *args: Any) -> PrimExpr:
    return call_intrin(dtype, "tir.call_pure_extern", StringImm(func_name), *args)


def address_of(load: Any) -> PrimExpr:
    """``T.address_of(A[i])``: the address of a buffer element."""
    if not isinstance(load, BufferLoad):
        raise TypeError(f"T.address_of takes a buffer element such as A[i], got {load!r}")
    return call_intrin("handle", "tir.address_of", load)


def reinterpret(dtype: Any, value: Any) -> PrimExpr:
    return _op.reinterpret(dtype_str(dtype), value)


def iter_var(var: Var, dom: Any, iter_type: Any, thread_tag: str = "") -> IterVar:
    """An :class:`IterVar` (kinds as in ``IterVarType``: ``"DATA_PAR"``, ``"THREAD_INDEX"``...)."""
    if isinstance(iter_type, str):
        try:
            iter_type = IterVarType[iter_type]
        except KeyError:
            raise ValueError(
                f"unknown iter_type {iter_type!r}; one of {', '.join(IterVarType.__members__)}"
            ) from None
    if isinstance(dom, (list, tuple)):
        dom = Range(*extent_of(dom[0], dom[1]))
    elif dom is not None and not isinstance(dom, Range):
        dom = Range(0, dom)
    return IterVar(dom, var, IterVarType(iter_type), thread_tag)


def max_value(dtype: Any) -> PrimExpr:
    return _op.max_value(dtype_str(dtype))


def min_value(dtype: Any) -> PrimExpr:
    return _op.min_value(dtype_str(dtype))


def infinity(dtype: Any) -> PrimExpr:
    return _op.infinity(dtype_str(dtype))
