"""Tuned kernels and models (tvm.meta_schedule) next to the untuned build and the peers.

    python benchmarks/tune.py                                # K1, K2, resnet18, bert
    python benchmarks/tune.py --tasks K1 --trials 256 --threads 1,2
    python benchmarks/tune.py --tasks resnet18 --model-trials 2000 --mcpu=haswell

Tasks:

    K1        matmul 1024x1024x1024 fp32, tuned with --trials (default 256); peer numpy
              (OpenBLAS), and torch when importable
    K2        conv2d 3x3 NCHW 1x64x56x56, 64 filters, padding 1, tuned with --trials;
              peers torch (and numpy's im2col + matmul)
    resnet18, bert, mobilenet_v2
              the models of benchmarks/models.py (ONNX import), every kernel tuned under one
              budget of --model-trials (default 2000, gradient-based task scheduling);
              peer onnxruntime (and the untuned build); imported with the static input
              shapes of the benchmark's inputs (BERT: batch 1, sequence 128), tuned and
              untuned alike

Ours is tuned for ``llvm -mcpu=<host or --mcpu> -num-cores=<max threads>`` with
``ms.tune_tasks`` / ``ms.tune_relax`` (records in ``--work-dir``; a second run with the
same work dir continues the search: what was measured is not measured again), then built with the records
(``db.applied()``) and without them.  Tuned and untuned kernels are timed interleaved,
call by call and thread count by thread count, in one process; the peers run in their own
processes at the ISA of ``--mcpu`` (``target_isa.py``, as in kernels.py); models are timed
in rounds with every column in each (as in models.py).  Outputs are checked against the
peers before timing.  The tables name the ISA of every column, the tuning time and trials,
and for models every kernel's tuned time against its default schedule (the issue's
"tuned is never slower than untuned for any kernel").  Results:
``benchmarks/results/tune-<stamp>.{json,md}`` and ``tune-latest.{json,md}``.  Not run in
CI (a smoke test runs it with a few trials).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from timing import write_results  # noqa: E402 - benchmarks/ is the script's dir

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

KERNEL_TASKS = {"K1": "matmul 1024x1024x1024", "K2": "conv2d 3x3 1x64x56x56, 64 filters"}
MODEL_TASKS = ("resnet18", "bert", "mobilenet_v2")


def _tune_options(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"num_trials_per_iter": args.per_iter, "seed": args.seed}
    if args.strategy:
        out["strategy"] = args.strategy
    if args.cost_model:
        out["cost_model"] = None if args.cost_model == "none" else args.cost_model
    return out


def _stats(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"min_ms": 1e3 * times[0], "median_ms": 1e3 * times[len(times) // 2],
            "runs": len(times)}


def _bench_models() -> Any:
    """benchmarks/models.py, loaded under another name: it imports ``models`` (the ONNX model
    builders of tests/onnx) itself."""
    import importlib.util

    if "bench_models" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_models", HERE / "models.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["bench_models"] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules["bench_models"]


def _task_table(scheduler: Any) -> list[dict[str, Any]]:
    rows = []
    for t in scheduler.tasks:
        p = t.progress
        rows.append({"task": p.name, "weight": p.weight, "trials": p.trials, "failed": p.failed,
                     "default_us": None if p.default_sec is None else p.default_sec * 1e6,
                     "best_us": p.best_overall * 1e6 if math.isfinite(p.best_overall) else None,
                     "gflops": p.gflops(), "speedup": p.speedup()})
    return rows


# -- kernels ------------------------------------------------------------------------------------
def bench_kernel(k: str, target: str, args: argparse.Namespace, threads: list[int],
                 work_dir: Path) -> dict[str, Any]:
    import kernels
    from tvm import meta_schedule as ms
    from tvm import tir
    from tvm.meta_schedule.task_scheduler import RoundRobin
    from tvm.runtime import set_num_threads

    func = kernels._ours_funcs()[k]()
    sched = RoundRobin()
    t0 = time.perf_counter()
    db = ms.tune_tasks([func], target, work_dir / k, args.trials, task_names=[k],
                       task_scheduler=sched, **_tune_options(args))
    tune_s = time.perf_counter() - t0
    untuned = tir.build(func, target)
    with db.applied(target):
        tuned = tir.build(func, target)
    inputs = kernels.make_inputs(k)
    out_arr = np.zeros(kernels.output_shape(k), "float32")
    fns = {"untuned": untuned["main"], "tuned": tuned["main"]}
    checks = {}
    for name, f in fns.items():
        out_arr[...] = 0
        f(*inputs, out_arr)
        checks[name] = kernels._check(k, inputs, out_arr)
    current: dict[str, Any] = {}
    settings = [(name, n) for n in threads for name in fns]
    setters = [lambda name=name, n=n: (current.update(f=fns[name]), set_num_threads(n))
               for name, n in settings]
    timed = kernels.measure_interleaved(lambda: current["f"](*inputs, out_arr), setters,
                                        args.repeats)
    set_num_threads(None)
    result: dict[str, Any] = {"desc": KERNEL_TASKS[k], "flops": kernels.KERNELS[k]["flops"],
                              "tune_s": tune_s, "trials": len(db), "check": checks,
                              "tasks": _task_table(sched), "threads": {}}
    for (name, n), res in zip(settings, timed):
        entry = result["threads"].setdefault(str(n), {})
        entry[name] = {"min_ms": res["min_s"] * 1e3, "median_ms": res["median_s"] * 1e3,
                       "runs": res["runs"]}
    return result


def bench_kernel_peers(k: str, threads: list[int], args: argparse.Namespace,
                       level: Optional[str], torch_ok: bool) -> dict[str, Any]:
    import kernels

    out: dict[str, Any] = {}
    for impl in ["numpy"] + (["torch"] if torch_ok else []):
        for n in threads:
            res = kernels.run_child(impl, [k], [n], args.repeats, level=level)
            if res is None:
                continue
            out.setdefault(impl, {"info": res["info"], "threads": {}})
            r = res[k]
            out[impl]["threads"][str(n)] = {"min_ms": r["min_s"] * 1e3,
                                            "median_ms": r["median_s"] * 1e3,
                                            "check": r["check"]}
    return out


# -- models -------------------------------------------------------------------------------------
def bench_model(name: str, target: str, args: argparse.Namespace, threads: list[int],
                work_dir: Path) -> dict[str, Any]:
    import tvm.runtime
    from tvm import meta_schedule as ms
    from tvm import relax
    from tvm.meta_schedule.task_scheduler import GradientBased
    from tvm.relax.frontend.onnx import from_onnx

    models = _bench_models()
    model, feeds = models.build_model(name)
    # static input shapes: a tuning task measures one concrete kernel
    mod = from_onnx(model, shape_dict={k: list(v.shape) for k, v in feeds.items()})
    sched = GradientBased()
    t0 = time.perf_counter()
    db = ms.tune_relax(mod, None, target, work_dir / name, args.model_trials,
                       task_scheduler=sched, **_tune_options(args))
    tune_s = time.perf_counter() - t0
    ort_info, ort_timer, ref = models.prepare_ort(model, feeds, threads)
    feeds_list = list(feeds.values())
    timers: dict[str, Any] = {"onnxruntime": ort_timer}
    errors = {}
    for label, build in (("untuned", lambda: relax.build(mod, target)),
                         ("tuned", lambda: ms.compile_relax(db, mod, target))):
        vm = relax.VirtualMachine(build(), tvm.runtime.cpu())
        out = vm["main"](*feeds_list).numpy()
        errors[label] = float(np.max(np.abs(out - ref)) / max(1.0, float(np.max(np.abs(ref)))))

        def timer(n: int, repeats: int, vm: Any = vm) -> list[float]:
            tvm.runtime.set_num_threads(n)
            try:
                res = vm.time_evaluator("main", number=1, repeat=repeats, warmup=2)(*feeds_list)
            finally:
                tvm.runtime.set_num_threads(None)
            return list(res.results)

        timers[label] = timer
    times: dict[str, dict[int, list[float]]] = {k: {n: [] for n in threads} for k in timers}
    per_round = max(1, -(-args.repeats // 3))
    for _ in range(3):
        for n in threads:
            for impl, timer in timers.items():
                times[impl][n] += timer(n, per_round)
    return {"tune_s": tune_s, "trials": len(db), "max_rel_err": errors,
            "onnxruntime": ort_info, "tasks": _task_table(sched),
            "threads": {str(n): {impl: _stats(times[impl][n]) for impl in timers}
                        for n in threads}}


# -- report -------------------------------------------------------------------------------------
def _ms(entry: Optional[dict]) -> str:
    return "n/a" if not entry else f"{entry['median_ms']:.3f} ({entry['min_ms']:.3f})"


def _ratio(a: Optional[dict], b: Optional[dict]) -> str:
    return "n/a" if not a or not b else f"{b['median_ms'] / a['median_ms']:.2f}x"


def markdown(res: dict[str, Any]) -> str:
    meta = res["meta"]
    lines = [f"Tuning ({meta['date']}, {meta['machine']}, {meta['cpus']} CPUs, load "
             f"{meta['load_before'][0]:.2f} before / {meta['load_after'][0]:.2f} after). "
             "Median ms (min in parentheses); speedup = peer / tuned.", "",
             f"Ours: {meta['target']}. ISA measured: "
             + "; ".join(f"{k} {v}" for k, v in meta["isa"].items()) + ".", ""]
    if res["kernels"]:
        lines += ["| task | threads | untuned | tuned | numpy | torch | tuned GFLOP/s "
                  "| vs numpy | vs torch | vs untuned | trials | tune s | ok |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for k, r in res["kernels"].items():
            peers = res["peers"].get(k, {})
            for n, e in r["threads"].items():
                np_e = peers.get("numpy", {}).get("threads", {}).get(n)
                th_e = peers.get("torch", {}).get("threads", {}).get(n)
                gf = r["flops"] / (e["tuned"]["median_ms"] * 1e-3) / 1e9
                ok = "ok" if all(r["check"].values()) else "WRONG"
                lines.append(
                    f"| {k} | {n} | {_ms(e['untuned'])} | {_ms(e['tuned'])} | {_ms(np_e)} | "
                    f"{_ms(th_e)} | {gf:.1f} | {_ratio(e['tuned'], np_e)} | "
                    f"{_ratio(e['tuned'], th_e)} | {_ratio(e['tuned'], e['untuned'])} | "
                    f"{r['trials']} | {r['tune_s']:.0f} | {ok} |")
        lines.append("")
    if res["models"]:
        lines += ["| model | threads | untuned | tuned | onnxruntime | tuned / ort "
                  "| tuned / untuned | trials | tune s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, r in res["models"].items():
            for n, e in r["threads"].items():
                lines.append(
                    f"| {name} | {n} | {_ms(e['untuned'])} | {_ms(e['tuned'])} | "
                    f"{_ms(e['onnxruntime'])} | "
                    f"{e['tuned']['median_ms'] / e['onnxruntime']['median_ms']:.2f}x | "
                    f"{e['tuned']['median_ms'] / e['untuned']['median_ms']:.2f}x | "
                    f"{r['trials']} | {r['tune_s']:.0f} |")
        lines.append("")
        for name, r in res["models"].items():
            slower = [t["task"] for t in r["tasks"] if t["speedup"] is not None
                      and t["speedup"] < 1.0]
            lines.append(f"- {name}: {len(r['tasks'])} kernels, max relative error vs "
                         f"onnxruntime {r['max_rel_err']['tuned']:.2e}; kernels whose best "
                         f"is slower than their default schedule: "
                         f"{', '.join(slower) if slower else 'none'}")
        lines.append("")
    for section in ("kernels", "models"):
        for name, r in res[section].items():
            lines += [f"Kernels of {name} (tuning records):", "",
                      "| task | weight | trials | failed | default us | best us | GFLOP/s "
                      "| speedup |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for t in r["tasks"]:
                def f(v: Any, fmt: str) -> str:
                    return "-" if v is None else format(v, fmt)
                lines.append(f"| {t['task']} | {t['weight']:g} | {t['trials']} | {t['failed']}"
                             f" | {f(t['default_us'], '.1f')} | {f(t['best_us'], '.1f')} | "
                             f"{f(t['gflops'], '.1f')} | {f(t['speedup'], '.2f')} |")
            lines.append("")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="K1,K2,resnet18,bert",
                    help="comma-separated: K1, K2, resnet18, bert, mobilenet_v2")
    ap.add_argument("--trials", type=int, default=256, help="trials per kernel (K1, K2)")
    ap.add_argument("--model-trials", type=int, default=2000, help="trials per model")
    ap.add_argument("--per-iter", type=int, default=64, help="candidates per batch")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mcpu", default=None, help="tune ours for this CPU (haswell ...) and "
                    "hold the peers to its ISA (default: the host CPU)")
    ap.add_argument("--mattr", default=None, help="LLVM feature overrides for ours")
    ap.add_argument("--strategy", default=None, help="search strategy (default: evolutionary)")
    ap.add_argument("--cost-model", default=None, help="xgb (default), random or none")
    ap.add_argument("--no-torch", action="store_true", help="skip torch even if installed")
    ap.add_argument("--work-dir", default=None,
                    help="where the tuning records go (default: <out>/tune-work); with an "
                         "existing one the search continues from its records")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in KERNEL_TASKS and t not in MODEL_TASKS]
    if unknown:
        ap.error(f"unknown tasks {unknown}; choose from {sorted(KERNEL_TASKS)} "
                 f"and {list(MODEL_TASKS)}")
    threads = sorted({int(t) for t in args.threads.split(",")})

    import kernels
    from target_isa import chosen, isa_label, isa_level, ours_target

    kernels._register_llvm()
    target = ours_target(args.mcpu, args.mattr, max(threads))
    level = isa_level(target) if chosen(args.mcpu, args.mattr) else None
    out_dir = Path(args.out)
    work_dir = Path(args.work_dir) if args.work_dir else out_dir / "tune-work"
    torch_ok = not args.no_torch and kernels._torch_available()
    res: dict[str, Any] = {
        "meta": {"date": _dt.datetime.now().isoformat(timespec="seconds"),
                 "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
                 "cpus": os.cpu_count(), "load_before": [round(x, 2) for x in os.getloadavg()],
                 "target": target, "threads": threads, "trials": args.trials,
                 "model_trials": args.model_trials, "mcpu": args.mcpu, "mattr": args.mattr,
                 "isa": {"ours": isa_label(args.mcpu, args.mattr)},
                 "work_dir": str(work_dir)},
        "kernels": {}, "peers": {}, "models": {},
    }
    for t in tasks:
        print(f"[{t}] tuning for {target} ...", file=sys.stderr, flush=True)
        if t in KERNEL_TASKS:
            res["kernels"][t] = bench_kernel(t, target, args, threads, work_dir)
            res["peers"][t] = bench_kernel_peers(t, threads, args, level, torch_ok)
            for impl, p in res["peers"][t].items():
                res["meta"]["isa"].setdefault(impl, p["info"].get("isa", "?"))
        else:
            res["models"][t] = bench_model(t, target, args, threads, work_dir)
            res["meta"]["isa"].setdefault("onnxruntime", res["models"][t]["onnxruntime"]["isa"])
    res["meta"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    md = markdown(res)
    write_results(out_dir, "tune", res, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
