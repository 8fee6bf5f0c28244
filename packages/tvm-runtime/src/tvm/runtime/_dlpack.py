"""DLPack capsules for memory numpy cannot describe on its own (device memory, bfloat16).

Producer side (:func:`to_capsule`): we let numpy make the capsule for a stand-in array of
the same shape, strides and item size (so the capsule's destructor and deleter are numpy's
C code, safe to run at any moment, even while an exception is propagating), and then
rewrite the data pointer, byte offset, device and dtype of the DLTensor inside it.  The
stand-in array's base keeps the exported tensor alive until the consumer's deleter runs.

Consumer side (:func:`from_capsule`): take ownership of a ``dltensor`` /
``dltensor_versioned`` capsule (renaming it ``used_*`` as the protocol requires) and return
its fields plus an owner object that calls the producer's deleter when collected.
"""

from __future__ import annotations

import ctypes
import datetime
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm.ffi.dlpack import (
    DLPACK_FLAG_BITMASK_READ_ONLY,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLTensor,
)
from tvm.ffi.dtype import format_dtype, storage_bytes

__all__ = ["to_capsule", "from_capsule", "ImportedTensor", "CapsuleContents", "is_capsule"]

_LEGACY = ctypes.create_string_buffer(b"dltensor")
_VERSIONED = ctypes.create_string_buffer(b"dltensor_versioned")
_USED_LEGACY = ctypes.create_string_buffer(b"used_dltensor")
_USED_VERSIONED = ctypes.create_string_buffer(b"used_dltensor_versioned")

_api = ctypes.pythonapi
_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_IsValid", _api)
)
_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _api)
)
_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", _api)
)
_CAPSULE_TYPE = type(datetime.datetime_CAPI)

# numpy dtypes numpy can export, used as stand-ins of the same item size.
_CARRIERS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}
_DUMMY = np.zeros(16, dtype=np.uint8)  # a valid address for stand-ins of device memory


def is_capsule(obj: Any) -> bool:
    """Whether ``obj`` is a PyCapsule."""
    return type(obj) is _CAPSULE_TYPE


class _StandIn:
    """Describes a stand-in array to numpy and keeps the exported tensor alive."""

    def __init__(self, shape, byte_strides, typestr, ptr, read_only, owner) -> None:
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (ptr, bool(read_only)),
            "strides": tuple(byte_strides),
        }
        self._owner = owner


def to_capsule(owner: Any, dl: DLTensor, *, versioned: bool, read_only: bool = False) -> Any:
    """A DLPack capsule exporting ``dl``; ``owner`` (the tensor) lives until it is freed."""
    itemsize = storage_bytes(str(dl.dtype))
    carrier = _CARRIERS.get(itemsize)
    if carrier is None:
        raise BufferError(f"__dlpack__: cannot export dtype {dl.dtype} (item size {itemsize})")
    shape = dl.shape_tuple
    strides = dl.strides_tuple
    if strides is None:
        acc, elems = 1, []
        for d in reversed(shape):
            elems.append(acc)
            acc *= d
        strides = tuple(reversed(elems))
    stand_in = np.asarray(
        _StandIn(
            shape,
            [s * itemsize for s in strides],
            np.dtype(carrier).str,
            _DUMMY.ctypes.data,
            read_only,
            owner,
        )
    )
    if versioned:
        try:
            capsule = stand_in.__dlpack__(max_version=(1, 1))
        except TypeError:  # numpy < 2.1 only makes legacy capsules
            capsule = stand_in.__dlpack__()
    else:
        capsule = stand_in.__dlpack__()
    if _IsValid(capsule, ctypes.addressof(_VERSIONED)):
        managed: Any = DLManagedTensorVersioned.from_address(
            _GetPointer(capsule, ctypes.addressof(_VERSIONED))
        )
    else:
        managed = DLManagedTensor.from_address(_GetPointer(capsule, ctypes.addressof(_LEGACY)))
    out = managed.dl_tensor
    out.data = dl.data
    out.byte_offset = dl.byte_offset
    out.device.device_type = dl.device.device_type
    out.device.device_id = dl.device.device_id
    out.dtype = dl.dtype
    return capsule


class ImportedTensor:
    """Owns a consumed managed tensor; calls the producer's deleter when collected."""

    __slots__ = ("_ptr", "_type", "__weakref__")

    def __init__(self, ptr: int, struct_type: type) -> None:
        self._ptr = ptr
        self._type = struct_type

    def __del__(self) -> None:
        ptr, self._ptr = self._ptr, 0
        if ptr:
            managed = self._type.from_address(ptr)
            if managed.deleter:
                managed.deleter(ctypes.cast(ptr, ctypes.POINTER(self._type)))


@dataclass
class CapsuleContents:
    """The fields of a consumed DLPack tensor."""

    data: int
    device_type: int
    device_id: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: str
    byte_offset: int
    read_only: bool
    owner: ImportedTensor


def from_capsule(capsule: Any) -> CapsuleContents:
    """Consume a ``dltensor`` or ``dltensor_versioned`` capsule (it is renamed ``used_*``)."""
    if not is_capsule(capsule):
        raise TypeError(f"from_dlpack: expected a DLPack capsule, got {type(capsule).__name__}")
    if _IsValid(capsule, ctypes.addressof(_VERSIONED)):
        ptr = _GetPointer(capsule, ctypes.addressof(_VERSIONED))
        managed: Any = DLManagedTensorVersioned.from_address(ptr)
        if managed.version.major != 1:
            raise BufferError(
                f"from_dlpack: DLPack version {managed.version.major}.{managed.version.minor} "
                "is not supported (expected major version 1)"
            )
        struct_type: type = DLManagedTensorVersioned
        used = _USED_VERSIONED
        read_only = bool(managed.flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    elif _IsValid(capsule, ctypes.addressof(_LEGACY)):
        ptr = _GetPointer(capsule, ctypes.addressof(_LEGACY))
        managed = DLManagedTensor.from_address(ptr)
        struct_type = DLManagedTensor
        used = _USED_LEGACY
        read_only = False
    else:
        raise BufferError(
            "from_dlpack: the capsule is neither an unused 'dltensor' nor 'dltensor_versioned' "
            "(was it consumed already?)"
        )
    dl = managed.dl_tensor
    # Read everything before taking ownership, so a bad dtype leaves the capsule intact.
    try:
        dtype = format_dtype(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    except ValueError as err:
        raise BufferError(f"from_dlpack: unsupported DLPack dtype {dl.dtype!r}") from err
    contents = CapsuleContents(
        data=dl.data or 0,
        device_type=dl.device.device_type,
        device_id=dl.device.device_id,
        shape=dl.shape_tuple,
        strides=dl.strides_tuple,
        dtype=dtype,
        byte_offset=dl.byte_offset,
        read_only=read_only,
        owner=ImportedTensor(0, struct_type),
    )
    if _SetName(capsule, ctypes.addressof(used)) != 0:  # pragma: no cover
        raise BufferError("from_dlpack: could not mark the capsule as used")
    contents.owner._ptr = ptr
    return contents
