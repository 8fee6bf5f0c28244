"""te workloads shared by the vulkan tests."""

from __future__ import annotations

from tvm import te, tir


def elementwise(n=None, cols=64, dtype="float32"):
    rows = tir.Var("n", "int32") if n is None else n
    A = te.placeholder((rows, cols), dtype, "A")
    B = te.placeholder((rows, cols), dtype, "B")
    C = te.compute((rows, cols), lambda i, j: te.exp(A[i, j]) * tir.const(0.5, dtype) + B[i, j],
                   name="C")
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


def scale(n=256):
    """B = A * alpha with a float scalar parameter (a push constant)."""
    A = te.placeholder((n,), "float32", "A")
    alpha = tir.Var("alpha", "float32")
    B = te.compute((n,), lambda i: A[i] * alpha, name="B")
    return te.create_prim_func([A, B, alpha]).with_attr("global_symbol", "scale")


def checked_gather():
    """B[i] = A[I[i]], the index checked as take checks it."""
    a = te.placeholder((16,), "float32", name="A")
    n = tir.IntImm("int64", 16)

    def index(v):
        return tir.checked(v, tir.all(v >= 0, v < 16), "g: index %lld is out of range of %lld",
                           v, n)

    i = te.placeholder((8,), "int64", name="I")
    b = te.compute((8,), lambda r: a[index(i[r])], name="B")
    return te.create_prim_func([a, i, b]).with_attr("global_symbol", "gather")


def compare(n=100):
    """C = A < B (a bool tensor: stored as bytes)."""
    A = te.placeholder((n,), "float32", "A")
    B = te.placeholder((n,), "float32", "B")
    C = te.compute((n,), lambda i: A[i] < B[i], name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "less")


def int_power(n=64):
    """B = A ** E of int32 tensors, as the Relax ``power`` computes it (float64 pow)."""
    A = te.placeholder((n,), "int32", "A")
    E = te.placeholder((n,), "int32", "E")
    B = te.compute((n,), lambda i: tir.Cast("int32", tir.op.nearbyint(tir.power(
        tir.Cast("float64", A[i]), tir.Cast("float64", E[i])))), name="B")
    return te.create_prim_func([A, E, B]).with_attr("global_symbol", "ipow")


def unary(fn, dtype="float32", n=64):
    A = te.placeholder((n,), dtype, "A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", "unary")
