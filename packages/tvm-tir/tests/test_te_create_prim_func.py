"""te.create_prim_func against block-level TIR written by hand, as TVMScript would write it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from te_builders import R, S, block, grid, point, prim_func, root, store, vars_

from tvm import te, tir
from tvm.ffi import assert_structural_equal, structural_equal, structural_hash
from tvm.tir import BufferLoad, IfThenElse, LetStmt, Range, Select, const, decl_buffer


def buf(shape, name, dtype="float32"):
    return decl_buffer(shape, dtype, name)


def blocks_of(func):
    out = []
    tir.post_order_visit(func.body, lambda n: out.append(n.block) if isinstance(n, tir.BlockRealize) else None)
    return [b for b in out if b.name_hint != "root"]


# ---------------------------------------------------------------------------------------
# elementwise


def test_elementwise_broadcast():
    A = te.placeholder((4, 8), name="A")
    B = te.placeholder((8,), name="B")
    Bc = te.placeholder((1, 8), name="Bc")
    C = te.compute((4, 8), lambda i, j: A[i, j] + B[j] * Bc[0, j], name="C")
    func = te.create_prim_func([A, B, Bc, C])

    a, b, bc, c = buf((4, 8), "A"), buf((8,), "B"), buf((1, 8), "Bc"), buf((4, 8), "C")
    i, j, vi, vj = vars_("i j vi vj")
    body = block(
        "C", [(S, 4, vi, i), (S, 8, vj, j)],
        store(c, a[vi, vj] + b[vj] * bc[0, vj], vi, vj),
        reads=[point(a, vi, vj), point(b, vj), point(bc, 0, vj)],
        writes=[point(c, vi, vj)],
    )
    expected = prim_func([a, b, bc, c], root(grid([(i, 4), (j, 8)], body)))
    assert_structural_equal(func, expected)
    assert func.attrs["global_symbol"] == "main" and func.attrs["tir.noalias"] is True
    assert [func.buffer_map[p].name for p in func.params] == ["A", "B", "Bc", "C"]


def test_multi_output_elementwise_makes_one_block_per_output():
    A = te.placeholder((8,), name="A")
    X, Y = te.compute((8,), lambda i: (A[i] + 1.0, A[i] * 2.0), name="T")
    func = te.create_prim_func([A, X, Y])
    a, x, y = buf((8,), "A"), buf((8,), "T_v0"), buf((8,), "T_v1")
    i, v0, v1 = vars_("i v0 v1")
    b0 = block("T_v0", [(S, 8, v0, i)], store(x, a[v0] + const(1.0), v0),
               reads=[point(a, v0)], writes=[point(x, v0)])
    b1 = block("T_v1", [(S, 8, v1, i)], store(y, a[v1] * const(2.0), v1),
               reads=[point(a, v1)], writes=[point(y, v1)])
    expected = prim_func([a, x, y], root(grid([(i, 8)], tir.stmt_seq(b0, b1))))
    assert_structural_equal(func, expected)
    # two blocks, two different block variables (SSA)
    blk0, blk1 = blocks_of(func)
    assert blk0.iter_vars[0].var is not blk1.iter_vars[0].var


# ---------------------------------------------------------------------------------------
# reductions


def _matmul(m=16, n=8, kk=4):
    A = te.placeholder((m, kk), name="A")
    B = te.placeholder((kk, n), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _expected_matmul_block(a, b, c, vi, vj, vk, i, j, k, m=16, n=8, kk=4):
    return block(
        "C", [(S, m, vi, i), (S, n, vj, j), (R, kk, vk, k)],
        store(c, c[vi, vj] + a[vi, vk] * b[vk, vj], vi, vj),
        reads=[point(a, vi, vk), point(b, vk, vj)],
        writes=[point(c, vi, vj)],
        init=store(c, 0.0, vi, vj),
    )


def test_matmul():
    A, B, C = _matmul()
    func = te.create_prim_func([A, B, C])
    a, b, c = buf((16, 4), "A"), buf((4, 8), "B"), buf((16, 8), "C")
    i, j, k, vi, vj, vk = vars_("i j k vi vj vk")
    body = grid([(i, 16), (j, 8), (k, 4)], _expected_matmul_block(a, b, c, vi, vj, vk, i, j, k))
    assert_structural_equal(func, prim_func([a, b, c], root(body)))


def test_matmul_bias_allocates_the_intermediate_in_root():
    A, B, C = _matmul()
    bias = te.placeholder((8,), name="bias")
    D = te.compute((16, 8), lambda i, j: C[i, j] + bias[j], name="D")
    func = te.create_prim_func([A, B, bias, D])

    a, b, c, bb, d = buf((16, 4), "A"), buf((4, 8), "B"), buf((16, 8), "C"), buf((8,), "bias"), buf(
        (16, 8), "D")
    i, j, k, vi, vj, vk, i2, j2, ui, uj = vars_("i j k vi vj vk i2 j2 ui uj")
    mm = grid([(i, 16), (j, 8), (k, 4)], _expected_matmul_block(a, b, c, vi, vj, vk, i, j, k))
    add = grid([(i2, 16), (j2, 8)], block(
        "D", [(S, 16, ui, i2), (S, 8, uj, j2)], store(d, c[ui, uj] + bb[uj], ui, uj),
        reads=[point(c, ui, uj), point(bb, uj)], writes=[point(d, ui, uj)]))
    expected = prim_func([a, b, bb, d], root(mm, add, alloc=[c]))
    assert_structural_equal(func, expected)
    assert [x.name for x in func.body.block.alloc_buffers] == ["C"]


def test_intermediate_passed_as_argument_is_a_parameter_not_an_allocation():
    A, B, C = _matmul()
    D = te.compute((16, 8), lambda i, j: C[i, j] * 2.0, name="D")
    func = te.create_prim_func([A, B, C, D])
    assert func.body.block.alloc_buffers == ()
    assert [func.buffer_map[p].name for p in func.params] == ["A", "B", "C", "D"]


def test_reduction_with_where_and_init():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k, where=k > i, init=1.0), name="B")
    func = te.create_prim_func([A, B])
    a, b = buf((8, 8), "A"), buf((8,), "B")
    i, k_, vi, vk = vars_("i k vi vk")
    body = block(
        "B", [(S, 8, vi, i), (R, 8, vk, k_)],
        IfThenElse(vk > vi, store(b, b[vi] + a[vi, vk], vi)),
        reads=[point(a, vi, vk)], writes=[point(b, vi)], init=store(b, 1.0, vi),
    )
    expected = prim_func([a, b], root(grid([(i, 8), (k_, 8)], body)))
    assert_structural_equal(func, expected)


def test_max_min_and_user_product_reducers():
    A = te.placeholder((4, 6), name="A")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: const(1, t), name="prod")
    outs = []
    for reducer, identity in ((te.max, tir.min_value("float32")), (te.min, tir.max_value("float32")),
                              (prod, const(1.0))):
        k = te.reduce_axis((0, 6), name="k")
        out = te.compute((4,), lambda i, r=reducer, k=k: r(A[i, k], axis=k), name="R")
        func = te.create_prim_func([A, out])
        (blk,) = blocks_of(func)
        assert structural_equal(blk.init.value, identity)
        outs.append(type(blk.body.value).__name__)
    assert outs == ["Max", "Min", "Mul"]


def test_multiple_reduction_axes_are_innermost_in_order():
    A = te.placeholder((2, 3, 4), name="A")
    r1 = te.reduce_axis((0, 3), name="r1")
    r2 = te.reduce_axis((0, 4), name="r2")
    B = te.compute((2,), lambda i: te.sum(A[i, r1, r2], axis=[r1, r2]), name="B")
    func = te.create_prim_func([A, B])
    loops = []
    tir.pre_order_visit(func.body, lambda n: loops.append((n.loop_var.name, n.extent.value))
                        if isinstance(n, tir.For) else None)
    assert loops == [("i", 2), ("r1", 3), ("r2", 4)]
    (blk,) = blocks_of(func)
    assert [iv.iter_type for iv in blk.iter_vars] == [S, R, R]


def test_argmax_tuple_reducer_writes_both_buffers_in_one_block():
    def fcombine(x, y):
        take_x = x[1] >= y[1]
        return Select(take_x, x[0], y[0]), Select(take_x, x[1], y[1])

    def fidentity(t0, t1):
        return const(-1, t0), tir.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    idx = te.placeholder((4, 8), name="idx", dtype="int32")
    val = te.placeholder((4, 8), name="val")
    k = te.reduce_axis((0, 8), name="k")
    T0, T1 = te.compute((4,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    assert (T0.dtype, T1.dtype) == ("int32", "float32")
    func = te.create_prim_func([idx, val, T0, T1])

    bi, bv, t0, t1 = buf((4, 8), "idx", "int32"), buf((4, 8), "val"), buf((4,), "T_v0", "int32"), buf(
        (4,), "T_v1")
    i, k_, vi, vk = vars_("i k vi vk")
    x0, x1 = BufferLoad(t0, (vi,)), BufferLoad(t1, (vi,))
    y0, y1 = bi[vi, vk], bv[vi, vk]
    tmp0, tmp1 = tir.Var("v_T_v0", "int32"), tir.Var("v_T_v1", "float32")
    update = LetStmt(tmp0, Select(x1 >= y1, x0, y0), LetStmt(
        tmp1, Select(x1 >= y1, x1, y1), tir.stmt_seq(store(t0, tmp0, vi), store(t1, tmp1, vi))))
    body = block(
        "T", [(S, 4, vi, i), (R, 8, vk, k_)], update,
        reads=[point(bv, vi, vk), point(bi, vi, vk)],
        writes=[point(t0, vi), point(t1, vi)],
        init=tir.stmt_seq(store(t0, -1, vi), store(t1, tir.min_value("float32"), vi)),
    )
    expected = prim_func([bi, bv, t0, t1], root(grid([(i, 4), (k_, 8)], body)))
    assert_structural_equal(func, expected)


def test_reduction_domain_depending_on_an_axis_nests_blocks():
    A = te.placeholder((8, 8), name="A")

    def prefix(i):
        k = te.reduce_axis((0, i + 1), name="k")
        return te.sum(A[i, k], axis=k)

    B = te.compute((8,), prefix, name="B")
    func = te.create_prim_func([A, B])
    a, b = buf((8, 8), "A"), buf((8,), "B")
    i, k, vi, vi2, vk = vars_("i k vi vi2 vk")
    inner = block(
        "B", [(S, Range(vi, 1), vi2, vi), (R, vi + 1, vk, k)],
        store(b, b[vi2] + a[vi2, vk], vi2),
        reads=[point(a, vi2, vk)], writes=[point(b, vi2)], init=store(b, 0.0, vi2),
    )
    outer = block(
        "B_l1", [(S, 8, vi, i)], grid([(k, vi + 1)], inner),
        reads=[point(a, vi, Range(0, vi + 1))], writes=[point(b, vi)],
    )
    expected = prim_func([a, b], root(grid([(i, 8)], outer)))
    assert_structural_equal(func, expected)


# ---------------------------------------------------------------------------------------
# whole operators


def test_conv2d_nchw_with_padding_stage():
    N, C, H, W, O, K = 1, 3, 6, 6, 2, 3
    data = te.placeholder((N, C, H, W), name="data")
    weight = te.placeholder((O, C, K, K), name="weight")
    pad = te.compute(
        (N, C, H + 2, W + 2),
        lambda n, c, h, w: te.if_then_else(
            tir.all(h >= 1, h < H + 1, w >= 1, w < W + 1), data[n, c, h - 1, w - 1], 0.0),
        name="pad",
    )
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, K), name="ry")
    rx = te.reduce_axis((0, K), name="rx")
    conv = te.compute(
        (N, O, H, W),
        lambda n, o, h, w: te.sum(pad[n, rc, h + ry, w + rx] * weight[o, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="conv",
    )
    func = te.create_prim_func([data, weight, conv])

    d, wt, p, cv = buf((N, C, H, W), "data"), buf((O, C, K, K), "weight"), buf(
        (N, C, H + 2, W + 2), "pad"), buf((N, O, H, W), "conv")
    n, c, h, w, vn, vc, vh, vw = vars_("n c h w vn vc vh vw")
    pad_stage = grid([(n, N), (c, C), (h, H + 2), (w, W + 2)], block(
        "pad", [(S, N, vn, n), (S, C, vc, c), (S, H + 2, vh, h), (S, W + 2, vw, w)],
        store(p, tir.if_then_else(tir.all(vh >= 1, vh < H + 1, vw >= 1, vw < W + 1),
                                  d[vn, vc, vh - 1, vw - 1], 0.0), vn, vc, vh, vw),
        reads=[point(d, vn, vc, vh - 1, vw - 1)], writes=[point(p, vn, vc, vh, vw)]))
    n2, o, h2, w2, rc_, ry_, rx_ = vars_("n o h w rc ry rx")
    un, uo, uh, uw, urc, ury, urx = vars_("un uo uh uw urc ury urx")
    conv_stage = grid(
        [(n2, N), (o, O), (h2, H), (w2, W), (rc_, C), (ry_, K), (rx_, K)],
        block(
            "conv",
            [(S, N, un, n2), (S, O, uo, o), (S, H, uh, h2), (S, W, uw, w2), (R, C, urc, rc_),
             (R, K, ury, ry_), (R, K, urx, rx_)],
            store(cv, cv[un, uo, uh, uw]
                  + p[un, urc, uh + ury, uw + urx] * wt[uo, urc, ury, urx], un, uo, uh, uw),
            reads=[point(p, un, urc, uh + ury, uw + urx), point(wt, uo, urc, ury, urx)],
            writes=[point(cv, un, uo, uh, uw)],
            init=store(cv, 0.0, un, uo, uh, uw),
        ),
    )
    expected = prim_func([d, wt, cv], root(pad_stage, conv_stage, alloc=[p]))
    assert_structural_equal(func, expected)


def test_softmax_four_stages():
    M, N = 4, 16
    A = te.placeholder((M, N), name="A")
    k1 = te.reduce_axis((0, N), name="k")
    mx = te.compute((M,), lambda i: te.max(A[i, k1], axis=k1), name="T_max")
    ex = te.compute((M, N), lambda i, j: te.exp(A[i, j] - mx[i]), name="T_exp")
    k2 = te.reduce_axis((0, N), name="k")
    sm = te.compute((M,), lambda i: te.sum(ex[i, k2], axis=k2), name="T_sum")
    out = te.compute((M, N), lambda i, j: ex[i, j] / sm[i], name="T_softmax")
    func = te.create_prim_func([A, out])

    a, bm, be, bs, bo = buf((M, N), "A"), buf((M,), "T_max"), buf((M, N), "T_exp"), buf(
        (M,), "T_sum"), buf((M, N), "T_softmax")
    stages = []
    i, k, vi, vk = vars_("i k vi vk")
    stages.append(grid([(i, M), (k, N)], block(
        "T_max", [(S, M, vi, i), (R, N, vk, k)], store(bm, tir.Max(bm[vi], a[vi, vk]), vi),
        reads=[point(a, vi, vk)], writes=[point(bm, vi)],
        init=store(bm, tir.min_value("float32"), vi))))
    i, j, vi, vj = vars_("i j vi vj")
    stages.append(grid([(i, M), (j, N)], block(
        "T_exp", [(S, M, vi, i), (S, N, vj, j)], store(be, tir.exp(a[vi, vj] - bm[vi]), vi, vj),
        reads=[point(a, vi, vj), point(bm, vi)], writes=[point(be, vi, vj)])))
    i, k, vi, vk = vars_("i k vi vk")
    stages.append(grid([(i, M), (k, N)], block(
        "T_sum", [(S, M, vi, i), (R, N, vk, k)], store(bs, bs[vi] + be[vi, vk], vi),
        reads=[point(be, vi, vk)], writes=[point(bs, vi)], init=store(bs, 0.0, vi))))
    i, j, vi, vj = vars_("i j vi vj")
    stages.append(grid([(i, M), (j, N)], block(
        "T_softmax", [(S, M, vi, i), (S, N, vj, j)], store(bo, be[vi, vj] / bs[vi], vi, vj),
        reads=[point(be, vi, vj), point(bs, vi)], writes=[point(bo, vi, vj)])))
    expected = prim_func([a, bo], root(*stages, alloc=[bm, be, bs]))
    assert_structural_equal(func, expected)


# ---------------------------------------------------------------------------------------
# symbolic shapes, scalars, index types


def test_symbolic_shape_is_bound_through_the_buffer_map():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    assert list(func.params) == [p for p in func.params if p.dtype == "handle"]
    m = tir.Var("m")
    a, b = buf((m, 4), "A"), buf((m, 4), "B")
    i, j, vi, vj = vars_("i j vi vj")
    body = grid([(i, m), (j, 4)], block(
        "B", [(S, m, vi, i), (S, 4, vj, j)], store(b, a[vi, vj] * const(2.0), vi, vj),
        reads=[point(a, vi, vj)], writes=[point(b, vi, vj)]))
    assert_structural_equal(func, prim_func([a, b], root(body)))
    assert func.buffer_map[func.params[0]].shape[0] is n


def test_scalar_parameter():
    A = te.placeholder((8,), name="A")
    alpha = te.var("alpha", "float32")
    B = te.compute((8,), lambda i: A[i] * alpha, name="B")
    func = te.create_prim_func([A, B, alpha])
    assert func.params[2] is alpha and alpha not in func.buffer_map
    s = tir.Var("s", "float32")
    a, b = buf((8,), "A"), buf((8,), "B")
    i, vi = vars_("i vi")
    body = grid([(i, 8)], block("B", [(S, 8, vi, i)], store(b, a[vi] * s, vi),
                                reads=[point(a, vi)], writes=[point(b, vi)]))
    assert_structural_equal(func, prim_func([a, b, s], root(body)))


def test_index_dtype_override_int64():
    A, B, C = _matmul()
    func = te.create_prim_func([A, B, C], index_dtype_override="int64")
    def i64(v):
        return tir.IntImm("int64", v)

    a, b, c = (buf((i64(16), i64(4)), "A"), buf((i64(4), i64(8)), "B"),
               buf((i64(16), i64(8)), "C"))
    i, j, k, vi, vj, vk = vars_("i j k vi vj vk", "int64")
    blk = block(
        "C", [(S, Range(i64(0), i64(16)), vi, i), (S, Range(i64(0), i64(8)), vj, j),
              (R, Range(i64(0), i64(4)), vk, k)],
        store(c, c[vi, vj] + a[vi, vk] * b[vk, vj], vi, vj),
        reads=[point(a, vi, vk), point(b, vk, vj)], writes=[point(c, vi, vj)],
        init=store(c, 0.0, vi, vj))
    body = grid([(i, i64(0), i64(16)), (j, i64(0), i64(8)), (k, i64(0), i64(4))], blk)
    assert_structural_equal(func, prim_func([a, b, c], root(body)))


def test_index_dtype_override_keeps_value_types_and_symbolic_dims():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + tir.Cast("float32", i), name="B")
    func = te.create_prim_func([A, B], index_dtype_override="int64")
    (blk,) = blocks_of(func)
    vi = blk.iter_vars[0].var
    assert vi.dtype == "int64"
    assert blk.iter_vars[0].dom.extent.dtype == "int64"  # Cast(int64, n)
    assert func.buffer_map[func.params[0]].shape[0] is n
    value = blk.body.value
    assert value.dtype == "float32"
    # the index-typed variable used as a value is cast back to its te type
    assert structural_equal(value.b, tir.Cast("float32", tir.Cast("int32", vi)), map_free_vars=True)


def test_zero_dim_compute_gets_a_unit_block_variable():
    A = te.placeholder((), name="A")
    B = te.compute((), lambda: A[()] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    a, b = buf((), "A"), buf((), "B")
    (vi,) = vars_("vi")
    body = block("B", [(S, 1, vi, const(0))], store(b, BufferLoad(a, ()) * const(2.0)),
                 reads=[point(a)], writes=[point(b)])
    assert_structural_equal(func, prim_func([a, b], root(body)))


def test_block_names_are_made_unique():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0)
    C = te.compute((4,), lambda i: B[i] + 1.0)
    D = te.compute((4,), lambda i: C[i] + 1.0)
    func = te.create_prim_func([A, D])
    assert [b.name_hint for b in blocks_of(func)] == ["compute", "compute_1", "compute_2"]


def test_attrs_become_block_annotations_and_layout_free_placeholders_a_func_attr():
    A = te.placeholder((4, 4), name="A")
    W = te.placeholder((4, 4), name="W")
    C = te.compute((4, 4), lambda i, j: A[i, j] * W[j, i], name="C",
                   attrs={"layout_free_placeholders": [W], "workload": "x", "schedule_rule": "r"})
    func = te.create_prim_func([A, W, C])
    (blk,) = blocks_of(func)
    assert blk.annotations == {"schedule_rule": "r"}
    assert func.attrs["layout_free_buffers"] == [1]


# ---------------------------------------------------------------------------------------
# errors


def test_placeholder_missing_from_arguments():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(ValueError, match=r"placeholder 'A' is read by te.compute 'B' but is not"):
        te.create_prim_func([B])


def test_undefined_scalar_variable():
    A = te.placeholder((4,), name="A")
    s = te.var("s", "float32")
    B = te.compute((4,), lambda i: A[i] * s, name="B")
    with pytest.raises(ValueError, match=r"variable 's' \(float32\) is used but not defined"):
        te.create_prim_func([A, B])


def test_symbolic_dim_of_an_intermediate_only_is_undefined():
    n = te.var("n")
    A = te.placeholder((4,), name="A")
    B = te.compute((n,), lambda i: A[0], name="B")
    C = te.compute((4,), lambda i: B[i] + 1.0, name="C")
    with pytest.raises(ValueError, match="variable 'n' \\(int32\\) is used but not defined"):
        te.create_prim_func([A, C])
    # an output's shape binds it, and so does a scalar argument
    te.create_prim_func([A, B, C])
    assert te.create_prim_func([A, C, n]).params[2] is n


def test_axis_of_another_compute_used_outside():
    A = te.placeholder((4,), name="A")
    captured = []

    def first(i):
        captured.append(i)
        return A[i]

    B = te.compute((4,), first, name="B")
    C = te.compute((4,), lambda j: B[j] + tir.Cast("float32", captured[0]), name="C")
    with pytest.raises(ValueError, match="axis of te.compute 'B' but is used outside"):
        te.create_prim_func([A, C])


@pytest.mark.parametrize("bad, message", [
    ("A", "argument 0 must be a te.Tensor or a tir.Var"),
    (3, "argument 0 must be a te.Tensor or a tir.Var"),
    (tir.Var("h", "handle"), "handle variable 'h'"),
])
def test_bad_argument_types(bad, message):
    with pytest.raises(TypeError, match=message):
        te.create_prim_func([bad])


def test_duplicate_argument_and_no_compute():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    with pytest.raises(ValueError, match=r"'B' appears twice in the arguments \(positions 1 and 2\)"):
        te.create_prim_func([A, B, B])
    with pytest.raises(ValueError, match="nothing to compute"):
        te.create_prim_func([A])
    with pytest.raises(ValueError, match="no te.Tensor"):
        te.create_prim_func([])
    with pytest.raises(ValueError, match="index_dtype_override"):
        te.create_prim_func([A, B], index_dtype_override="float32")


# ---------------------------------------------------------------------------------------
# properties


@st.composite
def elementwise_chains(draw):
    """A random chain of broadcasting elementwise stages and the arguments to build it."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    A = te.placeholder(shape, name="A")
    bshape = tuple(s if draw(st.booleans()) else 1 for s in shape)
    B = te.placeholder(bshape, name="B")
    cur = A
    stages = draw(st.integers(1, 4))
    for n in range(stages):
        def f(*idx, prev=cur):
            bidx = [0 if d == 1 and s != 1 else i for i, d, s in zip(idx, bshape, shape)]
            return prev[idx] * 2.0 + B[tuple(bidx)]
        cur = te.compute(shape, f, name=f"S{n}")
    return [A, B, cur], stages


@settings(max_examples=25, deadline=None)
@given(elementwise_chains())
def test_generation_is_deterministic_and_regions_cover_accesses(case):
    args, stages = case
    f1 = te.create_prim_func(args)
    f2 = te.create_prim_func(args)
    assert_structural_equal(f1, f2)
    assert structural_hash(f1) == structural_hash(f2)
    blocks = blocks_of(f1)
    assert len(blocks) == stages
    assert len(f1.body.block.alloc_buffers) == stages - 1
    for blk in blocks:
        store_ = blk.body
        (write,) = blk.writes
        assert write.buffer is store_.buffer
        assert all(r.min is i for r, i in zip(write.region, store_.indices))
        loads = _loads(store_.value)
        assert {id(r.buffer) for r in blk.reads} == {id(ld.buffer) for ld in loads}


def _loads(expr):
    out = []
    tir.post_order_visit(expr, lambda e: out.append(e) if isinstance(e, BufferLoad) else None)
    return out
