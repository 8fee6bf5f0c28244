"""CUDA C to PTX with nvcc or NVRTC, cached by content.

:func:`compile_ptx` runs ``nvcc --ptx -arch=<arch> -O3`` (or NVRTC for the virtual
``compute_<arch>``, see :mod:`.nvrtc`, when nvcc is missing or ``compiler="nvrtc"``) and
caches the PTX under ``$TVM_CACHE_DIR/cuda`` (default ``~/.cache/tvm/cuda``), keyed by the
source, the arch, the flags and the compiler's version, so rebuilding a kernel costs a file
lookup.

Environment variables: ``TVM_NVCC`` (the nvcc to use when the target names none, else
``nvcc`` on PATH or ``$CUDA_HOME/bin/nvcc``), ``TVM_NVRTC`` (libnvrtc's path),
``TVM_CACHE_DIR``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from tvm.ffi import TVMError, knobs

from .nvrtc import cuda_homes

__all__ = ["compile_ptx", "find_nvcc", "nvcc_version", "NVCCError", "NVCCNotFoundError",
           "cache_dir", "check_arch"]

_ARCH = re.compile(r"^(sm|compute)_\d+[a-z]?$")


class NVCCNotFoundError(TVMError, RuntimeError):
    """No nvcc to compile CUDA kernels with."""


class NVCCError(TVMError, RuntimeError):
    """nvcc rejected generated CUDA source (a code generator bug or a bad flag)."""


def check_arch(arch: str) -> str:
    """``arch`` if it looks like ``sm_80``/``compute_90a``; a clear error otherwise."""
    if not isinstance(arch, str) or not _ARCH.match(arch):
        raise ValueError(f"cuda target: -arch must look like sm_80 or sm_90a, got {arch!r}")
    return arch


def find_nvcc(nvcc: Optional[str] = None) -> str:
    """Path of nvcc: ``nvcc`` if given, else ``$TVM_NVCC``, ``nvcc`` on PATH or
    ``$CUDA_HOME/bin/nvcc``."""
    candidates = [c for c in (nvcc, knobs.NVCC.get()) if c]
    for c in candidates:
        path = shutil.which(c)
        if path:
            return path
        if nvcc:
            raise NVCCNotFoundError(f"cuda target: nvcc {c!r} (-nvcc) was not found")
    path = shutil.which("nvcc")
    if path:
        return path
    for home in cuda_homes():
        if os.path.exists(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    raise NVCCNotFoundError(
        "the cuda target compiles kernels with nvcc or NVRTC; neither was found (looked for "
        "nvcc at $TVM_NVCC, PATH, $CUDA_HOME/bin); install the CUDA toolkit, pass "
        "-nvcc=/path/to/nvcc, or pip install nvidia-cuda-nvrtc"
    )


@lru_cache(maxsize=8)
def nvcc_version(nvcc: str) -> str:
    """The ``release X.Y`` line of ``nvcc --version``."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise NVCCNotFoundError(f"cuda target: running {nvcc} --version failed: {err}") from err
    lines = [ln for ln in out.stdout.splitlines() if "release" in ln]
    return lines[-1].strip() if lines else out.stdout.strip()[-80:]


def cache_dir() -> Path:
    """Where PTX is cached (``$TVM_CACHE_DIR/cuda`` or ``~/.cache/tvm/cuda``)."""
    return knobs.cache_dir("cuda")


def _work_dir() -> Path:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        return d
    except OSError:
        return Path(tempfile.mkdtemp(prefix="tvm-cuda-"))


def _pick_compiler(compiler: Optional[str], nvcc: Optional[str]) -> tuple[str, Optional[str]]:
    from .nvrtc import nvrtc_available

    if compiler not in (None, "", "auto", "nvcc", "nvrtc"):
        raise ValueError(f"cuda target: -compiler must be nvcc, nvrtc or auto, got {compiler!r}")
    if compiler == "nvrtc":
        return "nvrtc", None
    try:
        return "nvcc", find_nvcc(nvcc)
    except NVCCNotFoundError:
        if compiler == "nvcc" or nvcc or not nvrtc_available():
            raise
        return "nvrtc", None


def compile_ptx(source: str, arch: str = "sm_80", nvcc: Optional[str] = None,
                flags: Sequence[str] = (), use_cache: bool = True,
                compiler: Optional[str] = None) -> str:
    """The PTX of CUDA ``source`` for ``arch``, compiled by nvcc (default when installed)
    or NVRTC (``compiler="nvrtc"``, or when nvcc is missing), cached by content."""
    arch = check_arch(arch)
    kind, exe = _pick_compiler(compiler, nvcc)
    if kind == "nvrtc":
        from .nvrtc import nvrtc_compile, nvrtc_version

        identity, args = nvrtc_version(), ["nvrtc", arch, *flags]
    else:
        identity, args = nvcc_version(exe), ["--ptx", f"-arch={arch}", "-O3", "-std=c++17",
                                             *flags]
    key = hashlib.sha256("\0".join([identity, *args, source]).encode()).hexdigest()[:40]
    d = _work_dir() if use_cache else Path(tempfile.mkdtemp(prefix="tvm-cuda-"))
    ptx = d / f"{key}.ptx"
    if ptx.exists():
        return ptx.read_text()
    base = d / f".{key}.{os.getpid()}"
    if kind == "nvrtc":
        text = nvrtc_compile(source, arch, flags)
        tmp = Path(f"{base}.ptx")
        tmp.write_text(text)
        os.replace(tmp, ptx)
        return text
    src, out = Path(f"{base}.cu"), Path(f"{base}.ptx")
    src.write_text(source)
    cmd = [exe, *args, "-o", str(out), str(src)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as err:
        src.unlink(missing_ok=True)
        raise NVCCError(f"cuda target: running nvcc failed: {' '.join(cmd)}: {err}") from err
    if proc.returncode != 0:
        kept = d / f"{key}.failed.cu"
        os.replace(src, kept)
        out.unlink(missing_ok=True)
        raise NVCCError(
            f"cuda target: nvcc failed (exit {proc.returncode}) on generated source {kept}:\n"
            f"$ {' '.join(cmd)}\n{(proc.stderr or proc.stdout).strip()[:4000]}"
        )
    src.unlink(missing_ok=True)
    os.replace(out, ptx)  # atomic: concurrent builds of one kernel both succeed
    return ptx.read_text()
