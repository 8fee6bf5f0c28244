"""tvm.runtime.runner: the local runner, the process runner (the C runner server in a child
process) and its failure modes, kernels forwarded from the host VM, and the server under
an emulator command prefix (kernels.c cross-compiled for aarch64, run under qemu-aarch64)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from rt_testing import KERNEL_META, c_string_literal, compile_shared, kernel_source

import tvm.runtime
from tvm.runtime import seal_file
from tvm.runtime.error import KernelError, ModuleLoadError
from tvm.runtime.runner import (
    LocalRunner,
    ProcessRunner,
    RemoteModule,
    RunnerError,
    RunnerTimeoutError,
    RunnerUnavailableError,
    build_server,
    create_runner,
)
from tvm.runtime.vm import Executable, VirtualMachine

BAD_META = {"version": 1, "target": "c", "functions": [
    {"name": n, "symbol": n, "params": []} for n in ("segfault", "spin_forever", "exit_7")]}

BAD_SOURCE = """
#include <stdint.h>
#include <stdlib.h>
const char __tvm_module_meta[] = @META@;
int32_t segfault(void* a, int32_t* c, int32_t n, void* r, int32_t* rc, void* h) {
  volatile int* p = 0; *p = 1; return 0; }
int32_t spin_forever(void* a, int32_t* c, int32_t n, void* r, int32_t* rc, void* h) {
  for (volatile int i = 0;; ++i) {} return 0; }
int32_t exit_7(void* a, int32_t* c, int32_t n, void* r, int32_t* rc, void* h) {
  exit(7); return 0; }
