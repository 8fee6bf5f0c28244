"""A VM function that ends by calling a VM function (a tail call) runs the callee in its
frame's place, so a loop written as tail recursion runs any number of iterations in constant
Python depth; a call whose result is used afterwards still nests."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.runtime.vm import VirtualMachine, VMStepLimitError  # noqa: E402


@I.ir_module
class Loops:
    @R.function
    def loop(i: R.Tensor((), "int64"), n: R.Tensor((), "int64"),
             acc: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        go = R.less(i, n)
        if go:
            j = R.add(i, R.const(1, "int64"))
            a = R.add(acc, R.const(1.0, "float32"))
            r = loop(j, n, a)  # noqa: F821
        else:
            r = acc
        return r

    @R.function
    def depth(i: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
        go = R.greater(i, R.const(0, "int64"))
        if go:
            j = R.subtract(i, R.const(1, "int64"))
            d = depth(j)  # noqa: F821 - not a tail call: its result is used below
            r = R.add(d, R.const(1, "int64"))
        else:
            r = i
        return r


def test_a_tail_recursive_loop_runs_fifty_thousand_iterations():
    vm = VirtualMachine(relax.build(Loops, "llvm"), tvm.runtime.cpu())
    out = vm["loop"](np.array(0, "int64"), np.array(50_000, "int64"), np.zeros(3, "float32"))
    np.testing.assert_array_equal(out.numpy(), np.full(3, 50_000, "float32"))
    assert int(vm["depth"](np.array(50, "int64")).numpy()) == 50


def test_the_step_limit_counts_every_tail_call():
    vm = VirtualMachine(relax.build(Loops, "llvm"), tvm.runtime.cpu(), max_steps=2_000)
    with pytest.raises(VMStepLimitError, match="@loop stopped after 2000"):
        vm["loop"](np.array(0, "int64"), np.array(10**9, "int64"), np.zeros(3, "float32"))
    out = vm["loop"](np.array(0, "int64"), np.array(10, "int64"), np.zeros(3, "float32"))
    np.testing.assert_array_equal(out.numpy(), np.full(3, 10, "float32"))
