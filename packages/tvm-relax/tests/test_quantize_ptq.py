"""relax.quantize: post-training quantization of BlockBuilder nets (the quantized module runs
as qnn integer kernels and stays close to float), the calibration thresholds on known
distributions, skipped layers, progress and configuration errors."""

import numpy as np
import pytest
from graph_pass_testing import op_names, requires_host_jit

from tvm import relax
from tvm.relax import op
from tvm.relax.quantize import (QuantizeConfig, TensorStats, activation_params,
                                entropy_threshold, find_layers, minmax_threshold,
                                percentile_threshold, quantize, weight_params)


def _conv_net(seed=0):
    rng = np.random.default_rng(seed)
    x = relax.Var("x", relax.TensorStructInfo([1, 3, 12, 12], "float32"))

    def c(*shape, s=1.0):
        return relax.const((rng.standard_normal(shape) * s).astype("float32"))

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(x, c(8, 3, 3, 3, s=0.3), padding=1), "conv1")
            y = bb.emit(op.nn.relu(bb.emit(op.add(y, c(1, 8, 1, 1, s=0.1)))))
            y = bb.emit(op.nn.conv2d(y, c(8, 8, 3, 3, s=0.2), padding=1), "conv2")
            y = bb.emit(op.nn.relu(y))
            y = bb.emit(op.reshape(y, [1, -1]))
            y = bb.emit_output(op.add(op.matmul(y, c(8 * 12 * 12, 10, s=0.02)), c(10, s=0.1)))
        bb.emit_func_output(y)
    return bb.get()


def _mlp(seed=1):
    rng = np.random.default_rng(seed)
    x = relax.Var("x", relax.TensorStructInfo([4, 32], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for i, (k, n) in enumerate([(32, 64), (64, 64), (64, 10)]):
                w = relax.const((rng.standard_normal((k, n)) / np.sqrt(k)).astype("float32"))
                b = relax.const((rng.standard_normal(n) * 0.1).astype("float32"))
                h = bb.emit(op.matmul(h, w), f"fc{i}")
                h = bb.emit(op.add(h, b))
                if i < 2:
                    h = bb.emit(op.nn.relu(h))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def _batches(shape, n, seed):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal(shape).astype("float32")} for _ in range(n)]


def _run(mod, batches):
    import tvm.runtime

    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    return np.stack([vm["main"](b["x"]).numpy() for b in batches])


def _cosine(a, b):
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


@requires_host_jit
@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy"])
def test_conv_net_becomes_integer_and_stays_close_to_float(method):
    mod = _conv_net()
    qmod, report = quantize(mod, _batches((1, 3, 12, 12), 16, 0),
                            QuantizeConfig(calibrate=method, progress=False))
    names = op_names(qmod)
    assert names.count("relax.qnn.conv2d") == 2 and names.count("relax.qnn.matmul") == 1
    assert "relax.nn.conv2d" not in names and "relax.matmul" not in names
    assert [la.name for la in report.quantized] == ["conv1", "conv2", find_layers(
        mod["main"])[2].name]
    held_out = _batches((1, 3, 12, 12), 8, 99)
    assert _cosine(_run(mod, held_out), _run(qmod, held_out)) >= 0.99
    assert report.cosine >= 0.99 and all(la.cosine >= 0.99 for la in report.quantized)
    text = str(report)
    assert "conv1" in text and "cosine" in text and method in text
    lo, hi = report.layers[0].input_range
    scale, zp = report.layers[0].input_params
    assert lo < 0 < hi and 0 < zp < 255 and scale == pytest.approx((hi - lo) / 255, rel=1e-3)


@requires_host_jit
def test_mlp_with_int8_activations():
    mod = _mlp()
    qmod, report = quantize(mod, _batches((4, 32), 12, 0),
                            QuantizeConfig(calibrate="percentile", percentile=99.9,
                                           activation_dtype="int8", progress=False))
    names = op_names(qmod)
    assert names.count("relax.qnn.matmul") == 3 and "relax.matmul" not in names
    assert all(la.input_params[1] == 0 and la.output_params[1] == 0 for la in report.quantized)
    assert all(b.value.struct_info.dtype != "uint8" for block in qmod["main"].body.blocks
               for b in block.bindings if hasattr(b.value, "struct_info"))
    held_out = _batches((4, 32), 8, 7)
    assert _cosine(_run(mod, held_out), _run(qmod, held_out)) >= 0.99


