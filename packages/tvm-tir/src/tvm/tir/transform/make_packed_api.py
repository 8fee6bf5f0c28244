"""MakePackedAPI: give lowered PrimFuncs the packed C calling convention of ``docs/abi.md``.

Input: a lowered PrimFunc whose parameters are scalar variables and handles bound to
buffers through ``buffer_map`` (flattened, no blocks).  Output: a PrimFunc with the six
parameters of the kernel ABI::

    int32 f(handle args, handle arg_type_ids, int32 num_args,
            handle out_ret_value, handle out_ret_tcode, handle resource_handle)

whose body first checks and unpacks every argument *in TIR* (AssertStmt with ``%lld``
messages, LetStmt bindings, DeclBuffer views of the shape/strides arrays) and then runs the
original body inside ``AttrStmt(0, "compute_scope", StringImm("<name>_compute_"), body)``.
A code generator may outline that scope into a separate function whose pointer parameters
are ``noalias`` (``tir.noalias``) or simply emit it in place.

Attributes of the result: ``calling_conv = "packed"``, ``global_symbol`` (kept, or the
GlobalVar name), and ``tir.packed_params``: a JSON list describing the original parameters
(``{"name", "kind": "tensor"|"scalar"|"handle", "dtype", "shape", "written"}``; ``written``:
whether the kernel may write the tensor, so that a read-only array is refused at the call)
that targets copy into the module metadata ``__tvm_module_meta``.

Intrinsics used by the generated body (every target that compiles packed functions
implements them; the C target prints them as the equivalent C):

``tir.tvm_struct_get(handle ptr, int index, int kind)`` -> value of the Call's dtype
    Read a field of the ``index``-th element of an array of structs at ``ptr``.
    ``kind`` is a :class:`StructFieldKind`:

    * ``ARR_*`` kinds read a field of ``((DLTensor*)ptr)[index]``:
      ``ARR_DATA`` (``void* data``), ``ARR_SHAPE`` (``int64_t* shape``), ``ARR_STRIDES``
      (``int64_t* strides``, may be NULL), ``ARR_NDIM`` (``int32_t ndim``),
      ``ARR_TYPE_CODE`` / ``ARR_TYPE_BITS`` (``uint8_t dtype.code/bits``),
      ``ARR_TYPE_LANES`` (``uint16_t dtype.lanes``), ``ARR_BYTE_OFFSET``
      (``uint64_t byte_offset``), ``ARR_DEVICE_ID`` / ``ARR_DEVICE_TYPE``
      (``int32_t device.device_id/device_type``); ``ARR_ADDR`` is ``&ptr[index]`` itself.
    * ``TVM_VALUE_CONTENT`` reads ``((TVMValue*)ptr)[index]`` as ``v_int64`` (Call dtype
      ``int64``), ``v_float64`` (``float64``) or ``v_handle`` (``handle``).

    The field is read with its C type and converted to the Call's dtype (zero-extended for
    the unsigned fields, sign-extended otherwise).

``tir.tvm_struct_set(handle ptr, int index, int kind, value)``
    The store counterpart of ``tvm_struct_get`` (used to write return values).

``tir.isnullptr(handle)`` -> bool
    ``ptr == NULL``.

``tir.address_of(BufferLoad)`` -> handle
    The address of the loaded element; used here on a ``uint8`` view of the data pointer to
    add ``byte_offset``.

Type codes are read through an ``int32`` buffer declared over ``arg_type_ids`` and the shape
and strides through ``int64`` buffers declared over the DLTensor's arrays, so plain
BufferLoads suffice.  Failed checks report, e.g.::

    add: argument B has shape[0] = 7, but n = 8 from argument A
"""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any, Optional

from tvm.ffi.dlpack import ArgTypeCode, DLDeviceType
from tvm.ffi.dtype import DTypeCode, parse_dtype, storage_bytes
from tvm.ir.op import Op

