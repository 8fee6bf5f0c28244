"""NVRTC (the CUDA runtime compiler) through ctypes: CUDA C to PTX without the toolkit.

Used when nvcc is absent (or the target says ``-compiler=nvrtc``).  The library comes from
``$TVM_NVRTC`` (a path), the ``nvidia-cuda-nvrtc`` wheel (``pip install nvidia-cuda-nvrtc``),
the CUDA toolkit (``$CUDA_HOME/lib64``) or the system's library path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
from functools import lru_cache
from typing import Optional, Sequence

from tvm.ffi import TVMError, knobs

__all__ = ["find_nvrtc", "nvrtc_available", "nvrtc_compile", "nvrtc_version", "NVRTCError",
           "cuda_homes"]


class NVRTCError(TVMError, RuntimeError):
    """NVRTC is missing or rejected generated CUDA source."""


def cuda_homes() -> list[str]:
    """The CUDA toolkit folders to search: ``$CUDA_HOME``, ``$CUDA_PATH``, /usr/local/cuda."""
    return [h for h in (knobs.CUDA_HOME.get(), knobs.CUDA_PATH.get(), "/usr/local/cuda") if h]


def _candidates() -> list[str]:
    out = [knobs.NVRTC.get()] if knobs.NVRTC.get() else []
    for base in sys.path:
        for pattern in ("nvidia/cu*/lib/libnvrtc.so*", "nvidia/cuda_nvrtc/lib/libnvrtc.so*",
                        "nvidia/cu*/bin/nvrtc64_*.dll"):
            out.extend(sorted(p for p in glob.glob(os.path.join(base, pattern))
                              if "builtins" not in p))
    for home in cuda_homes():
        out.extend(sorted(glob.glob(os.path.join(home, "lib64", "libnvrtc.so*"))))
    found = ctypes.util.find_library("nvrtc")
    if found:
        out.append(found)
    return out


def _load_builtins_beside(path: str) -> None:
    """Load the ``libnvrtc-builtins`` next to ``path`` first: NVRTC opens it by name when it
    compiles, and a pip wheel's folder is not on the loader's search path."""
    folder, base = os.path.split(path)
    if not folder or not base.startswith("libnvrtc"):
        return
    flavour = ".alt" if ".alt." in base else ""
    for builtins in sorted(glob.glob(os.path.join(folder, f"libnvrtc-builtins{flavour}.so*"))):
        if flavour or ".alt." not in builtins:
            try:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
            return


@lru_cache(maxsize=1)
def find_nvrtc() -> Optional[ctypes.CDLL]:
    """The loaded NVRTC library, or None."""
    for path in _candidates():
        try:
            _load_builtins_beside(path)
            lib = ctypes.CDLL(path)
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            return lib
        except OSError:
            continue
    return None


def nvrtc_available() -> bool:
    return find_nvrtc() is not None


def _lib() -> ctypes.CDLL:
    lib = find_nvrtc()
    if lib is None:
        raise NVRTCError("NVRTC was not found: pip install nvidia-cuda-nvrtc, install the CUDA "
                         "toolkit, or set $TVM_NVRTC to libnvrtc's path")
    return lib


def _check(lib: ctypes.CDLL, code: int, what: str) -> None:
    if code != 0:
        msg = lib.nvrtcGetErrorString(code).decode()
        raise NVRTCError(f"cuda target: NVRTC {what} failed: {msg}")


def nvrtc_version() -> str:
    lib = _lib()
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"nvrtc {major.value}.{minor.value}"


def include_dirs() -> list[str]:
    """Directories holding ``cuda_fp16.h`` (the toolkit's, or the ``nvidia-cuda-runtime``
    wheel's) for kernels that use half types."""
    out = []
    candidates = [os.path.join(h, "include") for h in cuda_homes()]
    for base in sys.path:
        candidates.extend(glob.glob(os.path.join(base, "nvidia", "*", "include")))
    for d in candidates:
        if os.path.exists(os.path.join(d, "cuda_fp16.h")) and d not in out:
            out.append(d)
    return out


def nvrtc_compile(source: str, arch: str, options: Sequence[str] = ()) -> str:
    """PTX of ``source`` for ``arch`` (``sm_80`` compiles for the virtual ``compute_80``)."""
    lib = _lib()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"tvm_kernels.cu",
                                       0, None, None), "nvrtcCreateProgram")
    try:
        virtual = "compute_" + arch.split("_", 1)[1]
        opts = [f"--gpu-architecture={virtual}", "-std=c++17", *options]
        if "#include" in source:
            opts.extend(f"-I{d}" for d in include_dirs())
        arr = (ctypes.c_char_p * len(opts))(*(o.encode() for o in opts))
        code = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if code != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise NVRTCError(
                f"cuda target: NVRTC rejected the generated source ({' '.join(opts)}):\n"
                f"{log.value.decode(errors='replace').strip()[:4000]}"
            )
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