@requires_host_jit
def test_skipped_layer_stays_float():
    mod = _conv_net()
    calls = []
    qmod, report = quantize(mod, _batches((1, 3, 12, 12), 4, 0),
                            QuantizeConfig(skip=["conv2"], progress=lambda d, t: calls.append(
                                (d, t)), progress_every=2))
    names = op_names(qmod)
    assert names.count("relax.nn.conv2d") == 1 and names.count("relax.qnn.conv2d") == 1
    assert [la.name for la in report.skipped] == ["conv2"] and "skipped" in str(report)
    assert calls == [(2, 4), (4, 4)]
    _, by_index = quantize(mod, _batches((1, 3, 12, 12), 2, 0), QuantizeConfig(skip=[0, 2]))
    assert [la.name for la in by_index.quantized] == ["conv2"]


def _outlier_stats(method_bins=2048):
    rng = np.random.default_rng(0)
    stats = TensorStats(method_bins)
    for _ in range(10):
        stats.update(rng.standard_normal(20000).astype("float32"))
    stats.update(np.array([60.0, -80.0, 100.0], "float32"))
    return stats


def test_thresholds_on_gaussian_with_outliers():
    stats = _outlier_stats()
    assert minmax_threshold(stats) == 100.0
    pct = percentile_threshold(stats, 99.99)
    assert 3.0 < pct < 5.0  # N(0,1): |x| 99.99th percentile is 3.89
    ent = entropy_threshold(stats)
    assert 2.0 < ent < 10.0
    # a uniform distribution's best threshold is its full range
    uni = TensorStats()
    uni.update(np.random.default_rng(1).uniform(-1, 1, 200000).astype("float32"))
    assert entropy_threshold(uni) > 0.9 and percentile_threshold(uni, 99.99) > 0.99


def test_histogram_range_doubling_keeps_counts():
    rng = np.random.default_rng(2)
    stats = TensorStats(256)
    chunks = [rng.uniform(-s, s, 1000).astype("float32") for s in (0.5, 3.0, 40.0)]
    for c in chunks:
        stats.update(c)
    assert stats.hist.sum() + stats.zeros == 3000
    assert stats.edge >= 40.0 * 0.99 and stats.min == min(c.min() for c in chunks)
    direct, _ = np.histogram(np.abs(np.concatenate(chunks)), 256, (0, stats.edge))
    assert np.abs(direct - stats.hist).sum() <= 4  # bin edges agree up to rounding


def test_parameters():
    assert activation_params(-1.0, 3.0, "uint8") == (pytest.approx(4 / 255), 64)
    assert activation_params(0.5, 2.0, "uint8")[1] == 0  # the range is widened to hold 0
    assert activation_params(-1.0, 3.0, "int8") == (pytest.approx(3 / 127), 0)
    w = np.array([[1.0, -2.0], [0.5, 0.25], [0.0, 0.0]], "float32")
    q, scales = weight_params(w, 0)
    assert scales == pytest.approx([2 / 127, 0.5 / 127, 1.0])
    assert q.dtype == np.int8 and q[0].tolist() == [64, -127] and q[1].tolist() == [127, 64]


@pytest.mark.parametrize("kwargs,field", [
    ({"calibrate": "kl"}, "calibrate"),
    ({"percentile": 101}, "percentile"),
    ({"activation_dtype": "int16"}, "activation_dtype"),
    ({"weight_dtype": "uint8"}, "weight_dtype"),
    ({"skip": "conv1"}, "skip"),
    ({"num_bins": 100}, "num_bins"),
    ({"progress_every": 0}, "progress_every"),
])
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"QuantizeConfig.{field}"):
        QuantizeConfig(**kwargs)


def test_unknown_skip_and_bad_batches_are_errors():
    mod = _conv_net()
    with pytest.raises(ValueError, match="QuantizeConfig.skip"):
        quantize(mod, _batches((1, 3, 12, 12), 1, 0), QuantizeConfig(skip=["nope"]))
    with pytest.raises(ValueError, match="calibration_data is empty"):
        quantize(mod, [])


def _conv_bn_net(seed=3):
    rng = np.random.default_rng(seed)
    x = relax.Var("x", relax.TensorStructInfo([1, 3, 8, 8], "float32"))

    def c(*shape, s=1.0, off=0.0):
        return relax.const((rng.standard_normal(shape) * s + off).astype("float32"))

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(x, c(6, 3, 3, 3, s=0.3), padding=1), "conv")
            bn = bb.emit(op.nn.batch_norm(y, c(6, s=0.1, off=1.0), c(6, s=0.1), c(6, s=0.1),
                                          relax.const(np.full(6, 0.8, "float32"))))
            y = bb.emit(op.nn.relu(bb.emit(relax.TupleGetItem(bn, 0))))
            y = bb.emit_output(op.mean(y, axis=[2, 3]))
        bb.emit_func_output(y)
    return bb.get()