from ..buffer import Buffer, decl_buffer
from ..expr import (
    And, BufferLoad, Call, Cast, IntImm, Not, Or, PrimExpr, StringImm, Var, const,
)
from ..function import PrimFunc
from ..stmt import (
    AssertStmt, AttrStmt, BufferStore, DeclBuffer, Evaluate, IfThenElse, LetStmt, Stmt,
)
from ..stmt_functor import free_vars, post_order_visit

__all__ = [
    "MakePackedAPI", "make_packed_api", "StructFieldKind", "struct_get", "struct_set",
    "PACKED_PARAM_NAMES", "COMPUTE_SCOPE", "PACKED_PARAMS_ATTR", "packed_params",
]


class StructFieldKind(IntEnum):
    """Field selector of ``tir.tvm_struct_get`` / ``tir.tvm_struct_set``."""

    ARR_ADDR = 0
    ARR_DATA = 1
    ARR_SHAPE = 2
    ARR_STRIDES = 3
    ARR_NDIM = 4
    ARR_TYPE_CODE = 5
    ARR_TYPE_BITS = 6
    ARR_TYPE_LANES = 7
    ARR_BYTE_OFFSET = 8
    ARR_DEVICE_ID = 9
    ARR_DEVICE_TYPE = 10
    TVM_VALUE_CONTENT = 11


Op.register("tir.tvm_struct_get", TCallEffectKind="read")
Op.register("tir.tvm_struct_set", TCallEffectKind="side_effect")

#: Parameter names of a packed function, in ABI order.
PACKED_PARAM_NAMES = (
    "args", "arg_type_ids", "num_args", "out_ret_value", "out_ret_tcode", "resource_handle",
)
#: AttrStmt key wrapping the original body after the argument checks.
COMPUTE_SCOPE = "compute_scope"
#: PrimFunc attribute holding the JSON description of the original parameters.
PACKED_PARAMS_ATTR = "tir.packed_params"

_DEVICE_NAMES = {int(d): d.name[3:].lower() for d in DLDeviceType}


def struct_get(dtype: str, ptr: PrimExpr, index: Any, kind: StructFieldKind) -> Call:
    """``tir.tvm_struct_get(ptr, index, kind)`` of the given dtype."""
    return Call(dtype, Op.get("tir.tvm_struct_get"),
                (ptr, const(int(index), "int32"), const(int(kind), "int32")))


def struct_set(ptr: PrimExpr, index: Any, kind: StructFieldKind, value: PrimExpr) -> Call:
    """``tir.tvm_struct_set(ptr, index, kind, value)``."""
    return Call("int32", Op.get("tir.tvm_struct_set"),
                (ptr, const(int(index), "int32"), const(int(kind), "int32"), value))


def _isnull(ptr: PrimExpr) -> Call:
    return Call("bool", Op.get("tir.isnullptr"), (ptr,))


def _i64(x: PrimExpr) -> PrimExpr:
    return x if x.dtype == "int64" else Cast("int64", x)


class _Prologue:
    """Collects the nested check/binding statements; :meth:`wrap` nests them around a body."""

    def __init__(self, fname: str) -> None:
        self.fname = fname
        self.items: list[tuple[str, Any]] = []

    def let(self, var: Var, value: PrimExpr) -> Var:
        self.items.append(("let", (var, value)))
        return var

    def check(self, cond: PrimExpr, message: str, *args: PrimExpr) -> None:
        self.items.append(("assert", (cond, f"{self.fname}: {message}",
                                      tuple(_i64(a) for a in args))))

    def decl(self, buffer: Buffer) -> Buffer:
        self.items.append(("decl", buffer))
        return buffer

    def guarded(self, cond: PrimExpr, inner: _Prologue) -> None:
        """Run ``inner``'s checks only when ``cond`` holds (no bindings escape)."""
        self.items.append(("if", (cond, inner)))

    def wrap(self, body: Stmt) -> Stmt:
        for kind, item in reversed(self.items):
            if kind == "let":
                body = LetStmt(item[0], item[1], body)
            elif kind == "assert":
                body = AssertStmt(item[0], item[1], body, item[2])
            elif kind == "decl":
                body = DeclBuffer(item, body)
            else:
                cond, inner = item
                body = _seq(IfThenElse(cond, inner.wrap(Evaluate(const(0, "int32")))), body)
        return body


