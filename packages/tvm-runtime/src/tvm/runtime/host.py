"""Can this machine run a compiled module?  Architecture and CPU features of the host.

A compiled module records what it was built for in its metadata (``docs/abi.md``):
``triple`` (``x86_64-unknown-linux-gnu``), ``cpu`` and ``features`` (the CPU features its
code may use, LLVM names such as ``avx512f``, ``neon``, ``v``).  :func:`host_mismatch`
compares that with the running machine, so that a kernel built for another architecture or
for features this CPU lacks is refused with a message instead of dying of SIGILL.

The host's features come from the ``tvm_runtime_host_cpu_features`` hook (a target plugin
that knows the names, e.g. the llvm plugin through LLVM's own host detection); without one,
from ``/proc/cpuinfo`` for the instruction-set extensions Linux reports there.  A feature
the host description does not mention either way is not held against the module.
"""

from __future__ import annotations

import functools
import os
import platform
import struct
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["host_arch", "host_cpu_features", "host_mismatch", "missing_features", "file_arch",
           "normalize_arch"]

_ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "i386": "i686",
                 "i486": "i686", "i586": "i686", "x86": "i686"}
#: ELF e_machine -> architecture (64-bit class unless noted)
_ELF_MACHINES = {3: "i686", 62: "x86_64", 40: "arm", 183: "aarch64", 243: "riscv",
                 21: "powerpc64", 22: "s390x", 8: "mips", 258: "loongarch64"}


def normalize_arch(arch: str) -> str:
    """``arch`` (a triple's first part or ``uname -m``) in one spelling (``aarch64``)."""
    arch = arch.lower()
    return _ARCH_ALIASES.get(arch, arch)


@functools.lru_cache(maxsize=None)
def host_arch() -> str:
    """The architecture of this machine (``x86_64``, ``aarch64``, ``riscv64``)."""
    return normalize_arch(platform.machine() or "unknown")


def file_arch(path: str | os.PathLike[str]) -> str | None:
    """The architecture an ELF file was built for, or None when it is not ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order = "<" if head[5] == 1 else ">"
    machine = struct.unpack_from(order + "H", head, 18)[0]
    arch = _ELF_MACHINES.get(machine, f"elf-machine-{machine}")
    if arch == "riscv":
        arch = "riscv64" if head[4] == 2 else "riscv32"
    elif arch == "powerpc64" and order == "<":
        arch = "powerpc64le"
    return arch


@functools.lru_cache(maxsize=None)
def host_cpu_features() -> Mapping[str, bool]:
    """Feature name -> present on this CPU, for the features the host description knows."""
    from .hooks import call_runtime_hook

    found = call_runtime_hook("tvm_runtime_host_cpu_features")
    if found:
        return dict(found)
    return _cpuinfo_features()


# LLVM feature name -> Linux /proc/cpuinfo flag, for long-established extensions that every
# kernel in use lists when present (newer ones, e.g. avx10.1, are left to the plugin hook).
_X86_NAMES = {n: n.replace(".", "_") for n in (
    "sse", "sse2", "ssse3", "sse4.1", "sse4.2", "sse4a", "avx", "avx2", "fma", "fma4", "xop",
    "f16c", "bmi2", "popcnt", "movbe", "aes", "vaes", "vpclmulqdq", "gfni", "adx", "avx512f",
    "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi")}
_X86_NAMES.update({"sse3": "pni", "pclmul": "pclmulqdq", "bmi": "bmi1", "lzcnt": "abm",
                   "sha": "sha_ni", "avx512vbmi2": "avx512_vbmi2", "avx512vnni": "avx512_vnni",
                   "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
                   "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16",
                   "avxvnni": "avx_vnni", "amx-tile": "amx_tile", "amx-int8": "amx_int8",
                   "amx-bf16": "amx_bf16"})
_AARCH64_NAMES = {"neon": "asimd", "fp-armv8": "fp", "fullfp16": "asimdhp", "dotprod": "asimddp",
                  "rdm": "asimdrdm", "fp16fml": "asimdfhm", "crc": "crc32", "lse": "atomics",
                  "rcpc": "lrcpc", "jsconv": "jscvt", "complxnum": "fcma", "sve": "sve",
                  "sve2": "sve2", "i8mm": "i8mm", "bf16": "bf16", "sme": "sme", "aes": "aes",
                  "sha2": "sha2", "sha3": "sha3", "f32mm": "svef32mm", "f64mm": "svef64mm"}
_RISCV_LETTERS = "imafdcvh"


def _cpuinfo_features() -> dict[str, bool]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip().lower())
    arch = host_arch()
    if arch in ("x86_64", "i686"):
        present = set(fields.get("flags", "").split())
        return {name: flag in present for name, flag in _X86_NAMES.items()} if present else {}
    if arch == "aarch64":
        present = set(fields.get("features", "").split())
        return {name: alias in present for name, alias in _AARCH64_NAMES.items()}
    if arch.startswith("riscv"):
        isa = fields.get("isa", "")
        base, *ext = isa.split("_")
        letters = base[4:] if base.startswith("rv") else ""
        out = {c: c in letters for c in _RISCV_LETTERS}
        out.update({e: True for e in ext if e})
        return out
    return {}


def missing_features(meta: Mapping[str, Any]) -> list[str]:
    """The CPU features ``meta`` (a module's metadata) lists that this host lacks."""
    wanted = meta.get("features")
    if not isinstance(wanted, list) or not wanted:
        return []
    have = host_cpu_features()
    return sorted(f for f in wanted if isinstance(f, str) and have.get(f) is False)


def host_mismatch(meta: Mapping[str, Any], allowed: Collection[str] = ()) -> str | None:
    """Why this machine cannot run code described by ``meta`` (a module's metadata with
    ``triple`` and ``features``), or None when it can (or the metadata does not say).

    Missing features in ``allowed`` or in ``$TVM_ALLOW_MISSING_CPU_FEATURES`` (``*``: any)
    are not held against it: a CPU implies system extensions (``clzero``, ``pconfig``)
    that a compiler never emits on its own.
    """
    triple = meta.get("triple")
    if isinstance(triple, str) and triple:
        arch = normalize_arch(triple.split("-")[0])
        if arch != host_arch():
            return (f"it was built for {triple} ({arch}) and this machine is {host_arch()}; "
                    "run it there (or under qemu-user), or rebuild it for this machine")
    from tvm.ffi.knobs import ALLOW_MISSING_CPU_FEATURES

    allow = set(allowed) | set(ALLOW_MISSING_CPU_FEATURES.get())
    if "*" in allow:
        return None
    missing = [f for f in missing_features(meta) if f not in allow]
    if missing:
        cpu = meta.get("cpu") or "?"
        return (f"it was built for -mcpu={cpu} and may use CPU features this machine lacks: "
                f"{', '.join(missing)}; rebuild it for this machine (no -mcpu, -mcpu=native, "
                f"or -mattr=-{',-'.join(missing)}), run it on a CPU that has them, or, if you "
                f"know the code does not use them, set {ALLOW_MISSING_CPU_FEATURES.name}")
    return None
