"""The metal target: Metal Shading Language generation (anywhere) and a device API that
says clearly that running needs macOS."""

import re
import sys

import numpy as np
import pytest
from tvm import te, tir
from tvm.ir import Target
from tvm.script import tir as T
from tvm.target.metal import plugin
from tvm.target.metal.codegen import MetalPrinter, generate_device_code_metal
from tvm.tir.codegen import CodegenError, dtype_of


def _source(func, target="metal"):
    return generate_device_code_metal(func, Target(target)).source


def _elementwise(n=4096):
    A = te.placeholder((n,), "float32", "A")
    B = te.compute((n,), lambda i: te.exp(A[i]) * 2.0, name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", "ew")


def _row_sum(rows=16, cols=1024):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", "row_sum")


def _matmul(m=64, n=64, k=32):
    A = te.placeholder((m, k), "float32", "A")
    B = te.placeholder((k, n), "float32", "B")
    r = te.reduce_axis((0, k), "r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "matmul")


@T.prim_func
def scale(a: T.handle, b: T.handle, alpha: T.float32):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            v = T.axis.spatial(n, i)
            B[v] = A[v] * alpha


def test_target_kind_and_plugin_hooks():
    t = Target("metal")
    assert t.device_type == 8 and "gpu" in t.keys
    assert (t.max_num_threads, t.thread_warp_size) == (256, 32)
    assert plugin.tvm_tir_codegen(t) is not None
    from tvm.ir.target import TargetKind, register_target_kind, unregister_target_kind

    register_target_kind(TargetKind("metaltestother", 2, default_keys=("gpu",)))
    try:
        assert plugin.tvm_tir_codegen(Target("metaltestother")) is None
    finally:
        unregister_target_kind("metaltestother")
    assert type(plugin.tvm_device_api(8)).__name__ == "MetalDeviceAPI"
    assert plugin.tvm_device_api(2) is None
    assert plugin.tvm_runtime_module_loader("mtlmod") is not None


def test_kernels_take_buffers_scalars_and_thread_positions():
    src = _source(scale)
    assert "#include <metal_stdlib>" in src and "using namespace metal;" in src
    assert re.search(r"kernel void scale_kernel\(device float\* A \[\[buffer\(0\)\]\], "
                     r"device float\* B \[\[buffer\(1\)\]\], constant int& n \[\[buffer\(2\)\]\], "
                     r"constant float& alpha \[\[buffer\(3\)\]\], "
                     r"uint3 blockIdx \[\[threadgroup_position_in_grid\]\], "
                     r"uint3 threadIdx \[\[thread_position_in_threadgroup\]\]\)", src)
    assert "int blockIdx_x = (int)(blockIdx.x);" in src


def test_vectors_use_metal_types_and_native_math():
    src = _source(_elementwise())
    assert "*(device float4*)(B + " in src
    assert "exp((*(device float4*)(A + " in src  # metal::exp on a float4
    assert "float4(2.0f)" in src


def test_reduction_uses_simd_shuffles_threadgroup_memory_and_barriers():
    src = _source(_row_sum())
    assert src.count("simd_shuffle_down(") == 5 + 3
    assert re.search(r"threadgroup float red_buf\d+\[8\];", src)
    assert "threadgroup_barrier(mem_flags::mem_threadgroup);" in src
    tree = _source(_row_sum(), "metal -thread_warp_size=1")
    assert "simd_shuffle" not in tree and "threadgroup float red_buf" in tree


def test_matmul_tiles_in_threadgroup_memory():
    src = _source(_matmul())
    assert "threadgroup float A_shared[512];" in src
    assert "threadgroup float B_shared[512];" in src
    assert "uint3 threadIdx [[thread_position_in_threadgroup]]" in src


def test_metal_spellings_and_limits():
    p = MetalPrinter("metal")
    assert p.type_name(dtype_of("float16")) == "half"
    assert p.type_name(dtype_of("bfloat16")) == "bfloat"
    assert p.reinterpret("x", dtype_of("float32"), dtype_of("uint32")) == "as_type<uint>(x)"
    assert p.vector_lane("v", dtype_of("float32x4"), 1) == "v.y"
    with pytest.raises(CodegenError, match="Metal has no double precision"):
        p.type_name(dtype_of("float64"))
    with pytest.raises(CodegenError, match="no vector type for float32x8"):
        p.type_name(dtype_of("float32x8"))
    with pytest.raises(CodegenError, match="storage scope 'warp' is not supported"):
        p.storage_scope_qualifier("warp")


def test_running_needs_macos(tmp_path):
    import tvm.runtime as rt

    dev = rt.metal(0)
    assert not dev.exist
    expected = "needs macOS" if sys.platform != "darwin" else "Metal runtime binding"
    with pytest.raises(rt.DeviceUnavailableError, match=expected):
        rt.tensor(np.zeros(4, "float32"), device=dev)
    assert dev.attributes["available"] is False
    mod = tir.build(_elementwise(1024), target="metal")
    path = tmp_path / "ew.mtlmod"
    mod.export_library(str(path))
    loaded = rt.load_module(str(path))
    assert loaded.get_source() == mod.get_source() and loaded.function_names == ["ew"]
    with pytest.raises(rt.DeviceUnavailableError, match=expected):
        loaded.launch(dev, "ew_kernel", [], (1, 1, 1), (1, 1, 1))


def test_a_check_in_a_kernel_reports_through_the_error_record():
    a = te.placeholder((16,), "float32", name="A")
    i = te.placeholder((8,), "int64", name="I")

    def index(v):
        return tir.checked(v, tir.all(v >= 0, v < 16), "g: index %lld is out of range", v)

    func = te.create_prim_func([a, i, te.compute((8,), lambda r: a[index(i[r])], name="B")])
    src = _source(func)
    assert re.search(r"main_kernel\(.*device int\* tvm_error_record \[\[buffer\(3\)\]\]", src)
    assert "atomic_compare_exchange_weak_explicit((device atomic_int*)tvm_error_record" in src
    assert "((device long*)(tvm_error_record + 2))[0] = " in src