@requires_host_jit
def test_batch_norm_is_folded_and_batches_may_be_lists_or_arrays(capsys):
    mod = _conv_bn_net()
    rng = np.random.default_rng(5)
    data = [rng.standard_normal((1, 3, 8, 8)).astype("float32") for _ in range(12)]
    batches = [[d] for d in data[:6]] + data[6:]  # lists in parameter order, or one array
    qmod, report = quantize(mod, batches)
    assert "relax.nn.batch_norm" not in op_names(qmod)
    assert op_names(qmod).count("relax.qnn.conv2d") == 1 and report.cosine >= 0.99
    err = capsys.readouterr().err  # more than progress_every (10) batches: a line each 10
    assert "calibrated 10/12 batches" in err and "calibrated 12/12 batches" in err
    with pytest.raises(ValueError, match="lacks input"):
        quantize(mod, [{"y": data[0]}])


@requires_host_jit
def test_gemm_weight_transpose_without_the_graph_pipeline():
    rng = np.random.default_rng(4)
    x = relax.Var("x", relax.TensorStructInfo([2, 16], "float32"))
    w = relax.const((rng.standard_normal((8, 16)) * 0.25).astype("float32"))  # [N, K]
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            wt = bb.emit(op.permute_dims(w, [1, 0]))
            y = bb.emit_output(op.matmul(x, wt))
        bb.emit_func_output(y)
    mod = bb.get()
    qmod, report = quantize(mod, _batches((2, 16), 6, 0), QuantizeConfig(fold=False))
    assert op_names(qmod) == ["relax.qnn.quantize", "relax.qnn.matmul", "relax.qnn.requantize",
                              "relax.qnn.dequantize"]
    assert len(report.layers[0].weight_scales) == 2 and report.cosine >= 0.99
    held_out = _batches((2, 16), 4, 9)
    assert _cosine(_run(mod, held_out), _run(qmod, held_out)) >= 0.99


def _encoder(seed=6, seq=8, dim=16, hidden=32):
    """One transformer encoder layer (single head): its 6 weight matmuls are layers, the
    attention's activation x activation matmuls, softmax and layer norms stay float."""
    rng = np.random.default_rng(seed)
    x = relax.Var("x", relax.TensorStructInfo([1, seq, dim], "float32"))

    def w(k, n):
        return relax.const((rng.standard_normal((k, n)) / np.sqrt(k)).astype("float32"))

    ones, zeros = (relax.const(np.full(dim, v, "float32")) for v in (1.0, 0.0))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            q, k, v = (bb.emit(op.matmul(x, w(dim, dim)), n) for n in ("q", "k", "v"))
            s = bb.emit(op.matmul(q, bb.emit(op.permute_dims(k, [0, 2, 1]))))
            p = bb.emit(op.nn.softmax(bb.emit(op.multiply(s, relax.const(
                np.float32(dim ** -0.5))))))
            ctx = bb.emit(op.matmul(p, v))
            h = bb.emit(op.nn.layer_norm(bb.emit(op.add(bb.emit(op.matmul(ctx, w(dim, dim)),
                                                                "o"), x)), ones, zeros))
            f = bb.emit(op.nn.relu(bb.emit(op.matmul(h, w(dim, hidden)), "ffn1")))
            f = bb.emit(op.matmul(f, w(hidden, dim)), "ffn2")
            out = bb.emit_output(op.nn.layer_norm(bb.emit(op.add(f, h)), ones, zeros))
        bb.emit_func_output(out)
    return bb.get()


@requires_host_jit
def test_encoder_embeddings_stay_close_to_float():
    mod = _encoder()
    qmod, report = quantize(mod, _batches((1, 8, 16), 16, 0),
                            QuantizeConfig(calibrate="entropy", activation_dtype="int8",
                                           progress=False))
    assert [la.name for la in report.quantized] == ["q", "k", "v", "o", "ffn1", "ffn2"]
    assert op_names(qmod).count("relax.qnn.matmul") == 6
    assert "nn.layer_norm has no integer form" in str(report)  # what stays float, and why
    held_out = _batches((1, 8, 16), 8, 11)
    ref, out = _run(mod, held_out), _run(qmod, held_out)
    assert min(_cosine(r, o) for r, o in zip(ref, out)) >= 0.99
