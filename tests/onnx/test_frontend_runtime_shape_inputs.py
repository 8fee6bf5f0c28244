"""Shape-deciding inputs given at run time (axes, shapes, sizes, K, bounds, depth, ...) as
onnxruntime's backend test feeds them: graph inputs, not constants.  Each model is compiled
once and called with two different values of that input (the symbolic output shape is
evaluated per call), compared with onnxruntime; invalid values fail with the node named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(0)
X234 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
I64 = np.int64


def _model(op: str, inputs: list[tuple[str, np.ndarray]], attrs: dict[str, Any], opset: int,
           n_out: int = 1) -> Any:
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                         list(v.shape)) for n, v in inputs]
    outs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op, [n for n, _ in inputs], outs, **attrs)
    graph = helper.make_graph([node], "g", vis, [onnx.ValueInfoProto(name=o) for o in outs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _compiled(model: Any) -> Any:
    ex = relax.build(from_onnx(model), target="llvm")
    return relax.VirtualMachine(ex, tvm.runtime.cpu())["main"]


def _outputs(result: Any) -> list[np.ndarray]:
    if isinstance(result, (list, tuple)) or type(result).__name__ == "Array":
        return [r.numpy() for r in result]
    return [result.numpy()]


# op, attrs, opset, outputs, [inputs of call 1, inputs of call 2] (the first is the data)
CASES: dict[str, tuple] = {
    "reduce_sum_keepdims": ("ReduceSum", {"keepdims": 1}, 13, 1,
                            [[X234, np.array([1], I64)], [X234, np.array([-1], I64)]]),
    "reduce_max_drop": ("ReduceMax", {"keepdims": 0}, 18, 1,
                        [[X234, np.array([0, 2], I64)], [X234, np.array([2, -2], I64)]]),
    "reduce_log_sum_exp": ("ReduceLogSumExp", {"keepdims": 0}, 18, 1,
                           [[X234, np.array([1], I64)], [X234, np.array([0], I64)]]),
    "reduce_prod_empty_axis": ("ReduceProd", {"keepdims": 1}, 18, 1,
                               [[np.zeros((2, 0, 3), np.float32), np.array([1], I64)],
                                [np.zeros((2, 0, 3), np.float32), np.array([2], I64)]]),
    "cumsum_reverse": ("CumSum", {"reverse": 1}, 14, 1,
                       [[X234, np.array(0, I64)], [X234, np.array(-1, I64)]]),
    "trilu": ("Trilu", {"upper": 0}, 14, 1,
              [[X234, np.array(1, I64)], [X234, np.array(-1, I64)]]),
    "squeeze": ("Squeeze", {}, 13, 1,
                [[np.ones((1, 3, 1), np.float32), np.array([0], I64)],
                 [np.ones((1, 3, 1), np.float32), np.array([-1], I64)]]),
    "unsqueeze": ("Unsqueeze", {}, 13, 1,
                  [[X234, np.array([0, 4], I64)], [X234, np.array([1, -1], I64)]]),
    "reshape": ("Reshape", {}, 14, 1,
                [[X234, np.array([4, -1, 2], I64)], [X234, np.array([0, 4, 3], I64)]]),
    "expand": ("Expand", {}, 13, 1,
               [[np.ones((3, 1), np.float32), np.array([2, 3, 4], I64)],
                [np.ones((3, 1), np.float32), np.array([1, 1, 5], I64)]]),
    "tile": ("Tile", {}, 13, 1,
             [[X234[0], np.array([1, 2], I64)], [X234[0], np.array([3, 0], I64)]]),
    "constant_of_shape": ("ConstantOfShape", {}, 20, 1,
                          [[np.array([2, 3], I64)], [np.array([4, 1], I64)]]),
    "range_int": ("Range", {}, 11, 1,
                  [[np.array(1, I64), np.array(10, I64), np.array(3, I64)],
                   [np.array(10, I64), np.array(1, I64), np.array(-2, I64)]]),
    "range_float": ("Range", {}, 11, 1,
                    [[np.array(0.5, np.float32), np.array(3.0, np.float32),
                      np.array(0.75, np.float32)],
                     [np.array(1.0, np.float32), np.array(-1.0, np.float32),
                      np.array(-0.25, np.float32)]]),
    "slice_runtime_axes": ("Slice", {}, 13, 1,
                           [[X234[0], np.array([1, 0], I64), np.array([3, -1], I64),
                             np.array([0, 1], I64), np.array([1, 2], I64)],
                            [X234[0], np.array([-1, 3], I64), np.array([0, 9], I64),
                             np.array([1, 0], I64), np.array([-1, 1], I64)]]),
    "one_hot": ("OneHot", {"axis": 0}, 11, 1,
                [[np.array([0, 2, -1], I64), np.array(5, I64), np.array([0.0, 1.0], np.float32)],
                 [np.array([0, 2, -1], I64), np.array(3, I64), np.array([0.0, 1.0], np.float32)]]),
    "topk": ("TopK", {"axis": 1}, 11, 2,
             [[X234, np.array([2], I64)], [X234, np.array([3], I64)]]),
    "split": ("Split", {"axis": 2}, 13, 2,
              [[X234, np.array([1, 3], I64)], [X234, np.array([4, 0], I64)]]),
    "pad_constant": ("Pad", {}, 19, 1,
                     [[X234[0], np.array([1, 0, 0, 2], I64), np.array(1.5, np.float32)],
                      [X234[0], np.array([0, -1, 2, 1], I64), np.array(-2.0, np.float32)]]),
    "pad_reflect": ("Pad", {"mode": "reflect"}, 19, 1,
                    [[X234[0], np.array([1, 2, 1, 3], I64)], [X234[0], np.array([0, 1, 0, 0], I64)]]),
    "pad_edge_axes": ("Pad", {"mode": "edge"}, 19, 1,
                      [[X234, np.array([2, 1], I64), np.array([0.0], np.float32),
                        np.array([-1], I64)],
                       [X234, np.array([1, 0], I64), np.array([0.0], np.float32),
                        np.array([1], I64)]]),
    "pad_wrap": ("Pad", {"mode": "wrap"}, 19, 1,
                 [[X234[0], np.array([0, 5, 1, 0], I64)], [X234[0], np.array([2, 0, 0, 1], I64)]]),
    "center_crop_pad": ("CenterCropPad", {"axes": [1, 2]}, 18, 1,
                        [[X234, np.array([2, 7], I64)], [X234, np.array([5, 1], I64)]]),
    "hann_window": ("HannWindow", {"periodic": 0}, 17, 1,
                    [[np.array(8, I64)], [np.array(5, I64)]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_shape_input_given_at_run_time(case):
    op, attrs, opset, n_out, calls = CASES[case]
    names = [f"in{k}" for k in range(len(calls[0]))]
    model = _model(op, list(zip(names, calls[0])), attrs, opset, n_out)
    main = _compiled(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    shapes = set()
    for args in calls:
        got = _outputs(main(*args))
        want = sess.run(None, dict(zip(names, args)))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        shapes.add(tuple(got[0].shape))
    if case not in ("trilu", "cumsum_reverse"):  # the shape follows the run-time value
        assert len(shapes) == 2


BAD = {
    "reshape": ("Reshape", {}, 14, [X234, np.array([5, -1], I64)], "Reshape"),
    "reshape_two_minus_one": ("Reshape", {}, 14, [X234, np.array([-1, -1], I64)], "Reshape"),
    "reduce_axis_out_of_range": ("ReduceSum", {"keepdims": 0}, 13,
                                 [X234, np.array([3], I64)], "ReduceSum"),
    "reduce_axis_repeated": ("ReduceMax", {"keepdims": 1}, 18,
                             [X234, np.array([1, -2], I64)], "ReduceMax"),
    "expand": ("Expand", {}, 13, [np.ones((3, 1), np.float32), np.array([2, 4], I64)],
               "Expand"),
    "squeeze_not_one": ("Squeeze", {}, 13, [X234, np.array([1], I64)], "Squeeze"),
    "topk_too_large": ("TopK", {}, 11, [X234, np.array([5], I64)], "TopK"),
    "split_sum": ("Split", {"axis": 2}, 13, [X234, np.array([1, 2], I64)], "Split"),
    "range_zero_delta": ("Range", {}, 11, [np.array(1, I64), np.array(3, I64),
                                           np.array(0, I64)], "Range"),
    "constant_of_shape_negative": ("ConstantOfShape", {}, 20, [np.array([2, -3], I64)],
                                   "ConstantOfShape"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_invalid_run_time_shape_input_fails_naming_the_node(case):
    op, attrs, opset, args, name = BAD[case]
    n_out = 2 if op in ("TopK", "Split") else 1
    model = _model(op, [(f"in{k}", a) for k, a in enumerate(args)], attrs, opset, n_out)
    main = _compiled(model)
    with pytest.raises(ValueError, match=rf"ONNX {name} \(node .*invalid"):
        main(*args)


def test_constant_shape_inputs_keep_the_static_graph():
    """A constant Reshape target still gives a static reshape (no run-time shape step)."""
    inputs = [helper.make_tensor_value_info("x", 1, [2, 3, 4])]
    init = helper.make_tensor("s", 7, [2], [6, 4])
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    graph = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name="y")], [init])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    text = mod.script()
    assert "tensor_to_shape" not in text and "R.Tensor((6, 4)" in text


@pytest.mark.parametrize("mode,coord", [("nearest", "asymmetric"), ("linear", "half_pixel"),
                                        ("cubic", "align_corners")])
def test_resize_to_sizes_given_at_run_time(mode, coord):
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    inputs = [helper.make_tensor_value_info("x", 1, list(x.shape)),
              helper.make_tensor_value_info("sizes", 7, [2])]
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode, axes=[2, 3],
                            coordinate_transformation_mode=coord)
    graph = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name="y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    main = _compiled(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for sizes in ([6, 8], [2, 7]):
        sizes = np.array(sizes, I64)
        got = main(x, sizes).numpy()
        want = sess.run(None, {"x": x, "sizes": sizes})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_resize_sizes_may_not_change_the_channels():
    x = np.ones((1, 2, 3, 4), np.float32)
    inputs = [helper.make_tensor_value_info("x", 1, list(x.shape)),
              helper.make_tensor_value_info("sizes", 7, [4])]
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="rs")
    graph = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name="y")])
    main = _compiled(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    assert main(x, np.array([1, 2, 6, 8], I64)).numpy().shape == (1, 2, 6, 8)
    with pytest.raises(ValueError, match=r"ONNX Resize \(node 'rs'.*invalid sizes"):
        main(x, np.array([1, 3, 6, 8], I64))


def test_run_time_shape_meeting_a_static_one_keeps_its_shape():
    """Pad with run-time pads, then Add with a static tensor: ONNX broadcasting allows only
    the static length there, so the sum keeps a static shape (checked at run time)."""
    inputs = [helper.make_tensor_value_info("x", 1, [2, 3]),
              helper.make_tensor_value_info("pads", 7, [4]),
              helper.make_tensor_value_info("y", 1, [2, 5])]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Add", ["p", "y"], ["s"], name="add"),
             helper.make_node("ReduceSum", ["s"], ["z"], keepdims=0)]
    graph = helper.make_graph(nodes, "g", inputs, [onnx.ValueInfoProto(name="z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    mod = from_onnx(model)
    assert "R.Tensor((2, 5)" in mod.script()
    main = _compiled(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x, y = RNG.standard_normal((2, 3)).astype(np.float32), np.ones((2, 5), np.float32)
    for pads in ([0, 1, 0, 1], [0, 0, 0, 2]):
        feeds = {"x": x, "pads": np.array(pads, I64), "y": y}
        np.testing.assert_allclose(main(*feeds.values()).numpy(), sess.run(None, feeds)[0],
                                   rtol=1e-5)
    with pytest.raises(ValueError):
        main(x, np.array([0, 0, 0, 3], I64), y)


@pytest.mark.parametrize("mode,coord,extra", [
    ("nearest", "half_pixel", {"nearest_mode": "round_prefer_ceil"}),
    ("nearest", "asymmetric", {"nearest_mode": "floor"}),
    ("linear", "half_pixel", {}), ("linear", "align_corners", {}),
    ("linear", "half_pixel_symmetric", {}), ("linear", "pytorch_half_pixel", {}),
    ("cubic", "half_pixel", {"cubic_coeff_a": -0.5, "exclude_outside": 1}),
    ("cubic", "asymmetric", {}),
])
def test_resize_by_scales_given_at_run_time(mode, coord, extra):
    """The coordinate mapping uses the given scale (not output / input length)."""
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    inputs = [helper.make_tensor_value_info("x", 1, list(x.shape)),
              helper.make_tensor_value_info("scales", 1, [2])]
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode, axes=[2, 3],
                            coordinate_transformation_mode=coord, **extra)
    graph = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name="y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    main = _compiled(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    # onnxruntime's align_corners divides by the rounded output length, ONNX's reference
    # (and our static path) by n * scale: compared with onnxruntime where they agree
    steps = ([2.0, 1.6], [0.5, 0.4]) if coord == "align_corners" else \
        ([2.0, 1.5], [0.6, 0.8], [1.0, 3.0])
    for scales in steps:
        scales = np.array(scales, np.float32)
        got = main(x, scales).numpy()
        want = sess.run(None, {"x": x, "scales": scales})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # the same values as with the scales bound as a constant (the static path)
    scales = np.array([0.7, 1.5], np.float32)
    graph.input.pop()
    graph.initializer.append(numpy_helper.from_array(scales, "scales"))
    static = _compiled(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    np.testing.assert_allclose(main(x, scales).numpy(), static(x).numpy(), rtol=1e-4,
                               atol=1e-5)


def test_split_to_sequence_with_sizes_given_at_run_time():
    model = _model("SplitToSequence", [("x", X234), ("split", np.array([1, 3], I64))],
                   {"axis": 2}, 13)
    main = _compiled(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for split in ([1, 3], [4, 0], [2, 2]):
        args = [X234, np.array(split, I64)]
        got = _outputs(main(*args))
        (want,) = sess.run(None, {"x": args[0], "split": args[1]})
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="SplitToSequence"):
        main(X234, np.array([3, 3], I64))
