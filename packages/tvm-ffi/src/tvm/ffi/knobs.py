"""Debug knobs: every environment variable the tvm distributions read, declared in one place.

Each knob is declared once, here, with its type, default, a one-line doc and the distribution
that reads it; code reads it through the typed getter (``knobs.NUM_THREADS.get()``), never
through ``os.environ``.  :func:`list_knobs` lists them (the README's table is checked
against it); a vendor's package declares its own with :func:`declare_knob`.  The
pass-level knobs are PassContext config options instead
(:func:`tvm.ir.transform.list_config_options`).

Types: ``bool`` (``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``/empty),
``int`` (positive), ``str``, ``path`` (``~`` expanded) and ``names`` (comma-separated, a
set).  A value that does not parse warns (RuntimeWarning) and reads as the default.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "Knob", "declare_knob", "get_knob", "list_knobs", "cache_dir",
    "DISABLE_PLUGINS", "TRACE_PLUGINS", "ALLOW_MISSING_CPU_FEATURES", "NUM_THREADS", "CACHE_DIR",
    "XDG_CACHE_HOME", "C_KEEP_SOURCE", "CC", "CROSS_CC", "NVCC", "NVRTC", "CUDA_HOME", "CUDA_PATH",
    "OMP_WAIT_POLICY",
    "SCHEDULE_RULES_STRICT", "VM_MAX_STEPS", "RPC_KEY",
]

KINDS = ("bool", "int", "str", "path", "names")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclasses.dataclass(frozen=True)
class Knob:
    """One environment variable: ``name``, ``kind`` (see the module doc), ``default`` (the
    value when unset), ``doc`` (one line) and ``package`` (the distribution reading it)."""

    name: str
    kind: str
    default: Any
    doc: str
    package: str

    def raw(self) -> str | None:
        """The variable's text, or None when it is not set."""
        return os.environ.get(self.name)

    def is_set(self) -> bool:
        """Whether the variable is set (to anything, even empty)."""
        return self.name in os.environ

    def get(self) -> Any:
        """The typed value (the default when unset or unreadable)."""
        text = self.raw()
        if text is None:
            return self.default
        text = text.strip()
        try:
            return _parse(self.kind, text, self.default)
        except ValueError as err:
            warnings.warn(f"{self.name}={text!r} is not valid ({err}); using the default "
                          f"({self.doc})", RuntimeWarning, stacklevel=3)
            return self.default


def _parse(kind: str, text: str, default: Any) -> Any:
    if kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("expected 1/true/yes/on or 0/false/no/off")
    if kind == "names":
        return frozenset(p.strip() for p in text.split(",") if p.strip())
    if not text:
        return default
    if kind == "int":
        value = int(text)
        if value < 1:
            raise ValueError("expected a positive integer")
        return value
    if kind == "path":
        return Path(text).expanduser()
    return text


_lock = threading.Lock()
_KNOBS: dict[str, Knob] = {}


def declare_knob(name: str, kind: str, default: Any, doc: str, package: str) -> Knob:
    """Declare an environment variable (once per name; a second, different declaration is
    an error) and return its :class:`Knob`."""
    if kind not in KINDS:
        raise ValueError(f"knob {name!r}: kind must be one of {KINDS}, got {kind!r}")
    if not doc or "\n" in doc:
        raise ValueError(f"knob {name!r}: the doc is one non-empty line")
    knob = Knob(name, kind, default, doc, package)
    with _lock:
        known = _KNOBS.get(name)
        if known is not None and known != knob:
            raise ValueError(f"knob {name!r} is already declared differently: {known}")
        _KNOBS[name] = knob
    return knob


def get_knob(name: str) -> Knob:
    """The declared knob called ``name`` (KeyError naming the known ones otherwise)."""
    knob = _KNOBS.get(name)
    if knob is None:
        raise KeyError(f"no knob {name!r} is declared (known: {', '.join(sorted(_KNOBS))})")
    return knob


def list_knobs() -> dict[str, Knob]:
    """Every declared knob, by name, sorted."""
    return dict(sorted(_KNOBS.items()))


# --------------------------------------------------------------------------- the knobs

DISABLE_PLUGINS = declare_knob(
    "TVM_DISABLE_PLUGINS", "names", frozenset(),
    "plugins (entry-point names, comma-separated) not to load", "tvm-ffi")
