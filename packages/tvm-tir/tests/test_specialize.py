"""PrimFunc.specialize / tvm.tir.transform.specialize: parameters bound to values or buffers.

Structural tests compare against functions written in TVMScript; every result must be well
formed and survive a print/parse round trip; the llvm tests check the numbers.
"""

import numpy as np
import pytest
from schedule_util import assert_func_equal, needs_llvm
from tvm import tir
from tvm.tir import Buffer, BufferLoad, BufferStore, Var, decl_buffer, post_order_visit
from tvm.tir.analysis import verify_well_formed
from tvm.tir.transform import specialize

T = pytest.importorskip("tvm.script.tir")


def _check(func):
    """Well formed, and equal to what its printed script parses back to."""
    verify_well_formed(func)
    assert_func_equal(T.parse(func.script()), func)
    return func


# --------------------------------------------------------------------------- workloads


@T.prim_func
def elementwise(a: T.handle, b: T.handle):
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n, m), "float32")
    for i, j in T.grid(n, m):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def elementwise_16x32(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
    for i, j in T.grid(16, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def elementwise_scalar(a: T.handle, b: T.handle, n: T.int32, alpha: T.float32):
    m = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n, m), "float32")
    C = T.alloc_buffer((n, m), "float32")
    for i, j in T.grid(n, m):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * alpha
    for i, j in T.grid(n, m):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = C[vi, vj] + T.float32(1)


@T.prim_func
def elementwise_scalar_8(a: T.handle, b: T.handle):
    m = T.int32()
    A = T.match_buffer(a, (8, m), "float32")
    B = T.match_buffer(b, (8, m), "float32")
    C = T.alloc_buffer((8, m), "float32")
    for i, j in T.grid(8, m):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(0.5)
    for i, j in T.grid(8, m):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = C[vi, vj] + T.float32(1)


@T.prim_func
def matmul(a: T.handle, b: T.handle, c: T.handle):
    m = T.int32()
    n = T.int32()
    k = T.int32()
    A = T.match_buffer(a, (m, k), "float32")
    B = T.match_buffer(b, (k, n), "float32")
    C = T.match_buffer(c, (m, n), "float32")
    for i, j, r in T.grid(m, n, k):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_m128(a: T.handle, b: T.handle, c: T.handle):
    n = T.int32()
    k = T.int32()
    A = T.match_buffer(a, (128, k), "float32")
    B = T.match_buffer(b, (k, n), "float32")
    C = T.match_buffer(c, (128, n), "float32")
    for i, j, r in T.grid(128, n, k):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def flat_copy(a: T.handle, b: T.handle):
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (n * m,), "float32")
    B = T.match_buffer(b, (n, m), "float32")
    for i in range(n * m):
        with T.block("B"):
            vi = T.axis.spatial(n * m, i)
            B[vi // m, vi % m] = A[vi]


@T.prim_func
def flat_copy_4x8(A: T.Buffer((32,), "float32"), B: T.Buffer((4, 8), "float32")):
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi // 8, vi % 8] = A[vi]


@T.prim_func
def lowered_scratch(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,), "float32")
    tmp = T.decl_buffer((n,), "float32", scope="local")
    for i in range(n):
        tmp[i] = A[i] + T.float32(1)
    for i in range(n):
        A[i] = tmp[i] * T.float32(2)


@T.prim_func
def lowered_scratch_64(A: T.Buffer((64,), "float32")):
    tmp = T.decl_buffer((64,), "float32", scope="local")
    for i in range(64):
        tmp[i] = A[i] + T.float32(1)
    for i in range(64):
        A[i] = tmp[i] * T.float32(2)


@T.prim_func
def tiled_match(a: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 4), "float32")
    for o in range(n):
        with T.block("tile"):
            vo = T.axis.spatial(n, o)
            S = T.match_buffer(A[vo, 0:4], (4,), "float32")
            for t in range(4):
                S[t] = S[t] + T.float32(1)


