"""End-to-end model latency: ours (ONNX import -> relax.build llvm -> VM) next to
onnxruntime (1 and 2 intra-op threads) and torch when importable, plus our compile time.

    python benchmarks/models.py                          # all models, full size
    python benchmarks/models.py --models resnet18 --threads 1,2 --repeats 20
    python benchmarks/models.py --mcpu=haswell           # the AVX2 code path, AVX2 peers

Models (float32, seeded random weights, built with onnx.helper in tests/onnx/models.py):

    resnet18      batch 1, 3x224x224
    mobilenet_v2  batch 1, 3x224x224
    densenet121   batch 1, 3x224x224 (427 nodes, 120 convolutions: the compile-time case)
    bert          BERT-base-like small config: 4 layers, hidden 512, 8 heads, FFN 2048,
                  batch 1, sequence 128 (symbolic batch/sequence in the compiled program)
    chain20k      20,000 elementwise operators in a row on a 4x8 tensor (the depth case:
                  compile time must grow linearly with the number of operators)

Columns are timed in ``--rounds`` rounds (default 3) of ``repeats / rounds`` calls each,
every column and thread count in turn within a round, so that a change of machine load
hits them alike; min and median are over all calls.

"ours" is ``relax.build(mod, target)`` for the host CPU (``llvm -mcpu=<host>
-num-cores=N``) or, with ``--mcpu``/``--mattr``, for ``llvm -mcpu=X -mattr=Y
-num-cores=N``, timed with ``vm.time_evaluator`` and ``tvm.runtime.set_num_threads(n)``.
For a chosen CPU torch runs the same ISA (``ATEN_CPU_CAPABILITY``, oneDNN and MKL
switches, see ``target_isa.py``); onnxruntime has no ISA switch and always runs the
host's, which the table says.  onnxruntime uses ``SessionOptions.intra_op_num_threads =
n`` (inter-op 1, all graph optimisations); torch (``torch.set_num_threads``, eager,
inference mode) runs the same ONNX graph and weights op by op with torch operators
(``torch_peer.py``), so all three columns compute the same network.  Compile time is
``relax.build`` wall time (no tuning), import time is ``from_onnx``.  Outputs are checked
against onnxruntime before timing.  Results: ``benchmarks/results/models-<stamp>.{json,md}``
and ``models-latest.{json,md}``.  Not run in CI.
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
sys.path.insert(0, str(ROOT / "tests" / "onnx"))

BERT = dict(layers=4, hidden=512, heads=8, ffn=2048, vocab=8192, max_pos=512)
BERT_SEQ = 128


def build_model(name: str) -> tuple[Any, dict[str, np.ndarray]]:
    import models

    if name == "resnet18":
        return models.resnet18(), models.image_input(1, 224)
    if name == "mobilenet_v2":
        return models.mobilenet_v2(), models.image_input(1, 224)
    if name == "densenet121":
        return models.densenet121(), models.image_input(1, 224)
    if name == "bert":
        return models.bert_encoder(**BERT), models.bert_inputs(1, BERT_SEQ, BERT["vocab"])
    if name == "chain20k":
        x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        return models.elementwise_chain(20000), {"x": x}
    raise SystemExit(f"unknown model {name!r} (resnet18, mobilenet_v2, densenet121, bert, "
                     "chain20k)")


Timer = Callable[[int, int], list[float]]  # (threads, repeats) -> seconds per call


def prepare_ours(model: Any, feeds: dict[str, np.ndarray], reference: np.ndarray,
                 target: str, offload: tuple[str, ...] = ()) -> tuple[dict[str, Any], Timer]:
    """Import and compile (``offload``: external backends to partition for); the info
    (times, error) and a timer of the VM."""
    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    t = time.perf_counter()
    mod = from_onnx(model)
    import_s = time.perf_counter() - t
    t = time.perf_counter()
    ex = relax.build(mod, target=target, offload=list(offload))
    compile_s = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    args = list(feeds.values())
    out = vm["main"](*args).numpy()
    err = float(np.max(np.abs(out - reference)) / max(1.0, float(np.max(np.abs(reference)))))

    def timer(n: int, repeats: int) -> list[float]:
        tvm.runtime.set_num_threads(n)
        try:
            res = vm.time_evaluator("main", number=1, repeat=repeats, warmup=2)(*args)
        finally:
            tvm.runtime.set_num_threads(None)
        return list(res.results)

    info = {"import_s": import_s, "compile_s": compile_s, "max_rel_err": err}
    if offload:
        info["offloaded"] = sum(len(p.patterns) for p in ex.offload_report.partitions)
    return info, timer


def prepare_ort(model: Any, feeds: dict[str, np.ndarray], threads: list[int]
                ) -> tuple[dict[str, Any], Timer, np.ndarray]:
    """One session per thread count; the info, a timer and the reference output."""
    import onnxruntime as ort
    from target_isa import ORT_NOTE, host_label

    sessions = {}
    ref = None
    for n in threads:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = n
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sessions[n] = ort.InferenceSession(model.SerializeToString(), opts,
                                           providers=["CPUExecutionProvider"])
        ref = sessions[n].run(None, feeds)[0]

    def timer(n: int, repeats: int) -> list[float]:
        return time_calls(lambda: sessions[n].run(None, feeds), repeats)

    info = {"version": ort.__version__, "isa": f"{host_label()}, {ORT_NOTE}"}
    return info, timer, ref


def prepare_torch(model: Any, feeds: dict[str, np.ndarray], reference: np.ndarray
                  ) -> Optional[tuple[dict[str, Any], Timer]]:
    """torch eager running the same ONNX graph and weights op by op (torch_peer.py)."""
    try:
        import torch
    except ImportError:
        return None
    from target_isa import torch_label
    from torch_peer import TorchGraph

    net = TorchGraph(model)
    with torch.inference_mode():
        out = net(feeds)[0].numpy()
    err = float(np.max(np.abs(out - reference)) / max(1.0, float(np.max(np.abs(reference)))))

    def timer(n: int, repeats: int) -> list[float]:
        torch.set_num_threads(n)
        with torch.inference_mode():
            return time_calls(lambda: net(feeds), repeats)

    return {"version": torch.__version__, "isa": torch_label(), "max_rel_err": err}, timer


def run(names: list[str], threads: list[int], repeats: int, mcpu: Optional[str] = None,
        mattr: Optional[str] = None, rounds: int = 3, offload: tuple[str, ...] = ()
        ) -> dict[str, Any]:
    from node_suite import ensure_llvm
    from target_isa import apply_peer_env, chosen, isa_label, isa_level, ours_target

    ensure_llvm()
    target = ours_target(mcpu, mattr)
    # before torch is imported: it reads its ISA switches once
    apply_peer_env(isa_level(target) if chosen(mcpu, mattr) else None)
    out: dict[str, Any] = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "loadavg_before": os.getloadavg()},
        "target": target, "isa": {"ours": isa_label(mcpu, mattr)},
        "models": {},
    }
    for name in names:
        model, feeds = build_model(name)
        print(f"[{name}] onnxruntime, ours (compile), torch ...", flush=True)
        ort_info, ort_timer, ref = prepare_ort(model, feeds, threads)
        ours_info, ours_timer = prepare_ours(model, feeds, ref, target)
        offloaded = None
        if offload:
            offloaded = prepare_ours(model, feeds, ref, target, offload)
        torch_prep = prepare_torch(model, feeds, ref)
        timers = {"onnxruntime": ort_timer, "ours": ours_timer}
        if offloaded is not None:
            timers["ours_offload"] = offloaded[1]
        if torch_prep is not None:
            timers["torch"] = torch_prep[1]
        times: dict[str, dict[int, list[float]]] = {k: {n: [] for n in threads} for k in timers}
        # rounds of blocks, every column in each: a change of machine load hits all alike
        per_round = max(1, -(-repeats // rounds))
        for _ in range(rounds):
            for n in threads:
                for impl, timer in timers.items():
                    times[impl][n] += timer(n, per_round)
        entry: dict[str, Any] = {"ours": ours_info, "onnxruntime": ort_info,
                                 "torch": torch_prep[0] if torch_prep else None}
        if offloaded is not None:
            entry["ours_offload"] = {**offloaded[0], "backends": list(offload)}
        for impl in timers:
            entry[impl]["threads"] = {str(n): stats(times[impl][n]) for n in threads}
        out["models"][name] = entry
        for peer in ("onnxruntime", "torch"):
            if entry[peer] and entry[peer].get("isa"):
                out["isa"].setdefault(peer, entry[peer]["isa"])
        print(json.dumps(entry, indent=1), flush=True)
    out["machine"]["loadavg_after"] = os.getloadavg()
    return out


def markdown(res: dict[str, Any], threads: list[int]) -> str:
    lines = [
        f"Models, end to end ({res['date']}, {res['machine']['cpus']} CPUs, "
        f"load {res['machine']['loadavg_before'][0]:.2f} before / "
        f"{res['machine']['loadavg_after'][0]:.2f} after). Median latency in ms "
        "(min in parentheses); ratio = ours / onnxruntime at the same thread count.",
        "",
        f"Ours: {res.get('target', '?')}. ISA measured: "
        + "; ".join(f"{k} {v}" for k, v in res.get("isa", {}).items()) + ".",
        "",
        "| model | threads | ours | onnxruntime | torch | ours / ort | ours / ort (min) "
        "| ours / torch | ours compile (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in res["models"].items():
        for n in threads:
            o = r["ours"]["threads"][str(n)]
            x = r["onnxruntime"]["threads"][str(n)]
            t = (r["torch"] or {}).get("threads", {}).get(str(n))
            tt = f"{t['median_ms']:.2f} ({t['min_ms']:.2f})" if t else "n/a"
            tr = f"{o['median_ms'] / t['median_ms']:.2f}x" if t else "n/a"
            lines.append(
                f"| {name} | {n} | {o['median_ms']:.2f} ({o['min_ms']:.2f}) | "
                f"{x['median_ms']:.2f} ({x['min_ms']:.2f}) | {tt} | "
                f"{o['median_ms'] / x['median_ms']:.2f}x | {o['min_ms'] / x['min_ms']:.2f}x | "
                f"{tr} | {r['ours']['compile_s']:.1f} |")
    lines.append("")
    offload_rows = [(name, r) for name, r in res["models"].items() if r.get("ours_offload")]
    if offload_rows:
        lines += ["", "With offload (" + ", ".join(offload_rows[0][1]["ours_offload"]["backends"])
                  + "): median ms (min); ratios to onnxruntime and to ours without offload.", "",
                  "| model | threads | ours+offload | / ort | / ours | compositions offloaded "
                  "| compile (s) |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name, r in offload_rows:
            for n in threads:
                o = r["ours_offload"]["threads"][str(n)]
                x = r["onnxruntime"]["threads"][str(n)]
                u = r["ours"]["threads"][str(n)]
                lines.append(f"| {name} | {n} | {o['median_ms']:.2f} ({o['min_ms']:.2f}) | "
                             f"{o['median_ms'] / x['median_ms']:.2f}x | "
                             f"{o['median_ms'] / u['median_ms']:.2f}x | "
                             f"{r['ours_offload']['offloaded']} | "
                             f"{r['ours_offload']['compile_s']:.1f} |")
    lines.append("")
    for name, r in res["models"].items():
        torch_err = (r["torch"] or {}).get("max_rel_err")
        lines.append(f"- {name}: import {r['ours']['import_s']:.2f} s, compile "
                     f"{r['ours']['compile_s']:.1f} s, max relative error vs onnxruntime "
                     f"{r['ours']['max_rel_err']:.2e}"
                     + (f" (torch peer {torch_err:.2e})" if torch_err is not None else ""))
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,bert")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--mcpu", default=None,
                        help="compile ours for this CPU (haswell, znver3 ...) and run torch "
                             "at its ISA (default: the host CPU)")
    parser.add_argument("--mattr", default=None,
                        help="LLVM feature overrides for ours, e.g. --mattr=-avx512f")
    parser.add_argument("--rounds", type=int, default=3,
                        help="the repeats are taken in this many rounds, each timing every "
                             "column in turn (default 3)")
    parser.add_argument("--offload", default="",
                        help="also time ours built with these external backends "
                             "(relax.build(offload=...)), e.g. --offload=dnnl")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    res = run(args.models.split(","), threads, args.repeats, args.mcpu, args.mattr,
              max(1, args.rounds), tuple(b for b in args.offload.split(",") if b))
    md = markdown(res, threads)
    write_results(Path(args.out), "models", res, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
