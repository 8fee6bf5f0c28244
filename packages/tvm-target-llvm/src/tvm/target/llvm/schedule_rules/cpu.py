"""What the schedule rules need to know about the CPU: vector width and registers, FMA
units, cache sizes, cores.

:func:`cpu_info` reads it from an llvm :class:`~tvm.ir.target.Target` (``-mtriple``,
``-mcpu``, ``-mattr``, ``-num-cores``) through the same feature resolution the code
generator uses, so the schedule matches the code LLVM emits.  The host CPU (``-mcpu``
unset or ``native`` on the running architecture) is described by what the machine
reports (LLVM's host features, the cache sizes in sysfs); a named CPU by the features LLVM
says it has (``LLVMTargetOptions.cpu_features``) and the cache table below,
so a cross target (``-mtriple=aarch64-linux-gnu -mcpu=cortex-a76``) or the other ISA of
this machine (``-mcpu=haswell`` on an AVX-512 host) gets rules for *its* registers and
caches, not the host's.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["CPUInfo", "cpu_info", "CACHES"]


@dataclass(frozen=True)
class CPUInfo:
    """Parameters of the CPU a schedule is made for.

    ``vector_bytes`` is the width of the SIMD registers the rules vectorize for (64 with
    AVX-512, 32 with AVX/AVX2, 16 with SSE/NEON and RVV at VLEN=128), ``vector_registers``
    how many of them there are, ``fma`` whether fused multiply-add exists, ``fma_units``
    how many vector FMAs issue per cycle and ``fma_latency`` their latency in cycles (a
    micro-kernel needs ``fma_units * fma_latency`` independent accumulators to keep the
    units busy), ``l1_bytes`` / ``l2_bytes`` the per-core data caches, ``num_cores`` how
    many threads parallel loops should feed (0: unknown, assume a few).  ``arch`` is the
    architecture family (``"x86"``, ``"aarch64"``, ``"riscv"`` or the triple's own word) and
    ``features`` the LLVM features the target has (``avx512vnni``, ``dotprod`` ...): the
    integer rule picks its dot-product instruction from them.
    """

    vector_bytes: int = 16
    vector_registers: int = 16
    fma: bool = False
    num_cores: int = 0
    l1_bytes: int = 32 * 1024
    l2_bytes: int = 1024 * 1024
    fma_units: int = 2
    fma_latency: int = 4
    isa: str = ""
    arch: str = ""
    features: frozenset = frozenset()

    def lanes(self, dtype: str) -> int:
        """Lanes of ``dtype`` (a scalar dtype string such as ``"float32"``) per register."""
        from tvm.ffi.dtype import parse_dtype

        _, bits, _ = parse_dtype(dtype)
        return max(1, self.vector_bytes * 8 // max(bits, 8))

    @property
    def int8_activation(self) -> Optional[str]:
        """The activation dtype the CPU's int8 dot product wants against int8 weights:
        ``"uint8"`` with x86 VNNI (``vpdpbusd`` is u8 x s8), ``"int8"`` with AArch64
        ``dotprod`` but no ``i8mm`` (``sdot``; ``usdot`` takes uint8 as it is), else None
        (the widening kernels take either).  The qnn legalization shifts activations of
        the other dtype by 128 (hook ``tvm_tir_cpu_info``)."""
        if self.arch == "x86" and ({"avx512vnni", "avxvnni"} & self.features):
            return "uint8"
        if self.arch == "aarch64" and "dotprod" in self.features and "i8mm" not in \
                self.features:
            return "int8"
        return None

    @property
    def parallel_tasks(self) -> int:
        """How many parallel tasks a kernel should offer at least."""
        return max(self.num_cores, 1)

    @property
    def min_accumulators(self) -> int:
        """Independent vector accumulators that hide the FMA latency on every unit."""
        return max(1, self.fma_units * self.fma_latency)


#: Per-core L1 data / L2 sizes (KiB) by ``-mcpu`` prefix, longest prefix first.  Shared L2
#: clusters (Cortex-A53/A55 parts, SiFive U74) count a core's share.
CACHES: dict[str, tuple[int, int]] = {
    "skylake-avx512": (32, 1024), "cascadelake": (32, 1024), "cooperlake": (32, 1024),
    "icelake-server": (48, 1280), "icelake-client": (48, 512), "tigerlake": (48, 1280),
    "sapphirerapids": (48, 2048), "emeraldrapids": (48, 2048), "graniterapids": (48, 2048),
    "alderlake": (48, 1280), "raptorlake": (48, 2048), "meteorlake": (48, 2048),
    "arrowlake": (48, 3072), "lunarlake": (48, 2560), "rocketlake": (48, 512),
    "skylake": (32, 256), "haswell": (32, 256), "broadwell": (32, 256),
    "core-avx2": (32, 256), "sandybridge": (32, 256), "ivybridge": (32, 256),
    "znver1": (32, 512), "znver2": (32, 512), "znver3": (32, 512), "znver4": (32, 1024),
    "znver5": (48, 1024), "x86-64-v4": (32, 1024), "x86-64-v3": (32, 256),
    "cortex-a53": (32, 128), "cortex-a55": (32, 128), "cortex-a72": (32, 256),
    "cortex-a73": (32, 256), "cortex-a75": (64, 256), "cortex-a76": (64, 512),
    "cortex-a77": (64, 512), "cortex-a78": (64, 512), "cortex-x1": (64, 1024),
    "cortex-a710": (64, 512), "cortex-x2": (64, 1024), "neoverse-n1": (64, 1024),
    "neoverse-n2": (64, 1024), "neoverse-v1": (64, 1024), "neoverse-v2": (64, 2048),
    "apple-m1": (128, 4096), "apple-m2": (128, 4096), "apple-m3": (128, 4096),
    "sifive-u74": (32, 512), "sifive-x280": (32, 256), "spacemit-x60": (32, 128),
}

#: Vector FMA issue width and latency by ``-mcpu`` prefix (default: 2 units, 4 cycles).
_FMA: dict[str, tuple[int, int]] = {
    "haswell": (2, 5), "broadwell": (2, 5), "core-avx2": (2, 5), "x86-64-v3": (2, 5),
    "znver1": (1, 5), "znver2": (2, 5), "znver3": (2, 4), "znver4": (2, 4),
    "cortex-a53": (1, 4), "cortex-a55": (1, 4), "cortex-a72": (2, 7), "cortex-a73": (2, 6),
    "cortex-a76": (2, 4), "cortex-a78": (2, 4), "neoverse-n1": (2, 4),
    "sifive-u74": (1, 5), "spacemit-x60": (1, 5), "generic": (1, 4),
}


def _by_prefix(table: dict[str, Any], cpu: str) -> Any:
    for name in sorted(table, key=len, reverse=True):
        if cpu.startswith(name):
            return table[name]
    return None


def _features(implied: tuple[str, ...], text: str) -> set[str]:
    """Enabled features: those LLVM says the CPU and ``-mattr`` imply, then the explicit
    ``+f``/``-f`` in order (LLVM's answer leaves out a few it cannot probe, ``+zvl256b``)."""
    feats = set(implied)
    for f in text.split(","):
        f = f.strip()
        if f.startswith("+"):
            feats.add(f[1:])
        elif f.startswith("-"):
            feats.discard(f[1:])
    return feats


def _riscv_vlen_bytes(feats: set[str]) -> int:
    """The guaranteed vector length of an RVV target (``zvl<N>b``; ``v`` implies 128)."""
    vlen = 128 if "v" in feats else 0
    for f in feats:
        if f.startswith("zvl") and f.endswith("b") and f[3:-1].isdigit():
            vlen = max(vlen, int(f[3:-1]))
    return vlen // 8


@functools.lru_cache(maxsize=None)
def _host_caches() -> tuple[int, int] | None:
    """(L1 data, L2) bytes of CPU 0 as sysfs reports them (Linux), else None."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    sizes: dict[int, int] = {}
    try:
        for entry in os.listdir(base):
            if not entry.startswith("index"):
                continue
            path = os.path.join(base, entry)
            with open(os.path.join(path, "level")) as f:
                level = int(f.read())
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(path, "size")) as f:
                text = f.read().strip().upper()
            if kind == "Instruction":
                continue
            scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:], 1)
            sizes[level] = int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        return None
    if 1 not in sizes or 2 not in sizes:
        return None
    return sizes[1], sizes[2]


def _arch_family(arch: str) -> str:
    if arch in ("x86_64", "i686", "i386", "amd64"):
        return "x86"
    if arch in ("aarch64", "arm64"):
        return "aarch64"
    return "riscv" if arch.startswith("riscv") else arch


def _isa_name(arch: str, feats: set[str], vbytes: int) -> str:
    if arch in ("x86_64", "i686", "i386", "amd64"):
        if "avx512f" in feats:
            return "AVX-512"
        if "avx2" in feats:
            return "AVX2+FMA" if "fma" in feats else "AVX2"
        return "AVX" if "avx" in feats else "SSE"
    if arch in ("aarch64", "arm64"):
        return "SVE" if "sve" in feats else "NEON"
    if arch.startswith("riscv"):
        return f"RVV (VLEN>={vbytes * 8})" if "v" in feats else "RV scalar"
    return arch


@functools.lru_cache(maxsize=64)
def _info_from(triple: str, cpu: str, implied: tuple[str, ...], features: str, num_cores: int,
               host: bool, same_arch: bool) -> CPUInfo:
    feats = _features(implied, features)
    arch = triple.split("-")[0]
    fma_units, fma_latency = _by_prefix(_FMA, cpu) or (2, 4)
    if arch in ("x86_64", "i686", "i386", "amd64"):
        if "avx512f" in feats:
            vbytes, regs = 64, 32
        elif "avx" in feats:
            vbytes, regs = 32, 16
        else:
            vbytes, regs = 16, 16
        fma = "fma" in feats or "avx512f" in feats
        if not fma:
            fma_units = 1  # separate multiply and add: one of each per cycle
    elif arch in ("aarch64", "arm64"):
        vbytes, regs, fma = 16, 32, True
    elif arch.startswith("riscv"):
        vbytes = _riscv_vlen_bytes(feats)
        if vbytes:
            regs, fma = 32, True
        else:  # scalar floating point registers only
            vbytes, regs, fma = 8, 32, "f" in feats or "d" in feats
    else:
        vbytes, regs, fma = 16, 16, False
    caches = _host_caches() if host else None
    if caches is None:
        l1k, l2k = _by_prefix(CACHES, cpu) or (32, 512)
        caches = (l1k * 1024, l2k * 1024)
    if num_cores <= 0 and same_arch:  # code for this architecture runs on these cores
        from ..host_cpu import host_num_cores

        num_cores = host_num_cores()
    return CPUInfo(vector_bytes=vbytes, vector_registers=regs, fma=fma, num_cores=num_cores,
                   l1_bytes=caches[0], l2_bytes=caches[1], fma_units=fma_units,
                   fma_latency=fma_latency, isa=_isa_name(arch, feats, vbytes),
                   arch=_arch_family(arch), features=frozenset(feats))


def cpu_info(target: Any = None) -> CPUInfo:
    """The :class:`CPUInfo` of an llvm target (a Target, an ``"llvm ..."`` string or None
    for the host)."""
    from tvm.ir.target import Target

    from ..host_cpu import host_cpu_name, host_triple
    from ..llvm_target import LLVMTargetOptions

    opts = LLVMTargetOptions.from_target(target)
    if not isinstance(target, Target):
        target = Target(target if target is not None else "llvm")
    mcpu = target.attrs.get("mcpu")
    same_arch = opts.triple.split("-")[0] == host_triple().split("-")[0]
    # the machine's own caches only for the machine's own CPU
    host = same_arch and (mcpu in (None, "", "native") or mcpu == host_cpu_name())
    return _info_from(opts.triple, opts.cpu, tuple(opts.cpu_features), opts.features,
                      opts.num_cores, host, same_arch)
