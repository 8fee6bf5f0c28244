"""The shared C-like printer (tvm.tir.codegen): source text only, no compiler needed."""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvm import tir
from tvm.tir import ForKind
from tvm.tir.codegen import CLikePrinter, CodegenError, NameTable, c_string_literal, dtype_of
from tvm.tir.codegen.c_types import (
    C_KEYWORDS, count_printf_conversions, float_to_bf16_bits, sanitize_identifier,
)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def v(name, dtype="int32"):
    return tir.Var(name, dtype)


def buf(name, shape, dtype="float32", data=None):
    return tir.decl_buffer(shape, dtype, name, data=data)


def func(name, params, body, buffer_map=None, **attrs):
    return tir.PrimFunc(params, body, buffer_map=buffer_map or {},
                        attrs={"global_symbol": name, **attrs})


def source_of(*funcs, printer=None):
    p = printer or CLikePrinter()
    for f in funcs:
        p.add_function(f)
    return p.finish()


def one_function(text: str, name: str) -> str:
    start = text.index(f" {name}(")
    return text[text.rfind("\n", 0, start) + 1: text.index("\n}\n", start) + 3]


# --------------------------------------------------------------------------- literals & types

@pytest.mark.parametrize("value, dtype, text", [
    (5, "int32", "5"), (-5, "int32", "(-5)"), (-(2**31), "int32", "(-2147483647 - 1)"),
    (7, "int64", "((int64_t)7LL)"), (-(2**63), "int64", "((int64_t)(-9223372036854775807LL - 1))"),
    (3, "int8", "((int8_t)3)"), (9, "uint32", "9U"), (2**64 - 1, "uint64", "((uint64_t)18446744073709551615ULL)"),
    (1, "bool", "true"), (0, "bool", "false"),
])
def test_int_literals(value, dtype, text):
    assert CLikePrinter().literal(value, dtype_of(dtype)) == text


@pytest.mark.parametrize("value, dtype, text", [
    (1.5, "float32", "1.5f"), (2.0, "float64", "2.0"), (-0.25, "float32", "(-0.25f)"),
    (0.1, "float32", "0.10000000149011612f"), (float("inf"), "float32", "INFINITY"),
    (float("-inf"), "float64", "(-((double)INFINITY))"), (float("nan"), "float32", "NAN"),
    (1e300, "float32", "INFINITY"), (1.0, "bfloat16", "((uint16_t)0x3F80)"),
    (1.5, "float16", "((_Float16)(1.5f))"),
])
def test_float_literals(value, dtype, text):
    assert CLikePrinter().literal(value, dtype_of(dtype)) == text


def test_type_names_and_unsupported_dtype():
    p = CLikePrinter()
    assert [p.type_name(t) for t in ("int8", "uint64", "float16", "bfloat16", "bool", "handle")] \
        == ["int8_t", "uint64_t", "_Float16", "uint16_t", "bool", "void*"]
    with pytest.raises(CodegenError, match=r"dtype int4 is not supported"):
        p.type_name("int4")
    with pytest.raises(CodegenError, match="vectors are scalarized"):
        p.type_name("float32x4")


def test_bf16_rounding_is_nearest_even():
    assert float_to_bf16_bits(1.0) == 0x3F80
    assert float_to_bf16_bits(1.0 + 2**-8) == 0x3F80  # tie: rounds to even
    assert float_to_bf16_bits(1.0 + 3 * 2**-8) == 0x3F82
    assert float_to_bf16_bits(float("nan")) == 0x7FC0
    assert float_to_bf16_bits(-1e39) == 0xFF80


# --------------------------------------------------------------------------- expressions

def test_arithmetic_wraps_narrow_ints_and_uses_fmod_for_floats():
    p = CLikePrinter()
    a8, b8 = v("a", "int8"), v("b", "int8")
    assert p.print_expr(a8 + b8) == "((int8_t)(a + b))"
    u, w = v("u", "uint16"), v("w", "uint16")
    assert p.print_expr(u * w) == "((uint16_t)((uint32_t)(u) * (uint32_t)(w)))"
    x, y = v("x", "float32"), v("y", "float32")
    assert p.print_expr(tir.Mod(x, y)) == "fmodf(x, y)"
    assert p.print_expr(tir.Div(x, y)) == "(x / y)"
    assert p.print_expr(tir.truncdiv(v("i"), v("j"))) == "(i / j)"


