"""The opencl target without a device: the target kind, the plugin hooks and the generated
OpenCL C."""

import re

import pytest
from cl_kernels import cast_to, elementwise, matmul, row_reduce, softmax
from tvm import te, tir
from tvm.ir import Target
from tvm.target.opencl import plugin
from tvm.target.opencl.codegen import OpenCLPrinter, generate_device_code_opencl
from tvm.tir.codegen import CodegenError, dtype_of


def _source(func):
    return generate_device_code_opencl(func, Target("opencl")).source


def test_target_kind_is_a_gpu_with_opencl_limits():
    t = Target("opencl")
    assert t.device_type == 4 and "gpu" in t.keys
    assert (t.max_num_threads, t.thread_warp_size) == (256, 1)
    assert Target("opencl -max_num_threads=128").max_num_threads == 128
    assert tir.build.__module__ == "tvm.tir.build"
    from tvm.tir.build import is_gpu_target

    assert is_gpu_target(t)


def test_plugin_answers_only_for_opencl():
    assert plugin.tvm_tir_codegen(Target("opencl")) is not None
    from tvm.ir.target import TargetKind, register_target_kind, unregister_target_kind

    register_target_kind(TargetKind("opencltestother", 1))  # hooks receive Targets: of another kind
    try:
        assert plugin.tvm_tir_codegen(Target("opencltestother")) is None
    finally:
        unregister_target_kind("opencltestother")
    assert plugin.tvm_device_api(2) is None
    assert type(plugin.tvm_device_api(4)).__name__ == "OpenCLDeviceAPI"
    assert plugin.tvm_runtime_module_loader("clmod") is not None
    assert plugin.tvm_runtime_module_loader("so") is None


def test_elementwise_kernel_uses_work_item_functions_and_vector_loads():
    src = _source(elementwise(n=16))
    assert "__kernel void ew_kernel(__global float* restrict A" in src
    assert "get_group_id(0)" in src and "get_local_id(0)" in src
    assert re.search(r"vstore4\(\(\(exp\(vload4\(", src)  # native vector math on float4
    assert "vload4(0, A + " in src
    assert "expf" not in src  # OpenCL math is overloaded, not suffixed


def test_reduction_uses_a_local_memory_tree_with_barriers():
    src = _source(row_reduce(8, 512))
    assert re.search(r"__local float red_buf\d+\[256\];", src)
    assert src.count("barrier(CLK_LOCAL_MEM_FENCE)") >= 9
    assert "shuffle" not in src


def test_matmul_stages_tiles_in_local_memory():
    src = _source(matmul(64, 64, 32))
    found = sorted(re.findall(r"__local float (A|B)_shared\[(\d+)\];", src))
    assert found == [("A", "512"), ("B", "512")]  # 64 x kt=8 tiles
    assert "float C_local[16];" in src
    assert "get_local_id(1)" in src


def test_softmax_is_a_single_kernel():
    code = generate_device_code_opencl(softmax(4, 100), Target("opencl"))
    assert [k["name"] for k in code.kernels] == ["softmax_kernel"]
    (fn,) = code.functions
    assert fn["name"] == "softmax" and [p["name"] for p in fn["params"]] == ["A", "T_softmax"]


def test_half_and_double_enable_their_extensions():
    A = te.placeholder((64,), "float16", "A")
    B = te.compute((64,), lambda i: A[i] + te.const(1.0, "float16"), name="B")
    src = _source(te.create_prim_func([A, B]).with_attr("global_symbol", "h"))
    assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in src
    assert "__global half* restrict B" in src
    D = te.placeholder((64,), "float64", "D")
    E = te.compute((64,), lambda i: D[i] * 2.0, name="E")
    src = _source(te.create_prim_func([D, E]).with_attr("global_symbol", "d"))
    assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in src


def test_opencl_spellings():
    p = OpenCLPrinter("opencl")
    assert p.type_name(dtype_of("int64")) == "long"
    assert p.type_name(dtype_of("float32x4")) == "float4"
    assert p.vector_lane("v", dtype_of("float32x4"), 3) == "v.s3"
    assert p.barrier("global") == "barrier(CLK_GLOBAL_MEM_FENCE)"
    assert p.math_function("round", dtype_of("float32")) == "rint"
    assert p.reinterpret("x", dtype_of("float32"), dtype_of("int32")) == "as_int(x)"
    with pytest.raises(CodegenError, match="storage scope 'wmma.a' is not supported"):
        p.storage_scope_qualifier("wmma.a")
    with pytest.raises(CodegenError, match="unknown thread index 'vthread'"):
        p.thread_index("vthread")


def test_a_check_in_a_kernel_reports_through_the_error_record():
    from cl_kernels import checked_gather

    code = generate_device_code_opencl(checked_gather(), Target("opencl"))
    assert re.search(r"main_kernel\(.*, __global int\* tvm_error_record\)", code.source)
    assert ("atomic_cmpxchg((volatile __global int*)tvm_error_record, 0, 1) == 0"
            in code.source)
    assert "((__global long*)(tvm_error_record + 2))[0] = " in code.source
    assert code.kernels[0]["error_record"][0]["nargs"] == 2


@pytest.mark.parametrize("dtype,extensions", [
    ("float32", []), ("float16", ["cl_khr_fp16"]), ("float64", ["cl_khr_fp64"]),
])
def test_each_kernel_lists_the_extensions_its_dtypes_need(dtype, extensions):
    code = generate_device_code_opencl(cast_to(dtype), Target("opencl"))
    assert [k["extensions"] for k in code.kernels] == [extensions]