@T.prim_func
def int64_vector(a: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "int8")
    for i in range(n):
        with T.block("A"):
            vi = T.axis.spatial(n, i)
            A[vi] = T.int8(1)


def _buffers_used(func):
    """Every Buffer object referenced by a load or store in ``func``'s body."""
    found = []
    post_order_visit(func.body, lambda x: found.append(x.buffer)
                     if isinstance(x, (BufferLoad, BufferStore)) else None)
    return found


# --------------------------------------------------------------------------- structure


def test_buffer_param_binds_shape_vars():
    a, b = elementwise.params
    out = _check(elementwise.specialize({a: decl_buffer((16, 32), "float32", "X")}))
    assert_func_equal(out, elementwise_16x32)
    # The buffer keeps its name and data variable; the body uses the buffer_map objects.
    assert out.buffer_map[a].name == "A" and out.buffer_map[a].data is elementwise.buffer_map[a].data
    mapped = set(map(id, out.buffer_map.values()))
    assert all(id(buf) in mapped for buf in _buffers_used(out))


def test_buffer_key_is_the_buffer_itself():
    A = elementwise.buffer_map[elementwise.params[0]]
    out = _check(specialize(elementwise, {A: decl_buffer((16, 32), "float32")}))
    assert_func_equal(out, elementwise_16x32)


def test_both_buffers_consistent():
    a, b = elementwise.params
    out = elementwise.specialize({a: decl_buffer((16, 32)), b: decl_buffer((16, 32))})
    assert_func_equal(_check(out), elementwise_16x32)


def test_scalar_params_removed_and_substituted():
    _, _, n, alpha = elementwise_scalar.params
    out = _check(elementwise_scalar.specialize({n: 8, alpha: 0.5}))
    assert [p.name for p in out.params] == ["a", "b"]
    assert_func_equal(out, elementwise_scalar_8)
    # The allocated intermediate is rewritten once and used consistently.
    root = out.body.block
    (C,) = root.alloc_buffers
    assert [int(s) for s in C.shape[:1]] == [8]
    uses = [buf for buf in _buffers_used(out) if buf.name == "C"]
    assert uses and all(buf is C for buf in uses)


def test_scalar_param_value_may_be_an_expression_of_other_params():
    _, _, n, alpha = elementwise_scalar.params
    out = _check(elementwise_scalar.specialize({alpha: tir.Cast("float32", n) * 2.0}))
    assert [p.name for p in out.params] == ["a", "b", "n"]
    assert "alpha" not in out.script()


def test_matmul_one_dim_only():
    a, _, _ = matmul.params
    A = matmul.buffer_map[a]
    out = _check(matmul.specialize({a: decl_buffer((128, A.shape[1]), "float32")}))
    assert_func_equal(out, matmul_m128)


def test_changed_expressions_are_simplified():
    _, b = flat_copy.params
    out = _check(flat_copy.specialize({b: decl_buffer((4, 8), "float32")}))
    assert_func_equal(out, flat_copy_4x8)
    assert out.buffer_map[flat_copy.params[0]].shape[0].value == 32


def test_decl_buffer_and_scalar_bound_through_shape():
    a, n = lowered_scratch.params
    out = _check(lowered_scratch.specialize({a: decl_buffer((64,), "float32")}))
    assert [p.name for p in out.params] == ["a"]  # n was bound through A's shape
    assert_func_equal(out, lowered_scratch_64)


def test_block_match_buffer_source_rewritten():
    (a,) = tiled_match.params
    out = _check(tiled_match.specialize({a: decl_buffer((8, 4), "float32")}))
    A = out.buffer_map[a]
    assert int(A.shape[0]) == 8
    matches = []
    post_order_visit(out.body, lambda x: matches.extend(x.match_buffers)
                     if isinstance(x, tir.Block) else None)
    (match,) = matches
    assert match.source.buffer is A
    assert "n" not in {v.name for v in tir.free_vars(out.body)}


