"""Static instruction checks of cross-compiled hot loops, no hardware needed: the default
schedules of a matmul and a convolution compile, for AArch64 NEON and RISC-V V, to a
micro-kernel of vector FMAs (``fmla v*.4s``; ``vfmacc``/``vfmadd``).

Checked twice: in LLVM's assembly of the module (needs nothing but llvmlite) and in the
cross objdump of the exported shared library (needs the cross toolchain; CI installs it).
An unvectorised schedule fails the same check (``test_the_check_catches_...``).
"""

from __future__ import annotations

import pytest
import schedule_workloads as W
from isa_checks import (
    assert_vector_fma_hot_loop,
    need_cross_cc,
    cross_objdump,
    disassemble,
    hot_loop,
    parse_llvm_asm,
    parse_objdump,
)
from tvm.tir import build as tir_build
from tvm.tir.build import SCHEDULED_ATTR

TARGETS = {
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon",
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mattr=+v",
}
WORKLOADS = {
    "matmul": lambda: W.matmul(256, 256, 256),
    "conv2d": lambda: W.conv2d_nchw(1, 32, 28, 28, 64),
}
_cache: dict = {}


def _built(arch: str, workload: str):
    key = (arch, workload)
    if key not in _cache:
        _cache[key] = tir_build(WORKLOADS[workload](), target=TARGETS[arch])
    return _cache[key]


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("arch", sorted(TARGETS))
def test_hot_loop_is_vector_fma_in_llvm_assembly(arch, workload):
    asm = _built(arch, workload).get_source("asm")
    loop = assert_vector_fma_hot_loop(parse_llvm_asm(asm, "main"), arch)
    if arch == "aarch64":
        assert any(t.startswith("fmla v") and ".4s" in t for t in loop.text)
    else:
        # fixed-length vectors of e32 lanes, configured once outside the loop
        assert "vsetivli" in asm and "e32" in asm


@pytest.mark.parametrize("arch", sorted(TARGETS))
def test_the_check_catches_an_unvectorised_schedule(arch):
    # the same matmul with its default schedule withheld: LLVM alone makes no FMA
    # micro-kernel of it (a scalar loop, or a vectorised dot product reduced at the end)
    naive = W.matmul(256, 256, 256).with_attr(SCHEDULED_ATTR, True)
    asm = tir_build(naive, target=TARGETS[arch]).get_source("asm")
    loop = hot_loop(parse_llvm_asm(asm, "main"), arch)
    assert loop.vector_fma == 0 and loop.fp_ops > 0
    with pytest.raises(AssertionError, match="not a vector-FMA micro-kernel"):
        assert_vector_fma_hot_loop(parse_llvm_asm(asm, "main"), arch)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("arch", sorted(TARGETS))
def test_hot_loop_is_vector_fma_in_the_exported_library(arch, workload, tmp_path):
    need_cross_cc(arch)
    objdump = cross_objdump(arch)
    if objdump is None:
        pytest.skip(f"no {arch}-linux-gnu-objdump (apt-get install binutils-{arch}-linux-gnu)")
    lib = tmp_path / f"{workload}_{arch}.so"
    _built(arch, workload).export_library(lib)
    insns = parse_objdump(disassemble(objdump, str(lib)), "main")
    assert_vector_fma_hot_loop(insns, arch)
