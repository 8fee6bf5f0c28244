"""from_tflite's model handling: input forms, tensors and buffers, operator codes and
versions, shape/dtype overrides, spans, QUANTIZE/DEQUANTIZE, dynamic-range weights, the
detection post-processing custom op, IF subgraphs, and its errors (unsupported builtin,
custom op, version, options, quantized tensors, bad, truncated and corrupted files)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest
import tflite
from model_builder import ModelBuilder, run_litert, run_relax

from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.relax.frontend.tflite import OpNotImplemented, TFLiteImportError, from_tflite


def _relu_model(**input_kw) -> bytes:
    m = ModelBuilder()
    x = m.input([2, 3], **input_kw)
    y = m.tensor([2, 3], name="relu_out")
    m.op("RELU", [x], [y])
    m.output(y)
    return m.build()


def test_path_bytes_and_parsed_model_import_alike(tmp_path) -> None:
    data = _relu_model()
    path = tmp_path / "relu.tflite"
    path.write_bytes(data)
    parsed = tflite.Model.GetRootAs(data, 0)
    mods = [from_tflite(data), from_tflite(str(path)), from_tflite(path), from_tflite(parsed),
            from_tflite(bytearray(data))]
    for mod in mods[1:]:
        assert relax.analysis.well_formed(mod)
        assert_structural_equal(mod, mods[0])
    assert [p.name_hint for p in mods[0]["main"].params] == ["input0"]


def test_inputs_and_outputs_keep_the_subgraph_order() -> None:
    m = ModelBuilder()
    a, b = m.input([2], name="a"), m.input([3], name="b")
    ya, yb = m.tensor([3], name="yb"), m.tensor([2], name="ya")
    m.op("NEG", [b], [ya])
    m.op("ABS", [a], [yb])
    m.output(ya, yb)
    data = m.build()
    mod = from_tflite(data)
    assert [p.name_hint for p in mod["main"].params] == ["a", "b"]
    xa, xb = np.array([1.0, -2.0], np.float32), np.array([3.0, -4.0, 5.0], np.float32)
    got = run_relax(data, [xa, xb])
    np.testing.assert_array_equal(got[0], -xb)
    np.testing.assert_array_equal(got[1], np.abs(xa))


def test_constant_buffers_keep_dtype_and_values() -> None:
    m = ModelBuilder()
    x = m.input([4], "int32")
    values = np.array([1, -2, 70000, -(2 ** 31)], np.int32)
    y = m.tensor([4], "int32")
    m.op("ADD", [x, m.const(values)], [y], ("AddOptions", {"FusedActivationFunction": 0}))
    m.output(y)
    data = m.build()
    mod = from_tflite(data)
    (add,) = [b.value for b in mod["main"].body.blocks[0].bindings
              if isinstance(b.value, relax.Call)]
    const = add.args[1]
    assert isinstance(const, relax.Constant) and const.data.dtype == np.int32
    np.testing.assert_array_equal(const.data, values)
    x0 = np.array([0, 2, 1, 0], np.int32)
    np.testing.assert_array_equal(run_relax(data, [x0])[0], run_litert(data, [x0])[0])


def test_buffers_stored_after_the_flatbuffer() -> None:
    m = ModelBuilder(seed=2)
    x = m.input([3, 4])
    y = m.tensor([3, 5])
    m.op("FULLY_CONNECTED", [x, m.weights([5, 4]), m.weights([5])], [y],
         ("FullyConnectedOptions", {"FusedActivationFunction": 0}))
    m.output(y)
    inline, external = m.build(), m.build(external_buffers=True)
    assert len(external) > len(inline)
    x0 = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(run_relax(external, [x0])[0], run_relax(inline, [x0])[0])
    np.testing.assert_allclose(run_relax(external, [x0])[0], run_litert(external, [x0])[0],
                               rtol=1e-5)
    with pytest.raises(TFLiteImportError, match="lies outside the file"):
        from_tflite(external[:-8])


def test_shape_signature_minus_one_is_a_symbolic_batch() -> None:
    data = _relu_model(signature=[-1, 3])
    sinfo = from_tflite(data)["main"].params[0].struct_info
    dims = sinfo.shape_values
    assert isinstance(dims[0], tir.Var) and dims[0].name == "batch"
    assert int(dims[1].value) == 3
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_array_equal(run_relax(data, [x])[0], np.maximum(x, 0))


def test_shape_dict_and_dtype_dict_override() -> None:
    data = _relu_model()
    sinfo = from_tflite(data, shape_dict={"input0": ["n", 3]},
                        dtype_dict={"input0": "float16"})["main"].params[0].struct_info
    assert sinfo.dtype == "float16"
    assert isinstance(sinfo.shape_values[0], tir.Var) and sinfo.shape_values[0].name == "n"
    with pytest.raises(TFLiteImportError, match="not a shape"):
        from_tflite(data, shape_dict={"input0": 3})
    with pytest.raises(TFLiteImportError, match=r"shape_dict names \['image'\], which are not "
                                                r"inputs .*\['input0'\]"):
        from_tflite(data, shape_dict={"image": [1, 3]})


def test_bindings_carry_spans_named_after_output_tensors() -> None:
    mod = from_tflite(_relu_model())
    spans = [b.span for b in mod["main"].body.blocks[0].bindings if b.span is not None]
    assert any(s.name == "relu_out" for s in spans)


def test_operator_code_from_deprecated_field_or_builtin_code() -> None:
    """schema.fbs: the builtin is max(deprecated_builtin_code, builtin_code); GELU (150)
    is written with the placeholder 127 in the deprecated field."""
    m = ModelBuilder()
    x = m.input([2, 4])
    y = m.tensor([2, 4])
    m.op("GELU", [x], [y], ("GeluOptions", {"Approximate": False}))
    m.output(y)
    data = m.build()
    assert m.opcodes[0][0] == 150
    x0 = np.linspace(-3, 3, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(run_relax(data, [x0])[0], run_litert(data, [x0])[0], rtol=1e-5,
                               atol=1e-6)
    old = ModelBuilder(legacy_opcodes=True)
    x = old.input([2, 3])
    y = old.tensor([2, 3])
    old.op("TANH", [x], [y])
    old.output(y)
    x1 = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(run_relax(old.build(), [x1])[0], np.tanh(x1), rtol=1e-6)


def _one_op(builtin: str, version: int = 1, custom: str = "") -> bytes:
    m = ModelBuilder()
    x = m.input([2, 3])
    y = m.tensor([2, 3])
    m.op("RELU", [x], [y])
    z = m.tensor([2, 3])
    m.op(builtin, [y], [z], version=version, custom_code=custom)
    m.output(z)
    return m.build()


def test_unsupported_builtin_names_op_index_and_subgraph() -> None:
    with pytest.raises(OpNotImplemented, match=r"TFLite LSH_PROJECTION \(operator 1 of "
                                               r"subgraph 0 'main', version 1\)"):
        from_tflite(_one_op("LSH_PROJECTION"))


def test_custom_operator_is_named() -> None:
    with pytest.raises(OpNotImplemented, match=r"custom operator 'MyFancyOp' \(operator 1 "
                                               r"of subgraph 0 'main'\)"):
        from_tflite(_one_op("CUSTOM", custom="MyFancyOp"))


def test_operator_version_beyond_the_importer_is_refused() -> None:
    with pytest.raises(OpNotImplemented, match=r"TFLite TANH \(operator 1 .*version 9 is "
                                               r"not supported .*versions 1 to 3"):
        from_tflite(_one_op("TANH", version=9))


def test_unsupported_options_are_refused_with_the_op_named() -> None:
    m = ModelBuilder()
    x = m.input([2, 8])
    y = m.tensor([2, 5])
    m.op("FULLY_CONNECTED", [x, m.weights([5, 8]), m.weights([5])], [y],
         ("FullyConnectedOptions", {"WeightsFormat": 1}))
    m.output(y)
    with pytest.raises(OpNotImplemented, match=r"FULLY_CONNECTED \(operator 0.*weights_format 1"):
        from_tflite(m.build())
    m = ModelBuilder()
    x = m.input([2, 8])
    y = m.tensor([2, 8])
    m.op("ADD", [x, x], [y], ("AddOptions", {"FusedActivationFunction": 4}))
    m.output(y)
    with pytest.raises(OpNotImplemented, match=r"ADD \(operator 0.*fused activation TANH"):
        from_tflite(m.build())


def test_quantized_tensors_of_other_integer_types_are_refused() -> None:
    m = ModelBuilder()
    x = m.tensor([1, 4], "int64", quant=([0.5], [3], 0))
    m.inputs.append(x)
    y = m.tensor([1, 4], "int64", quant=([0.5], [3], 0))
    m.op("RELU", [x], [y])
    m.output(y)
    with pytest.raises(OpNotImplemented, match=r"RELU \(operator 0.*quantized tensor .*int64"):
        from_tflite(m.build())


def test_quantize_dequantize_match_litert() -> None:
    m = ModelBuilder()
    x = m.input([2, 8])
    q = m.tensor([2, 8], "int8", quant=([0.5], [-3], 0))
    m.op("QUANTIZE", [x], [q])
    d = m.tensor([2, 8])
    m.op("DEQUANTIZE", [q], [d], version=2)
    m.output(q, d)
    data = m.build()
    # ties (x / scale = k + 0.5) round to even, as LiteRT's kernel; the ends saturate
    x0 = np.array([[0.25, 0.75, -0.25, -0.75, 1.25, -1.25, 0.1, 3.3],
                   [-70.0, 70.0, -63.0, 62.0, 0.0, 2.0, -2.2, 5.0]], np.float32)
    got, expected = run_relax(data, [x0]), run_litert(data, [x0])
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-6)


def test_dequantized_constant_weights_fold_at_import() -> None:
    """Per-channel int8 and float16 weights dequantized to float32 feed a float conv."""
    m = ModelBuilder()
    x = m.input([1, 4, 4, 2])
    w8 = m.const(np.arange(-8, 8, dtype=np.int8).reshape(2, 2, 2, 2),
                 quant=([0.1, 0.2], [0, 0], 0))
    wf = m.tensor([2, 2, 2, 2])
    m.op("DEQUANTIZE", [w8], [wf], version=2)
    bias16 = m.const(np.array([0.5, -0.25], np.float16))
    bf = m.tensor([2])
    m.op("DEQUANTIZE", [bias16], [bf], version=3)
    y = m.tensor([1, 3, 3, 2])
    m.op("CONV_2D", [x, wf, bf], [y], ("Conv2DOptions", {"Padding": 1, "StrideH": 1,
                                                         "StrideW": 1}))
    m.output(y)
    data = m.build()
    x0 = np.random.default_rng(0).standard_normal((1, 4, 4, 2)).astype(np.float32)
    np.testing.assert_allclose(run_relax(data, [x0])[0], run_litert(data, [x0])[0],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("data", [b"", b"garbage", b"\x00" * 64, b"1234TFL3" + b"\xff" * 40],
                         ids=["empty", "text", "zeros", "identifier-then-junk"])
def test_not_a_model_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(TFLiteImportError):
        from_tflite(data)


def test_missing_file_and_wrong_type() -> None:
    with pytest.raises(TFLiteImportError, match="cannot read"):
        from_tflite("/nonexistent/model.tflite")
    with pytest.raises(TypeError, match="expected a path, bytes or a tflite.Model"):
        from_tflite(12)


def test_truncated_and_corrupted_models_raise_import_errors() -> None:
    """Every truncation and random byte corruption of a valid model either imports or
    raises TFLiteImportError (never another exception, never a crash)."""
    m = ModelBuilder()
    x = m.input([1, 4, 4, 2])
    y = m.tensor([1, 4, 4, 3])
    m.op("CONV_2D", [x, m.weights([3, 1, 1, 2]), m.weights([3])], [y],
         ("Conv2DOptions", {"Padding": 0, "StrideH": 1, "StrideW": 1}))
    z = m.tensor([1, 4, 4, 3])
    m.op("LOGISTIC", [y], [z])
    m.output(z)
    data = m.build()
    rng = np.random.default_rng(0)
    cases = [data[:n] for n in range(0, len(data), 7)]
    for _ in range(300):
        buf = bytearray(data)
        for pos in rng.integers(0, len(buf), size=int(rng.integers(1, 4))):
            buf[pos] = int(rng.integers(0, 256))
        cases.append(bytes(buf))
    for case in cases:
        try:
            from_tflite(case)
        except TFLiteImportError:
            pass


def _int8_weights(rng: np.random.Generator, shape: list[int], axis: int = 0,
                  per_channel: bool = True) -> tuple[np.ndarray, tuple]:
    q = rng.integers(-127, 128, size=shape).astype(np.int8)
    n = shape[axis] if per_channel else 1
    scales = list((rng.random(n) * 0.02 + 0.005).astype(np.float32))
    return q, (scales, [0] * n, axis)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_dynamic_range_fully_connected_and_conv(per_channel: bool) -> None:
    """int8 weights with float activations (dynamic-range quantization): the weights are
    dequantized at import and ours computes in float; LiteRT's hybrid kernels also quantize
    the activations (per row, to int8), which moves their result by about 0.7% of its
    range here."""
    rng = np.random.default_rng(5)
    m = ModelBuilder()
    x = m.input([1, 6, 6, 3])
    wq, wquant = _int8_weights(rng, [4, 3, 3, 3], 0, per_channel)
    c = m.tensor([1, 6, 6, 4])
    m.op("CONV_2D", [x, m.const(wq, quant=wquant), m.weights([4])], [c], ("Conv2DOptions", {
        "Padding": 0, "StrideH": 1, "StrideW": 1, "FusedActivationFunction": 0}), version=2)
    fq, fquant = _int8_weights(rng, [5, 144], 0, per_channel)
    y = m.tensor([1, 5])
    m.op("FULLY_CONNECTED", [c, m.const(fq, quant=fquant), m.weights([5])], [y],
         ("FullyConnectedOptions", {"FusedActivationFunction": 0}), version=3)
    m.output(y)
    data = m.build()
    mod = from_tflite(data)
    consts = [a for b in mod["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)
              for a in b.value.args if isinstance(a, relax.Constant)]
    assert all(str(cst.data.dtype) == "float32" for cst in consts)
    x0 = np.random.default_rng(0).standard_normal((1, 6, 6, 3)).astype(np.float32)
    got, expected = run_relax(data, [x0])[0], run_litert(data, [x0])[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-2 * np.abs(expected).max())


def test_dynamic_range_embedding_lookup_is_exact() -> None:
    rng = np.random.default_rng(6)
    m = ModelBuilder()
    ids = m.input([4], "int32")
    tq, tquant = _int8_weights(rng, [10, 3], 0, True)
    y = m.tensor([4, 3])
    m.op("EMBEDDING_LOOKUP", [ids, m.const(tq, quant=tquant)], [y], version=2)
    m.output(y)
    data = m.build()
    i0 = np.array([1, 9, 0, 1], np.int32)
    np.testing.assert_allclose(run_relax(data, [i0])[0], run_litert(data, [i0])[0], rtol=1e-6)


def _detection_model(regular: bool, threshold: float, max_classes: int = 1) -> tuple:
    rng = np.random.default_rng(7)
    n, c, max_det = 40, 3, 6
    m = ModelBuilder()
    enc, cls = m.input([1, n, 4]), m.input([1, n, c + 1])
    anchors = np.concatenate([rng.random((n, 2)), rng.random((n, 2)) * 0.3 + 0.1], 1)
    outs = [m.tensor([1, max_det, 4]), m.tensor([1, max_det]), m.tensor([1, max_det]),
            m.tensor([1])]
    m.op("CUSTOM", [enc, cls, m.const(anchors.astype(np.float32))], outs,
         custom_code="TFLite_Detection_PostProcess", custom_options={
             "max_detections": max_det, "max_classes_per_detection": max_classes,
             "detections_per_class": 3, "use_regular_nms": regular,
             "nms_score_threshold": threshold, "nms_iou_threshold": 0.4, "num_classes": c,
             "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0})
    m.output(*outs)
    x = [rng.standard_normal((1, n, 4)).astype(np.float32),
         rng.random((1, n, c + 1)).astype(np.float32)]
    return m.build(), x


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("threshold", [0.3, 0.97])
def test_detection_postprocess_custom_op_matches_litert(regular: bool, threshold: float) -> None:
    """Full and partly filled outputs: ours zeroes the entries past num_detections (LiteRT
    leaves them as they were), the detections themselves match."""
    data, x = _detection_model(regular, threshold)
    expected, got = run_litert(data, x), run_relax(data, x)
    count = int(expected[3][0])
    assert got[3][0] == count and (0 < count < 6 if threshold > 0.9 else count == 6)
    for g, e in zip(got[:3], expected[:3]):
        np.testing.assert_allclose(g[0, :count], e[0, :count], rtol=1e-5, atol=1e-6)
        assert not np.any(g[0, count:])


def test_detection_postprocess_refuses_several_classes_per_box() -> None:
    data, _ = _detection_model(False, 0.3, max_classes=2)
    with pytest.raises(OpNotImplemented, match=r"custom TFLite_Detection_PostProcess \(operator "
                                               r"0.*max_classes_per_detection"):
        from_tflite(data)


def _if_model(const_cond: Optional[bool] = None) -> bytes:
    """main: y, z = IF(cond, x, w) with then: (x + w, relu(x)) and else: (x * w, -x)."""
    m = ModelBuilder()
    cond = m.const(np.array([const_cond])) if const_cond is not None else m.input([1], "bool")
    x, w = m.input([2, 3]), m.input([2, 3])
    y, z = m.tensor([2, 3]), m.tensor([2, 3])
    for name, (binop, table, unop) in (("then", ("ADD", "AddOptions", "RELU")),
                                       ("else", ("MUL", "MulOptions", "NEG"))):
        sub = m.subgraph(name)
        a, b = sub.input([2, 3]), sub.input([2, 3])
        s, u = sub.tensor([2, 3]), sub.tensor([2, 3])
        sub.op(binop, [a, b], [s], (table, {"FusedActivationFunction": 0}))
        sub.op(unop, [a], [u])
        sub.output(s, u)
    m.op("IF", [cond, x, w], [y, z], ("IfOptions", {"ThenSubgraphIndex": 1,
                                                    "ElseSubgraphIndex": 2}))
    m.output(y, z)
    return m.build()


def test_if_with_runtime_condition_matches_litert() -> None:
    data = _if_model()
    mod = from_tflite(data)
    assert relax.analysis.well_formed(mod)
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(
        np.float32)
    for c in (True, False):
        inputs = [np.array([c]), x, w]
        expected, got = run_litert(data, inputs), run_relax(data, inputs)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6)


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_constant_condition_inlines_one_branch(cond: bool) -> None:
    data = _if_model(cond)
    mod = from_tflite(data)
    ops = {b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
           if isinstance(b.value, relax.Call)}
    assert ("relax.add" in ops) == cond and ("relax.multiply" in ops) != cond
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(
        np.float32)
    for g, e in zip(run_relax(data, [x, w]), run_litert(data, [x, w])):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_reshape_to_a_shape_computed_at_run_time() -> None:
    """SHAPE -> STRIDED_SLICE (batch) -> PACK [batch, -1] -> RESHAPE, as converters write a
    flatten for a dynamic batch: the output's shape_signature gives the shape."""
    m = ModelBuilder()
    x = m.input([1, 2, 3, 4], signature=[-1, 2, 3, 4])
    shape = m.tensor([4], "int32")
    m.op("SHAPE", [x], [shape], ("ShapeOptions", {"OutType": 2}))
    batch = m.tensor([], "int32")
    m.op("STRIDED_SLICE", [shape, m.const(np.array([0], np.int32)),
                           m.const(np.array([1], np.int32)), m.const(np.array([1], np.int32))],
         [batch], ("StridedSliceOptions", {"ShrinkAxisMask": 1}), version=4)
    target = m.tensor([2], "int32")
    m.op("PACK", [batch, m.const(np.array(-1, np.int32))], [target],
         ("PackOptions", {"ValuesCount": 2, "Axis": 0}))
    y = m.tensor([1, 24], signature=[-1, 24])
    m.op("RESHAPE", [x, target], [y])
    m.output(y)
    data = m.build()
    x0 = np.random.default_rng(0).standard_normal((3, 2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_relax(data, [x0])[0], run_litert(data, [x0])[0])
    ret = from_tflite(data, shape_dict={"input0": [5, 2, 3, 4]})["main"].ret_struct_info
    assert [int(d.value) for d in ret.shape_values] == [5, 24]
