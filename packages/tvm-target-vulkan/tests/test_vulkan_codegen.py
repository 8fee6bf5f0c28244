"""The vulkan target without a device: the target kind, the plugin hooks, the generated GLSL
and (where glslang and spirv-val are installed) the SPIR-V made from it."""

import re

import pytest
from conftest import requires_glslang
from tvm import tir
from tvm.ir import Target
from tvm.target.vulkan import plugin
from tvm.target.vulkan.codegen import KERNEL_MARK, generate_device_code_vulkan
from tvm.target.vulkan.layout import LayoutError, kernel_layout
from tvm.tir.codegen import CodegenError
from vk_kernels import (
    checked_gather, compare, elementwise, int_power, matmul, row_reduce, scale, unary,
)


def _code(func, target="vulkan"):
    return generate_device_code_vulkan(func, Target(target))


def _source(func, target="vulkan"):
    return _code(func, target)[0].source


def test_target_kind_is_a_gpu_with_vulkan_limits():
    t = Target("vulkan")
    assert t.device_type == 7 and "gpu" in t.keys  # kDLVulkan
    assert (t.max_num_threads, t.thread_warp_size) == (128, 1)
    assert Target("vulkan -max_num_threads=256").max_num_threads == 256
    from tvm.tir.build import is_gpu_target

    assert is_gpu_target(t)


def test_plugin_answers_only_for_vulkan():
    assert plugin.tvm_tir_codegen(Target("vulkan")) is not None
    from tvm.ir.target import TargetKind, register_target_kind, unregister_target_kind

    register_target_kind(TargetKind("vulkantestother", 1))  # hooks receive Targets: of another kind
    try:
        assert plugin.tvm_tir_codegen(Target("vulkantestother")) is None
    finally:
        unregister_target_kind("vulkantestother")
    assert plugin.tvm_device_api(4) is None
    assert type(plugin.tvm_device_api(7)).__name__ == "VulkanDeviceAPI"
    assert plugin.tvm_runtime_module_loader("vkmod") is not None
    assert plugin.tvm_runtime_module_loader("clmod") is None


def test_each_kernel_is_a_shader_with_storage_buffers_and_a_workgroup_size():
    src = _source(elementwise(n=16))
    assert src.startswith("#version 450")
    assert f"{KERNEL_MARK}ew_kernel" in src
    assert "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;" in src
    for b, name in enumerate("ABC"):
        assert (f"layout(std430, set = 0, binding = {b}) buffer tvm_buffer_{b} "
                f"{{ float {name}[]; }};") in src
    assert "void main() {" in src
    assert "gl_WorkGroupID.x" in src and "gl_LocalInvocationID.x" in src
    assert "exp(" in src and "expf" not in src
    # GLSL has no C casts and no pointers
    assert not re.search(r"\((int|float|uint|int64_t)\)\(", src) and "*)" not in src


def test_scalars_are_push_constants_in_parameter_order():
    src = _source(elementwise())  # the symbolic row count n is a kernel scalar
    assert re.search(r"layout\(push_constant\) uniform tvm_push_constants \{ "
                     r"layout\(offset = 0\) int n; \};", src)
    src = _source(scale())
    assert "layout(offset = 0) float alpha;" in src
    lay = kernel_layout([{"name": "A", "kind": "handle"}, {"name": "n", "kind": "scalar",
                                                           "dtype": "int32"},
                         {"name": "m", "kind": "scalar", "dtype": "int64"},
                         {"name": "B", "kind": "handle"}])
    assert lay.bindings == (0, None, None, 1) and lay.push == (None, 0, 8, None)
    assert lay.push_size == 16 and lay.num_buffers == 2
    with pytest.raises(LayoutError, match="int8 scalar"):
        kernel_layout([{"name": "c", "kind": "scalar", "dtype": "int8"}], "k")


def test_reductions_use_workgroup_shared_memory_and_barriers():
    src = _source(row_reduce(8, 512))
    assert re.search(r"^shared float red_buf\d+\[128\];$", src, re.M)  # at shader scope
    assert src.count("barrier();") >= 8 and "memoryBarrierShared();" in src
    assert "subgroup" not in src


def test_warp_reductions_are_subgroup_shuffles():
    code, _ = _code(row_reduce(5, 1000), "vulkan -thread_warp_size=8 -max_num_threads=64")
    src = code.source
    assert "#extension GL_KHR_shader_subgroup_shuffle_relative : require" in src
    assert "subgroupShuffleDown(" in src
    assert code.kernels[0]["subgroup_size"] == 8
    assert "subgroup_shuffle" in code.kernels[0]["features"]


def test_matmul_tiles_in_shared_memory():
    src = _source(matmul(64, 64, 32))
    assert re.search(r"^shared float A_shared\w*\[\d+\];", src, re.M)


def test_checks_write_the_error_record_atomically():
    code, _ = _code(checked_gather())
    k = code.kernels[0]
    assert k["error_record"] == [{"message": "g: index %lld is out of range of %lld",
                                  "nargs": 2}]
    src = code.source
    assert ("layout(std430, set = 0, binding = 3) buffer tvm_error_buffer "
            "{ int tvm_error_record[]; };") in src
    assert "atomicCompSwap(tvm_error_record[0], 0, 1) == 0" in src
    assert re.search(r"tvm_error_record\[2\] = int\(err_arg\w*\); tvm_error_record\[3\] = "
                     r"int\(err_arg\w* >> 32l\);", src)
    assert "GL_EXT_shader_explicit_arithmetic_types_int64" in src
    assert "shaderInt64" in k["features"]


