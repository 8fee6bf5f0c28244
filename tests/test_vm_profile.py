"""The profile of a real model: an ONNX CNN with named nodes, built for llvm.  Each kernel
row names the ONNX layers it computes, with its argument shapes and device; the layers
survive export and load; and the profile's total agrees with ``time_evaluator`` within 5%
(rows + VM overhead add up to that total by construction)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("tvm.target.llvm")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402
from tvm.runtime.vm import ProfileReport, VirtualMachine  # noqa: E402

SIZE, WIDTH = 64, 32


def small_cnn(width: int = WIDTH, size: int = SIZE):
    """Three conv/relu blocks (a max-pool after the second), global pooling, a classifier:
    a few milliseconds of work on one core."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def weight(name, shape):
        data = (rng.standard_normal(shape) * 0.1).astype("float32")
        inits.append(numpy_helper.from_array(data, name))
        return name

    x, cin = "image", 3
    for i, cout in enumerate((width, width, 2 * width)):
        nodes.append(helper.make_node(
            "Conv", [x, weight(f"conv{i}.w", (cout, cin, 3, 3)), weight(f"conv{i}.b", (cout,))],
            [f"c{i}"], name=f"block{i}/conv", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"block{i}/relu"))
        x, cin = f"r{i}", cout
        if i == 1:
            nodes.append(helper.make_node("MaxPool", [x], ["p"], name="pool",
                                          kernel_shape=[2, 2], strides=[2, 2]))
            x = "p"
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", weight("fc.w", (10, cin)), weight("fc.b", (10,))],
                         ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


LAYERS = [f"block{i}/{op}" for i in range(3) for op in ("conv", "relu")] + [
    "pool", "gap", "flatten", "fc", "softmax"]


@pytest.fixture(scope="module")
def executable():
    return relax.build(from_onnx(small_cnn()), target="llvm")


@pytest.fixture(scope="module")
def image():
    return np.random.default_rng(1).standard_normal((1, 3, SIZE, SIZE)).astype("float32")


def test_every_kernel_names_its_onnx_layers(executable):
    layers = {k: executable.kernel_source_layers(k) for k in executable.program["kernels"]}
    assert all(layers.values()), layers
    named = [n for v in layers.values() for n in v]
    assert sorted(named) == sorted(LAYERS)  # every node in exactly one kernel
    conv_kernels = [v for v in layers.values() if v[0].endswith("/conv")]
    assert sorted(conv_kernels) == [(f"block{i}/conv", f"block{i}/relu") for i in range(3)]


def test_profile_rows_carry_shapes_device_and_layers(executable, image):
    report = VirtualMachine(executable, tvm.runtime.cpu()).profile("main", image, repeat=2)
    kernels = [r for r in report.rows if r.kind == "kernel"]
    assert {r.name for r in kernels} == set(executable.program["kernels"])
    for r in kernels:
        assert r.count == 1 and r.device == "cpu(0)" and r.total_s > 0
        assert r.source_layers == executable.kernel_source_layers(r.name)
        assert len(r.shapes) == 1 and all(a.startswith("float32[") for a in r.arg_shapes)
    first = next(r for r in kernels if r.source_layers[0] == "block0/conv")
    assert first.arg_shapes[0] == f"float32[1, 3, {SIZE}, {SIZE}]"  # the image
    assert first.arg_shapes[-1] == f"float32[1, {WIDTH}, {SIZE}, {SIZE}]"  # its output
    assert report.calls_s + report.overhead_s == pytest.approx(report.total_s, rel=1e-9)

    parsed = list(csv.DictReader(io.StringIO(report.csv())))
    assert len(parsed) == len(report.rows) + 1
    assert sum(float(r["total_us"]) for r in parsed) == pytest.approx(report.total_s * 1e6,
                                                                      rel=1e-3)
    assert "block0/conv; block0/relu" in {r["source_layers"] for r in parsed}
    assert ProfileReport.from_dict(json.loads(report.json())).rows == report.rows
    assert "block2/conv, block2/relu" in report.table()


def test_layers_survive_export_and_load(executable, image, tmp_path):
    path = tmp_path / "cnn.so"
    executable.export_library(path)
    loaded = tvm.runtime.load_module(path)
    report = VirtualMachine(loaded, tvm.runtime.cpu()).profile("main", image)
    conv = [r for r in report.rows if r.source_layers and r.source_layers[0] == "block1/conv"]
    assert len(conv) == 1 and conv[0].source_layers == ("block1/conv", "block1/relu")


_AGREEMENT = """
import json, statistics, sys
import numpy as np
import tvm.runtime
from tvm.runtime.vm import VirtualMachine
vm = VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.runtime.cpu())
timer = vm.time_evaluator("main", number=3, repeat=1, warmup=1)
inputs = [tvm.runtime.tensor(np.load(sys.argv[2]))]  # converted once, not in every measurement
errors, latency = [], 0.0
for _ in range(5):
    totals, latencies = [], []
    for _ in range(7):
        totals.append(vm.profile("main", *inputs, repeat=3).total_s)
        latencies.append(timer(*inputs).mean)
    latency = statistics.median(latencies)
    errors.append(abs(statistics.median(totals) / latency - 1.0))
    if errors[-1] < 0.05:
        break
print(json.dumps({"errors": errors, "latency": latency}))
"""


def test_profile_total_agrees_with_the_measured_latency(executable, image, tmp_path):
    """Interleaved measurements of the same function (medians, so that another process on
    the machine spoils one sample rather than the comparison); the best of a few attempts
    must agree within 5%: a profiler that adds or loses time fails every attempt.  Measured
    in a fresh process that loads the exported executable: in a test process other tests
    may have loaded a second OpenMP runtime (torch's) whose threads compete with ours.  One
    thread: a parallel kernel on a loaded host waits for its slowest thread, which made the
    two measurements of a 2-core CI host differ by up to 2.7x (what is compared is the
    profiler's accounting, not parallel speed)."""
    import os
    import subprocess
    import sys

    executable.export_library(tmp_path / "cnn.so")
    np.save(tmp_path / "image.npy", image)
    env = dict(os.environ, TVM_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _AGREEMENT, str(tmp_path / "cnn.so"),
                           str(tmp_path / "image.npy")], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    errors = result["errors"]
    assert min(errors) < 0.05, f"profile total vs time_evaluator off by {errors}"
    assert result["latency"] > 5e-4  # enough work for the comparison to mean much