def test_floordiv_floormod_helpers_for_signed_ints_only():
    p = CLikePrinter()
    i, j = v("i"), v("j")
    assert p.print_expr(tir.floordiv(i, j)) == "tvm_floordiv_int32(i, j)"
    assert p.print_expr(tir.floormod(i, 4)) == "tvm_floormod_int32(i, 4)"
    assert p.print_expr(tir.floordiv(v("u", "uint32"), v("w", "uint32"))) == "(u / w)"
    assert p.print_expr(tir.floordiv(v("x", "float32"), v("y", "float32"))) == "floorf((x / y))"
    assert p.print_expr(tir.floormod(v("d", "float64"), v("e", "float64"))) \
        == "tvm_floormod_float64(d, e)"
    src = p.finish()
    assert "static inline int32_t tvm_floordiv_int32(int32_t a, int32_t b)" in src
    assert "((r < 0) != (b < 0))" in src  # the negative-operand correction
    assert "double x = a, y = b;" in src and "floor(x / y)" in src


def test_min_max_select_and_logic():
    p = CLikePrinter()
    x, y = v("x", "float32"), v("y", "float32")
    assert p.print_expr(tir.Min(x, y)) == "tvm_min_float32(x, y)"
    assert p.print_expr(tir.Max(v("i"), 3)) == "tvm_max_int32(i, 3)"
    cond = tir.And(x < y, tir.Not(x == y))
    assert p.print_expr(tir.Select(cond, x, y)) == "(((x < y) && (!(x == y))) ? x : y)"
    assert "{ return (a < b) ? a : b; }" in p.finish()


def test_half_types_compute_in_float_and_round_back():
    p = CLikePrinter()
    h = v("h", "float16")
    assert p.print_expr(h + h) == "((_Float16)((((float)(h)) + ((float)(h)))))"
    b = v("b", "bfloat16")
    assert p.print_expr(b * tir.const(2.0, "bfloat16")) \
        == "tvm_f32_to_bf16((tvm_bf16_to_f32(b) * 2.0f))"
    assert p.print_expr(b < b) == "(tvm_bf16_to_f32(b) < tvm_bf16_to_f32(b))"
    assert p.print_expr(tir.exp(h)) == "((_Float16)(expf(((float)(h)))))"
    assert p.print_expr(tir.Cast("int32", b)) == "((int32_t)(tvm_bf16_to_f32(b)))"
    src = p.finish()
    assert "bits += ((bits >> 16) & 1u) + 0x7FFFu;" in src  # round to nearest even


def test_casts():
    p = CLikePrinter()
    assert p.print_expr(tir.Cast("float32", v("i"))) == "((float)(i))"
    assert p.print_expr(tir.Cast("int64", v("h", "handle"))) == "((int64_t)(uintptr_t)(h))"
    assert p.print_expr(tir.Cast("bool", v("x", "float64"))) == "((bool)(x))"
    assert p.print_expr(tir.Cast("bfloat16", v("x", "float64"))) \
        == "tvm_f32_to_bf16(((float)(x)))"


@pytest.mark.parametrize("make, text", [
    (lambda x: tir.exp(x), "expf(x)"), (lambda x: tir.tanh(x), "tanhf(x)"),
    (lambda x: tir.erf(x), "erff(x)"), (lambda x: tir.round(x), "nearbyintf(x)"),
    (lambda x: tir.rsqrt(x), "(1.0f / sqrtf(x))"), (lambda x: tir.sigmoid(x), "tvm_sigmoid_float32(x)"),
    (lambda x: tir.power(x, x), "powf(x, x)"), (lambda x: tir.isnan(x), "(isnan(x))"),
    (lambda x: tir.op.exp10(x), "powf(10.0f, x)"), (lambda x: tir.fabs(x), "fabsf(x)"),
])
def test_math_intrinsics(make, text):
    assert CLikePrinter().print_expr(make(v("x", "float32"))) == text


def test_math_on_float64_has_no_suffix_and_sigmoid_helper():
    p = CLikePrinter()
    d = v("d", "float64")
    assert p.print_expr(tir.log1p(d)) == "log1p(d)"
    p.print_expr(tir.sigmoid(d))
    assert "double tvm_sigmoid_float64(double x) { return 1.0 / (1.0 + exp(-x)); }" in p.finish()


