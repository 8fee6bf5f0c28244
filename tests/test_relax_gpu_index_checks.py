"""Index checks in device code: take, gather and scatter built for OpenCL (pocl in CI) raise
the same error as on the CPU for an index out of range, through the kernel's error record
(tvm.tir.codegen.gpu), instead of reading or writing outside the tensor; a good call after
a failed one runs."""

from __future__ import annotations

import numpy as np
import pytest
from relax_gpu_util import ensure_llvm, requires_opencl

pytest.importorskip("tvm.relax")

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax import op  # noqa: E402
from tvm.runtime import KernelError  # noqa: E402

pytestmark = requires_opencl


def _module(make, *sinfos):
    bb = relax.BlockBuilder()
    params = [relax.Var(f"p{i}", s) for i, s in enumerate(sinfos)]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return bb.get()


def _t(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


CASES = {
    "take": (lambda x, i: op.take(x, i, axis=0), (4, 8), (3,),
             lambda bad: np.array([0, 3, bad]), "take: index {bad} is out of range for axis 0 "
                                                "of size 4"),
    "gather_elements": (lambda x, i: op.gather_elements(x, i, axis=1), (4, 8), (4, 2),
                        lambda bad: np.array([[0, 1]] * 3 + [[bad, 0]]),
                        "gather_elements: index {bad} is out of range for axis 1 of size 8"),
    "gather_nd": (lambda x, i: op.gather_nd(x, i), (4, 8), (3, 2),
                  lambda bad: np.array([[0, 1], [3, bad], [1, 1]]),
                  "gather_nd: index {bad} is out of range for axis 1 of size 8"),
}


def _run(name, bad, target):
    make, xshape, ishape, indices, _ = CASES[name]
    mod = _module(make, _t(xshape), _t(ishape, "int64"))
    dev = tvm.runtime.device(target)
    vm = relax.VirtualMachine(relax.build(mod, target=target), dev)
    x = np.arange(np.prod(xshape), dtype="float32").reshape(xshape)
    return lambda i: vm["main"](tvm.runtime.tensor(x, device=dev),
                                tvm.runtime.tensor(i, device=dev)).numpy(), indices


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("bad", [9, -9, 1 << 40])
def test_an_index_out_of_range_raises_on_the_device_as_on_the_cpu(name, bad):
    ensure_llvm()
    message = CASES[name][4].format(bad=bad)
    for target in ("opencl", "llvm"):
        call, indices = _run(name, bad, target)
        with pytest.raises(KernelError) as info:
            call(indices(bad))
        assert str(info.value) == message, target


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_good_call_after_a_failed_one_runs(name):
    ensure_llvm()
    call, indices = _run(name, 9, "opencl")
    with pytest.raises(KernelError):
        call(indices(9))
    good = indices(1)
    cpu, _ = _run(name, 9, "llvm")
    np.testing.assert_array_equal(call(good), cpu(good))


def test_scatter_out_of_range_writes_nothing_outside():
    ensure_llvm()
    mod = _module(lambda x, i, u: op.scatter_elements(x, i, u, axis=0),
                  _t((4, 8)), _t((1, 8), "int64"), _t((1, 8)))
    dev = tvm.runtime.device("opencl")
    vm = relax.VirtualMachine(relax.build(mod, target="opencl"), dev)
    x, u = np.zeros((4, 8), "float32"), np.ones((1, 8), "float32")
    bad = np.array([[0, 1, 2, 3, 100000, 0, 1, 2]])

    def call(i):
        return vm["main"](*(tvm.runtime.tensor(a, device=dev) for a in (x, i, u))).numpy()

    with pytest.raises(KernelError, match="index 100000 is out of range for axis 0 of size 4"):
        call(bad)
    ok = np.array([[0, 1, 2, 3, 0, 1, 2, 3]])
    expected = x.copy()
    expected[ok[0], np.arange(8)] = 1
    np.testing.assert_array_equal(call(ok), expected)
