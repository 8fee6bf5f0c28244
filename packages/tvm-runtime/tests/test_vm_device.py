"""The VM on a non-CPU device with a device module (host programs) as its kernel library:
storage on the device, inputs moved there, device results, pooling, the device check, and
the executable file with the device module embedded.  The "GPU" is the fake ext_dev of
conftest (host memory behind a device API); its kernels are numpy."""

from __future__ import annotations

import ctypes
import os
import struct

import numpy as np
import pytest

import tvm.runtime
from tvm.runtime.device_module import DEVICE_MODULE_VERSION, DeviceModule, DevicePtr
from tvm.runtime.error import ModuleLoadError
from tvm.runtime.file_seal import SEAL_SIZE
from tvm.runtime.module import register_module_loader
from tvm.runtime.vm import Executable, VirtualMachine, VMError, load_executable
from tvm.runtime.vm.executable import PROGRAM_VERSION_EMBEDDED, TRAILER_MAGIC

EXT = 12


def _f32(ptr: DevicePtr, n: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(ptr.handle + ptr.offset))


class FakeGPUModule(DeviceModule):
    """Kernels of the fake ext_dev GPU, run with numpy on its (host) memory."""

    type_key = "fakegpu"
    device_type = EXT
    device_name = "ext_dev"
    file_suffix = "fakegpu"

    def launch(self, dev, kernel, args, grid, block):
        a, b, s, n = args
        assert grid[0] * block[0] >= n
        _f32(b, n)[:] = _f32(a, n) + s


def _payload():
    n = ["var", "n"]
    tensor = [{"name": p, "kind": "tensor", "dtype": "float32", "shape": [n], "data": p}
              for p in ("A", "B")]
    scalar = {"name": "s", "kind": "scalar", "dtype": "float32", "var": "s"}
    kernel = {"name": "add_k",
              "params": [{"name": "A", "kind": "handle", "dtype": "float32"},
                         {"name": "B", "kind": "handle", "dtype": "float32"},
                         {"name": "s", "kind": "scalar", "dtype": "float32"},
                         {"name": "n", "kind": "scalar", "dtype": "int32"}],
              "launch_params": ["blockIdx.x", "threadIdx.x"]}
    body = ["launch", "add_k", [["var", "A"], ["var", "B"], ["var", "s"], n],
            [["floordiv", ["add", n, 63], 64], 64]]
    return {"format": "fakegpu", "version": DEVICE_MODULE_VERSION, "target": "fakegpu",
            "kernels": [kernel],
            "functions": [{"name": "add_scalar", "params": [*tensor, scalar], "body": body}]}


def _program():
    """main(x: (n,) f32) -> x + 1 + 2, through two kernel calls and a constant."""
    n = ["var", 0]

    def alloc(dst):
        return [{"op": "alloc_storage", "dst": dst, "size": ["mul", n, 4], "device": 0,
                 "scope": "global"},
                {"op": "alloc_tensor", "dst": dst + 1, "storage": ["reg", dst], "offset": 0,
                 "shape": ["shape", [n]], "dtype": "float32"}]

    code = [
        {"op": "check_tensor_info", "arg": ["reg", 0], "ndim": 1, "dtype": "float32",
         "ctx": "main: parameter x"},
        {"op": "match_shape", "arg": ["reg", 0], "dims": [["store", 0]],
         "ctx": "main: parameter x"},
        *alloc(1),
        {"op": "call", "dst": None, "func": "add_scalar",
         "args": [["reg", 0], ["reg", 2], ["imm", 1.0]]},
        *alloc(3),
        {"op": "call", "dst": None, "func": "add_scalar",
         "args": [["reg", 2], ["reg", 4], ["imm", 2.0]]},
        {"op": "ret", "value": ["reg", 4]},
    ]
    return {"functions": [{"name": "main", "params": ["x"], "num_regs": 5, "heap_size": 1,
                           "heap_names": ["n"], "code": code}], "target": "fakegpu"}


@pytest.fixture
def gpu_exe(ext_device):
    return Executable(_program(), [np.arange(3, dtype="float32")], FakeGPUModule(_payload()))


