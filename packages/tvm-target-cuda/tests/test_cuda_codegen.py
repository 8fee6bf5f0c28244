"""The cuda target without a GPU: the target kind, the plugin hooks, the generated CUDA C,
and PTX compiled by nvcc for sm_80 and sm_90 containing the expected instructions."""

import re

import numpy as np
import pytest
from conftest import requires_nvcc
from cuda_kernels import elementwise, matmul, row_sum, softmax
from tvm import te, tir
from tvm.ir import Target
from tvm.target.cuda import plugin
from tvm.target.cuda.codegen import CUDAPrinter, generate_device_code_cuda
from tvm.tir.codegen import CodegenError, dtype_of


def _source(func, target="cuda"):
    return generate_device_code_cuda(func, Target(target)).source


def test_target_kind_and_its_limits():
    t = Target("cuda -arch=sm_90")
    assert t.device_type == 2 and "gpu" in t.keys
    assert (t.arch, t.max_num_threads, t.thread_warp_size) == ("sm_90", 1024, 32)
    assert t.max_shared_memory_per_block == 49152
    assert Target("cuda").arch == "sm_80"


def test_plugin_answers_only_for_cuda():
    assert plugin.tvm_tir_codegen(Target("cuda")) is not None
    from tvm.ir.target import TargetKind, register_target_kind, unregister_target_kind

    register_target_kind(TargetKind("cudatestother", 4))  # hooks receive Targets: of another kind
    try:
        assert plugin.tvm_tir_codegen(Target("cudatestother")) is None
    finally:
        unregister_target_kind("cudatestother")
    assert plugin.tvm_device_api(4) is None
    assert type(plugin.tvm_device_api(2)).__name__ == "CUDADeviceAPI"
    assert plugin.tvm_runtime_module_loader("cumod") is not None


def test_kernels_are_extern_c_global_functions_with_launch_bounds():
    src = _source(elementwise())
    assert re.search(r'extern "C" __global__ void __launch_bounds__\(256\) ew_kernel\('
                     r"float\* __restrict__ A, float\* __restrict__ B, float\* __restrict__ C\)",
                     src)
    assert "blockIdx.x" in src and "threadIdx.x" in src
    # vectorized by 4: one float4 load per operand and one float4 store
    assert src.count("(*(float4*)(A + ") == 1 and "*(float4*)(C + " in src
    assert "make_float4(" in src


def test_reduction_uses_warp_shuffles():
    src = _source(row_sum())
    assert src.count("__shfl_down_sync(mask, ") == 5 + 3  # 32 lanes, then 8 warps
    assert "__activemask()" in src and "__shared__ float red_buf" in src
    assert "__syncthreads();" in src


def test_matmul_uses_shared_tiles_and_register_blocking():
    src = _source(matmul())
    assert "__shared__ float A_shared[512];" in src and "__shared__ float B_shared[512];" in src
    assert "float C_local[16];" in src
    assert src.count("__syncthreads();") == 2
    assert "__launch_bounds__(256)" in src


def test_half_and_bfloat16_use_the_cuda_headers():
    src = _source(elementwise(1024, "float16"))
    assert "#include <cuda_fp16.h>" in src and "__half* __restrict__ A" in src
    assert "__half2float(" in src and "__float2half(" in src
    A = te.placeholder((256,), "bfloat16", "A")
    B = te.compute((256,), lambda i: A[i] * te.const(2.0, "bfloat16"), name="B")
    src = _source(te.create_prim_func([A, B]).with_attr("global_symbol", "bf"))
    assert "#include <cuda_bf16.h>" in src and "__nv_bfloat16* __restrict__ B" in src
    assert "__bfloat162float(" in src and "__float2bfloat16(" in src


