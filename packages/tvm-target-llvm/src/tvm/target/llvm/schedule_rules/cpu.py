"""What the schedule rules need to know about the CPU: vector width, registers, cores.

:func:`cpu_info` reads it from an llvm :class:`~tvm.ir.target.Target` (``-mcpu``, ``-mattr``,
``-num-cores``; the host CPU when ``-mcpu`` is unset or ``native``), through the same
feature resolution the code generator uses, so the schedule matches the code LLVM emits.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

__all__ = ["CPUInfo", "cpu_info"]


@dataclass(frozen=True)
class CPUInfo:
    """Parameters of the CPU a schedule is made for.

    ``vector_bytes`` is the width of the SIMD registers the rules vectorize for (64 with
    AVX-512, 32 with AVX/AVX2, 16 with SSE/NEON), ``vector_registers`` how many of them
    there are, ``fma`` whether fused multiply-add exists, ``num_cores`` how many threads
    parallel loops should feed (0: unknown, assume a few).
    """

    vector_bytes: int = 16
    vector_registers: int = 16
    fma: bool = False
    num_cores: int = 0
    l1_bytes: int = 32 * 1024
    l2_bytes: int = 1024 * 1024

    def lanes(self, dtype: str) -> int:
        """Lanes of ``dtype`` (a scalar dtype string such as ``"float32"``) per register."""
        from tvm.ffi.dtype import parse_dtype

        _, bits, _ = parse_dtype(dtype)
        return max(1, self.vector_bytes * 8 // max(bits, 8))

    @property
    def parallel_tasks(self) -> int:
        """How many parallel tasks a kernel should offer at least."""
        return max(self.num_cores, 1)


# Features implied by ``-mcpu`` names (LLVM derives them itself; the rules need them too).
_AVX512_CPUS = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake",
                "tigerlake", "sapphirerapids", "emeraldrapids", "graniterapids", "rocketlake",
                "znver4", "znver5", "x86-64-v4")
_AVX2_CPUS = ("haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
              "arrowlake", "lunarlake", "znver1", "znver2", "znver3", "x86-64-v3", "core-avx2")
_AVX_CPUS = ("sandybridge", "ivybridge", "corei7-avx", "core-avx-i", "bdver1", "bdver2",
             "bdver3", "bdver4", "btver2")


def _features(cpu: str, text: str) -> set[str]:
    """Enabled features: those implied by the CPU name, then ``+f``/``-f`` in order."""
    feats: set[str] = set()
    if cpu.startswith(_AVX512_CPUS):
        feats |= {"avx512f", "avx2", "avx", "fma"}
    elif cpu.startswith(_AVX2_CPUS):
        feats |= {"avx2", "avx", "fma"}
    elif cpu.startswith(_AVX_CPUS):
        feats |= {"avx"}
    for f in text.split(","):
        f = f.strip()
        if f.startswith("+"):
            feats.add(f[1:])
        elif f.startswith("-"):
            feats.discard(f[1:])
    return feats


@functools.lru_cache(maxsize=64)
def _info_from(triple: str, cpu: str, features: str, num_cores: int) -> CPUInfo:
    feats = _features(cpu, features)
    arch = triple.split("-")[0]
    if arch in ("x86_64", "i686", "i386", "amd64"):
        if "avx512f" in feats:
            vbytes, regs = 64, 32
        elif "avx" in feats:
            vbytes, regs = 32, 16
        else:
            vbytes, regs = 16, 16
        fma = "fma" in feats or "avx512f" in feats
    elif arch in ("aarch64", "arm64"):
        vbytes, regs, fma = 16, 32, True
    elif arch.startswith("riscv") and "v" in feats:
        # RVV: 32 vector registers of VLEN >= 128 bits (what V guarantees; +zvl256b etc.
        # promise more), with vfmacc
        zvl = [int(f[3:-1]) for f in feats if f.startswith("zvl") and f[3:-1].isdigit()]
        vbytes, regs, fma = max([128, *zvl]) // 8, 32, True
    else:
        vbytes, regs, fma = 16, 16, False
    if num_cores <= 0:
        from ..host_cpu import host_num_cores, host_triple

        if triple.split("-")[0] == host_triple().split("-")[0]:
            num_cores = host_num_cores()
    return CPUInfo(vector_bytes=vbytes, vector_registers=regs, fma=fma, num_cores=num_cores)


def cpu_info(target: Any = None) -> CPUInfo:
    """The :class:`CPUInfo` of an llvm target (a Target, an ``"llvm ..."`` string or None
    for the host)."""
    from ..llvm_target import LLVMTargetOptions

    opts = LLVMTargetOptions.from_target(target)
    return _info_from(opts.triple, opts.cpu, opts.features, opts.num_cores)
