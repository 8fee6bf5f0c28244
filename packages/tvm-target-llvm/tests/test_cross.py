"""Cross-compilation: modules built for aarch64 and riscv64 on any host, their functions
listed, exported as shared objects of that triple by the matching cross compiler.

Tests that link need the GNU cross compilers (Debian: gcc-aarch64-linux-gnu,
gcc-riscv64-linux-gnu and their libc6-dev-*-cross); they skip where those are missing and CI
installs them (``.ci/run``), so they never skip there.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from isa_checks import (
    EF_RISCV_FLOAT_ABI_DOUBLE,
    EM,
    binutil,
    elf_header,
    need_cross_cc,
    not_host,
)
from llvm_test_utils import prim_func
from tvm import tir
from tvm.target.llvm import build
from tvm.target.llvm.module import cross_compiler_names, find_c_compiler, meta_from_ir
from tvm.tir import For, ForKind, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
RISCV64 = "llvm -mtriple=riscv64-linux-gnu -mattr=+v"


def _saxpy():
    n = SizeVar("n", "int32")
    X = decl_buffer((n,), "float32", "X")
    Y = decl_buffer((n,), "float32", "Y")
    a = Var("a", "float32")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(Y, X[i] * a + Y[i], (i,)))
    return prim_func("saxpy", [X, Y, a], body)


@pytest.mark.parametrize("target,arch", [(AARCH64, "aarch64"), (RISCV64, "riscv64")])
def test_cross_module_lists_its_functions_and_refuses_calls(target, arch):
    not_host(arch)
    mod = build(_saxpy(), target)
    assert not mod.options.is_host
    assert mod.function_names == ["saxpy"]
    assert mod.meta["functions"][0]["params"]  # the parameter table travels too
    with pytest.raises(RuntimeError, match=f"cross-compiled for {arch}-linux-gnu.*qemu"):
        mod["saxpy"]()
    obj = elf_header(mod.emit_object())
    assert obj["machine"] == EM[arch] and obj["type"] == 1  # ET_REL for that triple


def test_riscv64_defaults_to_rv64gc_and_the_lp64d_abi():
    mod = build(_saxpy(), RISCV64)
    assert mod.options.features.split(",")[:5] == ["+m", "+a", "+f", "+d", "+c"]
    assert mod.options.abi == "lp64d"
    flags = elf_header(mod.emit_object())["flags"]
    assert flags & 0x6 == EF_RISCV_FLOAT_ABI_DOUBLE  # double-float ABI, as Debian's libc
    soft = build(_saxpy(), "llvm -mtriple=riscv64-linux-gnu -mattr=-d,-f")
    assert soft.options.abi == "lp64"
    assert build(_saxpy(), "llvm -mtriple=riscv64-linux-gnu -mabi=lp64f").options.abi == "lp64f"


def test_meta_from_ir_reads_escaped_json():
    mod = build(_saxpy(), AARCH64)
    for text in (mod.get_source("ll"), mod.get_source("ll-raw")):
        meta = meta_from_ir(text)
        assert meta["version"] == 1 and [f["name"] for f in meta["functions"]] == ["saxpy"]
        assert "aarch64-linux-gnu" in meta["target"]


@pytest.mark.parametrize("target,arch", [(AARCH64, "aarch64"), (RISCV64, "riscv64")])
def test_export_library_links_with_the_cross_compiler(target, arch, tmp_path):
    need_cross_cc(arch)
    lib = tmp_path / f"saxpy_{arch}.so"
    build(_saxpy(), target).export_library(lib)
    head = elf_header(lib.read_bytes())
    assert head["machine"] == EM[arch] and head["type"] == 3  # ET_DYN: a shared object
    readelf, nm = binutil(arch, "readelf"), binutil(arch, "nm")
    if readelf:
        out = subprocess.run([readelf, "-h", str(lib)], capture_output=True, text=True).stdout
        assert ("AArch64" if arch == "aarch64" else "RISC-V") in out
        assert "DYN" in out
    if nm:
        out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True,
                             text=True).stdout
        assert " T saxpy" in out and "__tvm_module_meta" in out


def test_cc_argument_and_knob_choose_the_cross_compiler(tmp_path, monkeypatch):
    not_host("aarch64")
    gcc = need_cross_cc("aarch64")
    mod = build(_saxpy(), AARCH64)
    mod.export_library(tmp_path / "a.so", cc=gcc)
    assert elf_header((tmp_path / "a.so").read_bytes())["machine"] == EM["aarch64"]
    monkeypatch.setenv("TVM_CROSS_CC", f"riscv64=/nowhere/gcc,aarch64={gcc}")
    assert find_c_compiler(triple="aarch64-linux-gnu") == gcc
    monkeypatch.setenv("TVM_CROSS_CC", "aarch64=/nowhere/aarch64-gcc")
    with pytest.raises(RuntimeError, match="'/nowhere/aarch64-gcc' was not found"):
        mod.export_library(tmp_path / "b.so")
    monkeypatch.setenv("TVM_CROSS_CC", "riscv64=/nowhere/gcc")  # other arch: default search
    assert find_c_compiler(triple="aarch64-linux-gnu") == gcc


def test_host_compiler_is_never_used_for_a_foreign_triple(tmp_path, monkeypatch):
    not_host("riscv64")
    monkeypatch.setenv("PATH", str(tmp_path))  # no cross compiler, but $CC is set
    monkeypatch.setenv("CC", shutil.which("cc") or "/usr/bin/cc")
    monkeypatch.delenv("TVM_CROSS_CC", raising=False)
    mod = build(_saxpy(), RISCV64)
    with pytest.raises(RuntimeError, match=r"cross C compiler.*riscv64-linux-gnu-gcc.*"
                                           r"apt-get install gcc-riscv64-linux-gnu "
                                           r"libc6-dev-riscv64-cross"):
        mod.export_library(tmp_path / "x.so")


def test_cross_compiler_names_follow_the_gnu_convention():
    assert cross_compiler_names("aarch64-unknown-linux-gnu") == [
        "aarch64-unknown-linux-gnu-gcc", "aarch64-linux-gnu-gcc"]
    assert cross_compiler_names("riscv64-linux-gnu") == ["riscv64-linux-gnu-gcc"]
    assert cross_compiler_names("armv7a-linux-gnueabihf")[1] == "arm-linux-gnueabihf-gcc"


def test_a_cross_built_parallel_kernel_uses_the_runtime_pool():
    not_host("aarch64")
    # libgomp of this machine says nothing about the target's: parallel loops of a cross
    # module go through the runtime's thread pool, so the library needs no -lgomp
    n = SizeVar("n", "int32")
    X = decl_buffer((n,), "float32", "X")
    i = Var("i", "int32")
    f = prim_func("scale", [X], For(i, 0, n, ForKind.PARALLEL,
                                    BufferStore(X, X[i] * tir.const(2.0, "float32"), (i,))))
    mod = build(f, AARCH64)
    assert mod.options.threading == "pool"
    assert "GOMP_parallel" not in mod.get_source("ll")


def test_an_explicit_compiler_that_does_not_exist_is_refused(tmp_path):
    mod = build(_saxpy(), AARCH64)
    with pytest.raises(RuntimeError, match="'/nowhere/gcc' was not found"):
        mod.export_library(tmp_path / "x.so", cc="/nowhere/gcc")
    with pytest.raises(RuntimeError, match="'/nowhere/cc' was not found"):
        find_c_compiler(cc="/nowhere/cc")  # for this machine too: never silently replaced


def test_loading_a_foreign_library_here_says_what_it_is(tmp_path):
    from tvm.runtime import HostMismatchError, load_module

    not_host("riscv64")
    need_cross_cc("riscv64")
    lib = tmp_path / "saxpy_rv.so"
    build(_saxpy(), RISCV64).export_library(lib)
    with pytest.raises(HostMismatchError, match="library for riscv64.*qemu-user"):
        load_module(lib)