def test_cuda_spellings():
    p = CUDAPrinter("cuda")
    assert p.type_name(dtype_of("int64")) == "long long"
    assert p.type_name(dtype_of("int32x4")) == "int4"
    assert p.vector_lane("v", dtype_of("float32x4"), 2) == "v.z"
    assert p.float_literal(float("inf"), dtype_of("float32")) == "__int_as_float(0x7F800000)"
    assert p.float_literal(float("-inf"), dtype_of("float32")) == "__int_as_float(0xFF800000)"
    assert p.reinterpret("x", dtype_of("float32"), dtype_of("int32")) == "__float_as_int(x)"
    assert p.barrier("shared") == "__syncthreads()"
    assert p.storage_scope_qualifier("shared") == "__shared__ "
    with pytest.raises(CodegenError, match="no CUDA vector type for float32x8"):
        p.type_name(dtype_of("float32x8"))
    with pytest.raises(CodegenError, match="storage scope 'texture' is not supported"):
        p.storage_scope_qualifier("texture")


def test_the_default_schedule_is_shared_with_other_gpu_targets():
    from tvm.tir.schedule import gpu_rules

    assert plugin.hooks.kind == "cuda"
    mod = tir.build.__globals__["_as_module"](row_sum(), None)
    scheduled = plugin.tvm_tir_default_schedule(mod, Target("cuda"))
    again = gpu_rules.apply_default_gpu_schedule(mod, Target("cuda"))
    from tvm.ffi import structural_equal

    assert structural_equal(scheduled, again)
    from tvm.ir.target import TargetKind, register_target_kind, unregister_target_kind

    register_target_kind(TargetKind("cudatestgpu", 4, default_keys=("gpu",)))
    try:
        assert plugin.tvm_tir_default_schedule(mod, Target("cudatestgpu")) is None
    finally:
        unregister_target_kind("cudatestgpu")


# --------------------------------------------------------------------------- PTX with nvcc

ARCHS = ["sm_80", "sm_90"]


def _ptx(func, arch):
    return tir.build(func, target=f"cuda -arch={arch}").get_source("ptx")


@requires_nvcc
@pytest.mark.parametrize("arch", ARCHS)
def test_matmul_ptx_has_fma_shared_loads_and_barriers(arch):
    ptx = _ptx(matmul(), arch)
    assert f".target {arch}" in ptx
    assert "fma.rn.f32" in ptx and "ld.shared" in ptx and "bar.sync" in ptx
    assert ".visible .entry matmul_kernel" in ptx


@requires_nvcc
@pytest.mark.parametrize("arch", ARCHS)
def test_reduction_ptx_has_warp_shuffles(arch):
    ptx = _ptx(row_sum(), arch)
    assert "shfl.sync.down.b32" in ptx and "bar.sync" in ptx and "st.shared" in ptx


@requires_nvcc
@pytest.mark.parametrize("arch", ARCHS)
def test_elementwise_ptx_has_vector_loads_and_stores(arch):
    ptx = _ptx(elementwise(), arch)
    assert re.search(r"ld\.global(\.nc)?\.v4\.f32", ptx)
    assert "st.global.v4.f32" in ptx


@requires_nvcc
def test_softmax_half_and_bfloat16_compile():
    ptx = _ptx(softmax(), "sm_80")
    assert ptx.count(".entry") == 1 and "ex2.approx" in ptx
    assert ".f16" in _ptx(elementwise(1024, "float16"), "sm_80")
    A = te.placeholder((256,), "bfloat16", "A")
    B = te.compute((256,), lambda i: A[i] + A[i], name="B")
    assert ".entry" in _ptx(te.create_prim_func([A, B]).with_attr("global_symbol", "bf"),
                            "sm_90")


@requires_nvcc
def test_nvcc_errors_keep_the_source_and_bad_arch_is_rejected():
    from tvm.target.cuda.compiler import NVCCError, compile_ptx

    with pytest.raises(NVCCError, match=r"nvcc failed \(exit \d+\) on generated source "):
        compile_ptx("this is not CUDA", "sm_80")
    with pytest.raises(ValueError, match="-arch must look like sm_80"):
        compile_ptx("", "volta")


