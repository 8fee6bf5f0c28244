"""te workloads shared by the cuda tests."""

from __future__ import annotations

from tvm import te, tir


def elementwise(n=4096, dtype="float32"):
    A = te.placeholder((n,), dtype, "A")
    B = te.placeholder((n,), dtype, "B")
    C = te.compute((n,), lambda i: A[i] * B[i] + A[i], name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "ew")


def matmul(m=128, n=128, k=64, dtype="float32"):
    A = te.placeholder((m, k), dtype, "A")
    B = te.placeholder((k, n), dtype, "B")
    r = te.reduce_axis((0, k), "r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "matmul")


def row_sum(rows=64, cols=1024):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", "row_sum")


def softmax(rows=32, cols=500):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    mx = te.compute((rows,), lambda i: te.max(A[i, k], axis=k), name="T_max")
    e = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - mx[i]), name="T_exp")
    k2 = te.reduce_axis((0, cols), "k2")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="T_sum")
    out = te.compute((rows, cols), lambda i, j: e[i, j] / s[i], name="T_softmax")
    return te.create_prim_func([A, out]).with_attr("global_symbol", "softmax")


# -- checks in device code ------------------------------------------------------------------


def checked_gather(reduce: bool = False):
    """B[i] = A[I[i]] (or a row sum of A[I[i, k]]), the index checked as take checks it."""
    a = te.placeholder((16,), "float32", name="A")
    n = tir.IntImm("int64", 16)

    def index(v):
        return tir.checked(v, tir.all(v >= 0, v < 16), "g: index %lld is out of range of %lld",
                           v, n)

    if reduce:
        i = te.placeholder((4, 256), "int64", name="I")
        k = te.reduce_axis((0, 256), name="k")
        b = te.compute((4,), lambda r: te.sum(a[index(i[r, k])], axis=k), name="B")
    else:
        i = te.placeholder((8,), "int64", name="I")
        b = te.compute((8,), lambda r: a[index(i[r])], name="B")
    return te.create_prim_func([a, i, b])
