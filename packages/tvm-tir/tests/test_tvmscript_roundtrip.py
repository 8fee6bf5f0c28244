"""Print -> parse round trips: every function prints as TVMScript that parses back to a
structurally equal function, and printing the parsed function gives the same text."""

from __future__ import annotations

import pytest
from tvm.ffi import assert_structural_equal
from tvm.ir.module import IRModule
from tvm.script import tir as T
from tvm.tir import (
    EQ, LT, Add, Allocate, And, AssertStmt, AttrStmt, Block, BlockRealize, BufferLoad,
    BufferRegion, BufferStore, Cast, Div, Evaluate, FloatImm, For, ForKind, IntImm,
    IterVar, IterVarType, Let, LetStmt, MatchBufferRegion, Max, Min, Mod, Not, Or, PrimFunc, Ramp,
    Range, SeqStmt, Shuffle, SizeVar, StringImm, Sub, Var, While, const, decl_buffer, op,
)


def roundtrip(func: PrimFunc) -> str:
    text = func.script()
    parsed = T.parse(text)
    assert_structural_equal(func, parsed)
    assert parsed.script() == text
    return text


# ---------------------------------------------------------------------------------------
# functions written in TVMScript


@T.prim_func
def matmul(A: T.Buffer((128, 64), "float32"), B: T.Buffer((64, 32), "float32"),
           C: T.Buffer((128, 32), "float32")):
    T.func_attr({"tir.noalias": True})
    for i, j, k in T.grid(128, 32, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] += A[vi, vk] * B[vk, vj]


@T.prim_func
def symbolic(a: T.handle, b: T.handle, m: T.int64):
    n = T.int64()
    A = T.match_buffer(a, (n, m), "float16")
    B = T.match_buffer(b, (n,), "float16")
    for i in range(n):
        with T.block("row_sum"):
            vi = T.axis.spatial(n, i)
            with T.init():
                B[vi] = T.float16(0)
            for k in range(m):
                B[vi] = B[vi] + A[vi, k]


@T.prim_func
def two_stage(A: T.Buffer((64, 64), "float32"), D: T.Buffer((64, 64), "float32")):
    Bbuf = T.alloc_buffer((64, 64), "float32")
    Cbuf = T.alloc_buffer((64, 64), "float32", scope="shared")
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bbuf[vi, vj] = T.exp(A[vi, vj]) + T.log(T.fabs(A[vi, vj]) + T.float32(1))
    for i, j in T.grid(64, 64):
        with T.block("C"):
            vi = T.axis.spatial(64, i)
            vj = T.axis.spatial((0, 64), j)
            T.where(i < 60)
            T.block_attr({"schedule_rule": "none", "factor": T.int32(4)})
            Cbuf[vi, vj] = T.max(Bbuf[vi, vj], T.float32(0)) * T.tanh(Bbuf[vi, vj])
    for i in T.parallel(64):
        for j in T.vectorized(64):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(Cbuf[vi, vj])
                T.writes(D[vi, vj])
                D[vi, vj] = T.Select(Cbuf[vi, vj] > T.float32(0), Cbuf[vi, vj], T.float32(0))


