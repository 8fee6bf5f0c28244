"""TFLite models end to end: ours (``from_tflite`` -> ``relax.build`` -> VM) next to LiteRT's
interpreter (its default CPU path with the XNNPACK delegate, and its builtin kernels without
delegates), 1 and 2 threads, in one run.

    python benchmarks/tflite_models.py                       # every model
    python benchmarks/tflite_models.py --models mobilenet_block --threads 1 --repeats 20
    python benchmarks/tflite_models.py --mcpu=haswell        # ours for AVX2 (LiteRT: host ISA)

Models (float32, seeded random weights, written by tests/tflite/tflite_models.py):

    mobilenet_block      MobileNetV2-like: 3x3/2 stem, 3 inverted residual blocks (1x1 x4
                         expand, 3x3 depthwise, 1x1 project, add), mean, FC, softmax;
                         batch 1, 112x112x3, width 32
    mobilenet_block_224  the same at 224x224x3, width 32
    keyword_spotting     DS-CNN-style keyword spotter on 49x10 MFCC features, width 64
    text_classifier      token ids [1, 32] -> embedding (GATHER, 2000x64) -> LSTM (128)
                         -> last step -> FC -> softmax
    resnet               ResNet-style: 7x7/2 stem, 3x3/2 max pool, 3 stages of basic blocks
                         (widths 32, 64, 128), mean, FC, softmax; 112x112x3
    ssd_detector         SSD-style detector on 128x128x3 (width 32) with
                         TFLite_Detection_PostProcess (fast NMS, 1536 anchors)
    <model>_int8         the full-integer int8 version of <model> (tests/tflite/
                         quantize_model.py: per-tensor activations, per-channel weights;
                         the text classifier's LSTM stays float), e.g. mobilenet_block_int8

Columns: ``litert`` (``Interpreter(num_threads=n)``, default op resolver: XNNPACK),
``litert_builtin`` (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``), ``ours`` (``vm.time_evaluator``
under ``tvm.runtime.set_num_threads(n)``, built for the host CPU or ``--mcpu``/``--mattr``).
Every column runs in this one process, timed in ``--rounds`` rounds, each timing every
column and thread count in turn; min and median are over all calls; ratios compare medians
(ours / litert: below 1 means we are faster); with an int8 model and its float model in one
run, ``ours int8 / ours float`` compares our two builds.  Outputs are checked against
LiteRT's builtin kernels before timing.  Results: ``benchmarks/results/tflite-models-<stamp>.{json,md}`` and
``tflite-models-latest.{json,md}``.  Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from timing import stats, time_calls, write_results  # noqa: E402 - benchmarks/ is the script's dir

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT / "tests" / "tflite"))
sys.path.insert(0, str(ROOT / "tests" / "onnx"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODELS = {"mobilenet_block": ("mobilenet_block_model", dict(size=112, width=32, blocks=3)),
          "mobilenet_block_224": ("mobilenet_block_model", dict(size=224, width=32, blocks=3)),
          "keyword_spotting": ("keyword_spotting_model", dict(width=64)),
          "text_classifier": ("text_classifier_model",
                              dict(vocab=2000, dim=64, steps=32, hidden=128)),
          "resnet": ("resnet_model", dict(size=112, width=32, stages=3)),
          "ssd_detector": ("ssd_detector_model", dict(size=128, width=32))}
MODELS.update({f"{k}_int8": v for k, v in list(MODELS.items())})
COLUMNS = ("litert", "litert_builtin", "ours")
Timer = Callable[[int, int], list[float]]  # (threads, repeats) -> seconds per call


def _model_zoo() -> Any:
    """tests/tflite/tflite_models.py, loaded by path (this script has the same name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tflite_model_zoo", ROOT / "tests" / "tflite" / "tflite_models.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    return zoo


def build_model(name: str) -> tuple[bytes, list[np.ndarray]]:
    fn, kwargs = MODELS[name]
    model, shape = getattr(_model_zoo(), fn)(as_builder=True, **kwargs)
    rng = np.random.default_rng(0)
    if fn == "text_classifier_model":
        inputs = [rng.integers(0, kwargs["vocab"], size=shape).astype(np.int32)]
    else:
        inputs = [rng.standard_normal(shape).astype(np.float32)]
    if name.endswith("_int8"):
        from quantize_model import quantize_case

        model, inputs = quantize_case(model, inputs, "int8", float_ops=(
            "UNIDIRECTIONAL_SEQUENCE_LSTM",))
    return model.build(), inputs


def prepare_litert(data: bytes, inputs: list[np.ndarray], threads: list[int],
                   reference: bool) -> tuple[dict[str, Any], Timer, list[np.ndarray]]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if reference else \
        OpResolverType.AUTO
    interps = {}
    out: list[np.ndarray] = []
    for n in threads:
        it = Interpreter(model_content=data, num_threads=n, experimental_op_resolver_type=kind)
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
        out = [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
        interps[n] = it

    def timer(n: int, repeats: int) -> list[float]:
        return time_calls(interps[n].invoke, repeats)

    return {}, timer, out


def prepare_ours(data: bytes, inputs: list[np.ndarray], ref: list[np.ndarray],
                 target: str) -> tuple[dict[str, Any], Timer]:
    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.tflite import from_tflite

    t = time.perf_counter()
    mod = from_tflite(data)
    import_s = time.perf_counter() - t
    t = time.perf_counter()
    ex = relax.build(mod, target=target)
    build_s = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    args = [tvm.runtime.tensor(x) for x in inputs]
    out = vm["main"](*args)
    outs = [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]
    err = max(float(np.max(np.abs(o.astype(np.float64) - r))
                    / max(float(np.max(np.abs(r.astype(np.float64)))), 1e-30))
              for o, r in zip(outs, ref))
    info = {"import_s": import_s, "build_s": build_s, "max_rel_err": err}

    def timer(n: int, repeats: int) -> list[float]:
        tvm.runtime.set_num_threads(n)
        try:
            res = vm.time_evaluator("main", number=1, repeat=repeats, warmup=2)(*args)
        finally:
            tvm.runtime.set_num_threads(None)
        return list(res.results)

    return info, timer


def run(names: list[str], threads: list[int], repeats: int, mcpu: Optional[str] = None,
        mattr: Optional[str] = None, rounds: int = 3) -> dict[str, Any]:
    from node_suite import ensure_llvm
    from target_isa import isa_label, ours_target

    ensure_llvm()
    target = ours_target(mcpu, mattr)
    import ai_edge_litert

    out: dict[str, Any] = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "cpu": _cpu_name(), "loadavg_before": os.getloadavg()},
        "target": target, "isa": {"ours": isa_label(mcpu, mattr), "litert": "host"},
        "litert": getattr(ai_edge_litert, "__version__", "?"), "columns": list(COLUMNS),
        "models": {},
    }
    for name in names:
        data, inputs = build_model(name)
        print(f"[{name}] litert, litert builtin, ours (import/build) ...", flush=True)
        entry: dict[str, Any] = {"model_bytes": len(data)}
        timers: dict[str, Timer] = {}
        entry["litert_builtin"], timers["litert_builtin"], ref = prepare_litert(
            data, inputs, threads, True)
        entry["litert"], timers["litert"], _ = prepare_litert(data, inputs, threads, False)
        try:
            entry["ours"], timers["ours"] = prepare_ours(data, inputs, ref, target)
        except Exception as err:  # noqa: BLE001 - a column that fails is reported
            entry["ours"] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
            print(f"  ours: {entry['ours']['error']}", flush=True)
        times = {k: {n: [] for n in threads} for k in timers}
        per_round = max(1, -(-repeats // rounds))
        for _ in range(rounds):
            for n in threads:
                for col, timer in timers.items():
                    times[col][n] += timer(n, per_round)
        for col in timers:
            entry[col]["threads"] = {str(n): stats(times[col][n]) for n in threads}
        out["models"][name] = entry
        print(json.dumps(entry, indent=1), flush=True)
    out["machine"]["loadavg_after"] = os.getloadavg()
    return out


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def markdown(res: dict[str, Any], threads: list[int]) -> str:
    m = res["machine"]
    lines = [
        f"TFLite models, end to end ({res['date']}, {m['cpu']}, {m['cpus']} CPUs, load "
        f"{m['loadavg_before'][0]:.2f} before / {m['loadavg_after'][0]:.2f} after; "
        f"ai-edge-litert {res['litert']}). Median latency in ms (min in parentheses).",
        "",
        f"Ours: {res['target']} ({res['isa']['ours']}).",
        "",
        "| model | threads | litert (XNNPACK) | litert builtin | ours | ours / litert "
        "| ours / litert builtin |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def get(r: dict[str, Any], n: int) -> Optional[dict[str, float]]:
        return (r or {}).get("threads", {}).get(str(n))

    def cell(t: Optional[dict[str, float]]) -> str:
        return f"{t['median_ms']:.2f} ({t['min_ms']:.2f})" if t else "n/a"

    def ratio(a: Optional[dict[str, float]], b: Optional[dict[str, float]]) -> str:
        return f"{a['median_ms'] / b['median_ms']:.2f}x" if a and b else "n/a"

    for name, r in res["models"].items():
        for n in threads:
            lx, lb, o = get(r["litert"], n), get(r["litert_builtin"], n), get(r.get("ours"), n)
            lines.append(f"| {name} | {n} | {cell(lx)} | {cell(lb)} | {cell(o)} | "
                         f"{ratio(o, lx)} | {ratio(o, lb)} |")
    lines.append("")
    for name, r in res["models"].items():
        base = res["models"].get(name.removesuffix("_int8"))
        if name.endswith("_int8") and base is not None:
            for n in threads:
                lines.append(f"- {name}, {n} thread(s): ours int8 / ours float "
                             f"{ratio(get(r.get('ours'), n), get(base.get('ours'), n))}")
    lines.append("")
    for name, r in res["models"].items():
        o = r.get("ours") or {}
        if "error" in o:
            lines.append(f"- {name}: ours failed: {o['error']}")
        else:
            lines.append(f"- {name}: import {o['import_s']:.2f} s + build {o['build_s']:.1f} s, "
                         f"max relative error vs LiteRT builtin {o['max_rel_err']:.2e}")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3,
                        help="the repeats are taken in this many rounds, each timing every "
                             "column in turn (default 3)")
    parser.add_argument("--mcpu", default=None, help="compile ours for this CPU")
    parser.add_argument("--mattr", default=None, help="LLVM feature overrides for ours")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = set(names) - set(MODELS)
    if unknown:
        parser.error(f"unknown model(s) {sorted(unknown)}; choose from {sorted(MODELS)}")
    threads = [int(t) for t in args.threads.split(",")]
    res = run(names, threads, args.repeats, args.mcpu, args.mattr, max(1, args.rounds))
    md = markdown(res, threads)
    write_results(Path(args.out), "tflite-models", res, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