"""


@pytest.fixture(scope="module")
def bad_lib(tmp_path_factory) -> Path:
    src = BAD_SOURCE.replace("@META@", c_string_literal(json.dumps(BAD_META)))
    return compile_shared(src, tmp_path_factory.mktemp("bad") / "bad.so")


def shift_program():
    """main(x: Tensor[(n,), f32]) -> x + 3 through one add_scalar call (symbolic n)."""
    n = ["var", 0]
    code = [
        {"op": "check_tensor_info", "arg": ["reg", 0], "ndim": 1, "dtype": "float32",
         "ctx": "main: parameter x"},
        {"op": "match_shape", "arg": ["reg", 0], "dims": [["store", 0]],
         "ctx": "main: parameter x"},
        {"op": "alloc_storage", "dst": 1, "size": ["mul", n, 4], "device": 0,
         "scope": "global"},
        {"op": "alloc_tensor", "dst": 2, "storage": ["reg", 1], "offset": 0,
         "shape": ["shape", [n]], "dtype": "float32"},
        {"op": "call", "dst": None, "func": "add_scalar",
         "args": [["reg", 0], ["reg", 2], ["imm", 3.0]]},
        {"op": "ret", "value": ["reg", 2]},
    ]
    return {"functions": [{"name": "main", "params": ["x"], "num_regs": 3, "heap_size": 1,
                           "heap_names": ["n"], "code": code}], "target": "c"}


def _args(n=8):
    return [np.arange(n, dtype="float32"), np.zeros(n, "float32"), 2.5]


@pytest.mark.parametrize("name", ["local", "process"])
def test_run_returns_outputs_and_times_without_touching_the_arguments(kernel_lib, name):
    runner = create_runner(name)
    args = _args()
    res = runner.run(kernel_lib, "add_scalar", args, number=5, repeat=3)
    np.testing.assert_array_equal(res.output(-2), args[0] + 2.5)
    np.testing.assert_array_equal(res.output(0), args[0])
    assert sorted(res.outputs) == [0, 1]  # every tensor argument by default
    assert len(res.times) == 3 and all(t > 0 for t in res.times) and res.number == 5
    assert res.min <= res.median <= max(res.times)
    assert not args[1].any()  # run() works on copies
    only = runner.run(kernel_lib, "add_scalar", args, outputs=[1])
    assert sorted(only.outputs) == [1] and only.times == ()
    with pytest.raises(KeyError, match="argument 0 was not returned"):
        only.output(0)
    with pytest.raises(ValueError, match="outputs names argument 2, which is not a tensor"):
        runner.run(kernel_lib, "add_scalar", args, outputs=[2])
    with pytest.raises(ValueError, match="repeat must be an int >= 0"):
        runner.run(kernel_lib, "add_scalar", args, repeat=-1)


def test_upload_sends_the_library_instead_of_its_path(kernel_lib, tmp_path):
    runner = ProcessRunner(upload=True)
    with runner.session() as s:
        res = s.run(kernel_lib, "add_scalar", _args(5))
        np.testing.assert_array_equal(res.output(1), np.arange(5, dtype="float32") + 2.5)
        garbage = tmp_path / "garbage.so"
        garbage.write_bytes(b"\x7fELF not really")
        with pytest.raises(ModuleLoadError, match="not written by tvm"):
            s.load_module(garbage)
        with pytest.raises(ModuleLoadError, match="cannot load the library"):
            s.load_module(garbage, trusted=True)


def test_kernel_errors_carry_the_kernel_message_and_the_runner(kernel_lib):
    with ProcessRunner().session() as s:
        m = s.load_module(kernel_lib)
        assert isinstance(m, RemoteModule) and m.function_names == tvm.runtime.load_module(
            kernel_lib).function_names
        with pytest.raises(KernelError, match=r"^process runner \(host\): checked_div: "
                                              r"argument y must be non-zero, got 0"):
            m["checked_div"](1, 0)
        with pytest.raises(KernelError, match=r"add_scalar: argument B has shape\[0\] = 3"):
            m["add_scalar"](np.zeros(8, "float32"), np.zeros(3, "float32"), 1.0)
        with pytest.raises(KernelError, match=r"fails_silently: the kernel failed \(code -3\)"):
            m["fails_silently"]()
        # the session survives kernel errors
        out = np.zeros(4, "float32")
        m["add_scalar"](np.ones(4, "float32"), out, 1.0)
        np.testing.assert_array_equal(out, 2.0)
        assert s.alive and s.machine
    with pytest.raises(RunnerError, match=r"process runner \(host\): the session is closed"):
        m["add_scalar"](np.ones(4, "float32"), out, 1.0)


def test_parallel_launches_run_every_task(kernel_lib):
    with ProcessRunner(num_threads=3).session() as s:
        m = s.load_module(kernel_lib)
        out = np.zeros(12)
        m["parallel_spin"](out, 10, 4, -1)
        direct = np.zeros(12)
        tvm.runtime.load_module(kernel_lib)["parallel_spin"](direct, 10, 4, -1)
        np.testing.assert_array_equal(out, direct)
        with pytest.raises(KernelError):
            m["parallel_spin"](np.zeros(12), 10, 4, 2)  # task 2 fails
        s.set_num_threads(1)
        out[:] = 0
        m["parallel_spin"](out, 10, 4, -1)
        np.testing.assert_array_equal(out, direct)


def test_a_crash_is_an_exception_naming_the_runner_and_signal(bad_lib, kernel_lib):
    runner = ProcessRunner()
    with runner.session() as s:
        with pytest.raises(RunnerError, match=r"process runner \(host\): the runner process "
                                              r"was killed by signal SIGSEGV during the call "
                                              r"of 'segfault'"):
            s.load_module(bad_lib)["segfault"]()
        assert not s.alive
        with pytest.raises(RunnerError, match="killed by signal SIGSEGV"):
            s.load_module(kernel_lib)
    with pytest.raises(RunnerError, match=r"exited with status 7 during the call of 'exit_7'"):
        runner.run(bad_lib, "exit_7", [])


def test_a_hanging_kernel_times_out_and_is_stopped(bad_lib):
    runner = ProcessRunner(timeout=1.0)
    with runner.session() as s:
        with pytest.raises(RunnerTimeoutError, match=r"process runner \(host\): no answer "
                                                     r"within 1 s .*'spin_forever'"):
            s.load_module(bad_lib)["spin_forever"]()
        assert not s.alive


def test_load_errors(tmp_path, kernel_lib):
    not_tvm = compile_shared("int f(void) { return 0; }", tmp_path / "plain.so")
    with ProcessRunner().session() as s:
        with pytest.raises(ModuleLoadError, match="defines no __tvm_module_meta"):
            s.load_module(not_tvm)
        with pytest.raises(FileNotFoundError):
            s.load_module(tmp_path / "missing.so")
        garbage = tmp_path / "garbage.so"
        garbage.write_bytes(b"not an ELF file")
        with pytest.raises(ModuleLoadError, match="not written by tvm"):
            s.load_module(garbage)
        with pytest.raises(ModuleLoadError, match="cannot load the library"):
            s.load_module(garbage, trusted=True)
        assert s.load_module(kernel_lib) is s.load_module(kernel_lib)


def test_missing_launcher_and_unknown_runner_are_clear_errors():
    with pytest.raises(RunnerUnavailableError, match=r"'no-such-emulator' is not on PATH"):
        ProcessRunner(launcher=["no-such-emulator"], cc="cc", triple="x-y-z").session()
    with pytest.raises(RunnerUnavailableError, match=r"no runner named 'nope'; built in: "
                                                     r"local, process"):
        create_runner("nope")
    with pytest.raises(TypeError, match="takes no options"):
        create_runner("local", timeout=3)
    assert isinstance(create_runner("local"), LocalRunner)


def test_server_build_is_cached():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    first = build_server(cc)
    assert build_server(cc) == first and first.exists()
    with pytest.raises(RunnerUnavailableError, match="'no-such-cc' is not on PATH"):
        build_server("no-such-cc")


def test_vm_bytecode_on_the_host_kernels_in_the_session(kernel_module, tmp_path):
    """An exported executable: bytecode in this process's VM, each kernel call forwarded."""
    path = tmp_path / "shift.so"
    Executable(shift_program(), [], kernel_module).export_library(path)
    x = np.linspace(0, 1, 9, dtype="float32")
    for runner in (LocalRunner(), ProcessRunner()):
        with runner.session() as s:
            ex = s.load_executable(path)
            assert isinstance(ex, Executable)
            out = VirtualMachine(ex, tvm.runtime.cpu())["main"](x)
            np.testing.assert_allclose(out.numpy(), x + 3)
    with ProcessRunner().session() as s:
        assert isinstance(s.load_executable(path).kernel_lib, RemoteModule)


