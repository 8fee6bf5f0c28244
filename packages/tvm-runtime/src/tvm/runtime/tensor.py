"""Tensors: a device buffer with a shape, a dtype and optional strides, DLPack in and out.

A CPU tensor wraps a numpy array (64-byte aligned when the runtime allocates it), so
DLPack exchange with numpy and torch is zero-copy through numpy's own DLPack support.
Memory of other devices comes from their :class:`~tvm.runtime.device.DeviceAPI`.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from tvm.ffi.dlpack import DLDataType, DLDeviceType, DLTensor
from tvm.ffi.dtype import from_numpy_dtype, parse_dtype, storage_bytes, to_numpy_dtype

from . import _dlpack
from .device import Device, DeviceAPI, aligned_host_buffer, cpu
from .device import device as _as_device

__all__ = ["Tensor", "tensor", "empty", "from_dlpack", "ALIGNMENT"]

#: Alignment in bytes of the data of every tensor the runtime allocates.
ALIGNMENT = 64

_CPU = int(DLDeviceType.kDLCPU)
_NUMPY_EXPORTABLE = frozenset(
    ["bool", "float16", "float32", "float64", "complex64", "complex128"]
    + [f"{k}int{b}" for k in ("", "u") for b in (8, 16, 32, 64)]
)


class _DeviceAllocation:
    """Device memory from a DeviceAPI, freed when the last tensor using it goes away."""

    __slots__ = ("api", "device", "handle", "nbytes")

    def __init__(self, api: DeviceAPI, dev: Device, nbytes: int) -> None:
        self.api = api
        self.device = dev
        self.nbytes = nbytes
        self.handle = 0
        self.handle = int(api.alloc(dev, nbytes, ALIGNMENT))

    def __del__(self) -> None:
        handle, self.handle = self.handle, 0
        if handle:
            try:
                self.api.free(self.device, handle)
            except Exception:  # pragma: no cover - a destructor must not raise
                pass


def _normalize_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, Sequence) and not isinstance(shape, np.ndarray):
        raise TypeError(f"{what} must be an int or a sequence of ints, got {type(shape).__name__}")
    out = []
    for i, d in enumerate(shape):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{what}[{i}] must be an int, got {type(d).__name__} ({d!r})")
        if d < 0:
            raise ValueError(f"{what}[{i}] must be >= 0, got {d}")
        out.append(int(d))
    return tuple(out)


def _normalize_dtype(dtype: Any) -> str:
    if isinstance(dtype, str):
        parse_dtype(dtype)
        return dtype.strip()
    try:
        return from_numpy_dtype(dtype)
    except TypeError as err:
        raise TypeError(f"dtype must be a dtype string or a numpy dtype, got {dtype!r}") from err


def _numpy_dtype(dtype: str, where: str) -> np.dtype:
    try:
        return to_numpy_dtype(dtype)
    except (ValueError, ImportError) as err:
        raise ValueError(f"{where}: dtype {dtype!r} cannot live in a CPU tensor ({err})") from err


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return math.prod(shape) * storage_bytes(dtype)


def _compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def _is_compact(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    if strides is None:
        return True
    expected = _compact_strides(shape)
    return all(d == 1 or s == e for d, s, e in zip(shape, strides, expected))


class Tensor:
    """A device buffer plus shape, dtype and strides (in elements; ``None`` when compact).

    Create with :func:`tensor`, :func:`empty` or :func:`from_dlpack`.
    """

    __slots__ = (
        "_device",
        "_shape",
        "_dtype",
        "_strides",
        "_data",
        "_byte_offset",
        "_array",
        "_owner",
        "_dl",
        "_dl_ptr",
        "_dl_arrays",
        "__weakref__",
    )

    def __init__(
        self,
        dev: Device,
        data: int,
        shape: tuple[int, ...],
        dtype: str,
        *,
        strides: tuple[int, ...] | None = None,
        byte_offset: int = 0,
        owner: Any = None,
        array: np.ndarray | None = None,
    ) -> None:
        """Low level: describe existing memory (prefer the factory functions)."""
        self._device = dev
        self._data = int(data or 0)
        self._shape = shape
        self._dtype = dtype
        self._strides = None if _is_compact(shape, strides) else tuple(strides or ())
        self._byte_offset = int(byte_offset)
        self._owner = owner
        self._array = array
        self._dl: DLTensor | None = None
        self._dl_ptr: Any = None
        self._dl_arrays: Any = None

    # ------------------------------------------------------------------ construction

    @classmethod
    def _from_numpy(cls, arr: np.ndarray) -> Tensor:
        """A CPU tensor sharing ``arr``'s memory (no copy)."""
        try:
            dtype = from_numpy_dtype(arr.dtype)
        except (ValueError, TypeError) as err:
            raise TypeError(
                f"cannot make a Tensor from a numpy array of dtype {arr.dtype}: {err}"
            ) from err
        strides = None
        if not arr.flags.c_contiguous:
            item = arr.dtype.itemsize
            compact = _compact_strides(arr.shape)
            # The stride of an extent-1 dimension never matters: use the compact one.
            byte_strides = [
                s if d > 1 else c * item for s, d, c in zip(arr.strides, arr.shape, compact)
            ]
            if any(s % item for s in byte_strides):
                raise ValueError(
                    f"cannot make a Tensor from a numpy array with byte strides {arr.strides}: "
                    f"they are not multiples of the item size {item}"
                )
            strides = tuple(s // item for s in byte_strides)
        return cls(cpu(0), arr.ctypes.data, tuple(arr.shape), dtype, strides=strides, array=arr)

    # ------------------------------------------------------------------ properties

    @property
    def device(self) -> Device:
        """The device holding the data."""
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape as a tuple of ints."""
        return self._shape

    @property
    def dtype(self) -> str:
        """The element type as a dtype string (``"float32"``)."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def strides(self) -> tuple[int, ...] | None:
        """Strides in elements, or ``None`` for a compact row-major tensor."""
        return self._strides

    @property
    def is_contiguous(self) -> bool:
        """Whether the tensor is compact row-major."""
        return self._strides is None

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        """The number of bytes of the elements (as if compact)."""
        return _nbytes(self._shape, self._dtype)

    @property
    def data_ptr(self) -> int:
        """The address (or device handle) of the buffer, before ``byte_offset``."""
        return self._data

    @property
    def byte_offset(self) -> int:
        """Offset in bytes of the first element from :attr:`data_ptr`."""
        return self._byte_offset

    @property
    def handle(self) -> Any:
        """A ctypes ``POINTER(DLTensor)`` describing this tensor (valid while it lives)."""
        if self._dl_ptr is None:
            self._dl_ptr = ctypes.pointer(self._dltensor())
        return self._dl_ptr

    def _dltensor(self) -> DLTensor:
        dl = self._dl
        if dl is None:
            ndim = len(self._shape)
            shape = (ctypes.c_int64 * max(ndim, 1))(*self._shape)
            strides = None
            dl = DLTensor()
            dl.data = self._data or None
            dl.device.device_type = self._device.device_type
            dl.device.device_id = self._device.index
            dl.ndim = ndim
            dl.dtype = DLDataType(*parse_dtype(self._dtype))
            dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
            if self._strides is not None:
                strides = (ctypes.c_int64 * ndim)(*self._strides)
                dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
            dl.byte_offset = self._byte_offset
            self._dl_arrays = (shape, strides)
            self._dl = dl
        return dl

    def _dl_address(self) -> int:
        return ctypes.addressof(self._dltensor())

    # ------------------------------------------------------------------ data movement

    def _require_compact(self, what: str) -> None:
        if self._strides is not None:
            raise NotImplementedError(
                f"Tensor.{what}: strided tensors on {self._device} are not supported "
                f"(strides {self._strides}); copy to a compact tensor first"
            )

    def numpy(self) -> np.ndarray:
        """A numpy copy of the data (copied from the device when needed)."""
        if self._array is not None:
            return self._array.copy()
        self._require_compact("numpy")
        out = np.empty(self._shape, dtype=_numpy_dtype(self._dtype, "Tensor.numpy"))
        if out.nbytes:
            self._device.api.copy_to_host(
                self._device, self._data, self._byte_offset, out.reshape(-1).view(np.uint8)
            )
        return out

    def copyfrom(self, source: Any) -> Tensor:
        """Copy ``source`` (a Tensor, numpy array or nested list) into this tensor; returns self.

        The shape must match exactly; a numpy array or Tensor must also have the same dtype.
        """
        if isinstance(source, Tensor):
            self._check_same(source.shape, source.dtype, "Tensor.copyfrom")
            _copy(source, self)
            return self
        np_dtype = _numpy_dtype(self._dtype, "Tensor.copyfrom")
        if isinstance(source, np.ndarray):
            if source.dtype != np_dtype:
                raise ValueError(
                    f"Tensor.copyfrom: source dtype {source.dtype} differs from the tensor's "
                    f"{self._dtype}; convert it first, e.g. source.astype({str(np_dtype)!r})"
                )
            arr = source
        else:
            try:
                arr = np.asarray(source, dtype=np_dtype)
            except (TypeError, ValueError) as err:
                raise TypeError(
                    f"Tensor.copyfrom: cannot convert {type(source).__name__} to a "
                    f"{self._dtype} array: {err}"
                ) from err
        self._check_same(arr.shape, self._dtype, "Tensor.copyfrom")
        if self._array is not None:
            if not self._array.flags.writeable:
                raise ValueError(
                    "Tensor.copyfrom: the tensor is read-only (it views read-only memory)"
                )
            np.copyto(self._array, arr, casting="no")
            return self
        self._require_compact("copyfrom")
        host = np.asarray(arr, order="C")
        if host.nbytes:
            self._device.api.copy_from_host(
                self._device, self._data, self._byte_offset, host.reshape(-1).view(np.uint8)
            )
        return self

    def copyto(self, target: Device | str | Tensor) -> Tensor:
        """Copy into ``target``: a Tensor (returned) or a device (a new Tensor there)."""
        if isinstance(target, Tensor):
            return target.copyfrom(self)
        dev = _as_device(target)
        out = empty(self._shape, self._dtype, dev)
        _copy(self, out)
        return out

    def _check_same(self, shape: tuple[int, ...], dtype: str, where: str) -> None:
        if tuple(shape) != self._shape:
            raise ValueError(
                f"{where}: shape mismatch: the source has shape {tuple(shape)}, the tensor "
                f"has shape {self._shape}"
            )
        if dtype != self._dtype:
            raise ValueError(
                f"{where}: dtype mismatch: the source has dtype {dtype}, the tensor has "
                f"dtype {self._dtype}"
            )

    def create_view(
        self, shape: Sequence[int], dtype: str | None = None, byte_offset: int = 0
    ) -> Tensor:
        """A compact tensor over this one's memory from ``byte_offset`` (no copy)."""
        self._require_compact("create_view")
        shape = _normalize_shape(shape)
        dtype = self._dtype if dtype is None else _normalize_dtype(dtype)
        if byte_offset < 0:
            raise ValueError(f"Tensor.create_view: byte_offset must be >= 0, got {byte_offset}")
        need = byte_offset + _nbytes(shape, dtype)
        if need > self.nbytes:
            raise ValueError(
                f"Tensor.create_view: a {dtype} view of shape {shape} at byte offset "
                f"{byte_offset} needs {need} bytes; the tensor has {self.nbytes}"
            )
        if self._array is not None:
            flat = self._array.reshape(-1).view(np.uint8)
            np_dtype = _numpy_dtype(dtype, "Tensor.create_view")
            part = flat[byte_offset:need].view(np_dtype).reshape(shape)
            return Tensor._from_numpy(part)
        return Tensor(
            self._device,
            self._data,
            shape,
            dtype,
            byte_offset=self._byte_offset + byte_offset,
            owner=self,
        )

    # ------------------------------------------------------------------ DLPack

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self._device.device_type, self._device.index)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export as a DLPack capsule (zero-copy; ``copy=True`` is refused)."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(
                f"Tensor.__dlpack__: cannot export a tensor on {self._device} to device "
                f"{tuple(dl_device)}; copy it with tensor.copyto(...) first"
            )
        if copy:
            raise BufferError(
                "Tensor.__dlpack__: copy=True is not supported (exports are zero-copy)"
            )
        versioned = max_version is not None and max_version[0] >= 1
        if self._array is not None:
            if self._dtype not in _NUMPY_EXPORTABLE:  # bfloat16, float8: describe it ourselves
                return _dlpack.to_capsule(
                    self,
                    self._dltensor(),
                    versioned=versioned,
                    read_only=not self._array.flags.writeable,
                )
            if max_version is None:
                return self._array.__dlpack__()
            try:
                return self._array.__dlpack__(max_version=max_version)
            except TypeError:  # numpy < 2.1 makes legacy capsules only
                return self._array.__dlpack__()
        if stream is not None:
            self._device.sync()
        return _dlpack.to_capsule(self, self._dltensor(), versioned=versioned)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self) -> str:
        head = f"<tvm.runtime.Tensor shape={self._shape} dtype={self._dtype} device={self._device}>"
        if self._array is not None:
            return f"{head}\n{np.array2string(self._array, threshold=64)}"
        return head


