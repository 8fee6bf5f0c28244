"""int8 next to fp32, ours and onnxruntime's, in one run: a conv net quantized by
onnxruntime.quantization.quantize_static (after its quant_pre_process; QDQ, per-channel int8
weights, uint8 activations, calibrated on 8 seeded numpy images), then

    ours fp32   from_onnx(float model)                     -> relax.build
    ours int8   from_onnx(QDQ model) -> QDQToInteger        -> relax.build
    ort  fp32   InferenceSession(float model)
    ort  int8   InferenceSession(QDQ model)  (its QDQ fusion into QLinearConv / MLAS int8)

    python benchmarks/quant.py                                   # resnet18, mobilenet_v2 224x224
    python benchmarks/quant.py --models resnet18 --image-size 112 --threads 1 --repeats 10
    python benchmarks/quant.py --mcpu=haswell                    # our AVX2 code path

Each column is timed in ``--rounds`` rounds (every column and thread count in turn within a
round, so a change of machine load hits them alike); the table shows median (min) ms and
the ratios ours int8 / ours fp32 and ours int8 / ort int8 (below 1: ours int8 is faster).
Before timing, ours int8 is compared with ort int8 in units of the output's last place.
onnxruntime always runs the host's ISA.  Results: ``benchmarks/results/quant-<stamp>``
and ``quant-latest`` (.json, .md).  Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from timing import stats, time_calls, write_results  # noqa: E402 - benchmarks/ is the script's dir

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT / "tests" / "onnx"))

CALIBRATION_IMAGES = 8


def float_model(name: str, size: int) -> Any:
    import models

    if name == "resnet18":
        return models.resnet18(image_size=size)
    if name == "mobilenet_v2":
        return models.mobilenet_v2(image_size=size)
    raise SystemExit(f"unknown model {name!r} (resnet18, mobilenet_v2)")


def quantize(model: Any, size: int, folder: Path) -> Any:
    """The QDQ model quantize_static makes from ``model`` (seeded numpy calibration)."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader, QuantFormat, QuantType, quantize_static,
    )

    rng = np.random.default_rng(1)

    class Images(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"input": rng.normal(0, 1, (1, 3, size, size)).astype(np.float32)}
                                 for _ in range(CALIBRATION_IMAGES)])

        def get_next(self) -> Optional[dict]:
            return next(self.batches, None)

    from onnxruntime.quantization.shape_inference import quant_pre_process

    src, pre, dst = folder / "f32.onnx", folder / "pre.onnx", folder / "qdq.onnx"
    onnx.save(model, src)
    # onnxruntime's recommended pre-processing (shape inference, batch-norms folded into
    # the convolutions), as a user quantizing for onnxruntime runs it
    quant_pre_process(str(src), str(pre))
    quantize_static(str(pre), str(dst), Images(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    return onnx.load(dst)


def prepare_ours(model: Any, feeds: dict, target: str, integer: bool) -> tuple[dict, Any, Any]:
    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.relax.transform import qdq_to_integer

    t = time.perf_counter()
    mod = from_onnx(model)
    info: dict[str, Any] = {"import_s": time.perf_counter() - t}
    if integer:
        mod, report = qdq_to_integer(mod)
        info["integer_chains"] = len(report.integer)
        info["float_chains"] = [f"{e.layer}: {e.op}: {e.reason}" for e in report.float]
    t = time.perf_counter()
    ex = relax.build(mod, target=target)
    info["compile_s"] = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    args = list(feeds.values())
    out = vm["main"](*args).numpy()

    def timer(n: int, repeats: int) -> list[float]:
        tvm.runtime.set_num_threads(n)
        try:
            res = vm.time_evaluator("main", number=1, repeat=repeats, warmup=2)(*args)
        finally:
            tvm.runtime.set_num_threads(None)
        return list(res.results)

    return info, timer, out


def prepare_ort(model: Any, feeds: dict, threads: list[int]) -> tuple[Any, Any]:
    import onnxruntime as ort

    sessions = {}
    for n in threads:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = n
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sessions[n] = ort.InferenceSession(model.SerializeToString(), opts,
                                           providers=["CPUExecutionProvider"])
    out = sessions[threads[0]].run(None, feeds)[0]
    return (lambda n, repeats: time_calls(lambda: sessions[n].run(None, feeds), repeats)), out


def _last_place(qdq: Any) -> float:
    """The scale of the model's last QuantizeLinear (one unit of the output's last place)."""
    from onnx import numpy_helper

    q = [n for n in qdq.graph.node if n.op_type == "QuantizeLinear"][-1]
    inits = {i.name: numpy_helper.to_array(i) for i in qdq.graph.initializer}
    return float(inits[q.input[1]])


def run(names: list[str], size: int, threads: list[int], repeats: int, rounds: int,
        mcpu: Optional[str], mattr: Optional[str]) -> dict[str, Any]:
    from node_suite import ensure_llvm
    from target_isa import ORT_NOTE, host_label, isa_label, ours_target

    import onnxruntime as ort

    ensure_llvm()
    target = ours_target(mcpu, mattr)
    res: dict[str, Any] = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "loadavg_before": os.getloadavg()},
        "target": target, "image_size": size,
        "isa": {"ours": isa_label(mcpu, mattr), "onnxruntime": f"{host_label()}, {ORT_NOTE}"},
        "onnxruntime": ort.__version__, "models": {},
    }
    import models as _models

    feeds = {"input": _models.image_input(1, size)["input"]}
    for name in names:
        print(f"[{name}] quantize_static, onnxruntime, ours fp32 / int8 (compile) ...", flush=True)
        f32 = float_model(name, size)
        with tempfile.TemporaryDirectory() as tmp:
            qdq = quantize(f32, size, Path(tmp))
        ort_f32, ref_f32 = prepare_ort(f32, feeds, threads)
        ort_i8, ref_i8 = prepare_ort(qdq, feeds, threads)
        info_f32, ours_f32, out_f32 = prepare_ours(f32, feeds, target, integer=False)
        info_i8, ours_i8, out_i8 = prepare_ours(qdq, feeds, target, integer=True)
        ulp = _last_place(qdq)
        diff = np.rint(np.abs(out_i8.astype(np.float64) - ref_i8) / ulp)
        info_i8["vs_ort_int8"] = {"elements": int(diff.size), "equal": float((diff == 0).mean()),
                                  "within_1": float((diff <= 1).mean()), "max_ulp": float(diff.max())}
        info_f32["max_abs_err_vs_ort_fp32"] = float(np.max(np.abs(out_f32 - ref_f32)))
        info_i8["max_abs_err_vs_ort_fp32"] = float(np.max(np.abs(out_i8 - ref_f32)))
        timers = {"ours fp32": ours_f32, "ours int8": ours_i8, "ort fp32": ort_f32,
                  "ort int8": ort_i8}
        times = {k: {n: [] for n in threads} for k in timers}
        per_round = max(1, -(-repeats // rounds))
        for _ in range(rounds):
            for n in threads:
                for key, timer in timers.items():
                    times[key][n] += timer(n, per_round)
        res["models"][name] = {
            "ours fp32": info_f32, "ours int8": info_i8,
            "threads": {str(n): {k: stats(times[k][n]) for k in timers} for n in threads},
        }
        print(json.dumps(res["models"][name], indent=1), flush=True)
    res["machine"]["loadavg_after"] = os.getloadavg()
    return res


def markdown(res: dict[str, Any], threads: list[int]) -> str:
    m = res["machine"]
    lines = [
        f"int8 vs fp32 ({res['date']}, {m['cpus']} CPUs, load {m['loadavg_before'][0]:.2f} "
        f"before / {m['loadavg_after'][0]:.2f} after), batch 1, {res['image_size']}x"
        f"{res['image_size']}. Median latency in ms (min in parentheses).",
        "",
        f"Ours: {res['target']}. ISA: ours {res['isa']['ours']}; onnxruntime "
        f"{res['onnxruntime']} {res['isa']['onnxruntime']}.",
        "",
        "| model | threads | ours fp32 | ours int8 | ort fp32 | ort int8 | ours int8 / ours fp32 "
        "| ours int8 / ort int8 | ort int8 / ort fp32 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in res["models"].items():
        for n in threads:
            t = r["threads"][str(n)]

            def cell(k: str, t: dict = t) -> str:
                return f"{t[k]['median_ms']:.2f} ({t[k]['min_ms']:.2f})"

            def ratio(a: str, b: str, t: dict = t) -> str:
                return f"{t[a]['median_ms'] / t[b]['median_ms']:.2f}x"

            lines.append(f"| {name} | {n} | {cell('ours fp32')} | {cell('ours int8')} | "
                         f"{cell('ort fp32')} | {cell('ort int8')} | "
                         f"{ratio('ours int8', 'ours fp32')} | {ratio('ours int8', 'ort int8')} "
                         f"| {ratio('ort int8', 'ort fp32')} |")
    lines.append("")
    for name, r in res["models"].items():
        i8, f32 = r["ours int8"], r["ours fp32"]
        v = i8["vs_ort_int8"]
        lines.append(
            f"- {name}: compile fp32 {f32['compile_s']:.1f} s, int8 {i8['compile_s']:.1f} s; "
            f"{i8['integer_chains']} integer chains, {len(i8['float_chains'])} float"
            + (f" ({'; '.join(i8['float_chains'])})" if i8["float_chains"] else "")
            + f"; ours int8 vs ort int8: {100 * v['equal']:.1f} % equal, "
            f"{100 * v['within_1']:.1f} % within 1 unit, max {v['max_ulp']:.0f} units "
            f"({v['elements']} elements)")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mcpu", default=None, help="compile ours for this CPU (e.g. haswell)")
    parser.add_argument("--mattr", default=None, help="LLVM feature overrides for ours")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    res = run(args.models.split(","), args.image_size, threads, args.repeats,
              max(1, args.rounds), args.mcpu, args.mattr)
    md = markdown(res, threads)
    write_results(Path(args.out), "quant", res, md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
