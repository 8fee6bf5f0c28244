"""VM memory: storages (untyped device buffers) from a pool, and tensors viewing them.

``alloc_storage`` takes a :class:`Storage` from the VM's :class:`StoragePool`; ``alloc_tensor``
makes a tensor over part of it.  When the last tensor (and the storage object) using a pooled
buffer is gone, the buffer goes back to the pool and the next ``alloc_storage`` of a size that
fits reuses it, so a model run repeatedly allocates nothing after its first run.

On the CPU a buffer is a 64-byte aligned numpy array presented through a small holder object:
every tensor view keeps the holder alive (numpy's ``base``), and the holder returns the
buffer to the pool when it dies (``__del__``: cheaper than a ``weakref.finalize``, and
``alloc_storage`` runs for most kernels of every call).  Other devices (GPUs) allocate
through their :class:`~tvm.runtime.DeviceAPI` and pool the same way: a device buffer is
owned by a holder that every tensor over it keeps alive (the tensor's ``owner``).  Reusing a device buffer as
soon as its tensors are gone is safe because a device runs its kernels and copies in order.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import numpy as np
from tvm.ffi.dtype import storage_bytes, to_numpy_dtype

from ..device import Device, aligned_host_buffer
from ..tensor import ALIGNMENT, Tensor

__all__ = ["Storage", "StoragePool"]

_CPU = 1


class _HostBlock:
    """Presents a pooled host buffer (``(array, address)``) to numpy; returns it to the pool
    when it dies."""

    __slots__ = ("__array_interface__", "raw", "pool", "__weakref__")

    def __init__(self, raw: tuple[np.ndarray, int], nbytes: int, pool: StoragePool) -> None:
        self.raw = raw
        self.pool = pool
        self.__array_interface__ = {
            "version": 3,
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (raw[1], False),
        }

    def __del__(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool._give_back(self.raw)


class _DeviceBlock:
    """Owns a pooled device buffer; tensors over it keep it alive, its death returns it."""

    __slots__ = ("handle", "raw", "pool", "__weakref__")

    def __init__(self, raw: _DeviceBuffer, pool: StoragePool) -> None:
        self.handle = raw.handle
        self.raw = raw
        self.pool = pool

    def __del__(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool._give_back(self.raw)


class _DeviceBuffer:
    """Device memory from a DeviceAPI (freed when dropped from the pool)."""

    __slots__ = ("api", "device", "handle", "nbytes")

    def __init__(self, device: Device, nbytes: int) -> None:
        self.api = device.api
        self.device = device
        self.nbytes = nbytes
        self.handle = 0
        self.handle = int(self.api.alloc(device, nbytes, ALIGNMENT))

    def __del__(self) -> None:
        handle, self.handle = self.handle, 0
        if handle:
            try:
                self.api.free(self.device, handle)
            except Exception:  # pragma: no cover - a destructor must not raise
                pass


@functools.lru_cache(maxsize=None)
def _dtype_info(dtype: str) -> tuple[np.dtype, int]:
    return to_numpy_dtype(dtype), storage_bytes(dtype)


class Storage:
    """An untyped buffer of ``nbytes`` on ``device``; :meth:`alloc_tensor` views part of it."""

    __slots__ = ("device", "nbytes", "_bytes", "_addr", "_tensor", "__weakref__")

    def __init__(self, device: Device, nbytes: int, buffer: Any, addr: int | None = None
                 ) -> None:
        self.device = device
        self.nbytes = nbytes
        if device.device_type == _CPU:
            self._bytes: np.ndarray | None = buffer
            self._addr = buffer.ctypes.data if addr is None else addr
            self._tensor: Tensor | None = None
        else:
            self._bytes = None
            self._addr = 0
            self._tensor = buffer

    def alloc_tensor(self, offset: int, shape: tuple[int, ...], dtype: str) -> Tensor:
        """A compact tensor of ``shape``/``dtype`` starting ``offset`` bytes into the storage."""
        np_dtype, itembytes = _dtype_info(dtype)
        shape = tuple(shape)
        need = math.prod(shape) * itembytes
        if offset < 0 or offset + need > self.nbytes:
            raise ValueError(
                f"alloc_tensor: a {dtype} tensor of shape {shape} at offset {offset} "
                f"needs {offset + need} bytes; the storage has {self.nbytes}"
            )
        if self._bytes is not None:
            view = self._bytes[offset:offset + need].view(np_dtype).reshape(shape)
            return Tensor(self.device, self._addr + offset, shape, dtype, array=view)
        base = self._tensor
        return Tensor(self.device, base.data_ptr, tuple(shape), dtype,
                      byte_offset=base.byte_offset + offset, owner=base)

    def __repr__(self) -> str:
        return f"<vm.Storage {self.nbytes} bytes on {self.device}>"


class StoragePool:
    """Recycles storage buffers of one device (best fit among freed buffers).

    ``max_cached_bytes`` bounds the memory kept for reuse; ``stats`` counts allocations that
    hit or missed the pool.
    """

    def __init__(self, device: Device, max_cached_bytes: int = 1 << 31) -> None:
        self.device = device
        self.max_cached_bytes = max_cached_bytes
        # size -> free buffers: (numpy array, its address) on the CPU, else _DeviceBuffers
        self._free: dict[int, list[Any]] = {}
        self._cached = 0
        self._lock = threading.Lock()
        self.stats = {"hits": 0, "misses": 0, "allocated_bytes": 0}

    @staticmethod
    def _round(nbytes: int) -> int:
        return max(ALIGNMENT, -(-nbytes // ALIGNMENT) * ALIGNMENT)

    def alloc(self, nbytes: int) -> Storage:
        """A storage of at least ``nbytes`` bytes."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise ValueError(f"alloc_storage: size must be a non-negative int, got {nbytes!r}")
        nbytes = int(nbytes)
        size = self._round(nbytes)
        raw = self._take(size)
        cpu = self.device.device_type == _CPU
        if raw is None:
            self.stats["misses"] += 1
            self.stats["allocated_bytes"] += size
            if cpu:
                array = aligned_host_buffer(size, ALIGNMENT)
                raw = (array, array.ctypes.data)
            else:
                raw = _DeviceBuffer(self.device, size)
        else:
            self.stats["hits"] += 1
        if not cpu:
            holder = _DeviceBlock(raw, self)
            base = Tensor(self.device, raw.handle, (raw.nbytes,), "uint8", owner=holder)
            return Storage(self.device, nbytes, base)
        block = _HostBlock(raw, raw[0].nbytes, self)
        return Storage(self.device, nbytes, np.asarray(block), raw[1])

    def _take(self, size: int) -> Any:
        with self._lock:
            bucket = self._free.get(size)
            if bucket:
                self._cached -= size
                return bucket.pop()
            # best fit: the smallest cached buffer that holds it, at most twice as large
            fits = [s for s, b in self._free.items() if b and size <= s <= 2 * size]
            if not fits:
                return None
            best = min(fits)
            self._cached -= best
            return self._free[best].pop()

    def _give_back(self, raw: Any) -> None:
        size = raw[0].nbytes if isinstance(raw, tuple) else raw.nbytes
        with self._lock:
            if self._cached + size > self.max_cached_bytes:
                return
            self._free.setdefault(size, []).append(raw)
            self._cached += size

    @property
    def cached_bytes(self) -> int:
        """Bytes held for reuse."""
        return self._cached

    def clear(self) -> None:
        """Drop every cached buffer."""
        with self._lock:
            self._free.clear()
            self._cached = 0