def test_int64_indices_address_buffers_as_int():
    src = _source(checked_gather())
    assert re.search(r"A\[int\(", src)


def test_float16_needs_the_16bit_extensions_and_features():
    code, _ = _code(elementwise(n=8, dtype="float16"))
    src = code.source
    assert "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require" in src
    assert "#extension GL_EXT_shader_16bit_storage : require" in src
    assert "float16_t A[];" in src and "float16_t(" in src
    assert {"shaderFloat16", "storageBuffer16BitAccess"} <= set(code.kernels[0]["features"])


def test_bool_tensors_are_stored_as_bytes():
    src = _source(compare())
    assert "uint8_t C[];" in src and "= uint8_t(" in src
    assert "GL_EXT_shader_8bit_storage" in src


def test_unsupported_input_raises_codegen_errors():
    with pytest.raises(CodegenError, match="bfloat16 is not supported"):
        _source(elementwise(n=8, dtype="bfloat16"))
    with pytest.raises(TypeError, match="IRModule or a PrimFunc"):
        _source(42)


@requires_glslang
def test_every_shader_compiles_to_valid_spirv():
    """glslang compiles each kernel; compile_glsl runs spirv-val on it where installed."""
    from tvm.target.vulkan.spirv import compile_glsl

    for func in (elementwise(), matmul(64, 64, 32), row_reduce(8, 512), scale(),
                 checked_gather(), compare(), elementwise(n=8, dtype="float16"), int_power(),
                 unary(tir.op.asin), unary(tir.op.acos)):
        code, printer = generate_device_code_vulkan(func, Target("vulkan"))
        for k in code.kernels:
            spirv = compile_glsl(printer.kernel_source(k["name"]), k["name"])
            assert spirv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number


@requires_glslang
def test_glslang_errors_quote_the_shader_line():
    from tvm.target.vulkan.spirv import compile_glsl

    src = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { no_such_function(1); }\n"
    with pytest.raises(CodegenError, match=r"(?s)glslang rejected.*line 3: void main\(\) "
                                           r"\{ no_such_function"):
        compile_glsl(src, "bad")


@requires_glslang
def test_build_makes_a_module_with_spirv_and_glsl():
    from tvm.target.vulkan.build import build

    mod = build(elementwise(n=16), Target("vulkan"))
    assert type(mod).__name__ == "VulkanModule"
    assert mod.get_source().startswith("#version 450")
    assert mod.payload["kernels"][0]["spirv"]
    assert tir.build(elementwise(n=16), target="vulkan").get_source() == mod.get_source()


def test_int64_index_math_that_fits_is_int32_and_data_stays_int64():
    from tvm import te

    n = tir.IntImm("int64", 1000)
    A = te.placeholder((n,), "int64", "A")
    B = te.compute((n,), lambda i: A[i] * tir.IntImm("int64", 3000000000), name="B")
    src = _source(te.create_prim_func([A, B]))
    assert "int64_t A[];" in src and "3000000000l" in src  # the data: int64
    body = src[src.index("void main()"):]
    assert "A[int(" not in body and "int64_t(uint(" not in body  # indices: int32
    m = tir.Var("m", "int64")  # unbounded: the index arithmetic stays 64-bit
    A = te.placeholder((m,), "float32", "A")
    B = te.compute((m,), lambda i: A[i] + 1.0, name="B")
    assert "A[int(" in _source(te.create_prim_func([A, B]))


@requires_glslang
def test_names_that_are_glsl_keywords_are_renamed():
    from tvm import te
    from tvm.target.vulkan.spirv import compile_glsl

    A = te.placeholder((64,), "float32", "in")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="out")
    code, printer = generate_device_code_vulkan(te.create_prim_func([A, B]), Target("vulkan"))
    assert " in[]" not in code.source and " out[]" not in code.source
    compile_glsl(printer.kernel_source(code.kernels[0]["name"]))


@requires_glslang
def test_spirv_is_cached_by_content(tmp_path, monkeypatch):
    from tvm.target.vulkan.spirv import cache_dir, compile_glsl

    monkeypatch.setenv("TVM_CACHE_DIR", str(tmp_path))
    src = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
    first = compile_glsl(src, "k")
    files = list(cache_dir().glob("*.spv"))
    assert cache_dir() == tmp_path / "vulkan" and len(files) == 1
    assert files[0].read_bytes() == first
    files[0].write_bytes(b"\x03\x02\x23\x07cached")  # a second compile reads the cache
    assert compile_glsl(src, "k") == b"\x03\x02\x23\x07cached"
    assert compile_glsl(src, "k", use_cache=False) == first


def test_float64_pow_of_an_integral_exponent_is_repeated_squaring():
    """GLSL has no double pow: integer power (float64 pow of int32 casts) squares."""
    src = _source(int_power())
    assert "double tvm_pow_integral_float64(double a, double b)" in src
    assert "tvm_pow_integral_float64(double(" in src and " pow(" not in src


@pytest.mark.parametrize("fn", [tir.op.exp, tir.op.log, tir.op.sin, lambda x: tir.op.power(x, x)])
def test_other_float64_transcendentals_are_refused_naming_the_kernel(fn):
    with pytest.raises(CodegenError, match=r"kernel unary_kernel uses tir\.\w+ of dtype "
                                           r"float64; GLSL has float64 arithmetic but no"):
        _source(unary(fn, "float64"))


def test_asin_and_acos_go_through_two_argument_atan():
    for fn, name in ((tir.op.asin, "asin"), (tir.op.acos, "acos")):
        src = _source(unary(fn))
        assert f"float tvm_{name}_float32(float x) {{ return atan(" in src
        assert f"{name}(A" not in src
