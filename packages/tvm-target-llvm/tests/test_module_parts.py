"""A big kernel module is generated in parts, compiled in worker processes and loaded (or
linked) as one: the parts share the runtime slots and metadata of part 0, run, report
errors and export like a module of one part."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
from tvm import tir
from tvm.script import ir as I
from tvm.script import tir as T

import tvm.runtime
from tvm.target.llvm import object_code
from tvm.target.llvm.llvm_target import LLVMTargetOptions, machine_spec

# The module itself.  The package's lazy ``build`` attribute (the function) is resolved
# first: importing the submodule before it would leave the package attribute bound to the
# module, for every later ``from tvm.target.llvm import build``.
from tvm.target.llvm import build as _build_function  # noqa: E402,F401

llvm_build = importlib.import_module("tvm.target.llvm.build")


@I.ir_module
class Kernels:
    @T.prim_func
    def add_one(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        T.func_attr({"global_symbol": "add_one", "tir.noalias": True})
        for i in range(64):
            with T.block("b"):
                v = T.axis.spatial(64, i)
                b[v] = a[v] + T.float32(1)

    @T.prim_func
    def scale(a: T.Buffer((8, 16), "float32"), b: T.Buffer((8, 16), "float32")):
        T.func_attr({"global_symbol": "scale", "tir.noalias": True})
        for i in T.parallel(8):
            for j in range(16):
                with T.block("b"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    b[vi, vj] = a[vi, vj] * T.float32(3)

    @T.prim_func
    def exp(a: T.Buffer((32,), "float32"), b: T.Buffer((32,), "float32")):
        T.func_attr({"global_symbol": "exp", "tir.noalias": True})
        for i in range(32):
            with T.block("b"):
                v = T.axis.spatial(32, i)
                b[v] = T.exp(a[v])


@pytest.fixture
def in_parts(monkeypatch):
    """Every function in a part of its own, compiled by two workers."""
    monkeypatch.setattr(llvm_build, "PART_INSTRUCTIONS", 1)
    monkeypatch.setenv("TVM_LLVM_JOBS", "2")


def _build():
    return tir.build(Kernels, target="llvm -num-cores=2")


def _check_runs(lib) -> None:
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    lib["add_one"](a, b)
    np.testing.assert_array_equal(b, a + 1)
    x = np.arange(128, dtype="float32").reshape(8, 16)
    y = np.zeros_like(x)
    lib["scale"](x, y)  # a parallel loop: the launch slot of part 0, from part 1
    np.testing.assert_array_equal(y, x * 3)
    e = np.linspace(-2, 2, 32).astype("float32")
    f = np.zeros_like(e)
    lib["exp"](e, f)  # renamed away from libm's symbol, in a part of its own
    np.testing.assert_allclose(f, np.exp(e), rtol=1e-6)


def test_a_module_in_parts_runs_like_one(in_parts):
    lib = _build()
    assert len(lib._raw_parts) == 3
    assert sum("__tvm_module_meta" in p for p in lib._raw_parts) == 1
    assert '@"__TVMAPISetLastError" = external' in lib._raw_parts[2]
    assert sorted(lib.function_names) == ["add_one", "exp", "scale"]
    _check_runs(lib)


def test_an_error_in_a_later_part_reaches_the_caller(in_parts):
    lib = _build()
    with pytest.raises(Exception, match="exp"):  # through part 0's error slot
        lib["exp"](np.zeros(31, "float32"), np.zeros(32, "float32"))


def test_sources_of_a_module_in_parts_are_one_module(in_parts):
    lib = _build()
    for fmt in ("ll", "ll-raw"):
        text = lib.get_source(fmt)
        assert text.count("ModuleID") == 1
        for name in ("add_one", "scale", "__tvm_fn_exp"):
            assert f"@{name}(" in text
    assert "add_one:" in lib.get_source("asm")


def test_export_of_a_module_in_parts(in_parts, tmp_path):
    lib = _build()
    lib.export_library(tmp_path / "k.so")
    _check_runs(tvm.runtime.load_module(str(tmp_path / "k.so")))
    lib.export_library(tmp_path / "k.o")
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"


def test_small_modules_stay_in_one_part(monkeypatch):
    monkeypatch.setenv("TVM_LLVM_JOBS", "2")
    lib = _build()
    assert len(lib._raw_parts) == 1
    _check_runs(lib)


def _spec():
    return machine_spec(LLVMTargetOptions.from_target("llvm"))


def _tiny(name: str, value: int) -> str:
    return f"define i32 @{name}() {{\n  ret i32 {value}\n}}\n"


def test_a_worker_reports_invalid_ir_with_the_part():
    parts = [_tiny("f", 1), "define i32 @g() {\n  ret i64 0\n}\n"]
    with pytest.raises(RuntimeError, match=r"does not parse for bad \(part 1 of 2\)"):
        object_code.compile_parts(parts, _spec(), "bad", jobs=2)


def test_a_dead_worker_is_replaced():
    first = object_code.compile_parts([_tiny("f", 2), _tiny("g", 2)], _spec(), "w", jobs=2)
    assert all(p.obj for p in first)
    pool = object_code._get_pool(2)
    for slot in pool.slots:
        if slot.worker is not None:
            slot.worker.proc.kill()
            slot.worker.proc.wait()
    again = object_code.compile_parts([_tiny("f", 3), _tiny("g", 3)], _spec(), "w", jobs=2)
    assert all("ret i32 3" in p.ir for p in again)


def test_a_worker_killed_mid_job_is_a_clear_error(monkeypatch):
    def dies(self, *args):
        self.proc.kill()
        self.proc.wait()
        return original(self, *args)

    original = object_code._Worker.compile
    monkeypatch.setattr(object_code._Worker, "compile", dies)
    with pytest.raises(RuntimeError, match="LLVM worker process compiling k .*signal"):
        object_code.compile_parts([_tiny("f", 4), _tiny("g", 4)], _spec(), "k", jobs=2)


def test_workers_are_not_shared_with_a_forked_child():
    object_code.compile_parts([_tiny("f", 5), _tiny("g", 5)], _spec(), "p", jobs=2)
    parent = object_code._get_pool(2)
    pid = os.fork()
    if pid == 0:  # the child builds with workers of its own
        try:
            pool = object_code._get_pool(2)
            ok = pool is not parent and all(s.worker is None for s in pool.slots)
            parts = object_code.compile_parts([_tiny("f", 6), _tiny("g", 6)], _spec(), "c",
                                              jobs=2)
            os._exit(0 if ok and all(p.obj for p in parts) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert object_code._get_pool(2) is parent


def test_parts_compile_here_when_no_worker_can_start(monkeypatch):
    def cannot(self):
        raise OSError("no processes here")

    monkeypatch.setattr(object_code, "_pool", None)
    monkeypatch.setattr(object_code._Worker, "__init__", cannot)
    parts = object_code.compile_parts([_tiny("f", 7), _tiny("g", 7)], _spec(), "n", jobs=2)
    assert all("ret i32 7" in p.ir and p.obj for p in parts)
