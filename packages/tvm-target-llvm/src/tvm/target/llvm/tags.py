"""Named llvm targets: boards and x86 generations (``Target("raspberry-pi-4")``).

Each tag is the triple, CPU, features and (for boards) core count of a machine, contributed
to :mod:`tvm.ir.target`'s tag registry through the ``tvm_register_target_tags`` hook.  The
features spell out what the CPU implies (LLVM derives them from ``-mcpu`` as well), so the
schedule rules and a reader see the ISA without knowing the CPU name.  Options given after
the tag replace its own: ``Target("rk3588 -num-cores=8")`` feeds the little cores too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LLVM_TAGS", "tags"]

_AARCH64 = "aarch64-linux-gnu"
_RISCV64 = "riscv64-linux-gnu"
_X86_64 = "x86_64-linux-gnu"
_RV64GC = ["+m", "+a", "+f", "+d", "+c"]


def _tag(triple: str, cpu: str, features: list[str], cores: int | None, doc: str
         ) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": "llvm", "mtriple": triple, "mcpu": cpu, "mattr": features}
    if cores:
        target["num-cores"] = cores
    return {"target": target, "doc": doc}


#: tag name -> {"target": the llvm target dict, "doc": what it is}
LLVM_TAGS: dict[str, dict[str, Any]] = {
    # ---- Arm boards (AArch64, NEON)
    "raspberry-pi-4": _tag(_AARCH64, "cortex-a72", ["+neon"], 4,
                           "Raspberry Pi 4 (BCM2711: 4x Cortex-A72, Armv8-A NEON)"),
    "raspberry-pi-5": _tag(_AARCH64, "cortex-a76", ["+neon", "+fullfp16", "+dotprod"], 4,
                           "Raspberry Pi 5 (BCM2712: 4x Cortex-A76, Armv8.2-A NEON, fp16, dot)"),
    "rk3588": _tag(_AARCH64, "cortex-a76", ["+neon", "+fullfp16", "+dotprod"], 4,
                   "Rockchip RK3588 (Rock 5, Orange Pi 5): the 4 Cortex-A76 big cores "
                   "(the 4 Cortex-A55 are not counted)"),
    "aws-graviton2": _tag(_AARCH64, "neoverse-n1", ["+neon", "+fullfp16", "+dotprod"], 64,
                          "AWS Graviton2 (64x Neoverse N1)"),
    "aws-graviton3": _tag(_AARCH64, "neoverse-v1", ["+neon", "+fullfp16", "+dotprod", "+sve",
                                                    "+bf16", "+i8mm"], 64,
                          "AWS Graviton3 (64x Neoverse V1, SVE 256-bit)"),
    # ---- RISC-V boards
    "visionfive-2": _tag(_RISCV64, "sifive-u74", _RV64GC, 4,
                         "StarFive VisionFive 2 (JH7110: 4x SiFive U74, rv64gc, no vector unit)"),
    "hifive-unmatched": _tag(_RISCV64, "sifive-u74", _RV64GC, 4,
                             "SiFive HiFive Unmatched (FU740: 4x SiFive U74, rv64gc)"),
    "spacemit-k1": _tag(_RISCV64, "spacemit-x60", [*_RV64GC, "+v", "+zvl256b"], 8,
                        "SpacemiT K1 (Banana Pi BPI-F3: 8x X60, rv64gcv, VLEN 256)"),
    "bananapi-f3": _tag(_RISCV64, "spacemit-x60", [*_RV64GC, "+v", "+zvl256b"], 8,
                        "Banana Pi BPI-F3 (SpacemiT K1: 8x X60, rv64gcv, VLEN 256)"),
    # ---- x86-64 generations (no core count: the machine's, at run time)
    "x86-64-v2": _tag(_X86_64, "x86-64-v2", ["+sse4.2", "+popcnt"], None,
                      "x86-64 psABI level 2 (SSE4.2, 128-bit vectors)"),
    "x86-64-v3": _tag(_X86_64, "x86-64-v3", ["+avx2", "+fma", "+f16c"], None,
                      "x86-64 psABI level 3 (AVX2 + FMA, 16 ymm registers)"),
    "x86-64-v4": _tag(_X86_64, "x86-64-v4", ["+avx512f", "+avx512bw", "+avx512vl",
                                             "+avx512dq"], None,
                      "x86-64 psABI level 4 (AVX-512, 32 zmm registers)"),
    "x86-haswell": _tag(_X86_64, "haswell", ["+avx2", "+fma"], None,
                        "Intel Haswell (AVX2 + FMA)"),
    "x86-skylake-avx512": _tag(_X86_64, "skylake-avx512", ["+avx512f", "+avx512bw",
                                                           "+avx512vl", "+avx512dq"], None,
                               "Intel Skylake-SP/X (AVX-512, two FMA ports)"),
    "x86-icelake-server": _tag(_X86_64, "icelake-server", ["+avx512f", "+avx512bw",
                                                           "+avx512vl", "+avx512vnni"], None,
                               "Intel Ice Lake server (AVX-512 with VNNI)"),
    "znver3": _tag(_X86_64, "znver3", ["+avx2", "+fma"], None,
                   "AMD Zen 3 (AVX2 + FMA, 16 ymm registers)"),
    "znver4": _tag(_X86_64, "znver4", ["+avx512f", "+avx512bw", "+avx512vl", "+avx512bf16"],
                   None, "AMD Zen 4 (AVX-512 on 256-bit units, bf16)"),
}


def tags() -> list[Any]:
    """The tags as :class:`tvm.ir.target.TargetTag` objects."""
    from tvm.ir.target import TargetTag

    return [TargetTag(name, entry["target"], entry["doc"], package="tvm-target-llvm")
            for name, entry in LLVM_TAGS.items()]
