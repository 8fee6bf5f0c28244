"""The kernel's own argument checks (docs/abi.md): errors name the function, the argument,
what was expected and what was given.  Calls go through a PackedCFunc *without* metadata so
that the runtime's early checks do not answer first."""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest
from llvm_test_utils import prim_func
from tvm import tir
from tvm.runtime import KernelError, PackedCFunc
from tvm.runtime.device import cpu
from tvm.runtime.tensor import Tensor
from tvm.target.llvm import build
from tvm.tir import For, ForKind, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore


@pytest.fixture(scope="module")
def kernels():
    n = SizeVar("n", "int32")
    A = decl_buffer((n, 4), "float32", "A")
    B = decl_buffer((n, 4), "float32", "B")
    C = decl_buffer((n * 2,), "int32", "C")
    scale = Var("scale", "float32")
    count = Var("count", "int32")
    i, j = Var("i", "int32"), Var("j", "int32")
    body = tir.stmt_seq(
        For(i, 0, n, ForKind.SERIAL, For(j, 0, 4, ForKind.SERIAL,
                                         BufferStore(B, A[i, j] * scale, (i, j)))),
        For(i, 0, n * 2, ForKind.SERIAL, BufferStore(C, count + i, (i,))),
    )
    mod = build(prim_func("kern", [A, B, C, scale, count], body))
    raw = PackedCFunc(mod["kern"].address)  # no metadata: only the kernel checks
    return mod, raw


def _args(n=3):
    return (np.ones((n, 4), "float32"), np.zeros((n, 4), "float32"), np.zeros(2 * n, "int32"))


def test_good_call(kernels):
    mod, raw = kernels
    a, b, c = _args()
    raw(a, b, c, 2.0, 10)
    np.testing.assert_array_equal(b, 2 * a)
    np.testing.assert_array_equal(c, 10 + np.arange(6))


@pytest.mark.parametrize("call,pattern", [
    (lambda raw, a, b, c: raw(a, b, c, 2.0),
     r"^kern: expected 5 arguments, got 4$"),
    (lambda raw, a, b, c: raw(a.astype("float64"), b, c, 2.0, 1),
     r"kern: argument A has dtype \(code=2, bits=64, lanes=1\), expected float32 "
     r"\(code=2, bits=32, lanes=1\)"),
    (lambda raw, a, b, c: raw(a, b.reshape(-1), c, 2.0, 1),
     r"kern: argument B has ndim = 1, expected 2"),
    (lambda raw, a, b, c: raw(a, np.zeros((3, 5), "float32"), c, 2.0, 1),
     r"kern: argument B has shape\[1\] = 5, expected 4"),
    (lambda raw, a, b, c: raw(a, np.zeros((2, 4), "float32"), c, 2.0, 1),
     r"kern: argument B has shape\[0\] = 2, but n = 3 from argument A"),
    (lambda raw, a, b, c: raw(a, b, np.zeros(7, "int32"), 2.0, 1),
     r"kern: argument C has shape\[0\] = 7, expected \(n \* 2\) = 6"),
    (lambda raw, a, b, c: raw(a, b, c, 2.0, 1.5),
     r"kern: argument count expects an integer for int32 \(type code 0 or 1\), got type code 2"),
    (lambda raw, a, b, c: raw(a, b, c, 3, 1),
     r"kern: argument scale expects a float for float32 \(type code 2\), got type code 0"),
    (lambda raw, a, b, c: raw(5, b, c, 2.0, 1),
     r"kern: argument A expects a tensor \(DLTensor\*, type code 7\), got type code 0"),
    (lambda raw, a, b, c: raw(np.ones((3, 8), "float32")[:, ::2], b, c, 2.0, 1),
     r"kern: argument A is not compact: strides\[1\] = 2, expected 1"),
])
def test_kernel_rejects_bad_arguments(kernels, call, pattern):
    _, raw = kernels
    a, b, c = _args()
    with pytest.raises(KernelError, match=pattern):
        call(raw, a, b, c)
    np.testing.assert_array_equal(b, 0)  # nothing was written


def test_module_call_reports_early_with_names(kernels):
    mod, _ = kernels
    a, b, c = _args()
    with pytest.raises(KernelError, match="argument B"):
        mod["kern"](a, np.zeros((2, 4), "float32"), c, 2.0, 1)


def test_byte_offset_is_applied():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "float32", "A")
    i = Var("i", "int32")
    mod = build(prim_func("inc", [A], For(i, 0, n, ForKind.SERIAL,
                                          BufferStore(A, A[i] + 1.0, (i,)))))
    base = np.zeros(8, "float32")
    view = Tensor(cpu(0), base.ctypes.data, (5,), "float32", byte_offset=12, array=base)
    mod["inc"](view)
    np.testing.assert_array_equal(base, [0, 0, 0, 1, 1, 1, 1, 1])


def test_module_metadata_describes_parameters(kernels):
    mod, _ = kernels
    addr = mod.lookup_symbol("__tvm_module_meta")
    meta = json.loads(ctypes.string_at(addr).decode())
    (fn,) = meta["functions"]
    assert meta["version"] == 1 and fn["name"] == fn["symbol"] == "kern"
    assert fn["params"] == [
        # A is only read: a read-only array may be passed for it
        {"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["n", 4], "written": False},
        {"name": "B", "kind": "tensor", "dtype": "float32", "shape": ["n", 4], "written": True},
        {"name": "C", "kind": "tensor", "dtype": "int32", "shape": ["(n * 2)"],
         "written": True},
        {"name": "scale", "kind": "scalar", "dtype": "float32"},
        {"name": "count", "kind": "scalar", "dtype": "int32"},
    ]


def test_runtime_slots_are_filled(kernels):
    mod, _ = kernels
    for slot in ("__TVMAPISetLastError", "__TVMBackendParallelLaunch"):
        addr = mod.lookup_symbol(slot)
        assert addr and ctypes.c_void_p.from_address(addr).value


def test_assert_message_args_and_status_from_user_assert():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.SERIAL, tir.AssertStmt(
        A[i] < 100, "check: A[%lld] = %lld >= 100", tir.Evaluate(0),
        (tir.Cast("int64", i), tir.Cast("int64", A[i]))))
    mod = build(prim_func("check", [A], body))
    mod["check"](np.arange(5, dtype="int32"))
    with pytest.raises(KernelError, match=r"check: A\[2\] = 150 >= 100"):
        mod["check"](np.array([1, 2, 150, 3], "int32"))