def _cross(arch: str) -> tuple[str, str]:
    cc, qemu, sysroot = f"{arch}-linux-gnu-gcc", f"qemu-{arch}", f"/usr/{arch}-linux-gnu"
    if not (shutil.which(cc) and shutil.which(qemu) and Path(sysroot).is_dir()):
        pytest.skip(f"needs {cc}, {qemu} and {sysroot} (CI installs them)")
    return cc, sysroot


def test_server_under_an_emulator_prefix(tmp_path):
    """kernels.c cross-compiled for aarch64 and run by the server under qemu-aarch64."""
    cc, sysroot = _cross("aarch64")
    src = tmp_path / "kernels.c"
    src.write_text(kernel_source(KERNEL_META))
    lib = tmp_path / "kernels_aarch64.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    seal_file(lib)
    runner = ProcessRunner(launcher=["qemu-aarch64", "-L", sysroot], cc=cc,
                           triple="aarch64-linux-gnu")
    with runner.session() as s:
        assert s.machine == "aarch64"
        res = s.run(lib, "add_scalar", _args(16), repeat=2)
        np.testing.assert_array_equal(res.output(1), np.arange(16, dtype="float32") + 2.5)
        with pytest.raises(KernelError, match=r"process runner \(aarch64-linux-gnu\): "
                                              "checked_div: argument y must be non-zero"):
            s.load_module(lib)["checked_div"](3, 0)