def test_elem_offset_and_strides_unified():
    n, s, off = Var("n"), Var("s"), Var("off")
    p = Var("p", "handle")
    A = decl_buffer((n,), "float32", "A", strides=(s,), elem_offset=off)
    i = Var("i")
    func = tir.PrimFunc([p], tir.For(i, 0, n, body=BufferStore(A, A[i] + 1.0, (i,))),
                        buffer_map={p: A})
    out = _check(func.specialize({p: decl_buffer((10,), "float32", strides=(2,))}))
    B = out.buffer_map[p]
    assert [int(B.shape[0]), int(B.strides[0]), int(B.elem_offset)] == [10, 2, 0]
    assert int(out.body.extent) == 10


def test_empty_map_is_identity():
    assert specialize(elementwise, {}) is elementwise


# --------------------------------------------------------------------------- errors


def test_conflicting_bindings_raise():
    a, b = elementwise.params
    with pytest.raises(ValueError, match="conflicting values for variable 'n'.*16.*8"):
        elementwise.specialize({a: decl_buffer((16, 32)), b: decl_buffer((8, 32))})


def test_conflict_between_scalar_and_buffer():
    a, _, n, _ = elementwise_scalar.params
    with pytest.raises(ValueError, match="'n'"):
        elementwise_scalar.specialize({n: 4, a: decl_buffer((8, 8))})


def test_handle_param_with_expression_raises():
    a, _ = elementwise.params
    with pytest.raises(ValueError, match="parameter 'a' is buffer 'A'"):
        elementwise.specialize({a: 16})


def test_non_parameter_key_raises():
    stray = Var("stray")
    with pytest.raises(ValueError, match="'stray'.*not a parameter"):
        elementwise.specialize({stray: 3})
    with pytest.raises(ValueError, match="buffer 'Z' is not a parameter buffer"):
        elementwise.specialize({decl_buffer((4,), name="Z"): decl_buffer((4,))})
    # A shape variable is not a parameter either.
    n = elementwise.buffer_map[elementwise.params[0]].shape[0]
    with pytest.raises(ValueError, match="'n'.*not a parameter"):
        elementwise.specialize({n: 16})


def test_scalar_param_with_buffer_raises():
    _, _, n, _ = elementwise_scalar.params
    with pytest.raises(ValueError, match="parameter 'n'.*not bound to a buffer"):
        elementwise_scalar.specialize({n: decl_buffer((4,))})


def test_buffer_mismatches_raise():
    a, _ = elementwise.params
    with pytest.raises(ValueError, match="2 dimensions.*has 1"):
        elementwise.specialize({a: decl_buffer((16,))})
    with pytest.raises(ValueError, match="dtype float32.*float16"):
        elementwise.specialize({a: decl_buffer((16, 32), "float16")})
    a, _ = flat_copy.params
    with pytest.raises(ValueError, match=r"does not match 32"):
        flat_copy.specialize({a: decl_buffer((32,))})


def test_value_using_undefined_variable_raises():
    _, _, n, _ = elementwise_scalar.params
    with pytest.raises(ValueError, match="'ghost'"):
        elementwise_scalar.specialize({n: Var("ghost") + 1})


def test_bad_value_type_raises():
    _, _, n, _ = elementwise_scalar.params
    with pytest.raises(TypeError, match="parameter 'n'"):
        elementwise_scalar.specialize({n: "eight"})


# --------------------------------------------------------------------------- numerics


@needs_llvm
def test_numerics_elementwise_specialized():
    a, _ = elementwise.params
    out = elementwise.specialize({a: decl_buffer((16, 32), "float32")})
    rt = tir.build(out, target="llvm")
    x = np.random.default_rng(0).random((16, 32), dtype=np.float32)
    y = np.zeros_like(x)
    rt[out.attrs.get("global_symbol", "main")](x, y)
    np.testing.assert_allclose(y, x * 2, rtol=1e-6)