def test_other_intrinsics():
    p = CLikePrinter()
    i, j = v("i"), v("j")
    assert p.print_expr(tir.op.bitwise_and(i, j)) == "(i & j)"
    assert p.print_expr(tir.op.shift_left(v("a", "uint8"), v("b", "uint8"))) \
        == "((uint8_t)((uint32_t)(a) << (uint32_t)(b)))"
    assert p.print_expr(tir.op.bitwise_not(i)) == "((int32_t)(~i))"
    assert p.print_expr(tir.if_then_else(i < j, i, j)) == "((i < j) ? i : j)"
    assert p.print_expr(tir.likely(i < j)) == "(i < j)"
    assert p.print_expr(tir.call_extern("int32", "abs_fn", i)) == "abs_fn(i)"
    assert p.print_expr(tir.op.reinterpret("int32", v("f", "float32"))) \
        == "tvm_reinterpret_float32_as_int32(f)"
    assert "memcpy(&y, &x, sizeof(y))" in p.finish()
    with pytest.raises(CodegenError, match=r"intrinsic 'tir.tvm_thread_allreduce' is not supported"):
        p.print_expr(tir.op.call_intrin("int32", "tir.tvm_thread_allreduce", i))


def test_let_expression_is_hoisted_with_a_fresh_name_each_time():
    p = CLikePrinter()
    x = v("x")
    let = tir.Let(x, v("i") * 2, x + x)
    assert p.print_expr(let) == "int32_t x = (i * 2);\n(x + x)"
    text = p.print_stmt(tir.Evaluate(tir.call_extern("int32", "g", let, let)))
    assert text == "int32_t x = (i * 2);\nint32_t x_1 = (i * 2);\ng((x + x), (x_1 + x_1));"


def test_free_variable_is_an_error():
    a = buf("A", (4,))
    pa = v("A", "handle")
    body = tir.BufferStore(a, tir.Cast("float32", v("n")), (0,))
    with pytest.raises(CodegenError, match=r"variable 'n' \(int32\) is used in f but never defined"):
        source_of(func("f", [pa], body, {pa: a}))


# --------------------------------------------------------------------------- statements

def _copy_func(kind=ForKind.SERIAL, n=16, ret="int32", **attrs):
    a, b = buf("A", (n,)), buf("B", (n,))
    pa, pb = v("pA", "handle"), v("pB", "handle")
    i = v("i")
    body = tir.For(i, 0, n, kind, tir.BufferStore(b, a[i] + 1.0, (i,)))
    f = tir.PrimFunc([pa, pb], body, ret, {pa: a, pb: b}, {"global_symbol": "copy", **attrs})
    return f, a, b


def test_function_with_buffer_map_binds_typed_pointers():
    f, _, _ = _copy_func(ret="void", **{"tir.noalias": True})
    text = source_of(f)
    assert "void copy(void* restrict pA, void* restrict pB) {" in text  # the handles...
    assert "float* restrict A = (float*)pA;" in text  # ...bound to the buffers' data
    assert "for (int32_t i = 0; i < 16; ++i) {" in text
    assert "B[i] = A[i] + 1.0f;" in text
    assert "return" not in text  # ret_type void
    assert source_of(_copy_func()[0]).rstrip().endswith("return 0;\n}")


def test_unrolled_loop_pragma_hook():
    class Unrolling(CLikePrinter):
        def unroll_pragma(self, extent):
            return f"#pragma unroll {extent}"

    f, _, _ = _copy_func(ForKind.UNROLLED)
    assert "#pragma unroll 16\n  for (int32_t i" in source_of(f, printer=Unrolling())
    assert "#pragma" not in source_of(_copy_func(ForKind.UNROLLED)[0])


def test_loop_with_complex_bounds_hoists_the_end():
    a = buf("A", (100,))
    pa, n = v("pA", "handle"), v("n")
    i = v("i")
    extent = tir.Cast("int32", tir.BufferLoad(a, (0,)))
    body = tir.For(i, n, extent, ForKind.SERIAL, tir.BufferStore(a, 0.0, (i,)))
    text = source_of(func("f", [pa, n], body, {pa: a}))
    assert "int32_t i_end = (n + ((int32_t)(A[0])));" in text
    assert "for (int32_t i = n; i < i_end; ++i) {" in text


