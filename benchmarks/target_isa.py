"""Which instruction set a benchmark measures, for ours and for each peer.

``--mcpu`` / ``--mattr`` choose the CPU our code is compiled for (``llvm -mcpu=haswell
-num-cores=2``), so an AVX-512 host also measures the AVX2 code path.  The peers are then
held to the same ISA through their own switches:

=============  ==========================================================================
peer           switch (set for a chosen ``--mcpu``/``--mattr``; removed for the host)
=============  ==========================================================================
numpy          ``OPENBLAS_CORETYPE`` (Haswell for AVX2, SkylakeX for AVX-512 ...); the
               kernel OpenBLAS reports (threadpoolctl) is recorded
torch          ``ATEN_CPU_CAPABILITY`` (avx2 / avx512 / default), ``ONEDNN_MAX_CPU_ISA``
               (convolutions), ``MKL_ENABLE_INSTRUCTIONS`` (matmul); the capability torch
               reports is recorded
onnxruntime    none: MLAS picks its kernels by CPUID at run time and has no switch, so it
               always runs the host's ISA (the tables say so)
=============  ==========================================================================

The ISA *level* (``avx512``, ``avx2``, ``avx``, ``sse``; None off x86) comes from the same
CPU description the schedule rules use (:func:`tvm.target.llvm.schedule_rules.cpu_info`).
"""

from __future__ import annotations

import os
from typing import Any, Optional

__all__ = ["chosen", "ours_target", "isa_level", "isa_label", "host_label", "peer_env",
           "apply_peer_env", "openblas_label", "torch_label", "ORT_NOTE", "NAMES", "PEER_VARS"]

#: display names of the levels
NAMES = {"avx512": "AVX-512", "avx2": "AVX2+FMA", "avx": "AVX", "sse": "SSE"}

_OPENBLAS = {"avx512": "SkylakeX", "avx2": "Haswell", "avx": "Sandybridge", "sse": "Nehalem"}
_ATEN = {"avx512": "avx512", "avx2": "avx2", "avx": "default", "sse": "default"}
_ONEDNN = {"avx512": "AVX512_CORE", "avx2": "AVX2", "avx": "AVX", "sse": "SSE41"}
_MKL = {"avx512": "AVX512", "avx2": "AVX2", "avx": "AVX", "sse": "SSE4_2"}

#: every variable :func:`peer_env` may set (removed from a host-ISA peer's environment;
#: ``OPENBLAS_L2_SIZE`` too, it pins an older OpenBLAS kernel)
PEER_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "ATEN_CPU_CAPABILITY",
             "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")

ORT_NOTE = "host ISA (onnxruntime has no ISA switch)"


def chosen(mcpu: Optional[str], mattr: Optional[str]) -> bool:
    """Whether the user asked for a CPU other than the host's as detected."""
    return bool(mcpu and mcpu != "native") or bool(mattr)


def ours_target(mcpu: Optional[str] = None, mattr: Optional[str] = None,
                num_cores: Optional[int] = None, mtriple: Optional[str] = None) -> str:
    """Our target string: the host's (``llvm -mcpu=<host> -num-cores=N``) or
    ``llvm -mcpu=X -mattr=Y -num-cores=N`` for a chosen CPU (``-mattr`` alone keeps the
    host CPU name and changes its features); ``mtriple`` cross-compiles for another
    machine (its kernels then run through a runner, e.g. ``qemu``)."""
    from tvm.target.llvm.host_cpu import host_cpu_name, host_num_cores

    cores = num_cores or host_num_cores()
    if not chosen(mcpu, mattr) and not mtriple:
        return f"llvm -mcpu={host_cpu_name()} -num-cores={cores}"
    parts = ["llvm"] + ([f"-mtriple={mtriple}"] if mtriple else [])
    if mcpu and mcpu != "native":
        parts.append(f"-mcpu={mcpu}")
    parts.append(f"-mattr={mattr}" if mattr else "")
    parts.append(f"-num-cores={cores}")
    return " ".join(p for p in parts if p)


