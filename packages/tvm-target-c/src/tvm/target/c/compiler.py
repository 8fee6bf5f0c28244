"""The system C compiler and the compiled-kernel cache.

:func:`compile_source` turns C source into a shared library with ``cc -O3 -march=native
-shared -fPIC`` (options from the target).  Libraries are cached by a hash of the source,
the compiler and its flags under ``$TVM_CACHE_DIR/c`` (default ``~/.cache/tvm/c``), so
building the same kernel again costs a file lookup.

Environment variables:

``CC``
    The C compiler when the target names none (``-cc=``); else ``cc``, ``gcc``, ``clang``.
``TVM_CACHE_DIR``
    Root of tvm's caches (compiled C kernels live in its ``c`` folder).
``TVM_C_KEEP_SOURCE``
    ``1``: also keep each compiled source next to its library in the cache (for reading).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from tvm.ffi import TVMError, knobs
from tvm.runtime.error import ModuleLoadError
from tvm.runtime.file_seal import check_seal, write_file, write_sealed

__all__ = [
    "CCompilerNotFoundError", "CCompileError", "CompilerOptions", "find_compiler",
    "compile_source", "cache_dir", "clear_cache", "CACHE_ENV",
]

CACHE_ENV = knobs.CACHE_DIR.name
_CANDIDATES = ("cc", "gcc", "clang")


class CCompilerNotFoundError(TVMError, RuntimeError):
    """No C compiler could be found for the ``c`` target."""


class CCompileError(TVMError, RuntimeError):
    """The C compiler rejected generated source (a code generator bug or a bad flag)."""


@dataclass(frozen=True)
class CompilerOptions:
    """How to compile: the compiler path and its flags (``-shared -fPIC`` are added)."""

    cc: str
    flags: tuple[str, ...] = ("-O3", "-march=native")

    @staticmethod
    def from_target(target: Any = None) -> CompilerOptions:
        """Options from a ``c`` target's attributes: ``-cc``, ``-mcpu``, ``-opt-level``,
        ``-cflags`` (``-mcpu=generic`` leaves ``-march`` out)."""
        get = (lambda k: target.get_attr(k)) if hasattr(target, "get_attr") else (lambda k: None)
        cc = find_compiler(get("cc"))
        level = get("opt-level")
        flags = [f"-O{3 if level is None else int(level)}"]
        mcpu = get("mcpu") or "native"
        if mcpu != "generic":
            flags.append(f"-march={mcpu}")
        flags.extend(get("cflags") or ())
        return CompilerOptions(cc, tuple(flags))


def find_compiler(cc: Optional[str] = None) -> str:
    """Path of the C compiler: ``cc`` if given, else ``$CC``, else cc/gcc/clang on PATH."""
    tried: list[str] = []
    for candidate in ([cc] if cc else []) + ([knobs.CC.get()] if knobs.CC.get() else []):
        tried.append(candidate)
        words = shlex.split(candidate)
        path = shutil.which(words[0]) if words else None
        if path:
            return " ".join([path, *words[1:]])
        if cc:  # an explicitly requested compiler that is missing is an error, not a fallback
            raise CCompilerNotFoundError(
                f"target c: the C compiler {candidate!r} (-cc) was not found on PATH"
            )
    for name in _CANDIDATES:
        tried.append(name)
        path = shutil.which(name)
        if path:
            return path
    raise CCompilerNotFoundError(
        "target c needs a C compiler, but none was found (tried "
        f"{', '.join(repr(t) for t in tried)} on PATH). Install gcc or clang (e.g. "
        "`apt-get install gcc`), set $CC, or use the target option -cc=/path/to/cc"
    )


@lru_cache(maxsize=16)
def _compiler_identity(cc: str) -> str:
    """The compiler's path and version line: part of every cache key."""
    words = shlex.split(cc)
    try:
        out = subprocess.run([*words, "--version"], capture_output=True, text=True, timeout=30)
        version = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    except (OSError, subprocess.SubprocessError):
        version = "?"
    return f"{os.path.realpath(words[0])} {' '.join(words[1:])} {version}"