def test_the_vm_runs_on_the_kernels_device(gpu_exe, ext_device):
    vm = VirtualMachine(gpu_exe)  # default: the device the kernels were built for
    assert vm.device == tvm.runtime.ext_dev(0)
    x = np.arange(70, dtype="float32")
    out = vm["main"](x)
    assert isinstance(out, tvm.runtime.Tensor) and out.device == tvm.runtime.ext_dev(0)
    np.testing.assert_array_equal(out.numpy(), x + 3)
    # constants live on the device too
    assert vm._constants[0].device == tvm.runtime.ext_dev(0)


def test_inputs_move_to_the_device_and_device_tensors_are_used_as_is(gpu_exe, ext_device,
                                                                    monkeypatch):
    vm = VirtualMachine(gpu_exe, tvm.runtime.ext_dev(0))
    copies = []
    real = tvm.runtime.Tensor.copyto
    monkeypatch.setattr(tvm.runtime.Tensor, "copyto",
                        lambda self, target: copies.append(self.device) or real(self, target))
    x = np.ones(5, "float32")
    on_device = tvm.runtime.tensor(x, device=tvm.runtime.ext_dev(0))
    np.testing.assert_array_equal(vm["main"](on_device).numpy(), x + 3)
    assert copies == []
    np.testing.assert_array_equal(vm["main"](tvm.runtime.tensor(x)).numpy(), x + 3)
    assert copies == [tvm.runtime.cpu(0)]


def test_device_storage_is_pooled_across_runs(gpu_exe, ext_device):
    vm = VirtualMachine(gpu_exe)
    x = np.ones(64, "float32")
    vm["main"](x)
    misses = vm.pool.stats["misses"]
    allocs = ext_device.calls.get("alloc", 0)
    for _ in range(3):
        vm["main"](x)
    assert vm.pool.stats["misses"] == misses
    assert ext_device.calls.get("alloc", 0) - allocs == 3  # only the inputs' copies
    vm.pool.clear()


def test_a_vm_on_another_device_is_refused(gpu_exe, ext_device):
    with pytest.raises(VMError, match=r"kernels run on ext_dev .*given cpu\(0\)"):
        VirtualMachine(gpu_exe, tvm.runtime.cpu())


def test_export_embeds_the_device_module(gpu_exe, ext_device, tmp_path):
    register_module_loader("fakegpu", lambda p: FakeGPUModule(
        __import__("json").loads(open(p).read())), override=True)
    path = tmp_path / "model.so"
    gpu_exe.export_library(path)
    data = path.read_bytes()[:-SEAL_SIZE]  # the file ends with its seal
    assert data.endswith(TRAILER_MAGIC)
    blob_len = struct.unpack("<Q", data[-16:-8])[0]
    assert len(data) == blob_len + 16  # no shared-library part: the module is in the blob
    version = struct.unpack("<I", data[8:12])[0]
    assert version == PROGRAM_VERSION_EMBEDDED
    ex = tvm.runtime.load_module(path)
    assert isinstance(ex.kernel_lib, FakeGPUModule) and ex.kernel_device_type == EXT
    assert "kernel_module" not in ex.program
    out = VirtualMachine(ex)["main"](np.arange(4, dtype="float32"))
    np.testing.assert_array_equal(out.numpy(), np.arange(4) + 3)
    np.testing.assert_array_equal(ex.constants[0], np.arange(3))


def test_a_missing_loader_is_reported(gpu_exe, ext_device, tmp_path):
    from tvm.runtime import module as module_mod

    gpu_exe.export_library(tmp_path / "m.so")
    saved = module_mod._loaders.pop("fakegpu", None)
    try:
        with pytest.raises(ModuleLoadError, match=r"'fakegpu' kernel module.*no loader"):
            load_executable(tmp_path / "m.so")
    finally:
        if saved is not None:
            module_mod._loaders["fakegpu"] = saved
    assert not os.path.exists(str(tmp_path / "m.so") + ".tmp")


def test_profile_waits_for_the_device_after_each_call(gpu_exe, ext_device):
    vm = VirtualMachine(gpu_exe)
    x = np.arange(70, dtype="float32")
    before = ext_device.calls.get("sync", 0)
    report = vm.profile("main", x, repeat=2, warmup=1)
    # 2 kernel calls per run and one wait at each run's end, over 1 warm-up + 2 timed runs
    assert ext_device.calls.get("sync", 0) - before == 3 * (2 + 1)
    row = report.row("add_scalar")
    assert row.count == 2 and row.device == "ext_dev(0)" and report.device == "ext_dev(0)"
    assert row.shapes == (("float32[70]", "float32[70]", "float"),)