def test_assert_formats_message_args_and_escapes_plain_percent():
    p = CLikePrinter()
    n = v("n")
    s = tir.AssertStmt(n == 4, "f: got n = %lld, want 4", tir.Evaluate(0), (tir.Cast("int64", n),))
    assert p.print_stmt(s) == (
        'if (!(n == 4)) {\n'
        '  return tvm_report_error("f: got n = %lld, want 4", (long long)((int64_t)(n)));\n}'
    )
    plain = tir.AssertStmt(n > 0, "100% wrong", tir.Evaluate(0))
    assert '"100%% wrong"' in p.print_stmt(plain)
    bad = tir.AssertStmt(n > 0, "%lld and %lld", tir.Evaluate(0), (tir.Cast("int64", n),))
    with pytest.raises(CodegenError, match="2 printf conversions but 1 message_args"):
        p.print_stmt(bad)
    src = p.finish()
    assert "void (*__TVMAPISetLastError)(const char* msg) = NULL;" in src
    assert "if (__TVMAPISetLastError) __TVMAPISetLastError(msg);" in src


def test_assert_in_void_function_returns_without_value():
    n = v("n")
    f = tir.PrimFunc([n], tir.AssertStmt(n > 0, "bad", tir.Evaluate(0)),
                     attrs={"global_symbol": "g"})
    assert "{ (void)(tvm_report_error(\"bad\")); return; }" in source_of(f)


def test_if_then_else_and_while_with_hoisted_condition():
    p = CLikePrinter()
    i, x = v("i"), v("x")
    a = buf("A", (4,), "int32")
    ite = tir.IfThenElse(i < 3, tir.BufferStore(a, 1, (0,)), tir.BufferStore(a, 2, (0,)))
    assert p.print_stmt(ite) == "if (i < 3) {\n  A[0] = 1;\n} else {\n  A[0] = 2;\n}"
    plain = tir.While(a[0] < 10, tir.BufferStore(a, a[0] + 1, (0,)))
    assert p.print_stmt(plain).startswith("while (A[0] < 10) {\n")
    hoisting = tir.While(tir.Let(x, a[0], x < 10), tir.BufferStore(a, a[0] + 1, (0,)))
    assert p.print_stmt(hoisting) == (
        "while (1) {\n  int32_t x = A[0];\n  if (!(x < 10)) break;\n  A[0] = A[0] + 1;\n}"
    )


def test_allocate_small_on_stack_large_or_dynamic_on_heap():
    p = CLikePrinter()
    t, n = v("t", "handle"), v("n")
    tb = buf("T", (8,), data=t)
    small = tir.Allocate(t, "float32", (8,), tir.const(True), tir.BufferStore(tb, 0.0, (0,)))
    assert p.print_stmt(small) == "float t[8];\nt[0] = 0.0f;"
    dyn = tir.Allocate(t, "float32", (n, 4), tir.const(True), tir.BufferStore(tb, 0.0, (0,)))
    text = p.print_stmt(dyn)
    assert "int64_t t_nbytes = ((int64_t)1LL) * (int64_t)(n) * (int64_t)(4) * (int64_t)sizeof(float);" in text
    assert "float* t = (float*)tvm_alloc((size_t)t_nbytes);" in text
    assert 'return tvm_report_error("scratch: cannot allocate %lld bytes for t", (long long)t_nbytes);' in text
    assert text.endswith("t[0] = 0.0f;\nfree(t);")
    big = tir.Allocate(t, "float64", (1 << 20,), tir.const(True), tir.Evaluate(0))
    assert "tvm_alloc" in p.print_stmt(big)
    assert "aligned_alloc(64, rounded ? rounded : 64)" in p.finish()


def test_evaluate_ret_and_pure_constants():
    p = CLikePrinter()
    assert p.print_stmt(tir.Evaluate(0)) == ""
    ret = tir.Evaluate(tir.op.call_intrin("int32", "tir.ret", v("i")))
    assert p.print_stmt(ret) == "return i;"


def test_blocks_must_be_lowered_first():
    blk = tir.Block((), (), (), "compute", tir.Evaluate(0))
    with pytest.raises(CodegenError, match=r"block 'compute' is still in the function"):
        CLikePrinter().print_stmt(tir.BlockRealize((), tir.const(True), blk))


