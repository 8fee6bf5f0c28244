"""Imported models never read or write outside a tensor nor trap: index values of Gather*,
Scatter* are checked at run time (after ONNX's negative wrap), integer Div/Mod by zero fail
with the op's name as onnxruntime's do, INT_MIN / -1 wraps."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

X = np.arange(24, dtype=np.float32).reshape(4, 6)


def _model(op, index_shape, attrs, updates=None):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape)),
              helper.make_tensor_value_info("i", TensorProto.INT64, list(index_shape))]
    names = ["x", "i"]
    inits = []
    if updates is not None:
        inits.append(helper.make_tensor("u", TensorProto.FLOAT, list(updates.shape),
                                        updates.reshape(-1)))
        names.append("u")
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    # op: (index, attrs, updates, relax op named in the message, in-range index, far index)
    "Gather": (np.array([[1, -1], [2, 0]]), {"axis": 0}, None, "take", -4, 4),
    "GatherElements": (np.array([[0, -1]] * 4), {"axis": 1}, None, "gather_elements", 5, -7),
    "GatherND": (np.array([[3, -6], [0, 5]]), {}, None, "gather_nd", -6, 6),
    "ScatterElements": (np.array([[0, -1]] * 4), {"axis": 1}, np.ones((4, 2), np.float32),
                        "scatter_elements", -6, 6),
    "ScatterND": (np.array([[3, -6], [0, 5]]), {}, np.ones((2,), np.float32), "scatter_nd",
                  -6, 1 << 40),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_index_values_are_checked_at_run_time(op):
    index, attrs, updates, name, near, far = CASES[op]
    model = _model(op, index.shape, attrs, updates)
    vm = relax.VirtualMachine(relax.build(from_onnx(model), target="llvm"), tvm.runtime.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ok = index.copy()
    ok.flat[-1] = near
    np.testing.assert_array_equal(vm["main"](X, ok).numpy(), sess.run(None, {"x": X, "i": ok})[0])
    for bad in (far, far + 1 if far > 0 else far - 1):
        idx = index.copy()
        idx.flat[-1] = bad
        with pytest.raises(ValueError, match=rf"{name}: index {bad} is out of range for axis"):
            vm["main"](X, idx)


def _binary(op, dtype, attrs=None):
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node(op, ["a", "b"], ["y"], **(attrs or {}))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", t, [4]),
                                            helper.make_tensor_value_info("b", t, [4])],
                              [helper.make_tensor_value_info("y", t, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op,attrs,name", [("Div", {}, "divide: integer division"),
                                           ("Mod", {}, "floor_mod: integer modulo"),
                                           ("Mod", {"fmod": 1}, "mod: integer modulo")])
def test_integer_division_by_zero_fails_like_onnxruntime(op, attrs, name, dtype):
    model = _binary(op, dtype, attrs)
    vm = relax.VirtualMachine(relax.build(from_onnx(model), target="llvm"), tvm.runtime.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    lo = np.iinfo(dtype).min
    a, b = np.array([7, -7, 9, lo], dtype), np.array([2, 2, -4, 1], dtype)
    np.testing.assert_array_equal(vm["main"](a, b).numpy(), sess.run(None, {"a": a, "b": b})[0])
    b[1] = 0
    with pytest.raises(ValueError, match=rf"{name} by zero"):
        vm["main"](a, b)
    with pytest.raises(Exception, match="by zero"):
        sess.run(None, {"a": a, "b": b})
    b = np.array([-1, -1, 3, 2], dtype)
    a = np.array([lo, 5, lo, lo], dtype)
    with np.errstate(over="ignore"):
        trunc = (a - np.fmod(a, b)) // b
        want = {"Div": trunc, "Mod": (np.fmod if attrs else np.mod)(a, b)}[op]
    assert want[0] == (lo if op == "Div" else 0)  # INT_MIN / -1 wraps (onnxruntime traps)
    np.testing.assert_array_equal(vm["main"](a, b).numpy(), want)
