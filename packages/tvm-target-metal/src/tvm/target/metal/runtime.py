"""Run side of the ``metal`` target: the device API and ``.mtlmod`` files.

Metal kernels run only on macOS with an Apple GPU.  This package generates and exports
Metal Shading Language anywhere, but it does not bind the Metal runtime: the device API
reports no device, and allocating, copying or launching raises
:class:`~tvm.runtime.DeviceUnavailableError` explaining that (and, on macOS, that the MSL
must be run through a Metal runtime binding, e.g. compiled with ``xcrun metal``).
Imports only tvm-runtime — never the compiler.
"""

from __future__ import annotations

import platform
import sys
from typing import Any, NoReturn

import numpy as np
from tvm.runtime.device import Device, DeviceAPI
from tvm.runtime.device_module import (
    DEVICE_MODULE_VERSION, DeviceModule, load_device_module_payload,
)
from tvm.runtime.error import DeviceUnavailableError, KernelError

__all__ = ["MetalDeviceAPI", "MetalModule", "device_api", "load_module", "unavailable_reason",
           "DEVICE_MODULE_VERSION", "FILE_SUFFIX", "FORMAT", "DEVICE_TYPE"]

FORMAT = "metal"
FILE_SUFFIX = "mtlmod"
DEVICE_TYPE = 8


def unavailable_reason() -> str:
    """Why Metal kernels cannot run in this process."""
    if sys.platform != "darwin":
        return (f"the metal device needs macOS with an Apple GPU; this is {platform.system()} "
                f"({platform.machine()}). Generate the Metal Shading Language here "
                "(get_source(), export_library) and run it on a Mac")
    return ("tvm-target-metal generates Metal Shading Language but does not include a Metal "
            "runtime binding: compile the exported source with `xcrun metal` and launch it "
            "with the Metal API")


class MetalDeviceAPI(DeviceAPI):
    """The ``metal`` device API: reports the device as absent and explains why."""

    name = "metal"

    def _fail(self, what: str) -> NoReturn:
        raise DeviceUnavailableError(f"cannot {what} on the metal device: "
                                     f"{unavailable_reason()}")

    def exists(self, dev: Device) -> bool:
        return False

    def alloc(self, dev: Device, nbytes: int, alignment: int) -> int:
        self._fail(f"allocate {nbytes} bytes")

    def free(self, dev: Device, handle: int) -> None:
        self._fail("free memory")

    def copy_from_host(self, dev: Device, dst: int, dst_offset: int, host: np.ndarray) -> None:
        self._fail("copy to the device")

    def copy_to_host(self, dev: Device, src: int, src_offset: int, host: np.ndarray) -> None:
        self._fail("copy from the device")

    def attributes(self, dev: Device) -> dict[str, Any]:
        return {"name": str(dev), "available": False, "reason": unavailable_reason()}


_API = MetalDeviceAPI()


def device_api() -> MetalDeviceAPI:
    """The ``metal`` device API (what ``tvm_device_api(8)`` returns)."""
    return _API


class MetalModule(DeviceModule):
    """Metal kernels (``payload["source"]``, MSL) and their host functions.  Calling a
    function raises DeviceUnavailableError (see the module docstring)."""

    type_key = FORMAT
    device_type = DEVICE_TYPE
    device_name = "metal"
    file_suffix = FILE_SUFFIX

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload)
        if not isinstance(payload.get("source"), str):
            raise KernelError("a metal module needs its Metal Shading Language 'source'")

    def launch(self, dev: Device, kernel: str, args: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> None:
        raise DeviceUnavailableError(f"cannot launch metal kernel {kernel!r}: "
                                     f"{unavailable_reason()}")


def load_module(path: str) -> MetalModule:
    """Load an exported ``.mtlmod`` file (the ``tvm_runtime_module_loader`` for ``mtlmod``)."""
    return MetalModule(load_device_module_payload(path, FORMAT))
