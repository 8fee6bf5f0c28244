"""The TVMScript parser builds the TIR one would build by hand."""

from __future__ import annotations

import inspect
import time

import pytest
from tvm.ffi import assert_structural_equal, structural_equal
from tvm.ir.diagnostics import DiagnosticError
from tvm.script import tir as T
from tvm.tir import (
    Allocate, And, AssertStmt, AttrStmt, Block, BlockRealize, BufferLoad, BufferRegion,
    BufferStore, Call, DeclBuffer, Evaluate, FloatImm, For, ForKind, IfThenElse, IntImm, IterVar,
    IterVarType, LetStmt, PrimFunc, Ramp, Range, SeqStmt, Var, const, decl_buffer, op,
)


def test_matmul_builds_root_block_and_inferred_regions() -> None:
    @T.prim_func
    def mm(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 4), "float32"),
           C: T.Buffer((16, 4), "float32")):
        T.func_attr({"tir.noalias": True})
        for i, j, k in T.grid(16, 4, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    a, b, c = (Var(n, "handle") for n in "abc")
    A = decl_buffer((16, 8), "float32", "A")
    B = decl_buffer((8, 4), "float32", "B")
    C = decl_buffer((16, 4), "float32", "C")
    i, j, k = (Var(n) for n in "ijk")
    vi, vj, vk = (Var(n) for n in ("vi", "vj", "vk"))
    block = Block(
        (IterVar(Range(0, 16), vi), IterVar(Range(0, 4), vj),
         IterVar(Range(0, 8), vk, IterVarType.COMM_REDUCE)),
        (BufferRegion(A, (Range(vi, 1), Range(vk, 1))), BufferRegion(B, (Range(vk, 1), Range(vj, 1)))),
        (BufferRegion(C, (Range(vi, 1), Range(vj, 1))),),
        "C",
        BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], [vi, vj]),
        BufferStore(C, FloatImm("float32", 0.0), [vi, vj]),
    )
    loops = For(i, 0, 16, ForKind.SERIAL, For(j, 0, 4, ForKind.SERIAL, For(
        k, 0, 8, ForKind.SERIAL, BlockRealize([i, j, k], True, block))))
    root = BlockRealize((), True, Block((), (), (), "root", loops))
    expected = PrimFunc([a, b, c], root, buffer_map={a: A, b: B, c: C},
                        attrs={"tir.noalias": True, "global_symbol": "mm"})
    assert_structural_equal(mm, expected)
    assert mm.attrs["global_symbol"] == "mm"


