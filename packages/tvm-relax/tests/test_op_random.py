"""relax.random.* (Philox-4x32-10 counter-based generator): the numpy reference against the
Random123 known-answer vector, the llvm kernels against the reference up to one rounding, the
distributions' moments, and fresh / reproducible run-time seeds."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, tir
from tvm.relax.op import random as rnd
from tvm.relax.topi.random import philox4x32_numpy
from tvm.relax.transform.numpy_eval import evaluate_with_numpy
from vm_testing import requires_llvm

import tvm.runtime
from tvm.runtime.vm import VirtualMachine, manual_seed


def test_philox_known_answers():
    # Random123 kat_vectors: philox4x32_10, counter 0 / key 0 and counter=key=all ones
    words = philox4x32_numpy(np.array([0]), 0)[0]
    assert [int(w) for w in words] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_inference_and_errors():
    call = relax.BlockBuilder().normalize(rnd.uniform(3, [2, 5], "float16", -1.0, 1.0))
    assert call.struct_info.dtype == "float16"
    assert [int(v) for v in call.struct_info.shape_values] == [2, 5]
    with pytest.raises(Exception, match="dtype"):
        relax.BlockBuilder().normalize(rnd.normal(3, [2], "int32"))
    with pytest.raises(ValueError, match="empty range"):
        rnd.randint(3, [2], "int64", 4, 4)


@pytest.mark.parametrize("name,dtype,a,b", [
    ("uniform", "float32", -2.0, 3.0), ("uniform", "float64", 0.0, 1.0),
    ("uniform", "float16", 0.0, 1.0), ("normal", "float32", 1.0, 2.0),
    ("normal", "float64", 0.0, 1.0), ("randint", "int64", -5, 9), ("randint", "int8", 0, 3),
])
def test_numpy_reference_moments(name, dtype, a, b):
    call = relax.BlockBuilder().normalize(getattr(rnd, name)(12345, [200, 100], dtype, a, b))
    out = evaluate_with_numpy(call, [12345, (200, 100)])
    assert out.dtype == np.dtype(dtype) and out.shape == (200, 100)
    x = out.astype(np.float64)
    if name == "uniform":
        assert x.min() >= a and x.max() < b
        assert abs(x.mean() - (a + b) / 2) < 0.02 * (b - a)
        assert abs(x.var() - (b - a) ** 2 / 12) < 0.03 * (b - a) ** 2 / 12
    elif name == "normal":
        assert abs(x.mean() - a) < 0.03 * b and abs(x.std() - b) < 0.02 * b
        assert abs(np.mean(((x - a) / b) ** 4) - 3) < 0.15  # kurtosis of a normal
    else:
        assert set(np.unique(x)) == set(range(a, b))


def _build(calls):
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            outs = [bb.emit(c(bb, n)) for c in calls]
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    return VirtualMachine(ex, tvm.runtime.cpu())["main"]


@requires_llvm
def test_kernels_match_reference_bit_for_bit():
    specs = [("uniform", "float32", -2.0, 3.0), ("uniform", "float64", 0.0, 1.0),
             ("uniform", "bfloat16", 0.0, 1.0), ("normal", "float64", 1.0, 2.0),
             ("randint", "int32", -7, 1000)]
    seed = -(1 << 62) + 12345
    calls = [lambda bb, n, s=s: getattr(rnd, s[0])(seed, [n, 3], s[1], s[2], s[3]) for s in specs]
    outs = _build(calls)(np.zeros(40, "float32"))
    for (name, dtype, a, b), out in zip(specs, outs):
        call = relax.BlockBuilder().normalize(getattr(rnd, name)(seed, [40, 3], dtype, a, b))
        ref = evaluate_with_numpy(call, [seed, (40, 3)])
        got = out.numpy()
        if dtype == "bfloat16":
            got, ref = got.astype(np.float32), ref.astype(np.float32)
        if name == "randint":
            np.testing.assert_array_equal(got, ref)
        else:  # the same bits; the affine map may be contracted to an fma (one ulp)
            tol = 1e-6 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * (b - a))


@requires_llvm
def test_fresh_seed_per_call_and_manual_seed():
    calls = [lambda bb, n: rnd.uniform(rnd.fresh_seed(bb, 0), [n], "float32"),
             lambda bb, n: rnd.normal(rnd.fresh_seed(bb, 1), [n], "float32")]
    f = _build(calls)
    x = np.zeros(1000, "float32")
    a1, b1 = (t.numpy() for t in f(x))
    a2, _ = (t.numpy() for t in f(x))
    assert not np.array_equal(a1, a2)  # a new draw per call
    assert not np.array_equal(a1, b1)  # and per call site
    manual_seed(42)
    r1 = [t.numpy() for t in f(x)]
    manual_seed(42)
    r2 = [t.numpy() for t in f(x)]
    for p, q in zip(r1, r2):
        np.testing.assert_array_equal(p, q)


def test_tvmscript_round_trip_of_a_fresh_seed():
    from tvm.ffi import assert_structural_equal
    from tvm.script import ir as I

    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            s = rnd.fresh_seed(bb, 0)
            gv = bb.emit_output(rnd.uniform(s, [n, 3], "float32", 2.0, 5.0))
        bb.emit_func_output(gv)
    mod = bb.get()
    text = mod.script()
    assert "vm.builtin.random_seed" in text and "R.random.uniform(" in text
    parsed = I.parse(text)
    assert_structural_equal(mod, parsed)
    assert parsed.script() == text
