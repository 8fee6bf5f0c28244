"""Target mistakes are Python exceptions: unknown -mtriple/-mcpu/-mattr are refused when the
Target is made (with close matches), subtargets LLVM cannot make code for when the options
are resolved, and code built for CPU features this host lacks never runs (HostMismatchError
at call for JIT modules, at load for exported libraries)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvm_test_utils import prim_func
from tvm.ir.target import Target
from tvm.tir import For, ForKind, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore
from tvm.target.llvm import LLVMTargetOptions, build, host_cpu_features
from tvm.target.llvm.host_cpu import host_triple
from tvm.target.llvm.target_info import subtarget_features, target_table

import tvm.runtime as rt

X86 = "x86_64-unknown-linux-gnu"
ON_X86 = host_triple().startswith("x86_64")
MISSING = sorted(f[1:] for f in host_cpu_features() if f.startswith("-"))


def _saxpy():
    n = SizeVar("n", "int32")
    X, Y = decl_buffer((n,), "float32", "X"), decl_buffer((n,), "float32", "Y")
    a, i = Var("a", "float32"), Var("i", "int32")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(Y, X[i] * a + Y[i], (i,)))
    return prim_func("saxpy", [X, Y, a], body)


@pytest.mark.parametrize("target, match", [
    ("llvm -mcpu=notacpu", r"-mcpu=notacpu is not a CPU LLVM knows"),
    (f"llvm -mtriple={X86} -mcpu=skylake-avx51", r"close matches: skylake-avx512"),
    (f"llvm -mtriple={X86} -mcpu=haswel", r"close matches: haswell"),
    (f"llvm -mtriple={X86} -mcpu=znver", r"close matches: .*znver"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a67", r"close matches: .*cortex-a76"),
    ("llvm -mtriple=riscv64-linux-gnu -mcpu=sifive-u47", r"close matches: sifive-u74"),
    (f"llvm -mtriple={X86} -mattr=+avx512", r"'avx512' is not a feature.*avx512f"),
    (f"llvm -mtriple={X86} -mattr=+avx2,-fam", r"-mattr=-fam.*close matches: fma"),
    ("llvm -mtriple=aarch64-linux-gnu -mattr=+neno", r"close matches: neon"),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+vv", r"'vv' is not a feature"),
    (f"llvm -mtriple={X86} -mattr=avx2", r"-mattr entries look like \+avx2"),
    ("llvm -mtriple=riscv64-linux-gnu -mcpu=native" if ON_X86 else
     f"llvm -mtriple={X86} -mcpu=native", r"-mcpu=native means this machine's CPU"),
    ("llvm -mtriple=x86-64-linux-gnu", r"unknown architecture.*close matches: x86_64"),
    ("llvm -mtriple=aarch46-linux-gnu", r"unknown architecture 'aarch46'.*aarch64"),
    ("llvm -mtriple=riscv64-linx-gnu", r"does not recognise 'linx'.*close matches: linux"),
    ("llvm -mtriple=aarch64-unknown-linux-gun", r"does not recognise 'gun'.*gnu"),
])
def test_unknown_names_are_refused_when_the_target_is_made(target, match):
    with pytest.raises(ValueError, match=match):
        Target(target)


@pytest.mark.parametrize("target", [
    "llvm", "llvm -mcpu=native", f"llvm -mtriple={X86} -mcpu=haswell -mattr=-avx2,+fma",
    "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76 -mattr=+neon",
    "llvm -mtriple=aarch64-linux-gnu -mcpu=generic -mattr=+neon,+dotprod",
    "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c,+v",
    "llvm -mtriple=riscv64-linux-gnu -mcpu=sifive-u74",
])
def test_valid_targets_are_accepted(target):
    LLVMTargetOptions.from_target(Target(target))


CPUS = sorted(c for c in target_table(X86).cpus if len(c) >= 7)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(CPUS), st.integers(0, 100), st.sampled_from("xqz"),
       st.sampled_from(["replace", "insert", "delete"]))
def test_misspelled_cpus_are_refused_with_the_intended_name(cpu, pos, char, how):
    pos %= len(cpu)
    wrong = {"replace": cpu[:pos] + char + cpu[pos + 1:], "insert": cpu[:pos] + char + cpu[pos:],
             "delete": cpu[:pos] + cpu[pos + 1:]}[how]
    if wrong in target_table(X86).cpus:
        return
    with pytest.raises(ValueError, match="close matches: .*" + cpu.replace("+", r"\+")) as err:
        Target(f"llvm -mtriple={X86} -mcpu={wrong}")
    assert wrong in str(err.value)


def test_a_bad_cpu_never_reaches_llvm():
    """What used to print LLVM's complaint eight times and abort the process."""
    code = textwrap.dedent("""
        from tvm.target.llvm import LLVMTargetOptions
        try:
            LLVMTargetOptions.from_target("llvm -mcpu=notacpu")
        except ValueError as err:
            print("ValueError:", err)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "ValueError: llvm target: -mcpu=notacpu" in proc.stdout
    assert "LLVM ERROR" not in proc.stderr and "not a recognized processor" not in proc.stderr


@pytest.mark.parametrize("target, match", [
    (f"llvm -mtriple={X86} -mcpu=i686", "64-bit code requested"),
    ("llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv32", "RV64 target requires an RV64 CPU"),
])
def test_subtargets_llvm_cannot_make_are_value_errors(target, match):
    with pytest.raises(ValueError, match=f"LLVM cannot generate code for .*{match}"):
        LLVMTargetOptions.from_target(target)


def test_subtarget_features_include_implied_ones():
    haswell = subtarget_features(X86, "haswell")
    assert {"avx2", "fma", "avx", "sse4.2"} <= haswell and "avx512f" not in haswell
    no_avx2 = subtarget_features(X86, "skylake-avx512", "-avx2")
    assert "avx" in no_avx2 and not {"avx2", "avx512f"} & no_avx2  # avx512f needs avx2
    a76 = subtarget_features("aarch64-linux-gnu", "cortex-a76")
    assert {"neon", "dotprod", "fullfp16"} <= a76 and "sve" not in a76
    rvv = subtarget_features("riscv64-linux-gnu", "generic-rv64", "+m,+a,+f,+d,+c,+v")
    assert {"v", "d", "zve32f"} <= rvv
    u74 = subtarget_features("riscv64-linux-gnu", "sifive-u74")
    assert {"m", "a", "f", "d", "c"} <= u74 and "v" not in u74


def test_modules_record_triple_cpu_and_features():
    meta = build(_saxpy(), f"llvm -mtriple={X86} -mcpu=haswell").meta
    assert meta["triple"] == X86 and meta["cpu"] == "haswell"
    assert {"avx2", "fma"} <= set(meta["features"]) and "avx512f" not in meta["features"]
    native = build(_saxpy())
    assert native.meta["cpu"] == native.options.cpu
    assert {f[1:] for f in host_cpu_features() if f[0] == "+"} == set(native.meta["features"])


def _missing_used_feature() -> str | None:
    """A feature this host lacks that changes the machine code of _saxpy (so it is used)."""
    for feat in ("avx512f", "avx2", "fma", "ndd", "egpr"):
        if feat in MISSING:
            mod = build(_saxpy(), f"llvm -mattr=+{feat}")
            if mod.host_problem is not None:
                return feat
    return None


def _missing_unused_feature() -> str | None:
    for feat in ("clzero", "rdpru", "mwaitx", "pconfig", "ptwrite", "hreset", "sse4a"):
        if feat in MISSING:
            return feat
    return None


@pytest.mark.skipif(not ON_X86, reason="the candidate features are x86 ones")
def test_jit_for_missing_features_refuses_to_run(tmp_path):
    feat = _missing_used_feature()
    if feat is None:
        pytest.skip("this host has every candidate feature")
    mod = build(_saxpy(), f"llvm -mattr=+{feat}")
    x = np.ones(8, "float32")
    y = np.ones(8, "float32")
    with pytest.raises(rt.HostMismatchError, match=f"lacks: .*{feat}"):
        mod["saxpy"](x, y, 2.0)
    assert (y == 1).all()
    assert f"+{feat}" in mod.get_source("ll") or feat in mod.meta["features"]
    lib = tmp_path / "k.so"
    mod.export_library(lib)  # building for another CPU still exports
    with pytest.raises(rt.HostMismatchError, match=f"k.so.*lacks: .*{feat}"):
        rt.load_module(lib)


@pytest.mark.skipif(not ON_X86, reason="the candidate features are x86 ones")
def test_missing_features_the_code_does_not_use_are_allowed(tmp_path, monkeypatch):
    feat = _missing_unused_feature()
    if feat is None:
        pytest.skip("this host has every candidate feature")
    mod = build(_saxpy(), f"llvm -mattr=+{feat}")  # the JIT checks its code does not use it
    assert mod.host_problem is None and feat in mod.meta["features"]
    x, y = np.ones(8, "float32"), np.ones(8, "float32")
    mod["saxpy"](x, y, 2.0)
    assert not (y == 1).all()
    lib = tmp_path / "k.so"
    mod.export_library(lib)  # a loaded file cannot tell: refused unless allowed
    with pytest.raises(rt.HostMismatchError, match=feat):
        rt.load_module(lib)
    monkeypatch.setenv("TVM_ALLOW_MISSING_CPU_FEATURES", feat)
    assert rt.load_module(lib).function_names == ["saxpy"]


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None or not ON_X86,
                    reason="needs aarch64-linux-gnu-gcc on an x86 host")
def test_exported_foreign_library_is_refused_at_load(tmp_path):
    mod = build(_saxpy(), "llvm -mtriple=aarch64-linux-gnu -mattr=+neon")
    lib = tmp_path / "a64.so"
    mod.export_library(lib, cc="aarch64-linux-gnu-gcc")
    with pytest.raises(rt.HostMismatchError, match="shared library for aarch64"):
        rt.load_module(lib)
