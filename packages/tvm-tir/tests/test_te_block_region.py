"""Block access-region inference (tvm.tir.analysis.block_region), used by te.create_prim_func."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from te_builders import R, S, block, grid, point, store, vars_

from tvm import tir
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    Block, FloorDiv, FloorMod, IntImm, IterVar, LetStmt, Range, Var, const,
    decl_buffer,
)
from tvm.tir.analysis.block_region import infer_block_access_regions


def _block(body, iters=(), init=None, alloc=()):
    return Block(tuple(iters), (), (), "b", body, init, tuple(alloc))


def test_point_accesses_in_first_use_order():
    A, B, C = decl_buffer((8, 8), name="A"), decl_buffer((8,), name="B"), decl_buffer((8,), name="C")
    vi, vj = vars_("vi vj")
    blk = _block(store(C, B[vj] + A[vi, vj + 1], vi),
                 [IterVar(Range(0, 8), vi), IterVar(Range(0, 7), vj)])
    reads, writes = infer_block_access_regions(blk)
    assert_structural_equal(reads, (point(B, vj), point(A, vi, vj + 1)))
    assert_structural_equal(writes, (point(C, vi),))
    assert reads[1].region[1].min is blk.body.value.b.indices[1]  # kept as written


def test_init_excludes_written_buffers_from_reads():
    A, C = decl_buffer((8, 8), name="A"), decl_buffer((8,), name="C")
    vi, vk = vars_("vi vk")
    blk = _block(store(C, C[vi] + A[vi, vk], vi), init=store(C, 0.0, vi))
    reads, writes = infer_block_access_regions(blk)
    assert [r.buffer.name for r in reads] == ["A"]
    assert [w.buffer.name for w in writes] == ["C"]
    # without init the update reads C too
    reads, _ = infer_block_access_regions(blk.with_fields(init=None))
    assert [r.buffer.name for r in reads] == ["C", "A"]


def test_loops_inside_the_block_are_relaxed():
    A, C = decl_buffer((8, 16), name="A"), decl_buffer((8,), name="C")
    vi, k = vars_("vi k")
    body = grid([(k, 2, 12)], store(C, C[vi] + A[vi, k * 2 - 4], vi))
    reads, writes = infer_block_access_regions(_block(body))
    # k in [2, 13]: k*2-4 in [0, 22]
    assert_structural_equal(reads, (point(C, vi), point(A, vi, Range(0, 23))))


def test_dependent_inner_loops():
    A = decl_buffer((16, 16), name="A")
    C = decl_buffer((16,), name="C")
    vi, i, j = vars_("vi i j")
    body = grid([(i, 4), (j, i + 1)], store(C, A[vi + i, j], vi))
    reads, _ = infer_block_access_regions(_block(body))
    assert_structural_equal(reads[0].region, (Range(vi, 4), Range(0, 4)))


def test_neighbouring_accesses_merge_into_one_interval():
    A, C = decl_buffer((10,), name="A"), decl_buffer((10,), name="C")
    (vi,) = vars_("vi")
    value = A[vi - 1] + A[vi] + A[vi + 1]
    reads, _ = infer_block_access_regions(_block(store(C, value, vi)))
    assert_structural_equal(reads, (point(A, Range(vi - 1, 3)),))


def test_incomparable_bounds_become_min_max():
    A, C = decl_buffer((10,), name="A"), decl_buffer((10,), name="C")
    vi, vj = vars_("vi vj")
    reads, _ = infer_block_access_regions(_block(store(C, A[vi] + A[vj], vi)))
    (rng,) = reads[0].region
    assert_structural_equal(rng.min, tir.Min(vi, vj))
    assert_structural_equal(rng.extent, tir.Max(vi, vj) - tir.Min(vi, vj) + 1)


def test_floordiv_and_floormod_of_relaxed_variables():
    A, B, C = decl_buffer((8,), name="A"), decl_buffer((4,), name="B"), decl_buffer((8,), name="C")
    vi, k = vars_("vi k")
    body = grid([(k, 8)], store(C, A[FloorDiv(k, 2)] + B[FloorMod(vi + k, 4)], vi))
    reads, _ = infer_block_access_regions(_block(body))
    assert_structural_equal(reads, (point(A, Range(0, 4)), point(B, Range(0, 4))))
    # a relaxed variable under a non-linear operation covers the whole dimension
    body = grid([(k, 3)], store(C, A[k * k], vi))
    reads, _ = infer_block_access_regions(_block(body))
    assert_structural_equal(reads, (point(A, Range(0, 8)),))


def test_bounds_are_those_of_tvm_arith():
    # the relaxed bounds come from tvm.arith.eval_set, so they are as tight as arith's:
    # floordiv of a symbolic interval folds (vi*8 + k) // 4 to [vi*2, vi*2 + 1], and a
    # floormod inside one period keeps its monotonic ends
    from tvm.arith import eval_set

    A, B, C = decl_buffer((8,), name="A"), decl_buffer((8,), name="B"), decl_buffer((8,), name="C")
    vi, k = vars_("vi k")
    body = grid([(k, 8)], store(C, A[FloorDiv(vi * 8 + k, 4)] + B[FloorMod(k, 8) // 2], vi))
    reads, _ = infer_block_access_regions(_block(body))
    assert_structural_equal(reads, (point(A, Range(vi * 2, 2)), point(B, Range(0, 4))))
    lo = eval_set(FloorDiv(vi * 8 + k, 4), {k: Range(0, 8)}).min_value
    assert_structural_equal(reads[0].region[0].min, lo)
    # a loop that runs zero times reads an empty region
    reads, _ = infer_block_access_regions(_block(grid([(k, 0)], store(C, A[k], vi))))
    assert_structural_equal(reads, (point(A, Range(0, 0)),))


def test_vector_ramp_indices():
    A, C = decl_buffer((16,), name="A"), decl_buffer((16,), name="C")
    (vi,) = vars_("vi")
    reads, writes = infer_block_access_regions(
        _block(tir.BufferStore(C, A[tir.Ramp(vi * 4, 1, 4)], (tir.Ramp(vi * 4, 1, 4),))))
    assert_structural_equal(reads, (point(A, Range(vi * 4, 4)),))
    assert_structural_equal(writes, (point(C, Range(vi * 4, 4)),))


def test_nested_blocks_use_their_regions_with_bindings():
    A, C = decl_buffer((8, 8), name="A"), decl_buffer((8,), name="C")
    vi, k, ui, uk = vars_("vi k ui uk")
    inner = block("inner", [(S, 8, ui, vi), (R, 8, uk, k)], store(C, C[ui] + A[ui, uk], ui),
                  reads=[point(A, ui, uk)], writes=[point(C, ui)], init=store(C, 0.0, ui))
    reads, writes = infer_block_access_regions(_block(grid([(k, 8)], inner)))
    assert_structural_equal(reads, (point(A, vi, Range(0, 8)),))
    assert_structural_equal(writes, (point(C, vi),))
    # regions of an inner block without any are computed on the way
    bare = inner.with_fields(block=inner.block.with_fields(reads=(), writes=()))
    reads2, _ = infer_block_access_regions(_block(grid([(k, 8)], bare)))
    assert_structural_equal(reads2, reads)


def test_allocated_buffers_are_left_out_and_lets_are_resolved():
    A, T, C = decl_buffer((8,), name="A"), decl_buffer((8,), name="T"), decl_buffer((8,), name="C")
    vi, t = vars_("vi t")
    body = tir.stmt_seq(store(T, A[vi], vi), LetStmt(t, vi + 1, store(C, T[vi] + A[t], vi)))
    reads, writes = infer_block_access_regions(_block(body, alloc=[T]))
    assert_structural_equal(reads, (point(A, Range(vi, 2)),))
    assert [w.buffer.name for w in writes] == ["C"]
    reads, _ = infer_block_access_regions(_block(body), alloc_buffers=[T])
    assert [r.buffer.name for r in reads] == ["A"]


# ---------------------------------------------------------------------------------------
# soundness: the region holds every element the block touches


def _eval(expr, env):
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    ops = {tir.Add: lambda a, b: a + b, tir.Sub: lambda a, b: a - b, tir.Mul: lambda a, b: a * b,
           tir.FloorDiv: lambda a, b: a // b, tir.FloorMod: lambda a, b: a % b,
           tir.Min: min, tir.Max: max}
    return ops[type(expr)](_eval(expr.a, env), _eval(expr.b, env))


@st.composite
def index_exprs(draw, atoms):
    """A random index expression over ``atoms``: linear terms, maybe a floordiv/floormod."""
    expr = const(draw(st.integers(-3, 3)))
    for atom in atoms:
        coef = draw(st.integers(-2, 2))
        if coef:
            expr = expr + atom * coef
    wrap = draw(st.sampled_from(["none", "div", "mod"]))
    if wrap != "none":
        cls = FloorDiv if wrap == "div" else FloorMod
        expr = cls(expr, const(draw(st.integers(1, 3))))
    return expr


@st.composite
def access_cases(draw):
    vi, k1, k2 = vars_("vi k1 k2")
    lo1, ext1 = draw(st.integers(0, 2)), draw(st.integers(1, 3))
    dependent = draw(st.booleans())
    ext2 = k1 + 1 if dependent else const(draw(st.integers(1, 3)))
    n_access = draw(st.integers(1, 3))
    indices = [draw(index_exprs([vi, k1, k2])) for _ in range(n_access)]
    return vi, (k1, lo1, ext1), (k2, 0, ext2), indices, draw(st.integers(-2, 2))


@settings(max_examples=60, deadline=None)
@given(access_cases())
def test_regions_contain_every_accessed_element(case):
    vi, (k1, lo1, ext1), (k2, lo2, ext2), indices, vi_value = case
    A = decl_buffer((1000,), name="A")
    C = decl_buffer((1,), name="C")
    value = A[indices[0]]
    for idx in indices[1:]:
        value = value + A[idx]
    body = grid([(k1, lo1, ext1), (k2, lo2, ext2)], store(C, value, 0))
    reads, _ = infer_block_access_regions(_block(body))
    (region,) = reads
    (rng,) = region.region
    env = {vi: vi_value}
    lo, extent = _eval(rng.min, env), _eval(rng.extent, env)
    full = isinstance(rng.extent, IntImm) and rng.extent.value == 1000
    for a in range(lo1, lo1 + ext1):
        env[k1] = a
        for b in range(lo2, lo2 + _eval(ext2, env)):
            env[k2] = b
            for idx in indices:
                point_value = _eval(idx, env)
                assert full or lo <= point_value < lo + extent, (idx, env, lo, extent)