TRACE_PLUGINS = declare_knob(
    "TVM_TRACE_PLUGINS", "bool", False,
    "print every plugin hook call and its result to stderr", "tvm-ffi")
NUM_THREADS = declare_knob(
    "TVM_NUM_THREADS", "int", None,
    "threads of the parallel-loop pool (default: the CPU count)", "tvm-runtime")
CACHE_DIR = declare_knob(
    "TVM_CACHE_DIR", "path", None,
    "root of the compiled-kernel caches (default: $XDG_CACHE_HOME/tvm)",
    "tvm-runtime, tvm-relax, tvm-target-c, tvm-target-cuda, tvm-target-llvm, "
    "tvm-target-vulkan")
XDG_CACHE_HOME = declare_knob(
    "XDG_CACHE_HOME", "path", None,
    "the user cache directory holding tvm/ when TVM_CACHE_DIR is unset (default: ~/.cache)",
    "tvm-runtime, tvm-relax, tvm-target-c, tvm-target-cuda, tvm-target-llvm, "
    "tvm-target-vulkan")
C_KEEP_SOURCE = declare_knob(
    "TVM_C_KEEP_SOURCE", "bool", False,
    "keep each generated .c file beside its cached shared library", "tvm-target-c")
CC = declare_knob(
    "CC", "str", None,
    "the C compiler (and flags) to build and link with, tried before cc/gcc/clang",
    "tvm-runtime, tvm-relax, tvm-target-c, tvm-target-llvm")
CROSS_CC = declare_knob(
    "TVM_CROSS_CC", "str", None,
    "the C compiler linking cross-compiled libraries: one command, or arch=command pairs",
    "tvm-target-llvm")
NVCC = declare_knob(
    "TVM_NVCC", "str", None,
    "the nvcc to compile CUDA with (default: found on PATH or in the CUDA home)",
    "tvm-target-cuda")
NVRTC = declare_knob(
    "TVM_NVRTC", "str", None,
    "the NVRTC shared library to load before searching the CUDA home", "tvm-target-cuda")
CUDA_HOME = declare_knob(
    "CUDA_HOME", "str", None,
    "the CUDA toolkit searched for nvcc and NVRTC first", "tvm-target-cuda")
CUDA_PATH = declare_knob(
    "CUDA_PATH", "str", None,
    "the CUDA toolkit searched after CUDA_HOME (before /usr/local/cuda)", "tvm-target-cuda")
LLVM_JOBS = declare_knob(
    "TVM_LLVM_JOBS", "int", None,
    "processes compiling the parts of a big LLVM module (default: the usable CPUs, at most 8)",
    "tvm-target-llvm")
OMP_WAIT_POLICY = declare_knob(
    "OMP_WAIT_POLICY", "str", None,
    "libgomp's wait policy; set to passive for the OpenMP runtime when unset",
    "tvm-target-llvm")
ALLOW_MISSING_CPU_FEATURES = declare_knob(
    "TVM_ALLOW_MISSING_CPU_FEATURES", "names", frozenset(),
    "CPU features (comma-separated, * for all) a loaded module may use though the host lacks them",
    "tvm-runtime")
SCHEDULE_RULES_STRICT = declare_knob(
    "TVM_SCHEDULE_RULES_STRICT", "bool", False,
    "a failing default schedule rule raises instead of logging and skipping",
    "tvm-tir")
RPC_KEY = declare_knob(
    "TVM_RPC_KEY", "str", None,
    "the shared key of an RPC server or tracker started without --key/--key-file",
    "tvm-runtime")
VM_MAX_STEPS = declare_knob(
    "TVM_VM_MAX_STEPS", "int", None,
    "stop a VM call with a VMError after this many executed instructions (default: no limit)",
    "tvm-runtime")


def cache_dir(part: str) -> Path:
    """The cache folder of ``part``: ``$TVM_CACHE_DIR/part``, else
    ``$XDG_CACHE_HOME/tvm/part``, else ``~/.cache/tvm/part``."""
    root = CACHE_DIR.get()
    if root is not None:
        return root / part
    base = XDG_CACHE_HOME.get() or Path("~/.cache").expanduser()
    return base / "tvm" / part