def _copy(src: Tensor, dst: Tensor) -> None:
    """Copy between two tensors of equal shape and dtype, on any devices."""
    if src._array is not None and dst._array is not None:
        np.copyto(dst._array, src._array, casting="no")
        return
    if src._array is not None:  # CPU -> device
        dst.copyfrom(src._array)
        return
    src._require_compact("copyto")
    if dst._array is not None:  # device -> CPU
        if dst._array.flags.c_contiguous:
            if dst.nbytes:
                src._device.api.copy_to_host(
                    src._device, src._data, src._byte_offset, dst._array.reshape(-1).view(np.uint8)
                )
        else:
            np.copyto(dst._array, src.numpy(), casting="no")
        return
    dst._require_compact("copyfrom")
    src_api, dst_api = src._device.api, dst._device.api
    if src.nbytes == 0:
        return
    if src._device.device_type == dst._device.device_type and src_api is dst_api:
        src_api.copy_device_to_device(
            src._device,
            src._data,
            src._byte_offset,
            dst._device,
            dst._data,
            dst._byte_offset,
            src.nbytes,
        )
    else:
        staging = np.empty(src.nbytes, dtype=np.uint8)
        src_api.copy_to_host(src._device, src._data, src._byte_offset, staging)
        dst_api.copy_from_host(dst._device, dst._data, dst._byte_offset, staging)