@needs_llvm
def test_numerics_scalar_specialized():
    _, _, n, alpha = elementwise_scalar.params
    out = elementwise_scalar.specialize({n: 8, alpha: 0.5})
    rt = tir.build(out, target="llvm")
    x = np.random.default_rng(1).random((8, 5), dtype=np.float32)
    y = np.zeros_like(x)
    rt[out.attrs.get("global_symbol", "main")](x, y)
    np.testing.assert_allclose(y, x * 0.5 + 1, rtol=1e-6)


@needs_llvm
def test_numerics_matmul_one_dim():
    a, _, _ = matmul.params
    A = matmul.buffer_map[a]
    out = matmul.specialize({a: decl_buffer((128, A.shape[1]), "float32")})
    rt = tir.build(out, target="llvm")
    rng = np.random.default_rng(2)
    x = rng.random((128, 24), dtype=np.float32)
    w = rng.random((24, 20), dtype=np.float32)
    y = np.zeros((128, 20), np.float32)
    rt[out.attrs.get("global_symbol", "main")](x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4)


def test_result_is_a_primfunc_with_buffers():
    a, _ = elementwise.params
    out = elementwise.specialize({a: decl_buffer((16, 32), "float32")})
    assert isinstance(out, tir.PrimFunc)
    assert all(isinstance(b, Buffer) for b in out.buffer_map.values())


def test_buffer_first_met_inside_an_expression_is_simplified():
    # An allocation read through an undeclared view: the view is first seen inside a load.
    n, m, i = Var("n"), Var("m"), Var("i")
    p, ptr = Var("p", "handle"), Var("ptr", "handle")
    A = decl_buffer((n, m), "float32", "A")
    view = decl_buffer((n * m,), "float32", "view", data=ptr)
    loop = tir.For(i, 0, n * m, body=BufferStore(A, view[i] + 1.0, (i // m, i % m)))
    func = tir.PrimFunc([p], tir.Allocate(ptr, "float32", (n * m,), tir.const(True), loop),
                        buffer_map={p: A})
    out = func.specialize({p: decl_buffer((4, 8), "float32")})
    verify_well_formed(out)
    (used_view,) = {id(b): b for b in _buffers_used(out) if b.name == "view"}.values()
    assert isinstance(used_view.shape[0], tir.IntImm) and used_view.shape[0].value == 32
    assert out.body.extents[0].value == 32


def test_new_buffer_may_introduce_shape_variables():
    a, b = elementwise.params
    rows = Var("rows")
    out = _check(elementwise.specialize({a: decl_buffer((rows, 32), "float32")}))
    A, B = out.buffer_map[a], out.buffer_map[b]
    assert A.shape[0] is rows and B.shape[0] is rows and int(B.shape[1]) == 32


def test_permuted_shape_variables_are_a_renaming():
    a, b = elementwise.params
    n, m = elementwise.buffer_map[a].shape
    out = _check(elementwise.specialize({a: decl_buffer((m, n), "float32")}))
    assert out.params == elementwise.params
    with pytest.raises(ValueError, match="cyclic"):
        elementwise.specialize({a: decl_buffer((n + 1, m), "float32")})


def test_constants_take_the_variable_dtype():
    (a,) = int64_vector.params
    out = _check(int64_vector.specialize({a: decl_buffer((16,), "int8")}))
    (n,) = out.buffer_map[a].shape
    assert n.dtype == "int64" and n.value == 16
    assert out.body.block.body.extent.dtype == "int64"


def test_repeated_binding_agrees_once_resolved():
    # A binds n -> m and m -> 16 (via its second dim); B binds n -> 16: consistent.
    a, b = elementwise.params
    n, m = elementwise.buffer_map[a].shape
    out = _check(elementwise.specialize({a: decl_buffer((m, 16)), b: decl_buffer((16, 16))}))
    assert [int(s) for s in out.buffer_map[a].shape] == [16, 16]
    with pytest.raises(ValueError, match="conflicting values for variable 'n'"):
        elementwise.specialize({a: decl_buffer((m, 16)), b: decl_buffer((8, 16))})
