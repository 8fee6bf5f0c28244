"""At the call of a compiled kernel: arrays of the other byte order are refused, and so is
read-only memory for a tensor the kernel writes (it is fine for one it only reads)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from tvm import te, tir
from tvm.runtime import KernelError


@pytest.fixture(scope="module")
def scale():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    return tir.build(te.create_prim_func([A, B]).with_attr("global_symbol", "scale"),
                     target="llvm")["scale"]


def test_read_only_inputs_are_accepted(scale):
    a = np.arange(8, dtype="float32")
    a.flags.writeable = False
    b = np.zeros(8, "float32")
    scale(a, b)
    np.testing.assert_array_equal(b, a * 2)
    assert [p.written for p in scale.params] == [False, True]


@pytest.mark.parametrize("make", [
    lambda: np.frombuffer(bytes(32), dtype="float32"),        # views immutable bytes
    lambda: np.broadcast_to(np.zeros(1, "float32"), (8,)),     # a read-only broadcast view
])
def test_read_only_outputs_are_refused(scale, make):
    out = make()
    with pytest.raises(KernelError, match="argument B is read-only memory"):
        scale(np.ones(8, "float32"), out)


def test_the_other_byte_order_is_refused(scale):
    other = ">f4" if sys.byteorder == "little" else "<f4"
    with pytest.raises(TypeError, match="-endian"):
        scale(np.arange(8).astype(other), np.zeros(8, "float32"))
