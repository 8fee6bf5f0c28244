"""A compiled Relax function that never returns (its recursion's exit is never taken)
stops with a VMStepLimitError naming the function when the VM has a step limit; one that
does return runs as before."""

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
class Counter:
    @R.function
    def count(x: R.Tensor((), "int64"), stop: R.Prim("bool")) -> R.Tensor((), "int64"):
        if stop:
            r = x
        else:
            y = R.add(x, R.const(1, "int64"))
            r = count(y, stop)  # noqa: F821 - never stops: stop is passed on unchanged
        return r


def test_recursive_function_that_never_returns_hits_the_step_limit():
    ex = relax.build(Counter, "llvm")
    vm = VirtualMachine(ex, tvm.runtime.cpu(), max_steps=400)
    with pytest.raises(VMStepLimitError, match=r"VM function @count stopped after 400 executed "
                       r"instructions \(max_steps=400\)"):
        vm["count"](np.array(0, "int64"), False)
    out = vm["count"](np.array(5, "int64"), True)
    assert int(out.numpy()) == 5
