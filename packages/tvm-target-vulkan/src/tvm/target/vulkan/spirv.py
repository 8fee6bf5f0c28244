"""GLSL -> SPIR-V with glslang (``glslangValidator``), checked by ``spirv-val``.

Compile side only.  Each kernel's shader is compiled for ``vulkan1.1``; a glslang error
raises a :class:`~tvm.tir.codegen.CodegenError` that quotes the shader line it points at.
``spirv-val`` (SPIRV-Tools) validates every module when it is installed.  Validated SPIR-V
is cached by content (glslang's version, the target environment, the source) in
``$TVM_CACHE_DIR/vulkan`` (:func:`tvm.ffi.knobs.cache_dir`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tvm.ffi import knobs

from tvm.tir.codegen import CodegenError

__all__ = ["compile_glsl", "glslang_available", "spirv_val_available", "TARGET_ENV"]

TARGET_ENV = "vulkan1.1"
_INSTALL = "apt-get install glslang-tools spirv-tools (or the Vulkan SDK)"


def glslang_available() -> bool:
    """Whether ``glslangValidator`` is on PATH."""
    return shutil.which("glslangValidator") is not None


def spirv_val_available() -> bool:
    """Whether ``spirv-val`` is on PATH."""
    return shutil.which("spirv-val") is not None


def _quote_lines(log: str, source: str) -> str:
    lines = source.splitlines()
    out = []
    for line in log.splitlines():
        line = line.strip()
        if not line or line.endswith(".comp") or line.startswith("SPIR-V is not generated"):
            continue
        out.append(line)
        m = re.match(r"(?:ERROR|WARNING): (?:[^:]*):(\d+):", line)
        if m and 0 < int(m.group(1)) <= len(lines):
            out.append(f"    line {m.group(1)}: {lines[int(m.group(1)) - 1].strip()}")
    return "\n".join(out)


@functools.lru_cache(maxsize=4)
def _glslang_version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False,
                             timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise CodegenError(f"vulkan codegen: running {exe} --version failed: {err}") from err
    return out.stdout.strip()


def cache_dir() -> Path:
    """Where SPIR-V is cached (``$TVM_CACHE_DIR/vulkan`` or ``~/.cache/tvm/vulkan``)."""
    return knobs.cache_dir("vulkan")


def compile_glsl(source: str, kernel: str = "kernel", use_cache: bool = True) -> bytes:
    """The SPIR-V binary of the compute shader ``source`` (validated by spirv-val where
    installed), cached by content."""
    exe = shutil.which("glslangValidator")
    if exe is None:
        raise CodegenError(f"vulkan codegen: glslangValidator is not installed; {_INSTALL}")
    validated = shutil.which("spirv-val") is not None
    key = hashlib.sha256("\0".join([_glslang_version(exe), TARGET_ENV, str(validated),
                                     source]).encode()).hexdigest()[:40]
    cached = cache_dir() / f"{key}.spv"
    if use_cache and cached.is_file():
        return cached.read_bytes()
    spirv = _compile(exe, source, kernel)
    if use_cache:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(spirv)
            os.replace(tmp, cached)
        except OSError:
            pass  # a read-only cache: compile again next time
    return spirv


def _compile(exe: str, source: str, kernel: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tvm_vulkan_") as tmp:
        src, out = os.path.join(tmp, f"{kernel}.comp"), os.path.join(tmp, f"{kernel}.spv")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(source)
        res = subprocess.run([exe, "-V", "--target-env", TARGET_ENV, "-S", "comp", src, "-o", out],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0 or not os.path.exists(out):
            raise CodegenError(f"vulkan codegen: glslang rejected the shader of kernel {kernel}:\n"
                               f"{_quote_lines(res.stdout + res.stderr, source)}")
        val = shutil.which("spirv-val")
        if val is not None:
            res = subprocess.run([val, "--target-env", TARGET_ENV, out], capture_output=True,
                                 text=True, check=False)
            if res.returncode != 0:
                raise CodegenError(f"vulkan codegen: spirv-val rejected the SPIR-V of kernel "
                                   f"{kernel}:\n{(res.stdout + res.stderr).strip()}")
        with open(out, "rb") as fh:
            return fh.read()