def is_foreign(mtriple: Optional[str]) -> bool:
    """Whether ``mtriple`` names another architecture than this machine's."""
    from tvm.target.llvm.host_cpu import host_triple

    return bool(mtriple) and mtriple.split("-")[0] != host_triple().split("-")[0]


def isa_level(target: str) -> Optional[str]:
    """``avx512`` / ``avx2`` / ``avx`` / ``sse`` for an x86 llvm target string, None for
    another architecture."""
    from tvm.target.llvm.llvm_target import LLVMTargetOptions
    from tvm.target.llvm.schedule_rules import cpu_info

    opts = LLVMTargetOptions.from_target(target)
    if opts.triple.split("-")[0] not in ("x86_64", "i686", "i386", "amd64"):
        return None
    info = cpu_info(target)
    if info.vector_bytes >= 64:
        return "avx512"
    if info.vector_bytes >= 32:
        return "avx2" if info.fma else "avx"
    return "sse"


def host_label() -> str:
    """The host's ISA, e.g. ``AVX-512 (host: sapphirerapids)``."""
    from tvm.target.llvm.host_cpu import host_cpu_name

    level = isa_level("llvm")
    return f"{NAMES.get(level or '', 'native')} (host: {host_cpu_name()})"


def isa_label(mcpu: Optional[str], mattr: Optional[str]) -> str:
    """The ISA our code is built for, e.g. ``AVX2+FMA (haswell)`` or the host's label."""
    if not chosen(mcpu, mattr):
        return host_label()
    from tvm.target.llvm.host_cpu import host_cpu_name

    level = isa_level(ours_target(mcpu, mattr))
    cpu = mcpu if mcpu and mcpu != "native" else f"host: {host_cpu_name()}"
    what = ", ".join(p for p in (cpu, (f"-mattr={mattr}" if mattr else None)) if p)
    return f"{NAMES.get(level or '', 'native')} ({what})"


def peer_env(env: dict[str, str], level: Optional[str]) -> dict[str, str]:
    """``env`` for a peer's subprocess (or this process, before the peer is imported):
    the ISA switches of ``level`` set, or all of them removed for the host ISA (None)."""
    env = dict(env)
    for var in PEER_VARS:
        env.pop(var, None)
    if level is None:
        return env
    env["OPENBLAS_CORETYPE"] = _OPENBLAS[level]
    env["ATEN_CPU_CAPABILITY"] = _ATEN[level]
    env["ONEDNN_MAX_CPU_ISA"] = env["DNNL_MAX_CPU_ISA"] = _ONEDNN[level]
    env["MKL_ENABLE_INSTRUCTIONS"] = _MKL[level]
    return env


def apply_peer_env(level: Optional[str]) -> None:
    """:func:`peer_env` applied to ``os.environ`` (call before importing the peers)."""
    new = peer_env(dict(os.environ), level)
    for var in PEER_VARS:
        if var in new:
            os.environ[var] = new[var]
        else:
            os.environ.pop(var, None)


def openblas_label(blas: Any) -> str:
    """What OpenBLAS ran (threadpoolctl's report), with the pin that chose it."""
    kernels = ", ".join(str(b.get("architecture")) for b in blas) \
        if isinstance(blas, list) and blas else "unknown kernel"
    pin = os.environ.get("OPENBLAS_CORETYPE")
    return f"OpenBLAS {kernels}" + (f" (OPENBLAS_CORETYPE={pin})" if pin else " (host)")


def torch_label() -> str:
    """The capability torch dispatches to, with the switches set (call inside the peer)."""
    import torch

    try:
        cap = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # an old torch
        cap = "unknown"
    pins = [f"{v}={os.environ[v]}" for v in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA",
                                              "MKL_ENABLE_INSTRUCTIONS") if v in os.environ]
    return f"{cap}" + (f" ({', '.join(pins)})" if pins else " (host)")