def cache_dir() -> Path:
    """Where compiled C kernels are cached (``$TVM_CACHE_DIR/c`` or ``~/.cache/tvm/c``)."""
    return knobs.cache_dir("c")


def clear_cache() -> int:
    """Delete the cached C kernels; returns how many files were removed."""
    d = cache_dir()
    count = 0
    if d.is_dir():
        for f in d.iterdir():
            if f.is_file() and f.suffix in (".so", ".c", ".dylib", ".dll"):
                f.unlink(missing_ok=True)
                count += 1
    return count


def _suffix() -> str:
    import sys

    return {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")


def _writable_dir() -> Path:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return d
    except OSError:
        return Path(tempfile.mkdtemp(prefix="tvm-c-"))


def compile_source(source: str, options: Optional[CompilerOptions] = None,
                   use_cache: bool = True) -> Path:
    """Compile ``source`` into a shared library and return its path (cached by content)."""
    options = options or CompilerOptions(find_compiler())
    words = shlex.split(options.cc)
    cmd_flags = [*words[1:], *options.flags, "-shared", "-fPIC", "-std=gnu11"]
    key_text = "\0".join([_compiler_identity(options.cc), *cmd_flags, source])
    key = hashlib.sha256(key_text.encode("utf-8")).hexdigest()[:40]
    d = _writable_dir() if use_cache else Path(tempfile.mkdtemp(prefix="tvm-c-"))
    lib = d / f"{key}{_suffix()}"
    if lib.exists():
        try:
            check_seal(lib)  # a cached library changed since (truncated, edited) is rebuilt
            return lib
        except ModuleLoadError:
            pass
    # compile in a private directory, then write the sealed library into the cache
    # atomically (O_EXCL temporary name: concurrent builds of one kernel both succeed)
    with tempfile.TemporaryDirectory(prefix="tvm-c-build-") as work:
        src = Path(work) / f"{key}.c"
        tmp_lib = Path(work) / f"{key}{_suffix()}"
        src.write_text(source)
        cmd = [words[0], *cmd_flags, "-o", str(tmp_lib), str(src), "-lm"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as err:
            raise CCompileError(f"target c: running the C compiler failed: {' '.join(cmd)}: "
                                f"{err}") from err
        if proc.returncode != 0:
            kept = d / f"{key}.failed.c"
            write_file(kept, [source.encode("utf-8")])
            raise CCompileError(
                f"target c: the C compiler failed (exit {proc.returncode}) on generated source "
                f"{kept}:\n$ {' '.join(cmd)}\n{(proc.stderr or proc.stdout).strip()[:4000]}"
            )
        write_sealed(lib, [tmp_lib.read_bytes()])
    if knobs.C_KEEP_SOURCE.get():
        write_file(d / f"{key}.c", [source.encode("utf-8")])
    return lib
    tmp_base = d / f".{key}.{os.getpid()}"
    src = Path(f"{tmp_base}.c")
    tmp_lib = Path(f"{tmp_base}.tmp{_suffix()}")
    src.write_text(source)
    cmd = [words[0], *cmd_flags, "-o", str(tmp_lib), str(src), "-lm"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as err:
        src.unlink(missing_ok=True)
        raise CCompileError(f"target c: running the C compiler failed: {' '.join(cmd)}: {err}") \
            from err
    if proc.returncode != 0:
        kept = d / f"{key}.failed.c"
        os.replace(src, kept)
        tmp_lib.unlink(missing_ok=True)
        raise CCompileError(
            f"target c: the C compiler failed (exit {proc.returncode}) on generated source "
            f"{kept}:\n$ {' '.join(cmd)}\n{(proc.stderr or proc.stdout).strip()[:4000]}"
        )
    os.replace(tmp_lib, lib)  # atomic: concurrent builds of one kernel both succeed
    if knobs.C_KEEP_SOURCE.get():
        os.replace(src, d / f"{key}.c")
    else:
        src.unlink(missing_ok=True)
    return lib
