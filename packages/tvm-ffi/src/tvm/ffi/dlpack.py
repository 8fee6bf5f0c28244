"""ctypes mirrors of the DLPack C structures and of the packed calling convention.

The layouts follow ``dlpack/dlpack.h`` (version 1.1): on a 64-bit platform ``DLDevice``
is 8 bytes, ``DLDataType`` 4, ``DLTensor`` 48, ``DLManagedTensor`` 64 and
``DLManagedTensorVersioned`` 80.  Compiled kernels receive ``DLTensor*`` arguments
through ``TVMValue`` slots tagged with :class:`ArgTypeCode`.
"""

from __future__ import annotations

import ctypes
from enum import IntEnum

from .dtype import format_dtype, parse_dtype

__all__ = [
    "DLPACK_MAJOR_VERSION",
    "DLPACK_MINOR_VERSION",
    "DLPACK_FLAG_BITMASK_READ_ONLY",
    "DLPACK_FLAG_BITMASK_IS_COPIED",
    "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED",
    "DLDeviceType",
    "DLDataTypeCode",
    "DLDevice",
    "DLDataType",
    "DLTensor",
    "DLManagedTensor",
    "DLManagedTensorDeleter",
    "DLPackVersion",
    "DLManagedTensorVersioned",
    "DLManagedTensorVersionedDeleter",
    "TVMValue",
    "ArgTypeCode",
]

DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 1

DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0
DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1
DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED = 1 << 2


class DLDeviceType(IntEnum):
    """DLPack's ``DLDeviceType``: where a tensor's memory lives."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


class DLDataTypeCode(IntEnum):
    """DLPack's ``DLDataTypeCode`` (the ``code`` of a :class:`DLDataType`)."""

    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLOpaqueHandle = 3
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6
    kDLFloat8_e3m4 = 7
    kDLFloat8_e4m3 = 8
    kDLFloat8_e4m3b11fnuz = 9
    kDLFloat8_e4m3fn = 10
    kDLFloat8_e4m3fnuz = 11
    kDLFloat8_e5m2 = 12
    kDLFloat8_e5m2fnuz = 13
    kDLFloat8_e8m0fnu = 14
    kDLFloat6_e2m3fn = 15
    kDLFloat6_e3m2fn = 16
    kDLFloat4_e2m1fn = 17


class ArgTypeCode(IntEnum):
    """Type tag of one ``TVMValue`` argument in the packed calling convention."""

    kInt = 0
    kUInt = 1
    kFloat = 2
    kOpaqueHandle = 3
    kNull = 4
    kDLTensorHandle = 7


class DLDevice(ctypes.Structure):
    """``DLDevice``: a device type and an ordinal."""

    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

    def __init__(self, device_type: int = DLDeviceType.kDLCPU, device_id: int = 0) -> None:
        super().__init__(int(device_type), int(device_id))

    @property
    def type_enum(self) -> DLDeviceType | int:
        """``device_type`` as a :class:`DLDeviceType` (the raw int if unknown)."""
        try:
            return DLDeviceType(self.device_type)
        except ValueError:
            return self.device_type

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DLDevice):
            return NotImplemented
        return (self.device_type, self.device_id) == (other.device_type, other.device_id)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        t = self.type_enum
        name = t.name if isinstance(t, DLDeviceType) else str(t)
        return f"DLDevice({name}, {self.device_id})"


class DLDataType(ctypes.Structure):
    """``DLDataType``: type code, bits per lane and number of lanes (``float32x4``)."""

    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    def __init__(self, code: int = DLDataTypeCode.kDLFloat, bits: int = 32, lanes: int = 1) -> None:
        for field, value, limit in (
            ("code", code, 0xFF),
            ("bits", bits, 0xFF),
            ("lanes", lanes, 0xFFFF),
        ):
            if not 0 <= int(value) <= limit:
                raise ValueError(f"DLDataType.{field} must be in [0, {limit}], got {value}")
        super().__init__(int(code), int(bits), int(lanes))

    @classmethod
    def from_str(cls, text: str) -> DLDataType:
        """``DLDataType.from_str("float32x4")``; a ValueError for an unknown dtype string."""
        return cls(*parse_dtype(text))

    @property
    def itemsize(self) -> int:
        """Bytes per element (all lanes); a sub-byte element takes a whole byte
        (:func:`tvm.ffi.dtype.storage_bytes`)."""
        return max(1, (self.bits + 7) // 8) * max(self.lanes, 1)

    def __str__(self) -> str:
        return format_dtype(self.code, self.bits, self.lanes)

    def __repr__(self) -> str:
        try:
            text = str(self)
        except ValueError:  # unknown code: show the raw triple
            text = f"code={self.code}, bits={self.bits}, lanes={self.lanes}"
        return f"DLDataType({text})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DLDataType):
            return NotImplemented
        return (self.code, self.bits, self.lanes) == (other.code, other.bits, other.lanes)

    __hash__ = None  # type: ignore[assignment]  # mutable


class DLTensor(ctypes.Structure):
    """``DLTensor``: a borrowed view of a strided (or compact, ``strides == NULL``) array."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]

    @property
    def shape_tuple(self) -> tuple[int, ...]:
        """The shape as a tuple (reads ``ndim`` entries of ``shape``)."""
        if self.ndim and not self.shape:
            raise ValueError(f"DLTensor has ndim={self.ndim} but a NULL shape pointer")
        return tuple(self.shape[i] for i in range(self.ndim))

    @property
    def strides_tuple(self) -> tuple[int, ...] | None:
        """Strides in elements, or ``None`` for a compact row-major tensor (NULL strides)."""
        if not self.strides:
            return None
        return tuple(self.strides[i] for i in range(self.ndim))

    def __repr__(self) -> str:
        return (
            f"DLTensor(data=0x{self.data or 0:x}, device={self.device!r}, "
            f"shape={self.shape_tuple}, dtype={self.dtype}, strides={self.strides_tuple}, "
            f"byte_offset={self.byte_offset})"
        )


class DLManagedTensor(ctypes.Structure):
    """``DLManagedTensor``: a DLTensor plus the producer's context and deleter (legacy)."""


DLManagedTensorDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))

DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DLManagedTensorDeleter),
]


class DLPackVersion(ctypes.Structure):
    """``DLPackVersion``: the ABI version of a versioned managed tensor."""

    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """``DLManagedTensorVersioned`` (DLPack >= 1.0): version, context, deleter, flags, tensor."""


DLManagedTensorVersionedDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))

DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DLManagedTensorVersionedDeleter),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


class TVMValue(ctypes.Union):
    """One argument slot of the packed calling convention (tagged by :class:`ArgTypeCode`)."""

    _fields_ = [
        ("v_int64", ctypes.c_int64),
        ("v_float64", ctypes.c_double),
        ("v_handle", ctypes.c_void_p),
    ]
