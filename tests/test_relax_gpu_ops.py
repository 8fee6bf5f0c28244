"""Operators whose legalized PrimFuncs the GPU schedule rules cannot schedule (loop-level
scans, sorts and scatters, full reductions with tuple reducers, blocks without loops,
symbolic extents) still get a valid launch (tvm.tir.schedule.gpu_rules.fallback): built with
relax.build for OpenCL and run on pocl, against llvm, with a tuple of device results."""

from __future__ import annotations

import numpy as np
import pytest
from relax_gpu_util import requires_opencl, run_both

pytest.importorskip("tvm.relax")

from tvm import relax, tir  # noqa: E402
from tvm.relax import op  # noqa: E402

pytestmark = requires_opencl

RNG = np.random.default_rng(3)


def _module(make, *sinfos):
    bb = relax.BlockBuilder()
    params = [relax.Var(f"p{i}", s) for i, s in enumerate(sinfos)]
    with bb.function("main", params):
        with bb.dataflow():
            outs = [bb.emit(e) for e in make(*params)]
            out = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(out)
    return bb.get()


def _tensor(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def test_scans_sorts_scatters_and_tuple_reductions():
    mod = _module(lambda x, i, u: [
        op.sort(x, axis=1),
        op.argsort(x, axis=0),
        op.cumsum(x, axis=0),
        op.cumsum(x),  # flattened: one scan over everything
        op.argmax(x),  # a full reduction with a (value, index) reducer
        op.argmin(x, axis=1),
        op.mean(x),  # a full reduction, then a block without loops
        op.nn.softmax(x, axis=1),
        op.scatter_elements(x, i, u, axis=0, reduction="add"),
        op.take(x, relax.const(np.array([5, 0, 2], "int64")), axis=0),
    ], _tensor((6, 40)), _tensor((2, 40), "int64"), _tensor((2, 40)))
    x = RNG.standard_normal((6, 40)).astype("float32")
    idx = RNG.integers(-6, 6, (2, 40)).astype("int64")
    upd = RNG.standard_normal((2, 40)).astype("float32")
    gpu, cpu, ex = run_both(mod, x, idx, upd)
    assert len(gpu) == 10
    for g, c in zip(gpu, cpu):
        assert g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(gpu[0], np.sort(x, axis=1))
    assert gpu[4] == np.argmax(x)
    source = ex.kernel_lib.get_source()
    assert "__kernel" in source


def test_symbolic_extents():
    n = tir.Var("n", "int64")
    mod = _module(lambda x: [
        op.arange(0, relax.PrimValue(n), 2, "int64"),
        op.sum(x, axis=0),
        op.cumsum(x, axis=1),
        op.multiply(x, relax.const(2.0, "float32")),
    ], _tensor((n, 12)))
    for rows in (1, 37):
        x = RNG.standard_normal((rows, 12)).astype("float32")
        gpu, cpu, _ = run_both(mod, x)
        for g, c in zip(gpu, cpu):
            np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(gpu[0], np.arange(0, rows, 2))