def _seq(first: Stmt, second: Stmt) -> Stmt:
    from ..stmt import stmt_seq

    return stmt_seq(first, second)


def _type_code_check(pro: _Prologue, pname: str, param: Var, is_tensor: bool,
                     tcode: PrimExpr) -> None:
    code = parse_dtype(param.dtype)[0]
    if is_tensor:
        cond = tcode == int(ArgTypeCode.kDLTensorHandle)
        want = "a tensor (DLTensor*, type code 7)"
    elif code == DTypeCode.HANDLE:
        cond = Or(Or(tcode == int(ArgTypeCode.kOpaqueHandle), tcode == int(ArgTypeCode.kNull)),
                  tcode == int(ArgTypeCode.kDLTensorHandle))
        want = "a handle (type code 3, 4 or 7)"
    elif code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
        cond = tcode == int(ArgTypeCode.kFloat)
        want = f"a float for {param.dtype} (type code 2)"
    elif code in (DTypeCode.INT, DTypeCode.UINT, DTypeCode.BOOL):
        cond = Or(tcode == int(ArgTypeCode.kInt), tcode == int(ArgTypeCode.kUInt))
        want = f"an integer for {param.dtype} (type code 0 or 1)"
    else:
        raise TypeError(f"{pro.fname}: parameter {pname} has unsupported dtype {param.dtype}")
    pro.check(cond, f"argument {pname} expects {want}, got type code %lld", tcode)


def _scalar_value(args: Var, index: int, param: Var) -> PrimExpr:
    code = parse_dtype(param.dtype)[0]
    if code == DTypeCode.HANDLE:
        return struct_get("handle", args, index, StructFieldKind.TVM_VALUE_CONTENT)
    if code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
        raw = struct_get("float64", args, index, StructFieldKind.TVM_VALUE_CONTENT)
    else:
        raw = struct_get("int64", args, index, StructFieldKind.TVM_VALUE_CONTENT)
    return raw if raw.dtype == param.dtype else Cast(param.dtype, raw)


class _Binder:
    """Binds symbolic shape/stride variables at first sight and checks later occurrences."""

    def __init__(self, pro: _Prologue) -> None:
        self.pro = pro
        self.origin: dict[Var, str] = {}
        self.deferred: list[tuple[PrimExpr, PrimExpr, str]] = []

    def bind(self, expected: PrimExpr, value: PrimExpr, what: str, arg: str) -> None:
        """``what`` reads like ``shape[1]``; ``value`` is the int64 runtime value."""
        if isinstance(expected, IntImm):
            self.pro.check(value == expected.value,
                           f"argument {arg} has {what} = %lld, expected {expected.value}", value)
        elif isinstance(expected, Var):
            if expected in self.origin:
                self.pro.check(value == _i64(expected),
                               f"argument {arg} has {what} = %lld, but {expected.name} = %lld "
                               f"from {self.origin[expected]}", value, expected)
            else:
                self.origin[expected] = f"argument {arg}"
                cast = value if expected.dtype == "int64" else Cast(expected.dtype, value)
                self.pro.let(expected, cast)
        else:
            shown = _show(expected).replace("%", "%%")  # the message is a format string
            self.deferred.append((expected, value, f"argument {arg} has {what} = %lld, "
                                                   f"expected {shown} = %lld"))

    def finish(self, fname: str) -> None:
        for expected, value, message in self.deferred:
            unbound = [v for v in free_vars(expected) if v not in self.origin]
            if unbound:
                names = ", ".join(v.name for v in unbound)
                raise ValueError(
                    f"{fname}: the buffer extent {_show(expected)} uses {names}, which no "
                    "argument binds (a symbolic dimension must appear alone in some "
                    "argument's shape)"
                )
            self.pro.check(value == _i64(expected), message, value, expected)


