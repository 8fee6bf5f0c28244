"""Runtime error types and the per-thread "last error" that kernels report through.

A compiled kernel that fails calls ``__TVMAPISetLastError(msg)`` (a function-pointer global
the runtime fills with :data:`TVMAPISetLastError`) and returns non-zero; the runtime then
raises :class:`KernelError` carrying that message.
"""

from __future__ import annotations

import ctypes
import threading

from tvm.ffi.error import PluginError, TVMError

__all__ = [
    "TVMError",
    "KernelError",
    "DeviceUnavailableError",
    "ModuleLoadError",
    "HostMismatchError",
    "FunctionNotFoundError",
    "TVMAPISetLastError",
    "set_last_error",
    "get_last_error",
    "clear_last_error",
]


class KernelError(TVMError, ValueError):
    """A compiled kernel rejected its arguments or failed (the message is the kernel's)."""


class DeviceUnavailableError(PluginError):
    """No installed plugin provides a device API for the requested device type."""


class ModuleLoadError(TVMError, ValueError):
    """A file could not be loaded as a runtime module (unknown format, missing metadata)."""


class HostMismatchError(ModuleLoadError):
    """A module was built for another architecture or for CPU features this host lacks."""


class FunctionNotFoundError(TVMError, AttributeError):
    """A module has no function of the requested name."""


_tls = threading.local()


def set_last_error(message: str | None) -> None:
    """Record ``message`` as the calling thread's last runtime error."""
    _tls.message = message


def get_last_error() -> str | None:
    """The calling thread's last runtime error message, or ``None``."""
    return getattr(_tls, "message", None)


def clear_last_error() -> None:
    """Forget the calling thread's last error."""
    _tls.message = None


SetLastErrorFunc = ctypes.CFUNCTYPE(None, ctypes.c_char_p)


def _set_last_error_from_c(msg: bytes | None) -> None:
    try:
        if msg is None:
            set_last_error("(kernel reported an error with a NULL message)")
        else:
            set_last_error(msg.decode("utf-8", errors="replace"))
    except BaseException:  # pragma: no cover - never let an exception cross into C
        pass


#: The C callback ``void TVMAPISetLastError(const char*)`` that modules' slots point to.
TVMAPISetLastError = SetLastErrorFunc(_set_last_error_from_c)