@requires_nvcc
def test_module_builds_exports_and_loads_without_a_gpu(tmp_path):
    import tvm.runtime as rt

    mod = tir.build(row_sum(4, 64), target="cuda")
    assert mod.arch == "sm_80" and "row_sum_kernel" in mod.kernels
    path = tmp_path / "row_sum.cumod"
    mod.export_library(str(path))
    loaded = rt.load_module(str(path))
    assert type(loaded).__name__ == "CUDAModule"
    assert loaded.get_source("ptx") == mod.get_source("ptx")
    assert loaded.function_names == ["row_sum"]
    with pytest.raises(TypeError, match="on the cuda device, got a numpy array"):
        loaded["row_sum"](np.zeros((4, 64), "float32"), np.zeros(4, "float32"))


# --------------------------------------------------------------------------- PTX with NVRTC


def _has_nvrtc():
    from tvm.target.cuda.nvrtc import nvrtc_available

    return nvrtc_available()


requires_nvrtc = pytest.mark.skipif(not _has_nvrtc(), reason="NVRTC is not installed (pip "
                                                             "install nvidia-cuda-nvrtc)")


@requires_nvrtc
@pytest.mark.parametrize("arch", ARCHS)
def test_nvrtc_compiles_the_same_kernels(arch):
    target = f"cuda -arch={arch} -compiler=nvrtc"
    ptx = tir.build(matmul(), target=target).get_source("ptx")
    assert "fma.rn.f32" in ptx and "ld.shared" in ptx and "bar.sync" in ptx
    assert f".target {arch}" in ptx.replace("compute_", "sm_")
    assert "shfl.sync.down" in tir.build(row_sum(), target=target).get_source("ptx")
    assert ".f16" in tir.build(elementwise(1024, "float16"), target=target).get_source("ptx")


@requires_nvrtc
def test_nvrtc_is_the_fallback_without_nvcc(monkeypatch):
    from tvm.target.cuda import compiler

    def missing(nvcc=None):
        raise compiler.NVCCNotFoundError("no nvcc here")

    monkeypatch.setattr(compiler, "find_nvcc", missing)
    src = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }'
    assert ".entry k" in compiler.compile_ptx(src, "sm_80", use_cache=False)
    with pytest.raises(compiler.NVCCNotFoundError, match="no nvcc here"):
        compiler.compile_ptx(src, "sm_80", compiler="nvcc")
    with pytest.raises(ValueError, match="-compiler must be nvcc, nvrtc or auto"):
        compiler.compile_ptx(src, "sm_80", compiler="clang")


@requires_nvrtc
def test_nvrtc_errors_carry_the_log():
    from tvm.target.cuda.nvrtc import NVRTCError, nvrtc_compile

    with pytest.raises(NVRTCError, match=r"(?s)NVRTC rejected the generated source.*error: "):
        nvrtc_compile("this is not CUDA", "sm_80")


def test_a_check_in_a_kernel_reports_through_the_error_record():
    from cuda_kernels import checked_gather

    code = generate_device_code_cuda(checked_gather(), Target("cuda"))
    src = code.source
    assert re.search(r"main_kernel\(.*, int\* tvm_error_record\)", src)
    assert "atomicCAS(tvm_error_record, 0, 1) == 0" in src
    assert "((long long*)(tvm_error_record + 2))[1] = " in src
    assert "return;" in src
    (kernel,) = code.kernels
    assert kernel["error_record"] == [{"message": "g: index %lld is out of range of %lld",
                                       "nargs": 2}]
    assert "tvm_error_record" not in [p["name"] for p in kernel["params"]]


def test_a_kernel_with_barriers_records_a_failed_check_without_returning():
    from cuda_kernels import checked_gather

    src = _source(checked_gather(reduce=True))
    assert "__syncthreads()" in src and "atomicCAS(tvm_error_record" in src
    assert "return;" not in src  # a thread that left would never reach the barrier


def test_kernels_without_checks_take_no_error_record():
    code = generate_device_code_cuda(elementwise(), Target("cuda"))
    assert "tvm_error_record" not in code.source
    assert "error_record" not in code.kernels[0]




@requires_nvrtc
def test_a_checked_kernel_compiles_to_ptx():
    from cuda_kernels import checked_gather

    for reduce in (False, True):
        ptx = tir.build(checked_gather(reduce), target="cuda -arch=sm_80 -compiler=nvrtc"
                        ).get_source("ptx")
        assert "atom.global.cas.b32" in ptx
