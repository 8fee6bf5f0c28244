"""Calling compiled kernels through the packed C ABI of ``docs/abi.md``.

:class:`PackedCFunc` wraps the address of a kernel
``int32_t f(TVMValue* args, int32_t* codes, int32_t n, TVMValue* ret, int32_t* ret_code, void*)``
as a Python callable.  Using the function's metadata (``params`` of ``__tvm_module_meta``)
it converts Python arguments (Tensors, numpy arrays, DLPack arrays, ints, floats, bools)
into packed values and reports a wrong call early; the kernel's own checks stay the
authority, and a non-zero return becomes a :class:`~tvm.runtime.error.KernelError` carrying
the kernel's message.  The GIL is released while the kernel runs.

:func:`install_runtime_slots` fills the runtime entry points a module calls
(``__TVMAPISetLastError``, ``__TVMBackendParallelLaunch``).
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm.ffi.dlpack import ArgTypeCode, TVMValue
from tvm.ffi.dtype import DTypeCode, parse_dtype

from .error import (
    KernelError,
    ModuleLoadError,
    TVMAPISetLastError,
    clear_last_error,
    get_last_error,
)
from .tensor import Tensor, from_dlpack
from .thread_pool import NUM_THREADS_POINTER, TVMBackendParallelLaunch

__all__ = [
    "PackedCFunc",
    "ParamInfo",
    "PackedCFuncType",
    "RUNTIME_SLOTS",
    "install_runtime_slots",
]

PackedCFuncType = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.POINTER(TVMValue),
    ctypes.POINTER(ctypes.c_int32),
    ctypes.c_int32,
    ctypes.POINTER(TVMValue),
    ctypes.POINTER(ctypes.c_int32),
    ctypes.c_void_p,
)

#: Function-pointer globals of a module and the runtime callbacks they receive.
RUNTIME_SLOTS: dict[str, Any] = {
    "__TVMAPISetLastError": TVMAPISetLastError,
    "__TVMBackendParallelLaunch": TVMBackendParallelLaunch,
    "__TVMBackendNumThreads": NUM_THREADS_POINTER,  # a data pointer: const int32_t*
}


def install_runtime_slots(lookup: Callable[[str], int | None]) -> list[str]:
    """Point a loaded module's runtime slots at the runtime's callbacks.

    ``lookup(name)`` returns the address of the module's global ``name`` (a function
    pointer variable) or ``None``/0 when the module does not define it.  Returns the names
    of the slots that were filled.
    """
    filled = []
    for name, callback in RUNTIME_SLOTS.items():
        addr = lookup(name)
        if addr:
            ctypes.c_void_p.from_address(int(addr)).value = ctypes.cast(
                callback, ctypes.c_void_p
            ).value
            filled.append(name)
    return filled


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KINDS = ("tensor", "scalar", "handle")

_INT_CODES = {
    DTypeCode.INT: ArgTypeCode.kInt,
    DTypeCode.BOOL: ArgTypeCode.kInt,
    DTypeCode.UINT: ArgTypeCode.kUInt,
}
_FLOAT_CODES = (DTypeCode.FLOAT, DTypeCode.BFLOAT)


@dataclass(frozen=True)
class ParamInfo:
    """One parameter of a kernel, from the module metadata."""

    name: str
    kind: str  # "tensor" | "scalar" | "handle"
    dtype: str | None = None
    shape: tuple[int | str, ...] | None = None
    written: bool = False  # the kernel may write the tensor (read-only arrays are refused)

    @classmethod
    def from_meta(cls, fname: str, index: int, entry: Any) -> ParamInfo:
        if not isinstance(entry, Mapping):
            raise ModuleLoadError(
                f"{fname}: metadata of parameter {index} is not an object: {entry!r}"
            )
        name = entry.get("name", f"arg{index}")
        kind = entry.get("kind")
        if kind not in _KINDS:
            raise ModuleLoadError(
                f"{fname}: parameter {name!r} has kind {kind!r}; expected one of {', '.join(_KINDS)}"
            )
        dtype = entry.get("dtype")
        if dtype is not None:
            try:
                parse_dtype(dtype)
            except (ValueError, TypeError) as err:
                raise ModuleLoadError(f"{fname}: parameter {name!r}: {err}") from err
        elif kind == "scalar":
            raise ModuleLoadError(f"{fname}: scalar parameter {name!r} has no dtype")
        shape = entry.get("shape")
        if shape is not None:
            if not isinstance(shape, Sequence) or isinstance(shape, str):
                raise ModuleLoadError(
                    f"{fname}: parameter {name!r} has a malformed shape {shape!r}"
                )
            shape = tuple(shape)
        written = entry.get("written", False)
        if not isinstance(written, bool):
            raise ModuleLoadError(f"{fname}: parameter {name!r} has a non-boolean 'written' "
                                  f"{written!r}")
        return cls(str(name), kind, dtype, shape, written)

    def describe(self) -> str:
        if self.kind == "tensor":
            dims = "?" if self.shape is None else ", ".join(str(d) for d in self.shape)
            return f"{self.name}: Tensor[({dims}), {self.dtype or '?'}]"
        if self.kind == "scalar":
            return f"{self.name}: {self.dtype}"
        return f"{self.name}: handle"


class _Binder:
    """Checks tensors against declared dtype/shape; binds symbolic dims on first sight.

    Messages follow the kernels' own (``tir.transform.MakePackedAPI``) wording.
    """

    __slots__ = ("fname", "bound")

    def __init__(self, fname: str) -> None:
        self.fname = fname
        self.bound: dict[str, tuple[int, str]] = {}

    def check(self, p: ParamInfo, t: Tensor) -> None:
        f = self.fname
        if p.dtype is not None and t.dtype != p.dtype:
            raise KernelError(f"{f}: argument {p.name} has dtype {t.dtype}, expected {p.dtype}")
        if p.shape is None:
            return
        if t.ndim != len(p.shape):
            raise KernelError(
                f"{f}: argument {p.name} has ndim = {t.ndim}, expected {len(p.shape)}"
            )
        for i, (given, want) in enumerate(zip(t.shape, p.shape)):
            if isinstance(want, (int, np.integer)) and not isinstance(want, bool):
                if given != want:
                    raise KernelError(
                        f"{f}: argument {p.name} has shape[{i}] = {given}, expected {want}"
                    )
            elif isinstance(want, str) and _IDENT.match(want):
                seen = self.bound.get(want)
                if seen is None:
                    self.bound[want] = (given, f"argument {p.name}")
                elif seen[0] != given:
                    raise KernelError(
                        f"{f}: argument {p.name} has shape[{i}] = {given}, but {want} = "
                        f"{seen[0]} from {seen[1]}"
                    )


def _as_tensor(fname: str, pname: str, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return Tensor._from_numpy(value)
    if hasattr(value, "__dlpack__"):
        return from_dlpack(value)
    raise TypeError(
        f"{fname}: argument {pname} expects a tensor (tvm.runtime.Tensor, numpy array or a "
        f"DLPack array), got {type(value).__name__}"
    )


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer, np.bool_))


def _handle_address(fname: str, pname: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, ctypes.c_void_p):
        return value.value
    if isinstance(value, (ctypes._Pointer, ctypes.Array)):  # type: ignore[attr-defined]
        return ctypes.cast(value, ctypes.c_void_p).value
    raise TypeError(
        f"{fname}: argument {pname} expects a handle (int address, ctypes pointer or None), "
        f"got {type(value).__name__}"
    )


class PackedCFunc:
    """A compiled kernel following the packed C ABI, callable from Python.

    ``meta`` is the function's entry of ``__tvm_module_meta["functions"]`` (``None``: no
    parameter information, types are inferred from the Python arguments); ``module``
    keeps the code alive.
    """

    __slots__ = (
        "_func",
        "_address",
        "_dim_params",
        "name",
        "params",
        "module",
        "meta",
        "__weakref__",
    )

    def __init__(
        self, address: int, meta: Mapping[str, Any] | None = None, module: Any = None
    ) -> None:
        if not address:
            raise ValueError("PackedCFunc: the function address is NULL")
        self._address = int(address)
        self._func = PackedCFuncType(self._address)
        self.meta = dict(meta) if meta else {}
        self.name: str = str(self.meta.get("name") or f"func_0x{self._address:x}")
        raw = self.meta.get("params")
        self.params: tuple[ParamInfo, ...] | None = None
        if raw is not None:
            if not isinstance(raw, Sequence) or isinstance(raw, str):
                raise ModuleLoadError(f"{self.name}: metadata 'params' must be a list, got {raw!r}")
            self.params = tuple(ParamInfo.from_meta(self.name, i, e) for i, e in enumerate(raw))
        # Integer scalar parameters that also name a tensor dimension (``n``) bind it first.
        dims = {d for p in self.params or () if p.shape for d in p.shape if isinstance(d, str)}
        self._dim_params = tuple(
            i
            for i, p in enumerate(self.params or ())
            if p.kind == "scalar" and p.name in dims and parse_dtype(p.dtype)[0] in _INT_CODES
        )
        self.module = module

    @property
    def address(self) -> int:
        """The kernel's address."""
        return self._address

    def signature(self) -> str:
        """``name(A: Tensor[(128, n), float32], alpha: float32)``."""
        if self.params is None:
            return f"{self.name}(...)"
        return f"{self.name}({', '.join(p.describe() for p in self.params)})"

    def __repr__(self) -> str:
        return f"<PackedCFunc {self.signature()}>"

    # ------------------------------------------------------------------ calling

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        params = self.params
        if params is None:
            if kwargs:
                raise TypeError(
                    f"{self.name}() got keyword arguments {sorted(kwargs)} but its parameter "
                    "names are unknown (no metadata); pass arguments positionally"
                )
            return args
        n = len(params)
        if not kwargs and len(args) == n:
            return args
        names = ", ".join(p.name for p in params)
        if len(args) > n:
            raise TypeError(
                f"{self.name}() takes {n} argument{'s' if n != 1 else ''} ({names}), "
                f"got {len(args) + len(kwargs)}"
            )
        values: list[Any] = list(args) + [_MISSING] * (n - len(args))
        index = {p.name: i for i, p in enumerate(params)}
        for key, value in kwargs.items():
            i = index.get(key)
            if i is None:
                raise TypeError(
                    f"{self.name}() got an unexpected keyword argument {key!r} (parameters: {names})"
                )
            if values[i] is not _MISSING:
                raise TypeError(f"{self.name}() got multiple values for argument {key!r}")
            values[i] = value
        missing = [params[i].name for i, v in enumerate(values) if v is _MISSING]
        if missing:
            raise TypeError(
                f"{self.name}() takes {n} argument{'s' if n != 1 else ''} ({names}), "
                f"got {n - len(missing)}; missing {', '.join(missing)}"
            )
        return tuple(values)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = self._bind(args, kwargs)
        n = len(args)
        values = (TVMValue * max(n, 1))()
        codes = (ctypes.c_int32 * max(n, 1))()
        keep: list[Any] = []
        binder = _Binder(self.name)
        params = self.params
        for i in self._dim_params:
            if _is_int(args[i]):
                binder.bound[params[i].name] = (int(args[i]), f"argument {params[i].name}")
        for i, value in enumerate(args):
            p = params[i] if params is not None else None
            codes[i] = self._pack(p, i, value, values[i], binder, keep)
        ret = TVMValue()
        ret_code = ctypes.c_int32(ArgTypeCode.kNull)
        clear_last_error()
        rc = self._func(values, codes, n, ctypes.byref(ret), ctypes.byref(ret_code), None)
        del keep
        if rc != 0:
            msg = get_last_error()
            clear_last_error()
            raise KernelError(
                msg or f"{self.name}: the kernel failed (code {rc}) without a message"
            )
        return _unpack_return(self.name, ret, ret_code.value)

    def _pack(
        self, p: ParamInfo | None, i: int, value: Any, slot: TVMValue, binder: _Binder, keep: list
    ) -> int:
        pname = p.name if p is not None else f"#{i}"
        kind = p.kind if p is not None else _infer_kind(value)
        if kind == "tensor":
            t = _as_tensor(self.name, pname, value)
            if p is not None:
                binder.check(p, t)
                if p.written and t._array is not None and not t._array.flags.writeable:
                    raise KernelError(
                        f"{self.name}: argument {pname} is read-only memory (a numpy array "
                        "with writeable=False, or one viewing immutable bytes), and the "
                        "kernel writes it; pass a writable array")
            keep.append(t)
            slot.v_handle = t._dl_address()
            return ArgTypeCode.kDLTensorHandle
        if kind == "handle":
            addr = _handle_address(self.name, pname, value)
            if addr is None:
                slot.v_handle = None
                return ArgTypeCode.kNull
            slot.v_handle = addr
            return ArgTypeCode.kOpaqueHandle
        # scalar
        if p is None or p.dtype is None:
            if isinstance(value, (float, np.floating)):
                slot.v_float64 = float(value)
                return ArgTypeCode.kFloat
            slot.v_int64 = int(value)
            return ArgTypeCode.kInt
        code, bits, _ = parse_dtype(p.dtype)
        if code in _FLOAT_CODES:
            if not isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
                raise TypeError(
                    f"{self.name}: argument {pname} expects a {p.dtype} number, got "
                    f"{type(value).__name__}"
                )
            slot.v_float64 = float(value)
            return ArgTypeCode.kFloat
        if code in _INT_CODES:
            if not _is_int(value):
                raise TypeError(
                    f"{self.name}: argument {pname} expects an integer ({p.dtype}), got "
                    f"{type(value).__name__} ({value!r})"
                )
            v = int(value)
            if code == DTypeCode.UINT:
                lo, hi = 0, (1 << bits) - 1
            elif code == DTypeCode.BOOL:
                lo, hi = 0, 1
            else:
                lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            if not lo <= v <= hi:
                raise ValueError(
                    f"{self.name}: argument {pname} = {v} is out of range for {p.dtype} "
                    f"[{lo}, {hi}]"
                )
            slot.v_int64 = v if v < (1 << 63) else v - (1 << 64)
            return _INT_CODES[code]
        raise TypeError(f"{self.name}: argument {pname} has unsupported scalar dtype {p.dtype}")


_MISSING = object()


def _infer_kind(value: Any) -> str:
    if isinstance(value, (Tensor, np.ndarray)) or hasattr(value, "__dlpack__"):
        return "tensor"
    if isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
        return "scalar"
    if value is None or isinstance(value, (ctypes.c_void_p, ctypes._Pointer)):  # type: ignore[attr-defined]
        return "handle"
    raise TypeError(f"cannot pass a {type(value).__name__} to a compiled kernel")


def _unpack_return(fname: str, value: TVMValue, code: int) -> Any:
    if code == ArgTypeCode.kNull:
        return None
    if code == ArgTypeCode.kInt:
        return int(value.v_int64)
    if code == ArgTypeCode.kUInt:
        return int(value.v_int64) & 0xFFFFFFFFFFFFFFFF
    if code == ArgTypeCode.kFloat:
        return float(value.v_float64)
    if code == ArgTypeCode.kOpaqueHandle:
        return value.v_handle
    raise KernelError(f"{fname}: the kernel returned a value of unsupported type code {code}")
