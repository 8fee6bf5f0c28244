"""The llvm plugin's named targets: boards and x86 generations, each a valid llvm target
whose CPU LLVM knows, whose triple it compiles for and whose ISA the schedule rules see."""

from __future__ import annotations

import pytest
import schedule_workloads as W
from isa_checks import EM, assert_vector_fma_hot_loop, elf_header, hot_loop, parse_llvm_asm
from tvm.ir.target import Target, TargetError, list_target_tags
from tvm.target.llvm.llvm_target import LLVMTargetOptions, create_target_machine
from tvm.target.llvm.schedule_rules import cpu_info
from tvm.target.llvm.tags import LLVM_TAGS
from tvm.tir import build as tir_build

BOARDS = ["raspberry-pi-4", "raspberry-pi-5", "rk3588", "visionfive-2", "spacemit-k1"]
X86 = ["x86-64-v3", "x86-64-v4", "x86-haswell", "x86-skylake-avx512", "znver3", "znver4"]


def test_the_plugin_contributes_its_tags():
    tags = list_target_tags()
    for name in [*BOARDS, *X86]:
        assert name in tags and tags[name].package == "tvm-target-llvm"
    listing = Target.list_tags()
    assert "Cortex-A72" in listing["raspberry-pi-4"]
    assert "-mtriple=aarch64-linux-gnu" in listing["raspberry-pi-4"]


@pytest.mark.parametrize("name", sorted(LLVM_TAGS))
def test_every_tag_is_a_target_llvm_accepts(name, capfd):
    t = Target(name)
    entry = LLVM_TAGS[name]["target"]
    assert t.kind_name == "llvm" and t.mcpu == entry["mcpu"] and t.mtriple == entry["mtriple"]
    assert t.mattr == tuple(entry["mattr"]) and t.num_cores == entry.get("num-cores")
    opts = LLVMTargetOptions.from_target(t)
    assert opts.cpu == entry["mcpu"]
    create_target_machine(opts)
    err = capfd.readouterr().err
    assert "not a recognized" not in err, err  # LLVM knows the CPU and every feature


def test_board_tags_describe_their_isa():
    pi4 = cpu_info(Target("raspberry-pi-4"))
    assert (pi4.vector_bytes, pi4.vector_registers, pi4.fma, pi4.num_cores) == (16, 32, True, 4)
    k1 = cpu_info(Target("spacemit-k1"))
    assert (k1.vector_bytes, k1.vector_registers, k1.fma, k1.num_cores) == (32, 32, True, 8)
    rvv = cpu_info(Target("llvm -mtriple=riscv64-linux-gnu -mattr=+v"))
    assert (rvv.vector_bytes, rvv.vector_registers, rvv.fma) == (16, 32, True)  # VLEN >= 128
    vf2 = cpu_info(Target("visionfive-2"))
    assert vf2.isa == "RV scalar" and vf2.num_cores == 4  # U74: no vector unit
    assert pi4.isa == "NEON" and k1.isa == "RVV (VLEN>=256)"
    assert cpu_info(Target("x86-64-v4")).vector_bytes == 64
    assert cpu_info(Target("znver3")).vector_bytes == 32
    assert cpu_info(Target("rk3588 -num-cores=8")).num_cores == 8


def test_board_tags_compile_for_their_triple():
    matmul = W.matmul(64, 64, 64)
    for name, arch in [("raspberry-pi-4", "aarch64"), ("spacemit-k1", "riscv64")]:
        lib = tir_build(matmul, target=name)
        assert elf_header(lib.emit_object())["machine"] == EM[arch]
        assert_vector_fma_hot_loop(parse_llvm_asm(lib.get_source("asm"), "main"), arch)
    # the U74 has no vector unit: its hot loop is scalar FMA, and the check says so
    u74 = tir_build(matmul, target="visionfive-2").get_source("asm")
    loop = hot_loop(parse_llvm_asm(u74, "main"), "riscv64")
    assert loop.vector_fma == 0 and loop.scalar_fp > 0
    assert not any(t.startswith("v") for t in loop.text)


def test_x86_tags_run_here_when_the_host_has_the_isa():
    opts = LLVMTargetOptions.from_target(Target("x86-64-v3"))
    assert opts.is_host or not opts.triple.startswith("x86_64")


def test_unknown_tag_suggests_close_names():
    with pytest.raises(TargetError, match="Did you mean 'raspberry-pi-4'"):
        Target("raspbery-pi-4")
    with pytest.raises(TargetError, match="Did you mean 'znver3'"):
        Target("znver33")
