"""Host CPU detection (name, features, triple, cores) through LLVM."""

from __future__ import annotations

import functools
import os

import llvmlite.binding as llvm

from .object_code import init_llvm

__all__ = ["init_llvm", "host_cpu_name", "host_cpu_features", "host_triple", "host_num_cores",
           "host_has_feature", "host_target_string"]



@functools.lru_cache(maxsize=None)
def host_cpu_name() -> str:
    """LLVM's name of the host CPU, e.g. ``znver4`` or ``skylake-avx512``."""
    init_llvm()
    return llvm.get_host_cpu_name()


@functools.lru_cache(maxsize=None)
def host_cpu_features() -> tuple[str, ...]:
    """The features the host CPU has, as LLVM attribute strings (``+avx2``, ``-avx512f``...)."""
    init_llvm()
    try:
        text = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # LLVM cannot tell on some platforms
        return ()
    return tuple(f for f in text.split(",") if f)


def host_has_feature(name: str) -> bool:
    """Whether the host CPU has feature ``name`` (``"avx2"``, ``"avx512f"``, ``"neon"``)."""
    return f"+{name.lstrip('+')}" in host_cpu_features()


@functools.lru_cache(maxsize=None)
def host_triple() -> str:
    """The triple of the running process (``x86_64-unknown-linux-gnu``)."""
    init_llvm()
    return llvm.get_process_triple()


def host_num_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_target_string() -> str:
    """A target string describing this machine, e.g. ``llvm -mcpu=znver4 -num-cores=16``."""
    return f"llvm -mcpu={host_cpu_name()} -num-cores={host_num_cores()}"