def empty(
    shape: int | Sequence[int], dtype: Any = "float32", device: Device | str = None
) -> Tensor:
    """An uninitialised tensor; the data is 64-byte aligned."""
    shape = _normalize_shape(shape)
    dtype = _normalize_dtype(dtype)
    dev = cpu(0) if device is None else _as_device(device)
    if dev.device_type == _CPU:
        np_dtype = _numpy_dtype(dtype, "empty")
        buf = aligned_host_buffer(math.prod(shape) * np_dtype.itemsize, ALIGNMENT)
        return Tensor._from_numpy(buf.view(np_dtype).reshape(shape))
    alloc = _DeviceAllocation(dev.api, dev, max(_nbytes(shape, dtype), 1))
    return Tensor(dev, alloc.handle, shape, dtype, owner=alloc)


def tensor(data: Any, device: Device | str = None, dtype: Any = None) -> Tensor:
    """A new tensor on ``device`` (default CPU) holding a copy of ``data``.

    ``data`` is a numpy array, a (nested) list or scalar, a Tensor, or anything with
    ``__dlpack__``; ``dtype`` converts it (default: the data's own dtype).
    """
    dev = cpu(0) if device is None else _as_device(device)
    if dtype is not None:
        dtype = _normalize_dtype(dtype)
    if isinstance(data, Tensor) or (
        not isinstance(data, np.ndarray) and hasattr(data, "__dlpack__")
    ):
        src = from_dlpack(data)
        if dtype is None or dtype == src.dtype:
            return src.copyto(dev)
        data = src.numpy()
    try:
        arr = np.asarray(data, dtype=None if dtype is None else _numpy_dtype(dtype, "tensor"))
    except (TypeError, ValueError) as err:
        raise TypeError(f"tensor: cannot convert {type(data).__name__} to an array: {err}") from err
    if arr.dtype == object:
        raise TypeError(
            f"tensor: {type(data).__name__} does not convert to a numeric array "
            "(ragged nesting or non-numbers?)"
        )
    out = empty(arr.shape, dtype or from_numpy_dtype(arr.dtype), dev)
    return out.copyfrom(arr)


