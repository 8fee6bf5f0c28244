"""The webgpu target without a device: the target kind, the plugin hooks, the generated WGSL
(bind groups, the uniform block, workgroup memory, barriers, the error record, what WGSL
cannot express) and the browser bundle."""

import json
import re

import pytest
from tvm import te, tir
from tvm.ir import Target
from tvm.target.webgpu import plugin
from tvm.target.webgpu.codegen import KERNEL_MARK, generate_device_code_webgpu
from tvm.target.webgpu.layout import LayoutError, kernel_layout
from tvm.tir.codegen import CodegenError
from wg_kernels import (
    checked_gather, elementwise, int64_copy_and_index, matmul, row_reduce, scale, unary,
)


def _code(func, target="webgpu"):
    return generate_device_code_webgpu(func, Target(target))


def _source(func, target="webgpu"):
    return _code(func, target)[0].source


def test_target_kind_is_a_gpu_with_webgpu_limits():
    t = Target("webgpu")
    assert t.device_type == 15 and "gpu" in t.keys  # kDLWebGPU
    assert (t.max_num_threads, t.thread_warp_size, t.max_shared_memory_per_block) == (256, 1, 16384)
    assert Target("webgpu -max_num_threads=128").max_num_threads == 128
    from tvm.tir.build import is_gpu_target

    assert is_gpu_target(t)


def test_plugin_answers_only_for_webgpu():
    assert plugin.tvm_tir_codegen(Target("webgpu")) is not None
    assert plugin.tvm_tir_codegen(Target("llvm") if False else Target("webgpu -max_num_threads=64"))
    assert plugin.tvm_device_api(7) is None
    assert type(plugin.tvm_device_api(15)).__name__ == "WebGPUDeviceAPI"
    assert plugin.tvm_runtime_module_loader("wgpumod") is not None
    assert plugin.tvm_runtime_module_loader("vkmod") is None


def test_each_kernel_is_a_shader_with_storage_buffers_and_a_workgroup_size():
    src = _source(elementwise(n=16))
    assert f"{KERNEL_MARK}ew_kernel" in src
    assert "@group(0) @binding(0) var<storage, read> A: array<f32>;" in src
    assert "@group(0) @binding(1) var<storage, read> B: array<f32>;" in src
    assert "@group(0) @binding(2) var<storage, read_write> C: array<f32>;" in src
    assert "override tvm_wg_x: u32 = 1u;" in src
    assert "@compute @workgroup_size(tvm_wg_x, tvm_wg_y, tvm_wg_z)" in src
    assert ("fn main(@builtin(workgroup_id) tvm_wid: vec3<u32>, "
            "@builtin(local_invocation_id) tvm_lid: vec3<u32>) {") in src
    assert "exp(" in src and "expf" not in src
    assert "vec4<f32>(" in src  # the default GPU schedule vectorizes by 4
    # WGSL has no C casts, no pointers, no ?: and no ++i
    assert not re.search(r"\((i32|f32|u32|int|float)\)\(", src) and "*)" not in src
    assert " ? " not in src and "++" not in src.replace("++)", "")


def test_scalars_are_one_uniform_block_in_parameter_order():
    code, _ = _code(scale())
    src = code.source
    assert re.search(r"struct tvm_params_t \{\n  alpha: f32,\n  k: i32,\n\}", src)
    assert "@group(0) @binding(2) var<uniform> tvm_params: tvm_params_t;" in src
    assert "let alpha: f32 = tvm_params.alpha;" in src
    lay = code.kernels[0]["layout"]
    assert lay["bindings"] == [0, 1, None, None] and lay["uniform"] == [None, None, 0, 4]
    assert (lay["uniform_binding"], lay["uniform_size"], lay["read_only"]) == (2, 16, [True, False])
    with pytest.raises(LayoutError, match="float64 scalar"):
        kernel_layout([{"name": "c", "kind": "scalar", "dtype": "float64"}], "k")