def test_private_function_has_no_global_symbol() -> None:
    @T.prim_func(private=True)
    def f(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(1)

    assert "global_symbol" not in f.attrs
    assert f.script().splitlines()[2] == "@T.prim_func(private=True)"


def test_symbolic_shapes_from_body_and_closure() -> None:
    m = Var("m", "int64")

    @T.prim_func
    def f(a: T.handle, B: T.Buffer((m, 4), "float32")):
        n = T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        for i, j in T.grid(n, m):
            A[i, j] = B[j, 0]

    A = f.buffer_map[f.params[0]]
    B = f.buffer_map[f.params[1]]
    assert B.shape[0] is m  # the closure variable itself
    n = A.shape[0]
    assert isinstance(n, Var) and n.name == "n" and n.dtype == "int64"
    assert A.shape[1] is m
    loop = f.body
    assert loop.extent is n and loop.loop_var.dtype == "int64"
    assert loop.body.extent is m


def test_buffer_subscript_annotation_and_scalar_params() -> None:
    @T.prim_func
    def f(A: T.Buffer[(8,), "int32"], n: T.int32, h: T.handle):  # noqa: F821
        A[0] = n

    assert [p.dtype for p in f.params] == ["handle", "int32", "handle"]
    assert list(f.buffer_map) == [f.params[0]]
    assert f.buffer_map[f.params[0]].dtype == "int32"
    assert f.body.value is f.params[1]


def test_loop_kinds_annotations_and_thread_binding() -> None:
    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        for i in T.parallel(2, 10, annotations={"pragma": 1}):
            for j in T.vectorized(4):
                A[i * 4 + j] = T.float32(0)
        for u in T.unroll(4):
            A[u] = T.float32(1)
        for t in T.thread_binding(32, thread="threadIdx.x"):
            A[t] = T.float32(2)
        for s in range(3, 5):
            A[s] = T.float32(3)

    first, unrolled, bound, serial = f.body.seq
    assert first.kind == ForKind.PARALLEL and first.annotations == {"pragma": 1}
    assert first.min.value == 2 and first.extent.value == 8
    assert first.body.kind == ForKind.VECTORIZED
    assert unrolled.kind == ForKind.UNROLLED
    assert bound.kind == ForKind.THREAD_BINDING
    assert bound.thread_binding.thread_tag == "threadIdx.x"
    assert bound.thread_binding.iter_type == IterVarType.THREAD_INDEX
    assert serial.kind == ForKind.SERIAL and serial.min.value == 3 and serial.extent.value == 2


def test_augmented_store_let_and_declarations() -> None:
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), n: T.int32):
        x = n + 1
        y: T.int64 = T.Cast("int64", x)
        A[0] += x
        A[1] = T.Cast("int32", y)

    let_x = f.body
    assert isinstance(let_x, LetStmt) and let_x.var.name == "x" and let_x.var.dtype == "int32"
    let_y = let_x.body
    assert isinstance(let_y, LetStmt) and let_y.var.dtype == "int64"
    store = let_y.body.seq[0]
    assert isinstance(store, BufferStore)
    assert structural_equal(store.value, BufferLoad(store.buffer, [const(0)]) + let_x.var)


def test_python_values_are_meta_programming() -> None:
    shape = (4, 8)
    scale = 3

    def twice(e):
        return e * 2

    @T.prim_func
    def f(A: T.Buffer(shape, "int32")):
        size = shape[0] * shape[1]
        rows = [i for i in range(shape[0])]
        for i, j in T.grid(*shape):
            A[i, j] = twice(i) + scale + len(rows) + size

    # `size` is let-bound (a plain assignment of a number); the rest folds in Python
    assert isinstance(f.body, LetStmt) and f.body.value.value == 32
    store = f.body.body.body.body
    assert repr(store.value) == "i * 2 + 3 + 4 + size"


def test_with_forms_and_scoped_assignments() -> None:
    @T.prim_func(private=True)
    def f(A: T.Buffer((16,), "float32")):
        with T.allocate([16], "float32", "shared") as buf:
            B = T.Buffer((16,), "float32", data=buf)
            B[0] = A[0]
        with T.LetStmt(A[1]) as v:
            A[2] = v
        with T.attr(A.data, "storage_alignment", 128):
            A[3] = T.float32(0)
        with T.Assert(A[0] > T.float32(0), "positive"):
            A[4] = T.float32(1)
        C = T.decl_buffer((4,), "float32", scope="local")
        C[0] = A[5]

    alloc, let, attr, assert_, decl = f.body.seq
    assert isinstance(alloc, Allocate) and alloc.scope == "shared" and alloc.extents[0].value == 16
    assert alloc.body.buffer.data is alloc.buffer_var
    assert isinstance(let, LetStmt) and let.var.dtype == "float32"
    assert isinstance(attr, AttrStmt) and attr.node is f.buffer_map[f.params[0]].data
    assert isinstance(assert_, AssertStmt) and assert_.message == "positive"
    assert isinstance(decl, Allocate) and isinstance(decl.body, DeclBuffer)
    assert decl.body.buffer.scope == "local" and decl.scope == "local"


def test_python_assert_takes_the_rest_of_the_body() -> None:
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), n: T.int32):
        assert n < 4, "n out of range"
        A[n] = 1
        A[0] = 2

    assert isinstance(f.body, AssertStmt)
    assert isinstance(f.body.body, SeqStmt) and len(f.body.body) == 2


