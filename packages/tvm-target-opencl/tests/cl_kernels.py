"""te workloads shared by the opencl tests."""

from __future__ import annotations

from tvm import te, tir


def elementwise(n=None, cols=64):
    rows = tir.Var("n", "int32") if n is None else n
    A = te.placeholder((rows, cols), "float32", "A")
    B = te.placeholder((rows, cols), "float32", "B")
    C = te.compute((rows, cols), lambda i, j: te.exp(A[i, j]) * 0.5 + B[i, j], name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "ew")


def matmul(m, n, k):
    A = te.placeholder((m, k), "float32", "A")
    B = te.placeholder((k, n), "float32", "B")
    r = te.reduce_axis((0, k), "r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "matmul")


def row_reduce(rows, cols, kind="sum"):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    fn = {"sum": te.sum, "max": te.max}[kind]
    B = te.compute((rows,), lambda i: fn(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", f"row_{kind}")


def softmax(rows, cols):
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


def cast_to(dtype, n=64):
    """B = A (float32) as ``dtype``."""
    A = te.placeholder((n,), "float32", "A")
    B = te.compute((n,), lambda i: A[i].astype(dtype), name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", f"to_{dtype}")