@T.prim_func
def gpu_blocks(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(1024, bx * 128 + tx)
                B[v] = T.sqrt(A[v]) * T.float32(0.5)


@T.prim_func
def tiled_reduce(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
    for i, ko, ki in T.grid(16, 16, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            vk = T.axis.reduce(64, ko * 4 + ki)
            with T.init():
                B[vi] = T.min_value("float32")
            B[vi] = T.max(B[vi], A[vi, vk])


@T.prim_func
def sub_tile(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for io in range(16):
        with T.block("tile"):
            vo = T.axis.spatial(16, io)
            T.reads(A[vo * 4:vo * 4 + 4])
            T.writes(B[vo * 4:vo * 4 + 4])
            Asub = T.match_buffer(A[vo * 4:vo * 4 + 4], (4,), "float32")
            for ii in T.unroll(4):
                B[vo * 4 + ii] = Asub[ii] + T.float32(1)


@T.prim_func(private=True)
def lowered_flat(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
    A_flat = T.Buffer((128,), "float32", data=A.data)
    B_flat = T.decl_buffer((128,), "float32", data=B.data)
    for i in T.parallel(8):
        for j in T.serial(0, 16, annotations={"pragma_unroll_explicit": 0}):
            B_flat[i * 16 + j] = A_flat[i * 16 + j] + T.float32(1)


@T.prim_func
def vector_ops(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(16):
        B[T.Ramp(i * 4, 1, 4)] = A[T.Ramp(i * 4, 1, 4)] * T.Broadcast(T.float32(2), 4)


@T.prim_func
def let_assert_if(A: T.Buffer((16,), "int32"), n: T.int32):
    assert n <= 16, "n is too large"
    m: T.int32 = n // 2
    for i in range(16):
        if i < m:
            A[i] = i * 2
        elif i == m:
            A[i] = T.truncdiv(i, 3) + T.truncmod(i, 3)
        else:
            A[i] = T.if_then_else(i % 2 == 0, A[i - 1], 0)


@T.prim_func(private=True)
def allocations(A: T.Buffer((32,), "float32")):
    tmp = T.decl_buffer((32,), "float32", scope="local")
    ptr = T.allocate([8], "float16", "shared")
    view = T.decl_buffer((8,), "float16", data=ptr)
    for i in range(8):
        view[i] = T.Cast("float16", A[i])
    for i in range(32):
        tmp[i] = T.Cast("float32", view[i % 8])
    T.evaluate(T.call_extern("int32", "consume", tmp.data, 32))


@T.prim_func(private=True)
def launch_threads(A: T.Buffer((256,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    if T.likely(bx * 128 + tx < 256):
        A[bx * 128 + tx] = T.float32(0)


@T.prim_func(private=True)
def env_threads(A: T.Buffer((256,), "float32")):
    tx = T.env_thread("threadIdx.x")
    with T.launch_thread(tx, 128):
        A[tx] = T.float32(1)
    with T.launch_thread(tx, 128):
        A[tx + 128] = T.float32(2)


@T.prim_func
def int64_loops(a: T.handle):
    n = T.int64(is_size_var=True)
    A = T.match_buffer(a, (n * T.int64(2),), "int8")
    for i in T.serial(T.int64(1), n):
        A[i] = T.int8(3)
    for i, j in T.grid(n, T.int64(2)):
        A[i * T.int64(2) + j] = T.reinterpret("int8", T.uint8(255))


@T.prim_func
def opaque_and_scan(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    with T.block("root"):
        for i in range(16):
            with T.block("scan"):
                vi = T.axis.scan(16, i)
                vo = T.axis.opaque(1, 0)  # noqa: F841
                T.reads(A[0:vi + 1])
                T.writes(B[vi])
                B[vi] = A[vi] + T.if_then_else(vi > 0, B[vi - 1], T.float32(0))


SCRIPTED = [matmul, symbolic, two_stage, gpu_blocks, tiled_reduce, sub_tile, lowered_flat,
            vector_ops, let_assert_if, allocations, launch_threads, env_threads, int64_loops,
            opaque_and_scan]


@pytest.mark.parametrize("func", SCRIPTED, ids=lambda f: f.attrs.get("global_symbol", "private"))
def test_scripted_roundtrip(func: PrimFunc) -> None:
    roundtrip(func)


# ---------------------------------------------------------------------------------------
# hand-built functions: lowered forms that are easier to write as IR


def test_hand_built_lowered_function_roundtrip() -> None:
    n = Var("n", "int32")
    i = Var("i", "int32")
    x = Var("x", "int32")
    t = Var("t", "int32")
    A = decl_buffer((n, 4), "float32", "A")
    flat = decl_buffer((n * 4,), "float32", "A_flat", data=A.data)
    ptr = Var("ptr", "handle")
    half = decl_buffer((8,), "float16", "H", data=ptr)
    body = SeqStmt([
        LetStmt(x, n + 1, BufferStore(flat, FloatImm("float32", 1.5), [x])),
        Allocate(ptr, "float16", [8], const(True), SeqStmt([
            BufferStore(half, Cast("float16", BufferLoad(flat, [i])), [const(0)]),
            Evaluate(op.call_extern("int32", "use", ptr)),
        ]), "shared", {"note": "kept"}),
        AttrStmt(StringImm("blk"), "pragma_unroll", const(1), Evaluate(const(0))),
        AssertStmt(n < 100, "n too large: %lld", Evaluate(const(1)), (Cast("int64", n),)),
        Evaluate(Let(t, n * 2, t + 1)),
        While(n > 0, Evaluate(Shuffle("int32x2", (Ramp(0, 1, 4),), (const(0), const(3))))),
        Evaluate(Add(const(1), const(2))),
        Evaluate(And(const(True), const(False))),
        Evaluate(Not(const(True))),
        Evaluate(EQ(const(1), const(2))),
        Evaluate(Sub(const(0), n)),
        Evaluate(LT(const(5), n)),
        Evaluate(Mod(n, 3) + Div(n, 3) + Min(n, 1) + Max(1, n)),
        Evaluate(And(n < 1, Or(n > 4, Not(n == 3)))),
        Evaluate(n - (i - 1) - (n * (i + 1)) // (n % 3)),
        Evaluate(Cast("int64", n) * const(3, "int64") + const(-7, "int64")),
        Evaluate(FloatImm("float16", 0.5) * FloatImm("float16", float("inf"))),
        Evaluate(op.bitwise_and(n, 3)),
        Evaluate(op.call_intrin("int32", "tir.clz", n)),
        Evaluate(const(-5) * n),
    ])
    a = Var("a", "handle")
    func = PrimFunc([a, n, i], body, buffer_map={a: A}, attrs={
        "global_symbol": "weird.name", "target_x": IntImm("int32", 3),
        "flag": IntImm("bool", 1), "s": "str", "lst": [1, 2.5, "a"],
    })
    text = roundtrip(func)
    assert "def weird_name(a: T.handle, n: T.int32, i: T.int32):" in text
    assert '"global_symbol": "weird.name"' in text and "T.bool(True)" in text
    assert "A_flat = T.Buffer((n * 4,), \"float32\", data=A.data)" in text
    assert "T.Add(1, 2)" in text and "T.EQ(1, 2)" in text and "T.LT(5, n)" not in text


def test_hand_built_blocks_roundtrip() -> None:
    """Bare (non-realized) blocks, iteration domains not starting at 0, thread-bound loops
    with explicit iteration variables and match buffers print and parse back."""
    A = decl_buffer((16, 16), "float32", "A")
    vi = Var("vi", "int32")
    i = Var("i", "int32")
    sub = decl_buffer((4,), "float32", "sub")
    region = BufferRegion(A, (Range(vi, 1), Range(vi * 0 + 4, 4)))
    inner = Block((), (), (), "opaque",
                  BufferStore(A, BufferLoad(sub, [const(1)]), [vi, const(0)]), None, (),
                  (MatchBufferRegion(sub, region),))
    block = Block((IterVar(Range(2, 14), vi, IterVarType.DATA_PAR),), (region,), (), "B",
                  SeqStmt([inner, Evaluate(const(0))]))
    tag_var = Var("t", "int32")
    loop = For(i, const(2), const(14), ForKind.THREAD_BINDING, BlockRealize([i], True, block),
               IterVar(Range(0, 32), tag_var, IterVarType.THREAD_INDEX, "threadIdx.x"))
    root = BlockRealize((), True, Block((), (), (), "root", loop))
    a = Var("a", "handle")
    func = PrimFunc([a], root, buffer_map={a: A}, attrs={"global_symbol": "blocks"})
    text = roundtrip(func)
    assert 'with T.block("opaque", no_realize=True):' in text
    assert "T.axis.spatial((2, 16), i)" in text


def test_undeclared_buffer_after_allocate_and_let() -> None:
    ptr = Var("ptr", "handle")
    view = decl_buffer((4,), "int32", "view", data=ptr)
    h = Var("h", "handle")
    other = decl_buffer((2,), "int32", "other", data=h)
    body = Allocate(ptr, "int32", [4], const(True), SeqStmt([
        BufferStore(view, const(1), [const(0)]),
        LetStmt(h, op.call_intrin("handle", "tir.address_of", BufferLoad(view, [const(2)])),
                BufferStore(other, BufferLoad(view, [const(0)]), [const(1)])),
    ]))
    func = PrimFunc([], body, attrs={"global_symbol": "main"})
    text = roundtrip(func)
    assert "view = T.Buffer((4,), \"int32\", data=ptr)" in text
    assert "h: T.handle = T.address_of(view[2])" in text


def test_root_block_kept_when_not_implicit() -> None:
    """A root block holding a single block without iteration variables must stay explicit."""
    A = decl_buffer((4,), "float32", "A")
    inner = BlockRealize((), True, Block((), (), (), "inner", BufferStore(A, 1.0, [const(0)])))
    root = BlockRealize((), True, Block((), (), (), "root", inner))
    a = Var("a", "handle")
    text = roundtrip(PrimFunc([a], root, buffer_map={a: A}, attrs={"global_symbol": "main"}))
    assert '    with T.block("root"):' in text


def test_size_var_param_and_return_type() -> None:
    n = SizeVar("n", "int32")
    func = PrimFunc([n], Evaluate(n + 1), ret_type="int32", attrs={"global_symbol": "f"})
    text = roundtrip(func)
    assert "def f(n: T.int32(is_size_var=True)) -> T.int32:" in text


def test_golden_text_of_matmul() -> None:
    assert matmul.script() == '''# from tvm.script import tir as T

@T.prim_func
def matmul(A: T.Buffer((128, 64), "float32"), B: T.Buffer((64, 32), "float32"), C: T.Buffer((128, 32), "float32")):
    T.func_attr({"tir.noalias": True})
    # with T.block("root"):
    for i, j, k in T.grid(128, 32, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''


def test_golden_text_of_symbolic_shapes() -> None:
    text = symbolic.script()
    assert text.splitlines()[3:8] == [
        "def symbolic(a: T.handle, b: T.handle, m: T.int64):",
        "    n = T.int64()",
        '    A = T.match_buffer(a, (n, m), "float16")',
        '    B = T.match_buffer(b, (n,), "float16")',
        '    # with T.block("root"):',
    ]
    assert "T.reads(A[vi, T.int64(0):m])" in text


def test_irmodule_script_uses_the_tir_printer() -> None:
    mod = IRModule({"mm": matmul.with_attr("global_symbol", "mm")})
    text = mod.script()
    assert "# from tvm.script import tir as T" in text
    assert "    @T.prim_func\n    def mm(A: T.Buffer((128, 64), \"float32\")" in text


def test_repr_of_expressions_and_statements() -> None:
    x = Var("x", "int32")
    assert repr(x * 2 + 1) == "x * 2 + 1"
    assert repr((x + 1) * 2) == "(x + 1) * 2"
    assert repr(Cast("float32", x) / FloatImm("float32", 2.0)) == 'T.Cast("float32", x) / T.float32(2.0)'
    body = matmul.body.block.body
    assert repr(body).startswith("for i, j, k in T.grid(128, 32, 64):")
    assert repr(matmul) == matmul.script()


def test_show_prints_the_script(capsys: pytest.CaptureFixture) -> None:
    vector_ops.show()
    assert capsys.readouterr().out == vector_ops.script()


def test_long_chain_of_scoped_statements() -> None:
    """Scoped statements nest as deep as they are long; printing and parsing cope."""
    A = decl_buffer((1,), "int32", "A")
    body = BufferStore(A, const(0), [const(0)])
    for k in range(600):
        v = Var(f"v{k}", "int32")
        body = LetStmt(v, BufferLoad(A, [const(0)]) + k, SeqStmt([BufferStore(A, v, [const(0)]),
                                                                   body]))
    a = Var("a", "handle")
    roundtrip(PrimFunc([a], body, buffer_map={a: A}, attrs={"global_symbol": "chain"}))