def test_launch_thread_and_env_thread() -> None:
    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        bx = T.launch_thread("blockIdx.x", 2)
        tx = T.env_thread("threadIdx.x")
        T.launch_thread(tx, 32)
        A[bx * 32 + tx] = T.float32(0)

    outer = f.body
    assert isinstance(outer, AttrStmt) and outer.attr_key == "thread_extent"
    assert outer.node.thread_tag == "blockIdx.x" and outer.value.value == 2
    inner = outer.body
    assert inner.node.thread_tag == "threadIdx.x" and inner.node.dom.extent.value == 32
    assert isinstance(inner.body, BufferStore)


def test_vector_slices_and_regions() -> None:
    @T.prim_func
    def f(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
        B[0:4] = A[0, 0:8:2]
        with T.block("blk"):
            T.reads(A[0:4, 2])
            T.writes(B)
            B[4] = A[0, 0]

    store = f.body.block.body.seq[0]
    assert isinstance(store.indices[0], Ramp) and store.indices[0].lanes == 4
    assert structural_equal(store.value.indices[1], Ramp(0, 2, 4))
    block = f.body.block.body.seq[1].block
    (read,) = block.reads
    assert read.region[0].extent.value == 4 and read.region[1].extent.value == 1
    assert block.writes[0].region[0].extent.value == 16


def test_explicit_regions_are_kept_even_when_empty() -> None:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        with T.block("b"):
            T.reads()
            A[0] = T.float32(1)

    block = f.body.block  # a lone top-level block without axes is the root
    assert block.reads == () and len(block.writes) == 1


def test_expressions_and_calls() -> None:
    @T.prim_func
    def f(A: T.Buffer((8,), "int32"), x: T.int32, y: T.float32):
        T.evaluate(T.call_extern("int32", "puts", x))
        T.call_extern("int32", "puts", 1)
        A[0] = (x & 3) | (x << 1) ^ ~x
        A[1] = T.Select(0 <= x < 8 and not x == 3, x, T.max(x, 2))
        A[2] = T.Cast("int32", T.exp(y) + T.float32(1) * y ** T.float32(2))
        A[3] = T.if_then_else(x > 0, A[x], -1)

    first, second, bits, select, cast, ite = f.body.seq
    assert isinstance(first, Evaluate) and isinstance(second, Evaluate)
    assert isinstance(second.value, Call) and second.value.args[0].value == "puts"
    assert "T.bitwise_or" in repr(bits.value) and "T.shift_left" in repr(bits.value)
    cond = select.value.condition
    assert isinstance(cond, And) and isinstance(cond.a, And)
    assert "T.pow(" in repr(cast.value)
    assert repr(ite.value) == "T.if_then_else(x > 0, A[x], -1)"


def test_python_bool_condition_and_while() -> None:
    @T.prim_func
    def f(A: T.Buffer((1,), "int32")):
        if True:
            A[0] = 1
        while A[0] < 10:
            A[0] = A[0] + 1

    branch, loop = f.body.seq
    assert isinstance(branch, IfThenElse) and isinstance(branch.condition, IntImm)
    assert branch.condition.dtype == "bool"
    assert loop.condition.dtype == "bool"


def test_parse_text_forms() -> None:
    text = '''
from tvm.script import tir as T

@T.prim_func
def g(A: T.Buffer((4,), "float32")):
    A[0] = T.float32(1)
'''
    g = T.parse(text)
    assert isinstance(g, PrimFunc) and g.attrs["global_symbol"] == "g"
    bare = T.parse("def h(A: T.Buffer((4,), 'float32')):\n    A[1] = T.float32(2)\n",
                   private=True)
    assert "global_symbol" not in bare.attrs
    assert_structural_equal(T.prim_func(text), g)
    from tvm.script.parser_core import from_source

    assert_structural_equal(from_source(text), g)


def test_parse_text_with_env_names() -> None:
    n = Var("n", "int32")
    f = T.parse("@T.prim_func\ndef f(A: T.Buffer((n,), 'int8')):\n    A[0] = T.int8(1)\n",
                env={"n": n})
    assert f.buffer_map[f.params[0]].shape[0] is n


def test_prim_func_in_class_body_is_left_for_the_module_parser() -> None:
    class Module:
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(0)

        @T.prim_func(private=True)
        def helper(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(0)

    assert inspect.isfunction(Module.main)
    assert Module.main.__tvm_script_dialect__ == ("tir", {"private": False})
    assert Module.helper.__tvm_script_dialect__ == ("tir", {"private": True})


def test_module_parser_hook_parses_methods() -> None:
    import ast

    from tvm.script.parser_core import Source, parse_definition

    text = '''class Module:
    @T.prim_func(private=True)
    def main(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(0)
'''
    source = Source.from_text(text)
    cls = source.parse().body[0]
    method = cls.body[0]
    assert isinstance(method, ast.FunctionDef)
    func = parse_definition(method, source, [{"T": T}])
    assert isinstance(func, PrimFunc) and "global_symbol" not in func.attrs
    assert func.body.span.line == 4


def test_statement_spans_point_at_the_source() -> None:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = T.float32(0)

    loop = f.body
    assert loop.span is not None and loop.span.source_name == __file__
    assert loop.span.column == 9
    lines = open(__file__).read().splitlines()
    assert lines[loop.span.line - 1].strip() == "for i in range(4):"
    assert lines[loop.body.span.line - 1].strip() == "A[i] = T.float32(0)"


def test_dtype_constructors() -> None:
    assert T.float32(1).dtype == "float32" and isinstance(T.float32(1), FloatImm)
    assert T.int64(3).value == 3 and T.int64(3).dtype == "int64"
    assert T.float16x4(1).dtype == "float16x4"
    v = T.int64()
    assert isinstance(v, Var) and v.dtype == "int64"
    assert T.float32("inf").value == float("inf")
    x = Var("x", "int32")
    assert T.float32(x).dtype == "float32"
    with pytest.raises(AttributeError):
        T.not_a_dtype  # noqa: B018
    with pytest.raises(TypeError):
        T.int32("x")


def test_helpers_outside_a_function_are_inert_values() -> None:
    assert T.grid(2, 3).stops == [2, 3]
    buf = T.Buffer((4, 4), "float16")
    assert buf.shape[0].value == 4 and buf.dtype == "float16"
    assert op.exp is T.exp


def _fifty_line_function_text() -> str:
    lines = ["@T.prim_func", "def big(A: T.Buffer((64, 64), 'float32'), B: T.Buffer((64, 64), 'float32')):",
             "    C = T.alloc_buffer((64, 64), 'float32')"]
    for s in range(8):
        lines += [
            "    for i, j in T.grid(64, 64):",
            f"        with T.block('s{s}'):",
            "            vi, vj = T.axis.remap('SS', [i, j])",
            f"            C[vi, vj] = A[vi, vj] * T.float32({s}) + T.exp(B[vi, vj])",
            "            if vi > vj:",
            "                B[vi, vj] = T.max(C[vi, vj], T.float32(0))",
        ]
    return "\n".join(lines) + "\n"


def test_parsing_is_fast() -> None:
    text = _fifty_line_function_text()
    assert len(text.splitlines()) >= 50
    T.parse(text)  # warm up
    start = time.perf_counter()
    for _ in range(5):
        func = T.parse(text)
    per_parse = (time.perf_counter() - start) / 5
    assert per_parse < 0.1, f"parsing a 50-line function took {per_parse * 1e3:.1f} ms"
    start = time.perf_counter()
    text2 = func.script()
    assert time.perf_counter() - start < 0.1
    assert_structural_equal(T.parse(text2), func)


def test_errors_in_meta_code_are_diagnostics() -> None:
    with pytest.raises(DiagnosticError, match="division or modulo by zero"):
        T.parse("def f(A: T.Buffer((4,), 'int32')):\n    A[0] = 1 // 0\n")
