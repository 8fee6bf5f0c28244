"""Modules built for another architecture or for CPU features this host lacks are refused
(HostMismatchError) instead of running into SIGILL; see tvm.runtime.host."""

from __future__ import annotations

import copy
import ctypes
import struct

import pytest
from rt_testing import KERNEL_META, compile_shared, kernel_source

import tvm.runtime as rt
from tvm.runtime import host
from tvm.runtime.module import UnrunnableFunc, module_from_symbols

FOREIGN = {"x86_64": "aarch64"}.get(host.host_arch(), "x86_64")
FOREIGN_TRIPLE = f"{FOREIGN}-unknown-linux-gnu"


@pytest.fixture
def fake_host(monkeypatch):
    """This host as having avx2 but not avx512f/amx-tile (whatever it really has)."""
    monkeypatch.setattr(host, "host_cpu_features",
                        lambda: {"avx2": True, "avx512f": False, "amx-tile": False})


def _meta(**extra):
    meta = copy.deepcopy(KERNEL_META)
    meta.update(extra)
    return meta


@pytest.mark.parametrize("triple", ["x86_64-unknown-linux-gnu", "aarch64-linux-gnu",
                                    "arm64-apple-darwin", "riscv64-unknown-linux-gnu"])
def test_architecture_mismatch_names_both(triple):
    problem = host.host_mismatch({"triple": triple})
    arch = host.normalize_arch(triple.split("-")[0])
    if arch == host.host_arch():
        assert problem is None
    else:
        assert triple in problem and host.host_arch() in problem


def test_missing_features_are_named(fake_host, monkeypatch):
    meta = {"triple": f"{host.host_arch()}-unknown-linux-gnu", "cpu": "skylake-avx512",
            "features": ["avx2", "avx512f", "amx-tile", "feature-the-host-does-not-describe"]}
    assert host.missing_features(meta) == ["amx-tile", "avx512f"]
    problem = host.host_mismatch(meta)
    assert "-mcpu=skylake-avx512" in problem and "amx-tile, avx512f" in problem
    assert host.host_mismatch(meta, allowed=["amx-tile"]).count("avx512f") >= 1
    assert host.host_mismatch(meta, allowed=["amx-tile", "avx512f"]) is None
    monkeypatch.setenv("TVM_ALLOW_MISSING_CPU_FEATURES", "*")
    assert host.host_mismatch(meta) is None
    assert host.host_mismatch({"functions": []}) is None  # metadata that does not say


def test_loaded_library_for_missing_features_is_refused(tmp_path, fake_host):
    meta = _meta(triple=f"{host.host_arch()}-unknown-linux-gnu", cpu="skylake-avx512",
                 features=["avx512f"])
    lib = compile_shared(kernel_source(meta), tmp_path / "k.so")
    with pytest.raises(rt.HostMismatchError, match=r"k\.so.*lacks: avx512f"):
        rt.load_module(lib)


def test_jit_style_module_loads_but_its_functions_refuse(tmp_path, fake_host):
    lib_path = compile_shared(kernel_source(), tmp_path / "k.so")
    lib = ctypes.CDLL(str(lib_path))

    def lookup(name):
        try:
            return ctypes.addressof(ctypes.c_char.in_dll(lib, name))
        except ValueError:
            return None

    meta = {"version": 1, "target": "llvm", "features": ["avx512f"], "cpu": "x",
            "functions": [KERNEL_META["functions"][1]]}
    mod = module_from_symbols(lookup, "llvm", meta=meta, keepalive=lib, host_check="call")
    assert isinstance(mod["checked_div"], UnrunnableFunc) and "avx512f" in mod.host_problem
    with pytest.raises(rt.HostMismatchError, match="cannot call 'checked_div'.*avx512f"):
        mod["checked_div"](9, 3)
    ok = module_from_symbols(lookup, "llvm", meta=meta, keepalive=lib, host_check="call",
                             allow_features=["avx512f"])
    assert ok["checked_div"](9, 3) == 3


def test_foreign_triple_in_metadata_is_refused(tmp_path):
    lib = compile_shared(kernel_source(_meta(triple=FOREIGN_TRIPLE)), tmp_path / "k.so")
    with pytest.raises(rt.HostMismatchError, match=f"built for {FOREIGN_TRIPLE}"):
        rt.load_module(lib)


def _elf_header(machine: int, elf_class: int = 2) -> bytes:
    ident = b"\x7fELF" + bytes([elf_class, 1, 1]) + b"\0" * 9
    return ident + struct.pack("<HHI", 3, machine, 1) + b"\0" * 40


@pytest.mark.parametrize("machine, arch", [(183, "aarch64"), (62, "x86_64"),
                                           (243, "riscv64")])
def test_foreign_elf_is_refused_before_dlopen(tmp_path, machine, arch):
    path = tmp_path / "foreign.so"
    path.write_bytes(_elf_header(machine))
    assert host.file_arch(path) == arch
    if arch == host.host_arch():
        with pytest.raises(rt.ModuleLoadError, match="not written by tvm"):  # no seal
            rt.load_module(path)
        with pytest.raises(rt.ModuleLoadError, match="cannot load"):  # a truncated ELF
            rt.load_module(path, trusted=True)
    else:
        with pytest.raises(rt.HostMismatchError, match=f"shared library for {arch}"):
            rt.load_module(path)


def test_file_arch_of_non_elf(tmp_path):
    path = tmp_path / "x.so"
    path.write_bytes(b"not an ELF file at all")
    assert host.file_arch(path) is None


def test_host_features_come_from_a_plugin_or_cpuinfo():
    features = host.host_cpu_features()
    assert all(isinstance(k, str) and isinstance(v, bool) for k, v in features.items())
    if host.host_arch() == "x86_64" and features:
        assert features.get("sse2") is True