def from_dlpack(obj: Any) -> Tensor:
    """A Tensor sharing the memory of ``obj`` (numpy, torch, a DLPack capsule, ...).

    No data is copied: writes through either side are visible to the other.
    """
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, np.ndarray):
        return Tensor._from_numpy(obj)
    if _dlpack.is_capsule(obj):
        return _from_contents(_dlpack.from_capsule(obj))
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(
            f"from_dlpack: {type(obj).__name__} does not support DLPack (no __dlpack__ method)"
        )
    dev_type = _CPU
    if hasattr(obj, "__dlpack_device__"):
        dev_type = int(obj.__dlpack_device__()[0])
    if dev_type == _CPU:
        try:
            return Tensor._from_numpy(np.from_dlpack(obj))
        except (BufferError, TypeError, ValueError, RuntimeError):
            pass  # e.g. a dtype numpy does not import; consume the capsule ourselves
    try:
        capsule = obj.__dlpack__(max_version=(1, 1))
    except TypeError:
        capsule = obj.__dlpack__()
    return _from_contents(_dlpack.from_capsule(capsule))


def _from_contents(c: _dlpack.CapsuleContents) -> Tensor:
    dev = Device(c.device_type, c.device_id)
    if c.device_type == _CPU:
        np_dtype = _numpy_dtype(c.dtype, "from_dlpack")
        if math.prod(c.shape) == 0 or not c.data:
            if math.prod(c.shape):
                raise BufferError(f"from_dlpack: a tensor of shape {c.shape} has NULL data")
            return Tensor._from_numpy(np.empty(c.shape, np_dtype))  # nothing to share
        item = np_dtype.itemsize
        strides = c.strides if c.strides is not None else _compact_strides(c.shape)
        holder = _HostMemory(
            c.data + c.byte_offset,
            c.shape,
            tuple(s * item for s in strides),
            item,
            c.read_only,
            c.owner,
        )
        arr = np.asarray(holder).view(np_dtype)
        return Tensor._from_numpy(arr)
    return Tensor(
        dev,
        c.data,
        c.shape,
        c.dtype,
        strides=c.strides,
        byte_offset=c.byte_offset,
        owner=c.owner,
    )


class _HostMemory:
    """Presents foreign host memory to numpy and keeps its owner alive (numpy's ``base``)."""

    def __init__(self, ptr, shape, byte_strides, itemsize, read_only, owner) -> None:
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(shape),
            "typestr": f"|V{itemsize}",
            "data": (ptr, bool(read_only)),
            "strides": tuple(byte_strides),
        }
        self._owner = owner