def test_multi_dimensional_access_is_flattened_row_major():
    a = buf("A", (3, 5), "float32")
    i, j = v("i"), v("j")
    assert CLikePrinter().print_expr(a[i, j]) == "A[((i * 5) + j)]"


def test_mixed_element_types_keep_void_pointer_and_cast():
    data = v("data", "handle")
    f32, i32 = buf("F", (4,), "float32", data=data), buf("I", (4,), "int32", data=data)
    f = func("mix", [data], tir.BufferStore(f32, tir.Cast("float32", i32[0]), (1,)))
    text = source_of(f)
    assert "void mix(void* data) {" in text
    assert "((float*)data)[1] = (float)(((int32_t*)data)[0]);" in text


# --------------------------------------------------------------------------- vectors

def test_vector_store_prints_a_lane_loop():
    p = CLikePrinter()
    a, b = buf("A", (64,)), buf("B", (64,))
    i = v("i")
    ramp = tir.Ramp(i * 8, 1, 8)
    val = tir.BufferLoad(a, (ramp,)) + tir.Broadcast(tir.const(1.0, "float32"), 8)
    assert p.print_stmt(tir.BufferStore(b, val, (ramp,))) == \
        "for (int32_t l = 0; l < 8; ++l) { B[(i * 8) + l] = A[((i * 8) + l)] + 1.0f; }"
    strided = tir.BufferStore(b, tir.Broadcast(tir.const(0.0, "float32"), 4), (tir.Ramp(i, 3, 4),))
    assert p.print_stmt(strided) == "for (int32_t l = 0; l < 4; ++l) { B[i + (3 * l)] = 0.0f; }"


def test_vector_store_reading_its_own_buffer_goes_through_a_temporary():
    a = buf("A", (16,), "int32")
    s = tir.BufferStore(a, tir.BufferLoad(a, (tir.Ramp(0, 1, 8),)), (tir.Ramp(1, 1, 8),))
    assert CLikePrinter().print_stmt(s) == (
        "int32_t vtmp[8];\n"
        "for (int32_t l = 0; l < 8; ++l) { vtmp[l] = A[l]; }\n"
        "for (int32_t l = 0; l < 8; ++l) { A[1 + l] = vtmp[l]; }"
    )


def test_vector_let_becomes_an_array_and_shuffle_a_permutation():
    a = buf("A", (16,), "int32")
    x = v("x", "int32x4")
    load = tir.BufferLoad(a, (tir.Ramp(0, 1, 4),))
    rev = tir.Shuffle("int32x4", (x,), (3, 2, 1, 0))
    s = tir.LetStmt(x, load, tir.BufferStore(a, rev, (tir.Ramp(4, 1, 4),)))
    text = CLikePrinter().print_stmt(s)
    assert "int32_t x[4];\nfor (int32_t l = 0; l < 4; ++l) { x[l] = A[l]; }" in text
    assert "const int32_t perm[4] = {3, 2, 1, 0};" in text
    assert "A[4 + l] = shuffle[perm[l]];" in text


def test_vector_math_is_lane_wise():
    a = buf("A", (8,))
    val = tir.exp(tir.BufferLoad(a, (tir.Ramp(0, 1, 8),)))
    text = CLikePrinter().print_stmt(tir.BufferStore(a, val, (tir.Ramp(0, 1, 8),)))
    assert "vtmp[l] = expf(A[l]);" in text


# --------------------------------------------------------------------------- parallel

def test_parallel_loop_is_outlined_into_a_lambda():
    f, _, _ = _copy_func(ForKind.PARALLEL, n=1000)
    src = source_of(f)
    assert "typedef int32_t (*FTVMParallelLambda)(int32_t task_id, int32_t num_task, void* cdata);" in src
    assert "int32_t (*__TVMBackendParallelLaunch)(FTVMParallelLambda f, void* cdata, int32_t num_task) = NULL;" in src
    assert "typedef struct {\n  float* B;\n  float* A;\n} copy_parallel_closure;" in src
    lam = one_function(src, "copy_parallel")
    assert "static int32_t copy_parallel(int32_t task_id, int32_t num_task, void* cdata) {" in lam
    assert "int32_t chunk = (extent + num_task - 1) / num_task;" in lam
    assert "for (int32_t i = begin; i < end; ++i) {" in lam
    body = one_function(src, "copy")
    assert "copy_parallel_closure closure = {B, A};" in body
    assert "int32_t rc = tvm_parallel_launch(copy_parallel, &closure);" in body
    assert "if (rc != 0) return rc;" in body
    assert "return f(0, 1, cdata);" in src  # serial fallback without a runtime
    assert src.index("copy_parallel(int32_t") < src.index("int32_t copy(void*")


