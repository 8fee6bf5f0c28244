"""Data-dependent reads are checked in the generated code: an index out of range (after
ONNX's negative wrap) fails with an error naming the op and the value instead of reading or
writing outside the tensor; integer division by zero fails the same way on the compiled
and the constant-folded path."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, tir
from tvm.relax import TensorStructInfo, op
from vm_testing import requires_llvm

import tvm.runtime


def _run(make, inputs):
    params = [relax.Var(f"a{k}", TensorStructInfo(v.shape, str(v.dtype)))
              for k, v in enumerate(inputs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    return vm["main"](*inputs).numpy()


X = np.arange(24, dtype="float32").reshape(4, 6)

INDEX_CASES = {
    "take": (lambda x, i: op.take(x, i, axis=0), np.array([1, -1, 2], "int64"),
             lambda i: X[i], [4, -5, 1 << 40]),
    "gather_elements": (lambda x, i: op.gather_elements(x, i, axis=1),
                        np.array([[0, -1]] * 4, "int64"),
                        lambda i: np.take_along_axis(X, i % 6, axis=1), [6, -7]),
    "gather_nd": (lambda x, i: op.gather_nd(x, i), np.array([[3, -6], [0, 5]], "int64"),
                  lambda i: X[tuple(i.T)], [6, -7]),
    "scatter_elements": (lambda x, i: op.scatter_elements(x, i, relax.const(
        np.ones((4, 2), "float32")), axis=1), np.array([[0, -1]] * 4, "int64"),
        None, [6, -7]),
    "scatter_nd": (lambda x, i: op.scatter_nd(x, i, relax.const(np.ones((2,), "float32"))),
                   np.array([[3, -6], [0, 5]], "int64"), None, [6, -7]),
}


@requires_llvm
@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_index_values_checked_in_the_kernel(name):
    make, good, reference, bad_values = INDEX_CASES[name]
    got = _run(make, [X, good])
    if reference is not None:
        np.testing.assert_array_equal(got, reference(good))
    for bad in bad_values:
        idx = good.copy()
        idx.flat[-1] = bad
        with pytest.raises(Exception, match=rf"{name}: index {bad} is out of range for axis"):
            _run(make, [X, idx])


def test_checks_become_asserts_hoisted_out_of_loops_they_do_not_depend_on():
    from tvm.relax.topi.transform import take
    from tvm import te

    x = te.placeholder((8, 64), "float32", name="x")
    i = te.placeholder((3,), "int64", name="i")
    f = te.create_prim_func([x, i, take(x, i, axis=0)])
    lowered = tir.lower(f)
    text = lowered.script() if hasattr(lowered, "script") else str(lowered)
    assert "tir.check" not in text and "T.check" not in text
    # one assert, outside the loop over the 64 columns
    asserts = []
    tir.post_order_visit(next(iter(lowered.functions.values())).body if hasattr(
        lowered, "functions") else lowered.body,
        lambda n: asserts.append(n) if isinstance(n, tir.AssertStmt) else None)
    assert len(asserts) == 1
    assert "take: index %lld is out of range for axis 0 of size %lld" == asserts[0].message
    loops = []
    tir.post_order_visit(asserts[0].body, lambda n: loops.append(n) if isinstance(n, tir.For)
                         else None)
    assert loops, "the column loop lies inside the assert"


# -- integer division: one semantics on the compiled and the folded path ------------------------
DIVISION = {"divide": "division", "floor_divide": "division", "mod": "modulo",
            "floor_mod": "modulo"}


def _reference(name, a, b):
    """onnxruntime's integer semantics (truncating Div and fmod=1 Mod, numpy's floor forms),
    with INT_MIN / -1 wrapping and its remainder 0."""
    with np.errstate(over="ignore"):
        trunc = (a - np.fmod(a, b)) // b
        return {"divide": trunc, "floor_divide": np.floor_divide(a, b), "mod": np.fmod(a, b),
                "floor_mod": np.mod(a, b)}[name]


def _folded(name, a, b):
    from tvm.relax.transform import FoldConstant

    bb = relax.BlockBuilder()
    with bb.function("main", []):
        with bb.dataflow():
            out = bb.emit_output(getattr(op, name)(relax.const(a), relax.const(b)))
        bb.emit_func_output(out)
    return FoldConstant(evaluator="numpy")(bb.get())


def _result(mod):
    body = mod["main"].body
    return body.blocks[-1].bindings[-1].value if body.blocks else body.body


@requires_llvm
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("name", sorted(DIVISION))
def test_integer_division_agrees_on_both_paths_and_never_traps(name, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    a = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b = rng.integers(-9 if info.min else 1, 9, 64, dtype=dtype, endpoint=True)
    b[b == 0] = 3
    a[:6] = [info.min, info.min, info.max, 7, info.min, info.min]
    b[:6] = [-1, 1, -1, -2, 3, -7] if info.min else [1, 2, 3, 2, 7, 9]
    make = getattr(op, name)
    want = _reference(name, a, b)
    np.testing.assert_array_equal(_run(make, [a, b]), want)
    folded = _result(_folded(name, a, b))
    np.testing.assert_array_equal(np.asarray(folded.data), want)

    b[7] = 0
    message = rf"{name}: integer {DIVISION[name]} by zero"
    with pytest.raises(ValueError, match=message):
        _run(make, [a, b])
    # the folded path leaves the call to the kernel, which fails the same way at run time
    mod = _folded(name, a, b)
    assert not isinstance(_result(mod), relax.Constant)
    from tvm.relax.transform.numpy_eval import evaluate_with_numpy
    from tvm.relax.op._numpy import CheckFailed

    call = relax.BlockBuilder().normalize(make(relax.const(a), relax.const(b)))
    with pytest.raises(CheckFailed, match=message):
        evaluate_with_numpy(call, [a, b])
    ex = relax.build(mod, target="llvm")
    with pytest.raises(ValueError, match=message):
        relax.VirtualMachine(ex, tvm.runtime.cpu())["main"]()


def test_take_out_of_range_is_not_folded_and_the_evaluator_says_why():
    from tvm.relax.op._numpy import CheckFailed
    from tvm.relax.transform.numpy_eval import evaluate_with_numpy

    idx = np.array([0, 4], "int64")
    call = relax.BlockBuilder().normalize(op.take(relax.const(X), relax.const(idx), axis=0))
    with pytest.raises(CheckFailed, match="take: index 4 is out of range for axis 0 of size 4"):
        evaluate_with_numpy(call, [X, idx])


@requires_llvm
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_clip_and_wrap_refuse_an_empty_axis(mode):
    from tvm.relax.op._numpy import CheckFailed
    from tvm.relax.transform.numpy_eval import evaluate_with_numpy

    x, idx = np.zeros((0, 3), "float32"), np.array([5, -2], "int64")
    make = lambda a, i: op.take(a, i, axis=0, mode=mode)  # noqa: E731
    np.testing.assert_array_equal(_run(make, [X, idx]), np.take(X, idx, axis=0, mode=mode))
    message = "take: index 5 into axis 0 of size 0"
    with pytest.raises(ValueError, match=message):
        _run(make, [x, idx])
    call = relax.BlockBuilder().normalize(make(relax.const(x), relax.const(idx)))
    with pytest.raises(CheckFailed, match=message):
        evaluate_with_numpy(call, [x, idx])
