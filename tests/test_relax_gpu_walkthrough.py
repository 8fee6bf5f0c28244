"""The walkthrough (R.matmul + R.add bias, 128x256 @ 256x512) on OpenCL (pocl in CI):
relax.build(target="opencl"), the VM on the device, inputs of every kind, device results
that match llvm, pooling, profiling, and the exported executable run by a process that has
only tvm-runtime and tvm-target-opencl's run side."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import textwrap

import numpy as np
import pytest
from relax_gpu_util import ensure_llvm, requires_opencl

pytest.importorskip("tvm.relax")

from tvm import relax  # noqa: E402

import tvm.runtime as rt  # noqa: E402
from tvm.runtime.vm import VirtualMachine, VMError  # noqa: E402
from walkthrough_model import Walkthrough  # noqa: E402

pytestmark = requires_opencl


@pytest.fixture(scope="module")
def executable():
    return relax.build(Walkthrough, target="opencl")


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((128, 256), dtype="float32"),
            rng.standard_normal((256, 512), dtype="float32"),
            rng.standard_normal(512, dtype="float32"))


@pytest.fixture(scope="module")
def cpu_executable():
    ensure_llvm()
    return relax.build(Walkthrough, target="llvm")


@pytest.fixture(scope="module")
def cpu_result(cpu_executable, inputs):
    return relax.VirtualMachine(cpu_executable, rt.cpu())["main"](*inputs).numpy()


def test_the_program_is_the_cpu_program_with_opencl_kernels(executable, cpu_executable):
    cpu = cpu_executable
    assert executable.as_text() == cpu.as_text()  # the bytecode does not depend on the target
    lib = executable.kernel_lib
    assert type(lib).__name__ == "OpenCLModule" and lib.function_names == ["fused_matmul_add"]
    source = lib.get_source()
    assert "__kernel" in source and "get_group_id(0)" in source
    assert executable.kernel_device_type == 4


def test_results_are_device_tensors_that_match_llvm(executable, inputs, cpu_result):
    vm = relax.VirtualMachine(executable, rt.opencl())
    out = vm["main"](*inputs)
    assert isinstance(out, rt.Tensor) and out.device == rt.opencl(0)
    np.testing.assert_allclose(out.numpy(), cpu_result, rtol=1e-4, atol=1e-4)
    ref = inputs[0].astype("float64") @ inputs[1].astype("float64") + inputs[2]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-3)


def test_inputs_of_every_kind(executable, inputs, cpu_result, monkeypatch):
    vm = VirtualMachine(executable)  # default device: where the kernels run
    assert vm.device == rt.opencl(0)
    copies = []
    real = rt.Tensor.copyto
    monkeypatch.setattr(rt.Tensor, "copyto",
                        lambda self, target: copies.append(str(self.device)) or real(self, target))
    on_device = [rt.tensor(a, device=rt.opencl()) for a in inputs]
    out = vm["main"](*on_device)  # device tensors are used as they are
    assert copies == []
    np.testing.assert_allclose(out.numpy(), cpu_result, rtol=1e-4, atol=1e-4)
    out = vm["main"](*[rt.tensor(a) for a in inputs])  # CPU tensors are copied over
    assert copies == ["cpu(0)"] * 3
    np.testing.assert_allclose(out.numpy(), cpu_result, rtol=1e-4, atol=1e-4)


def test_device_storage_is_reused_across_runs(executable, inputs):
    vm = VirtualMachine(executable, rt.opencl())
    vm["main"](*inputs)
    misses = vm.pool.stats["misses"]
    for _ in range(2):
        vm["main"](*inputs)
    assert vm.pool.stats["misses"] == misses and vm.pool.stats["hits"] >= 2


def test_checks_and_device_errors(executable, cpu_executable, inputs):
    vm = VirtualMachine(executable, rt.opencl())
    x, w, b = inputs
    with pytest.raises(VMError, match=r"parameter x has shape\[1\] = 300, expected 256"):
        vm["main"](np.zeros((128, 300), "float32"), w, b)
    with pytest.raises(VMError, match="kernels run on opencl"):
        VirtualMachine(executable, rt.cpu())
    with pytest.raises(VMError, match=r"kernels run on cpu .*given opencl\(0\)"):
        VirtualMachine(cpu_executable, rt.opencl())


def test_profile_times_the_kernel_on_the_device(executable, inputs):
    report = VirtualMachine(executable, rt.opencl()).profile("main", *inputs)
    row = report.row("fused_matmul_add")
    assert row.kind == "kernel" and row.count == 1 and row.total_s > 0


def test_exported_executable_runs_with_the_runtime_alone(executable, inputs, cpu_result,
                                                         tmp_path):
    from tvm.runtime.testing import runtime_only_python

    path = tmp_path / "walkthrough.so"
    executable.export_library(path)
    data = path.read_bytes()[:-48]  # without the file's seal (tvm.runtime.file_seal)
    assert struct.unpack("<Q", data[-16:-8])[0] + 16 == len(data)  # all in the program blob
    header_len = struct.unpack("<I", data[12:16])[0]
    header = json.loads(data[16:16 + header_len])
    assert header["kernel_module"]["format"] == "clmod"
    for name, a in zip("xwb", inputs):
        np.save(tmp_path / f"{name}.npy", a)
    np.save(tmp_path / "expected.npy", cpu_result)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        import tvm.runtime as rt
        from tvm.runtime.vm import VirtualMachine
        ex = rt.load_module({str(path)!r})
        vm = VirtualMachine(ex, rt.opencl())
        args = [np.load({str(tmp_path)!r} + f"/{{n}}.npy") for n in "xwb"]
        out = vm["main"](*args)
        assert out.device == rt.opencl(0), out.device
        np.testing.assert_allclose(out.numpy(), np.load({str(tmp_path)!r} + "/expected.npy"),
                                   rtol=1e-4, atol=1e-4)
        banned = [m for m in sys.modules if m.startswith(("tvm.ir", "tvm.tir", "tvm.relax",
                                                          "tvm.script", "llvmlite"))]
        assert not banned, banned
        print("ok", type(ex.kernel_lib).__name__)
    """))
    argv, env = runtime_only_python(tmp_path, extra_packages=["tvm.target.opencl", "pyopencl"],
                                    plugins={"opencl": "tvm.target.opencl.plugin"})
    out = subprocess.run([*argv, str(script)], capture_output=True, text=True, env=env,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["ok", "OpenCLModule"]
    # the same process without the opencl package says what is missing
    argv, env = runtime_only_python(tmp_path / "bare")
    out = subprocess.run([*argv, "-c", f"import tvm.runtime as rt; rt.load_module({str(path)!r})"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != 0 and "install tvm-target-opencl" in out.stderr, out.stderr
    assert os.path.exists(path)
