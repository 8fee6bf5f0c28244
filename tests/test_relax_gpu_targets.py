"""relax.build for the other GPU targets (CUDA, Metal): every legalized PrimFunc of the
walkthrough and of a small CNN gets GPU kernels, the executable records the device, and
the exported file (device module embedded) loads back.  Running needs the hardware: CUDA
runs against llvm where pycuda finds a GPU; Metal only generates code off macOS.  Without
nvcc, the CUDA build here stops at the CUDA source (the PTX compiler is replaced)."""

from __future__ import annotations

import numpy as np
import pytest
from relax_gpu_util import ensure_llvm

pytest.importorskip("tvm.relax")

from tvm import relax  # noqa: E402
from tvm.relax import op  # noqa: E402

import tvm.runtime as rt  # noqa: E402


def _cnn():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 3, 16, 16), "float32"))
    rng = np.random.default_rng(0)
    with bb.function("main", [x]):
        with bb.dataflow():
            w = relax.const(rng.standard_normal((8, 3, 3, 3)).astype("float32"))
            y = bb.emit(op.nn.relu(op.nn.conv2d(x, w, padding=1)))
            y = bb.emit(op.nn.max_pool2d(y, pool_size=2, strides=2))
            y = bb.emit(op.nn.adaptive_avg_pool2d(y, output_size=1))
            y = bb.emit(op.reshape(y, (1, 8)))
            d = relax.const(rng.standard_normal((8, 4)).astype("float32"))
            out = bb.emit_output(op.nn.softmax(op.matmul(y, d)))
        bb.emit_func_output(out)
    return bb.get()


def _walkthrough():
    from walkthrough_model import Walkthrough

    return Walkthrough


def _check_export(ex, tmp_path, module_type: str):
    path = tmp_path / "model.so"
    ex.export_library(path)
    loaded = rt.load_module(path)
    assert type(loaded.kernel_lib).__name__ == module_type
    assert loaded.kernel_lib.function_names == ex.kernel_lib.function_names
    assert loaded.as_text() == ex.as_text()
    for a, b in zip(loaded.constants, ex.constants):
        np.testing.assert_array_equal(a, b)
    return loaded


@pytest.fixture
def cuda_build(monkeypatch):
    """relax.build(..., target="cuda"); without nvcc the PTX step is a placeholder."""
    cuda = pytest.importorskip("tvm.target.cuda.plugin")
    cuda.ensure_registered()
    from tvm.target.cuda import build as cuda_build_mod
    from tvm.target.cuda.runtime import cuda_available

    try:
        from tvm.target.cuda.compiler import find_nvcc

        find_nvcc()
        have_nvcc = True
    except Exception:
        have_nvcc = False
    if not have_nvcc:
        monkeypatch.setattr(cuda_build_mod, "compile_ptx",
                            lambda source, arch, *a, **k: f"// PTX of {len(source)} chars\n")
    return lambda mod: relax.build(mod, target="cuda"), have_nvcc and cuda_available()


@pytest.mark.parametrize("make", [_walkthrough, _cnn], ids=["walkthrough", "cnn"])
def test_cuda_builds_and_exports(make, cuda_build, tmp_path):
    build, _ = cuda_build
    ex = build(make())
    lib = ex.kernel_lib
    assert type(lib).__name__ == "CUDAModule" and ex.kernel_device_type == 2
    source = lib.get_source()
    assert source.count("__global__") >= len(lib.function_names)
    assert "threadIdx.x" in source and "blockIdx.x" in source
    _check_export(ex, tmp_path, "CUDAModule")
    with pytest.raises(rt.vm.VMError, match="kernels run on cuda"):
        relax.VirtualMachine(ex, rt.cpu())


@pytest.mark.gpu
@pytest.mark.parametrize("make", [_walkthrough, _cnn], ids=["walkthrough", "cnn"])
def test_cuda_runs_like_llvm(make, cuda_build):
    build, can_run = cuda_build
    if not can_run:
        pytest.skip("no CUDA GPU (with pycuda and nvcc) to run the kernels")
    mod = make()
    ex = build(mod)
    ensure_llvm()
    rng = np.random.default_rng(0)
    params = mod["main"].params
    inputs = [rng.standard_normal([int(d) for d in p.struct_info.shape.values])
              .astype("float32") for p in params]
    gpu = relax.VirtualMachine(ex, rt.cuda())["main"](*inputs)
    cpu = relax.VirtualMachine(relax.build(mod, target="llvm"), rt.cpu())["main"](*inputs)
    assert gpu.device == rt.cuda(0)
    np.testing.assert_allclose(gpu.numpy(), cpu.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make", [_walkthrough, _cnn], ids=["walkthrough", "cnn"])
def test_metal_generates_and_exports(make, tmp_path):
    metal = pytest.importorskip("tvm.target.metal.plugin")
    metal.ensure_registered()
    ex = relax.build(make(), target="metal")
    lib = ex.kernel_lib
    assert type(lib).__name__ == "MetalModule" and ex.kernel_device_type == 8
    source = lib.get_source()
    assert source.count("kernel void") >= len(lib.function_names)
    assert "thread_position_in_threadgroup" in source
    _check_export(ex, tmp_path, "MetalModule")