def _show(expr: PrimExpr) -> str:
    """A short Python-like rendering of a shape expression for messages and metadata."""
    from .. import expr as E

    ops = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%",
           E.Div: "/", E.Mod: "%"}
    if isinstance(expr, Var):
        return expr.name
    if isinstance(expr, E.IntImm):
        return str(expr.value)
    if isinstance(expr, E.Cast):
        return _show(expr.value)
    for cls, sym in ops.items():
        if type(expr) is cls:
            return f"({_show(expr.a)} {sym} {_show(expr.b)})"
    if isinstance(expr, (E.Min, E.Max)):
        return f"{type(expr).__name__.lower()}({_show(expr.a)}, {_show(expr.b)})"
    return type(expr).__name__


def _bind_buffer(pro: _Prologue, binder: _Binder, arg: str, handle: Var, buf: Buffer,
                 device_type: int, dtype: str) -> None:
    """Check and bind one tensor argument; ``dtype`` is the one the caller must pass (the
    buffer's, or its original low-precision dtype when LegalizeLowPrecision changed it)."""
    ndim = len(buf.shape)
    code, bits, lanes = parse_dtype(dtype)
    # ndim first: the shape/strides arrays are read only after it is known to match.
    v_ndim = pro.let(Var(f"{arg}.ndim", "int32"),
                     struct_get("int32", handle, 0, StructFieldKind.ARR_NDIM))
    pro.check(v_ndim == ndim, f"argument {arg} has ndim = %lld, expected {ndim}", v_ndim)
    g_code = struct_get("int32", handle, 0, StructFieldKind.ARR_TYPE_CODE)
    g_bits = struct_get("int32", handle, 0, StructFieldKind.ARR_TYPE_BITS)
    g_lanes = struct_get("int32", handle, 0, StructFieldKind.ARR_TYPE_LANES)
    dcode = pro.let(Var(f"{arg}.dtype_code", "int32"), g_code)
    dbits = pro.let(Var(f"{arg}.dtype_bits", "int32"), g_bits)
    dlanes = pro.let(Var(f"{arg}.dtype_lanes", "int32"), g_lanes)
    ok_code = dcode == int(code)
    if code == DTypeCode.BOOL:  # bool may arrive as kDLBool or as an 8-bit kDLUInt
        ok_code = Or(ok_code, dcode == int(DTypeCode.UINT))
    pro.check(And(And(ok_code, dbits == bits), dlanes == lanes),
              f"argument {arg} has dtype (code=%lld, bits=%lld, lanes=%lld), expected "
              f"{dtype} (code={int(code)}, bits={bits}, lanes={lanes})", dcode, dbits, dlanes)
    dev = pro.let(Var(f"{arg}.device_type", "int32"),
                  struct_get("int32", handle, 0, StructFieldKind.ARR_DEVICE_TYPE))
    dev_name = _DEVICE_NAMES.get(device_type, str(device_type))
    pro.check(dev == device_type,
              f"argument {arg} is on device type %lld, expected {device_type} ({dev_name})", dev)

    shape_buf = pro.decl(decl_buffer(
        (ndim,), "int64", f"{arg}.shape",
        data=pro.let(Var(f"{arg}.shape", "handle"),
                     struct_get("handle", handle, 0, StructFieldKind.ARR_SHAPE))))
    dims = [BufferLoad(shape_buf, (const(k, "int32"),)) for k in range(ndim)]
    for k, (expected, value) in enumerate(zip(buf.shape, dims)):
        binder.bind(expected, value, f"shape[{k}]", arg)

    strides_ptr = pro.let(Var(f"{arg}.strides", "handle"),
                          struct_get("handle", handle, 0, StructFieldKind.ARR_STRIDES))
    strides_buf = pro.decl(decl_buffer((ndim,), "int64", f"{arg}.strides", data=strides_ptr))
    compact: list[PrimExpr] = [const(1, "int64")] * ndim
    for k in range(ndim - 2, -1, -1):
        nxt = compact[k + 1]
        compact[k] = dims[k + 1] if isinstance(nxt, IntImm) else nxt * dims[k + 1]
    if not buf.strides:
        if ndim:
            inner = _Prologue(pro.fname)
            for k in range(ndim - 1, -1, -1):
                got = BufferLoad(strides_buf, (const(k, "int32"),))
                inner.check(Or(dims[k] == 1, got == compact[k]),
                            f"argument {arg} is not compact: strides[{k}] = %lld, "
                            "expected %lld", got, compact[k])
            pro.guarded(Not(_isnull(strides_ptr)), inner)
    else:
        if len(buf.strides) != ndim:
            raise ValueError(f"{pro.fname}: buffer {buf.name} has {len(buf.strides)} strides "
                             f"for {ndim} dimensions")
        for k, expected in enumerate(buf.strides):
            from ..op import if_then_else

            got = if_then_else(_isnull(strides_ptr), compact[k],
                               BufferLoad(strides_buf, (const(k, "int32"),)))
            binder.bind(expected, got, f"strides[{k}]", arg)

    raw = pro.let(Var(f"{arg}.data_raw", "handle"),
                  struct_get("handle", handle, 0, StructFieldKind.ARR_DATA))
    offset = pro.let(Var(f"{arg}.byte_offset", "int64"),
                     struct_get("int64", handle, 0, StructFieldKind.ARR_BYTE_OFFSET))
    size = const(1, "int64")
    static_nonzero = True
    for expected, value in zip(buf.shape, dims):
        if not (isinstance(expected, IntImm) and expected.value > 0):
            static_nonzero = False
        size = value if isinstance(size, IntImm) and size.value == 1 else size * value
    null_ok = _isnull(raw)
    pro.check(Not(null_ok) if static_nonzero else Or(Not(null_ok), size == 0),
              f"argument {arg} has a NULL data pointer (byte_offset %lld)", offset)
    elem_bytes = storage_bytes(dtype)
    eo = buf.elem_offset
    if isinstance(eo, Var):
        pro.check(offset % elem_bytes == 0,
                  f"argument {arg} has byte_offset = %lld, not a multiple of the element size "
                  f"{elem_bytes}", offset)
        binder.bind(eo, offset // elem_bytes, "elem_offset", arg)
        data_value: PrimExpr = raw
    elif eo is not None and not (isinstance(eo, IntImm) and eo.value == 0):
        binder.bind(eo * elem_bytes if not isinstance(eo, IntImm) else
                    const(eo.value * elem_bytes, "int64"), offset, "byte_offset", arg)
        data_value = raw
    else:
        view = pro.decl(decl_buffer((0,), "uint8", f"{arg}.bytes", data=raw))
        data_value = Call("handle", Op.get("tir.address_of"), (BufferLoad(view, (offset,)),))
    pro.let(buf.data, data_value)


def _written_data_vars(body: Stmt) -> set:
    """Data variables the body may write: stored to, or whose address a call receives (an
    extern function may write through it)."""
    out: set = set()

    def f(node: Any) -> None:
        if isinstance(node, BufferStore):
            out.add(node.buffer.data)
        elif isinstance(node, Call):
            for a in node.args:
                if isinstance(a, Var):
                    out.add(a)
                elif isinstance(a, BufferLoad) and getattr(node.op, "name", "") in (
                        "tir.address_of", "tir.tvm_access_ptr"):
                    out.add(a.buffer.data)

    post_order_visit(body, f)
    return out


def make_packed_api(func: PrimFunc, name: Optional[str] = None,
                    device_type: int = int(DLDeviceType.kDLCPU)) -> PrimFunc:
    """Rewrite ``func`` to the packed calling convention (see the module docstring).

    ``name`` defaults to the ``global_symbol`` attribute; ``device_type`` is the DLPack
    device type the tensors must live on (CPU for host targets).  A function that already
    has ``calling_conv = "packed"`` is returned unchanged.
    """
    if func.attrs.get("calling_conv") == "packed":
        return func
    fname = func.attrs.get("global_symbol") or name
    if not fname:
        raise ValueError("make_packed_api: the PrimFunc has no global_symbol and no name given")
    if func.ret_type not in ("void", None) and str(func.ret_type) != "void":
        raise ValueError(f"{fname}: packed functions return void, got ret_type {func.ret_type}")
    args, tcodes, num_args, ret_v, ret_c, res = (
        Var(n, "int32" if n == "num_args" else "handle") for n in PACKED_PARAM_NAMES
    )
    n = len(func.params)
    pro = _Prologue(fname)
    pro.check(num_args == n, f"expected {n} arguments, got %lld", num_args)
    tc_buf = pro.decl(decl_buffer((n,), "int32", "arg_type_ids", data=tcodes))

    from .legalize_low_precision import original_dtype

    meta: list[dict[str, Any]] = []
    handles: list[tuple[str, Var, Buffer, str]] = []
    written = _written_data_vars(func.body)
    for i, param in enumerate(func.params):
        buf = func.buffer_map.get(param)
        pname = buf.name if buf is not None else param.name
        tcode = pro.let(Var(f"{pname}.code", "int32"), BufferLoad(tc_buf, (const(i, "int32"),)))
        _type_code_check(pro, pname, param, buf is not None, tcode)
        if buf is not None:
            handle = pro.let(Var(f"{pname}.handle", "handle"),
                             struct_get("handle", args, i, StructFieldKind.TVM_VALUE_CONTENT))
            if param is not buf.data:
                pro.let(param, handle)
            dtype = original_dtype(func, i)
            handles.append((pname, handle, buf, dtype))
            meta.append({"name": pname, "kind": "tensor", "dtype": dtype,
                         "shape": [s.value if isinstance(s, IntImm) else _show(s)
                                   for s in buf.shape],
                         "written": buf.data in written})
        else:
            pro.let(param, _scalar_value(args, i, param))
            kind = "handle" if parse_dtype(param.dtype)[0] == DTypeCode.HANDLE else "scalar"
            meta.append({"name": pname, "kind": kind, "dtype": param.dtype})

    binder = _Binder(pro)
    for param in func.params:
        if param not in func.buffer_map:
            binder.origin[param] = f"argument {param.name}"
    for pname, handle, buf, dtype in handles:
        _bind_buffer(pro, binder, pname, handle, buf, device_type, dtype)
    binder.finish(fname)

    body = AttrStmt(const(0, "int32"), COMPUTE_SCOPE, StringImm(f"{fname}_compute_"), func.body)
    new_body = pro.wrap(body)
    attrs = {**func.attrs, "calling_conv": "packed", "global_symbol": fname,
             PACKED_PARAMS_ATTR: json.dumps(meta)}
    return PrimFunc([args, tcodes, num_args, ret_v, ret_c, res], new_body, "int32", {},
                    attrs, span=func.span)


def packed_params(func: PrimFunc) -> list[dict[str, Any]]:
    """The original parameters recorded by :func:`make_packed_api` (for module metadata)."""
    text = func.attrs.get(PACKED_PARAMS_ATTR)
    return json.loads(text) if text else []


def MakePackedAPI(device_type: int = int(DLDeviceType.kDLCPU)):  # noqa: N802
    """Module pass: :func:`make_packed_api` on every PrimFunc (name = the GlobalVar's)."""
    from tvm.ir.transform import module_pass

    def transform(mod: Any, ctx: Any) -> Any:
        funcs = {}
        changed = False
        for gv, func in mod.items():
            if isinstance(func, PrimFunc):
                new = make_packed_api(func, gv.name_hint, device_type)
                changed = changed or new is not func
                funcs[gv] = new
            else:
                funcs[gv] = func
        return type(mod)(funcs, mod.attrs) if changed else mod

    return module_pass(transform, opt_level=0, name="MakePackedAPI")
