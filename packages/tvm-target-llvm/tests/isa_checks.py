"""Static instruction checks (and the ELF/tool helpers of the cross tests): find a kernel's hot loop in assembly (LLVM's ``get_source("asm")``
or a cross ``objdump -d`` of an exported library) and count its vector FMAs.

A loop is a backward branch; the innermost loops are those containing no other; the hot loop
is the innermost loop with the most floating-point arithmetic.  For a scheduled matmul or
convolution that is the register-tile micro-kernel, which must be vector FMAs only
(``fmla v*.4s`` on AArch64, ``vfmacc``/``vfmadd`` on RISC-V V); a schedule that stops
vectorising leaves scalar ``fmadd``/``fmul`` there and the check fails.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass

import pytest

#: per architecture: vector FMA, scalar floating-point arithmetic, other vector FP arithmetic
PATTERNS = {
    "aarch64": (re.compile(r"^fml[as]\s+v\d+\.(4s|2d|8h)"),
                re.compile(r"^f(n?madd|n?msub|mul|add|sub|mla|mls)\s+[sdh]\d+"),
                re.compile(r"^f(mul|add|sub|addp)\s+v\d+")),
    "riscv64": (re.compile(r"^vf(n?macc|n?madd|n?msac|n?msub)\.v[vf]"),
                re.compile(r"^f(n?madd|n?msub|mul|add|sub)\.[sdh]\b"),
                re.compile(r"^vf(mul|add|sub|redusum|redosum)\.")),
}

# RVV FMA family by funct6 (OP-V major opcode 0x57, OPFVV funct3 1 / OPFVF funct3 5)
_RVV_FMA_FUNCT6 = {0b101000: "vfmadd", 0b101001: "vfnmadd", 0b101010: "vfmsub",
                   0b101011: "vfnmsub", 0b101100: "vfmacc", 0b101101: "vfnmacc",
                   0b101110: "vfmsac", 0b101111: "vfnmsac"}


@dataclass
class Insn:
    pos: int
    text: str  # mnemonic and operands, e.g. "fmla v0.4s, v1.4s, v2.s[0]"
    target: int | None = None  # the position a branch goes to


@dataclass
class LoopReport:
    start: int
    end: int
    vector_fma: int
    scalar_fp: int
    vector_other: int  # vector FP arithmetic that is not an FMA (vfmul, fadd v...)
    text: list[str]

    @property
    def fp_ops(self) -> int:
        return self.vector_fma + self.scalar_fp + self.vector_other


def _decode_rvv_word(word: int) -> str | None:
    """The mnemonic of an RVV FMA instruction word (binutils < 2.43 prints RVV as ``.4byte``
    when the object's arch attribute names extensions it does not know, as LLVM 22's does)."""
    if word & 0x7F != 0x57:
        return None
    funct3 = (word >> 12) & 7
    name = _RVV_FMA_FUNCT6.get(word >> 26)
    if name is None or funct3 not in (1, 5):
        return None
    return f"{name}.{'vv' if funct3 == 1 else 'vf'}"


def _is_part_of(name: str, function: str) -> bool:
    """Whether symbol ``name`` is ``function`` or a body outlined from it (``main_compute_``:
    the task of a parallel loop)."""
    return name == function or name.startswith(function + "_")


def parse_llvm_asm(asm: str, function: str) -> list[Insn]:
    """The instructions of ``function`` and the bodies outlined from it, in LLVM assembly
    text; branches resolved to labels."""
    labels: dict[str, int] = {}
    raw: list[str] = []
    inside = False
    for line in asm.splitlines():
        text = re.sub(r"(//|(^|\s)#(\s|$)).*$", "", line).strip()  # comments, not #imm
        if not text:
            continue
        label = re.match(r"^([.\w$]+):$", text)
        if label and not label.group(1).startswith(".L"):
            inside = _is_part_of(label.group(1), function)
            continue
        if not inside or text.startswith((".Lfunc_end", ".size")):
            inside = inside and not text.startswith((".Lfunc_end", ".size"))
            continue
        if label:
            labels[label.group(1)] = len(raw)
        elif not text.startswith("."):
            raw.append(re.sub(r"\s+", " ", text))
    if not raw:
        raise AssertionError(f"no function {function!r} in the assembly")
    return [Insn(pos, text, labels.get(text.split(" ")[-1].split(",")[-1]))
            for pos, text in enumerate(raw)]


def parse_objdump(dump: str, function: str) -> list[Insn]:
    """The instructions of ``function`` and the bodies outlined from it, in
    ``objdump -d --no-show-raw-insn`` output."""
    out: list[Insn] = []
    inside = False
    for line in dump.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            inside = _is_part_of(header.group(1), function)
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", line) if inside else None
        if m is None:
            continue
        pos, text = int(m.group(1), 16), m.group(2).split("//")[0].strip()
        word = re.match(r"^\.4byte\s+0x([0-9a-f]+)", text)
        if word:
            text = _decode_rvv_word(int(word.group(1), 16)) or text
        target = re.search(r"\b([0-9a-f]+) <", text)
        out.append(Insn(pos, re.sub(r"\s+", " ", text),
                        int(target.group(1), 16) if target else None))
    if not out:
        raise AssertionError(f"no function {function!r} in the disassembly")
    return out


def hot_loop(insns: list[Insn], arch: str) -> LoopReport:
    """The innermost loop with the most floating-point arithmetic (see the module doc)."""
    vfma, sfp, vfp = PATTERNS[arch]
    loops = [(i.target, i.pos) for i in insns if i.target is not None and i.target <= i.pos]
    innermost = [(s, e) for s, e in loops
                 if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]
    best: LoopReport | None = None
    for s, e in innermost:
        body = [i.text for i in insns if s <= i.pos <= e]
        report = LoopReport(s, e, sum(bool(vfma.match(t)) for t in body),
                            sum(bool(sfp.match(t)) for t in body),
                            sum(bool(vfp.match(t)) for t in body), body)
        if best is None or report.fp_ops > best.fp_ops:
            best = report
    if best is None or best.fp_ops == 0:
        raise AssertionError(f"no loop with floating-point arithmetic found ({len(loops)} loops)")
    return best


def assert_vector_fma_hot_loop(insns: list[Insn], arch: str, min_fma: int = 4) -> LoopReport:
    """Assert the hot loop is a vector-FMA micro-kernel: at least ``min_fma`` vector FMAs
    (a register tile of accumulators) and no scalar floating-point arithmetic."""
    loop = hot_loop(insns, arch)
    body = "\n    ".join(loop.text)
    assert loop.vector_fma >= min_fma and loop.scalar_fp == 0, (
        f"{arch} hot loop is not a vector-FMA micro-kernel: {loop.vector_fma} vector FMAs "
        f"(want >= {min_fma}), {loop.scalar_fp} scalar and {loop.vector_other} other vector "
        f"FP ops:\n    {body}")
    return loop


def cross_objdump(arch: str) -> str | None:
    return shutil.which(f"{arch}-linux-gnu-objdump")


def disassemble(objdump: str, path: str) -> str:
    return subprocess.run([objdump, "-d", "--no-show-raw-insn", path], capture_output=True,
                          text=True, check=True).stdout


# ---------------------------------------------------------------- ELF files and tools

#: ELF e_machine of each architecture
EM = {"aarch64": 183, "riscv64": 243}
EF_RISCV_FLOAT_ABI_DOUBLE = 0x4


def elf_header(data: bytes) -> dict[str, int]:
    """Class, machine and flags of a 64-bit little-endian ELF file (no binutils needed)."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    assert data[4] == 2 and data[5] == 1, "not ELF64 little-endian"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    (e_flags,) = struct.unpack_from("<I", data, 48)
    return {"type": e_type, "machine": e_machine, "flags": e_flags}


def not_host(arch: str) -> None:
    """Skip a test of cross-compilation behaviour when ``arch`` is this machine's (then the
    module is a host module; the CI machine is x86-64)."""
    from tvm.target.llvm.host_cpu import host_triple

    if host_triple().split("-")[0] == arch:
        pytest.skip(f"this machine is {arch}: a {arch} module is not cross-compiled here")


def need_cross_cc(arch: str) -> str:
    """The cross compiler for ``arch`` (skips where it is not installed; CI installs it)."""
    from tvm.target.llvm.module import cross_compiler_names

    for name in cross_compiler_names(f"{arch}-linux-gnu"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no {arch} cross compiler (apt-get install gcc-{arch}-linux-gnu)")


def binutil(arch: str, tool: str) -> str | None:
    return shutil.which(f"{arch}-linux-gnu-{tool}")
