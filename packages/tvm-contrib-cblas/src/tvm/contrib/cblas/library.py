"""Finding a CBLAS on this machine.

Searched in order: the system's ``libopenblas.so.0``, ``libcblas.so.3``, ``libblas.so.3``
(``ldconfig -p``; Debian's reference ``libblas3`` exports the CBLAS symbols too), then
the OpenBLAS that scipy and numpy wheels bundle: scipy's ``libscipy_openblas`` exports
``scipy_cblas_sgemm`` (32-bit integers) and numpy's ``libscipy_openblas64_`` exports
``scipy_cblas_sgemm64_`` (ILP64: 64-bit integers); the generated C declares the symbol
with the integer type the library uses.  A library counts only if ``dlopen`` finds its
sgemm symbol.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import glob
import os
import subprocess
from typing import Optional

__all__ = ["CBLASLibrary", "find_cblas"]

_SYSTEM_NAMES = ("libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3")


@dataclasses.dataclass(frozen=True)
class CBLASLibrary:
    """A CBLAS shared library: its path, its ``sgemm`` symbol and integer type."""

    path: str
    sgemm: str = "cblas_sgemm"
    int_type: str = "int32_t"
    origin: str = "system"


def _has(path: str, symbol: str) -> bool:
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return False
    return hasattr(lib, symbol)


def _system_paths() -> list[str]:
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, _, path = line.strip().partition(" => ")
        name = name.split(" ")[0]
        if name in _SYSTEM_NAMES and name not in found:
            found[name] = path.strip()
    return [found[n] for n in _SYSTEM_NAMES if n in found]


def _bundled() -> list[CBLASLibrary]:
    out = []
    try:
        import scipy

        root = os.path.dirname(os.path.dirname(scipy.__file__))
        for p in sorted(glob.glob(os.path.join(root, "scipy.libs", "libscipy_openblas-*.so"))):
            out.append(CBLASLibrary(p, "scipy_cblas_sgemm", "int32_t", "scipy wheel"))
    except ImportError:
        pass
    import numpy

    root = os.path.dirname(os.path.dirname(numpy.__file__))
    for p in sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so"))):
        out.append(CBLASLibrary(p, "scipy_cblas_sgemm64_", "int64_t", "numpy wheel"))
    return out


@functools.lru_cache(maxsize=1)
def find_cblas() -> tuple[Optional[CBLASLibrary], str]:
    """``(library, "")``, or ``(None, why not)`` when no CBLAS is found."""
    tried = []
    for path in _system_paths():
        tried.append(path)
        if _has(path, "cblas_sgemm"):
            return CBLASLibrary(path), ""
    for lib in _bundled():
        tried.append(lib.path)
        if _has(lib.path, lib.sgemm):
            return lib, ""
    return None, ("no CBLAS library with sgemm was found (tried: "
                  f"{', '.join(tried) or 'none'}); install one, e.g. "
                  "`apt-get install libopenblas-dev`")