def test_reductions_use_workgroup_memory_and_barriers():
    src = _source(row_reduce(8, 512))
    assert re.search(r"^var<workgroup> red_buf\d*: array<f32, 256>;$", src, re.M)
    assert src.count("workgroupBarrier();") >= 8


def test_matmul_tiles_in_workgroup_memory():
    src = _source(matmul(64, 64, 32))
    assert re.search(r"^var<workgroup> A_shared\w*: array<f32, \d+>;", src, re.M)
    assert re.search(r"for \(var \w+: i32 = 0i; \w+ < \d+i; \w+\+\+\) \{", src)


def test_checks_write_the_error_record_atomically():
    code, _ = _code(checked_gather())
    k = code.kernels[0]
    assert k["error_record"] == [{"message": "g: index %lld is out of range of %lld",
                                  "nargs": 2}]
    src = code.source
    assert ("@group(0) @binding(3) var<storage, read_write> tvm_error_record: "
            "array<atomic<i32>>;") in src
    assert "atomicCompareExchangeWeak(&tvm_error_record[0], 0i, 1i)" in src
    # the index read from the tensor is recorded with both of its words
    assert re.search(r"atomicStore\(&tvm_error_record\[2\], (\w+)\.x\); "
                     r"atomicStore\(&tvm_error_record\[3\], \1\.y\);", src)
    assert k["layout"]["num_storage"] == 4 and k["layout"]["read_only"] == [True, True, False, False]


def test_int64_tensors_are_word_pairs_read_as_i32():
    src = _source(checked_gather())
    assert "var<storage, read> I: array<vec2<i32>>;" in src
    assert "A[tvm_i64_narrow(I[" in src and "fn tvm_i64_narrow(v: vec2<i32>) -> i32" in src
    src = _source(int64_copy_and_index())
    assert "var<storage, read_write> B: array<vec2<i32>>;" in src
    assert re.search(r"B\[[^\]]+\] = A\[[^\]]+\];", src)  # a copy keeps both words
    assert "= tvm_i64_widen(" in src  # results of 32-bit values are sign-extended


def test_int64_index_math_that_fits_is_int32():
    src = _source(elementwise(n=16))
    assert "i64" not in src.replace("tvm_i64", "")


def test_what_wgsl_cannot_express_is_refused_naming_the_kernel_and_the_dtype():
    n = tir.IntImm("int64", 64)
    A = te.placeholder((n,), "int64", "A")
    B = te.compute((n,), lambda i: A[i] + A[i], name="B")
    with pytest.raises(CodegenError, match=r"kernel \w+ computes int64 values of 'B' from "
                                           r"int64 tensor data; WGSL has no 64-bit integers"):
        _source(te.create_prim_func([A, B]))
    with pytest.raises(CodegenError, match=r"kernel ew_kernel uses .* dtype float64; WGSL has "
                                           r"no 64-bit floats"):
        _source(elementwise(n=8, dtype="float64"))
    with pytest.raises(CodegenError, match=r"kernel unary_kernel uses .*int8.*WGSL has no "
                                           r"8-bit integers"):
        _source(unary("int8", fn=lambda x: x + tir.const(1, "int8")))
    with pytest.raises(CodegenError, match="bfloat16"):
        _source(elementwise(n=8, dtype="bfloat16"))
    A = te.placeholder((8,), "int32", "A")
    B = te.compute((8,), lambda i: A[i].astype("int64") * tir.IntImm("int64", 3000000000),
                   name="B")
    with pytest.raises(CodegenError, match="constant 3000000000, which does not fit in 32 bits"):
        _source(te.create_prim_func([A, B]))
    with pytest.raises(TypeError, match="IRModule or a PrimFunc"):
        _source(42)