def test_parallel_loop_with_offset_and_nested_parallel():
    a = buf("A", (6, 6), "int32")
    pa = v("pA", "handle")
    i, j = v("i"), v("j")
    inner = tir.For(j, 0, 6, ForKind.PARALLEL, tir.BufferStore(a, i + j, (i, j)))
    outer = tir.For(i, 2, 4, ForKind.PARALLEL, inner)
    src = source_of(func("nest", [pa], outer, {pa: a}))
    assert src.count("tvm_parallel_launch(nest_parallel") == 2
    outer_lambda = one_function(src, "nest_parallel")
    assert "int32_t i = (2 + k);" in outer_lambda
    inner_lambda = one_function(src, "nest_parallel_parallel")
    assert "int32_t i = closure->i;" in inner_lambda


def test_parallel_launch_can_be_disabled_by_a_language():
    class Serial(CLikePrinter):
        supports_parallel_launch = False

    src = source_of(_copy_func(ForKind.PARALLEL)[0], printer=Serial())
    assert "tvm_parallel_launch" not in src and "for (int32_t i = 0; i < 16; ++i)" in src


def test_compute_scope_outlining_passes_restrict_pointers():
    class Outlining(CLikePrinter):
        outline_compute_scope = True

    a = buf("A", (8,))
    pa = v("pA", "handle")
    i = v("i")
    loop = tir.For(i, 0, 8, ForKind.SERIAL, tir.BufferStore(a, 0.0, (i,)))
    body = tir.AttrStmt(tir.const(0), "compute_scope", tir.StringImm("z_compute_"), loop)
    src = source_of(func("z", [pa], body, {pa: a}, **{"tir.noalias": True}), printer=Outlining())
    assert "static int32_t z_compute_(float* restrict A) {" in src
    assert "int32_t rc = z_compute_(A);" in src


# --------------------------------------------------------------------------- a GPU-like language

class ToyOpenCL(CLikePrinter):
    """The few overrides an OpenCL-like language needs (exercised as text only)."""

    language = "toycl"
    includes = ()
    vector_mode = "native"
    vector_ops_native = True
    kernel_qualifier = "__kernel "
    supports_error_reporting = False
    supports_parallel_launch = False
    restrict_keyword = "restrict"

    def address_space_qualifier(self, scope):
        return {"global": "__global ", "shared": "__local "}.get(scope, "")

    def storage_scope_qualifier(self, scope):
        return {"shared": "__local ", "local": ""}.get(scope, "")

    def thread_index(self, tag):
        return {"threadIdx.x": "get_local_id(0)", "blockIdx.x": "get_group_id(0)"}[tag]

    def barrier(self, scope):
        return "barrier(CLK_LOCAL_MEM_FENCE)"

    def vector_lane(self, value, d, lane):
        return f"{value}.s{lane:x}"


def test_native_vector_language_overrides():
    a, b = buf("A", (64,)), buf("B", (64,))
    pa, pb = v("pA", "handle"), v("pB", "handle")
    tx = tir.IterVar(tir.Range(0, 16), v("tx"), tir.IterVarType.THREAD_INDEX, "threadIdx.x")
    ramp = tir.Ramp(tx.var * 4, 1, 4)
    val = tir.BufferLoad(a, (ramp,)) * tir.Broadcast(tir.const(2.0, "float32"), 4)
    sh = v("sh", "handle")
    shb = buf("S", (64,), data=sh)
    body = tir.AttrStmt(tx, "thread_extent", tir.const(16), tir.stmt_seq(
        tir.Allocate(sh, "float32", (64,), tir.const(True), tir.stmt_seq(
            tir.BufferStore(shb, b[tx.var], (tx.var,)),
            tir.Evaluate(tir.op.call_intrin("int32", "tir.tvm_storage_sync", tir.StringImm("shared"))),
        ), scope="shared"),
        tir.BufferStore(b, val, (ramp,)),
        tir.BufferStore(b, val, (tir.Ramp(tx.var, 16, 4),)),
    ))
    src = source_of(func("k", [pa, pb], body, {pa: a, pb: b}), printer=ToyOpenCL())
    assert "#include" not in src
    assert "__kernel void k(__global void* pA, __global void* pB) {" in src
    assert "int32_t tx = (int32_t)(get_local_id(0));" in src
    assert "__local float sh[64];" in src
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in src
    assert "*(__global float4*)(B + (tx * 4)) = ((*(__global float4*)(A + (tx * 4))) * ((float4)(2.0f)));" in src
    assert "float4 vtmp = " in src and "B[tx + 48] = vtmp.s3;" in src