def test_bool_tensors_are_bytes_in_atomic_words():
    A = te.placeholder((8,), "float32", "A")
    B = te.compute((8,), lambda i: A[i] > 0.0, name="B")
    C = te.compute((8,), lambda i: tir.Select(B[i], A[i], 0.0), name="C")
    code, _ = _code(te.create_prim_func([A, B, C]))
    src = code.source
    assert "var<storage, read_write> B: array<atomic<u32>>;" in src
    assert re.search(r"atomicAnd\(&B\[\w+ >> 2u\], ~\(0xffu << \w+\)\); "
                     r"atomicOr\(&B\[\w+ >> 2u\], u32\(", src)
    assert re.search(r"\(\(atomicLoad\(&B\[\w+ >> 2u\]\) >> \w+\) & 0xffu\) != 0u", src)
    assert all(not ro for k in code.kernels for ro in k["layout"]["read_only"][1:2])


def test_float16_enables_f16_and_needs_shader_f16():
    code, printer = _code(elementwise(n=8, dtype="float16"))
    assert code.kernels[0]["features"] == ["shader-f16"]
    assert code.kernels[0]["wgsl"].startswith("enable f16;")
    assert "array<f16>" in code.source
    assert _code(elementwise(n=8))[0].kernels[0]["features"] == []


def test_infinities_and_nan_are_run_time_bits():
    src = _source(unary(fn=lambda x: tir.max(x, tir.const(float("-inf"), "float32"))))
    assert "bitcast<f32>(tvm_f32_special.y)" in src
    assert "var<private> tvm_f32_special: vec3<u32>" in src
    src = _source(unary(fn=lambda x: tir.Select(tir.isnan(x), tir.const(0.0, "float32"), x)))
    assert "(bitcast<u32>(" in src and "& 0x7fffffffu) > 0x7f800000u" in src


def test_names_that_are_wgsl_keywords_are_renamed():
    A = te.placeholder((64,), "float32", "var")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="loop")
    src = _source(te.create_prim_func([A, B]))
    assert " var: array" not in src and " loop: array" not in src


def test_build_makes_a_module_with_the_wgsl(tmp_path):
    from tvm.target.webgpu import export_web
    from tvm.target.webgpu.build import build

    mod = build(elementwise(n=16), Target("webgpu"))
    assert type(mod).__name__ == "WebGPUModule"
    assert mod.payload["kernels"][0]["wgsl"] in mod.get_source()
    assert tir.build(elementwise(n=16), target="webgpu").get_source() == mod.get_source()
    path = export_web(mod, tmp_path / "site")
    bundle = json.loads(path.read_text())
    assert bundle["format"] == "webgpu" and bundle["kernels"][0]["layout"]["read_only"]
    js = (tmp_path / "site" / "tvm_webgpu.js").read_text()
    assert "navigator.gpu" in js and "TVMWebGPU" in js
    with pytest.raises(TypeError, match="expected a webgpu module"):
        export_web(object(), tmp_path)


def test_asin_and_acos_go_through_atan2():
    for fn, name in ((tir.op.asin, "asin"), (tir.op.acos, "acos")):
        src = _source(unary(fn=fn))
        assert f"fn tvm_{name}_float32(x: f32) -> f32 {{ return atan2(" in src
        assert f"{name}(A" not in src


def test_wrapping_int64_negation_is_i32_negation():
    """int64(uint64(0) - uint64(x)), the division guards' -x, is computed like other int64
    values: in i32, whose negation wraps as well (no uint64 in WGSL)."""
    A = te.placeholder((64,), "int32", "A")

    def neg(i):
        x = tir.Cast("int64", A[i])
        return tir.Cast("int64", tir.Cast("uint64", tir.const(0, "int64")) - tir.Cast("uint64", x))

    B = te.compute((64,), neg, name="B")
    src = _source(te.create_prim_func([A, B]).with_attr("global_symbol", "neg"))
    assert "(0i - " in src and "u64" not in src
    uint = te.compute((64,), lambda i: tir.Cast("uint64", A[i]) * tir.const(3, "uint64"), name="U")
    with pytest.raises(CodegenError, match="dtype uint64; WGSL has no 64-bit integers"):
        _source(te.create_prim_func([A, uint]).with_attr("global_symbol", "u"))