def test_c_has_no_threads():
    tx = tir.IterVar(tir.Range(0, 4), v("tx"), tir.IterVarType.THREAD_INDEX, "threadIdx.x")
    s = tir.AttrStmt(tx, "thread_extent", tir.const(4), tir.Evaluate(0))
    with pytest.raises(CodegenError, match=r"thread index 'threadIdx.x' is not available"):
        CLikePrinter().print_stmt(s)


# --------------------------------------------------------------------------- names & strings

def test_names_are_sanitized_and_unique():
    assert sanitize_identifier("A.shape") == "A_shape"
    assert sanitize_identifier("0x") == "v_0x"
    assert sanitize_identifier("tvm_floordiv_int32") == "v_tvm_floordiv_int32"
    t = NameTable()
    assert [t.fresh("i"), t.fresh("i"), t.fresh("int"), t.fresh("expf")] == ["i", "i_1", "int_1", "expf_1"]
    t.release("i")
    assert t.fresh("i") == "i"


def test_function_name_errors():
    f, _, _ = _copy_func()
    p = CLikePrinter()
    p.add_function(f)
    with pytest.raises(CodegenError, match="'copy' is already used"):
        p.add_function(f)
    with pytest.raises(CodegenError, match="is not a C identifier"):
        p.add_function(f, "bad-name")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_sanitized_identifiers_are_valid(hint):
    name = NameTable().fresh(hint)
    assert _IDENT.match(name) and name not in C_KEYWORDS


def _decode_c_literal(lit: str) -> str:
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', lit)
    body = "".join(pieces).replace("\\?", "?")
    return ast.literal_eval('b"' + body + '"').decode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.sampled_from([0, 7, 96]))
def test_c_string_literal_round_trips(text, chunk):
    assert _decode_c_literal(c_string_literal(text, max_chunk=chunk)) == text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["%lld", "%%", "x", "%d", " ", "%s"]), max_size=10))
def test_count_printf_conversions(parts):
    fmt = "".join(parts)
    expected = sum(1 for p in parts if p in ("%lld", "%d", "%s"))
    # "%%" followed by "lld" or "d" would read differently; skip those ambiguous joins
    if "%%lld" in fmt or "%%d" in fmt or "%%s" in fmt or "%%%" in fmt:
        return
    assert count_printf_conversions(fmt) == expected


def test_allocation_follows_the_lower_allocation_annotation():
    p = CLikePrinter()
    t = v("t", "handle")
    tb = buf("T", (4,), data=t)
    body = tir.BufferStore(tb, 0.0, (0,))
    heap = tir.Allocate(t, "float32", (4,), tir.const(True), body, annotations={"storage": "heap"})
    assert "tvm_alloc" in p.print_stmt(heap)
    stack = tir.Allocate(t, "float32", (1 << 20,), tir.const(True), body,
                         annotations={"storage": "stack"})
    assert p.print_stmt(stack).startswith("float t[1048576];")


def test_negated_conditions_keep_their_parentheses():
    from tvm.tir.codegen.c_like_stmt import negate

    assert negate("(a < b)") == "!(a < b)"
    assert negate("(int64_t)(l)") == "!((int64_t)(l))"
    assert negate("x") == "!(x)"


def test_debug_printing_a_parallel_loop_with_free_variables():
    n, i = v("n"), v("i")
    a = buf("A", (n,))
    s = tir.For(i, 0, n, ForKind.PARALLEL, tir.BufferStore(a, 0.0, (i,)))
    p = CLikePrinter()
    text = p.print_stmt(s)
    assert "scratch_parallel_closure closure = {n, A};" in text
    assert "int32_t rc = tvm_parallel_launch(scratch_parallel, &closure);" in text
