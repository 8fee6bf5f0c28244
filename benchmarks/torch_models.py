"""PyTorch models end to end: ours (``torch.export`` -> ``from_exported_program`` ->
``relax.build`` -> VM, and ``torch.compile(backend="tvm")``) next to torch eager and
``torch.compile(backend="inductor")``, 1 and 2 threads, in one run.

    python benchmarks/torch_models.py                        # every model, full size
    python benchmarks/torch_models.py --models resnet18 --threads 1 --repeats 10
    python benchmarks/torch_models.py --mcpu=haswell         # the AVX2 code path, AVX2 torch

Models (float32, seeded random weights, written out in tests/torch/torch_models.py):

    resnet18      batch 1, 3x224x224
    mobilenet_v2  batch 1, 3x224x224
    bert          BERT-style encoder: 4 layers, hidden 512, 8 heads, FFN 2048, vocab 8192,
                  batch 1, sequence 128 (fused scaled_dot_product_attention)
    lstm, gru     embedding 500x64, 2-layer recurrent classifier, batch 1, sequence 32

Columns:

``eager``
    the model in ``torch.inference_mode()``, ``torch.set_num_threads(n)``.
``inductor``
    ``torch.compile(model, backend="inductor")`` (default mode), same threads.
``ours``
    ``torch.export.export`` -> ``from_exported_program`` -> ``relax.build(mod, target)`` for
    the host CPU (``llvm -mcpu=<host> -num-cores=N``) or ``--mcpu``/``--mattr``, run with
    ``vm.time_evaluator`` under ``tvm.runtime.set_num_threads(n)``.
``ours (compile)``
    ``torch.compile(model, backend="tvm", options={"target": target})``, called with torch
    tensors (DLPack in and out), timed like eager.

Every column runs in this one process; they are timed in ``--rounds`` rounds of
``repeats / rounds`` calls each, every column and thread count in turn within a round, so
that a change of machine load hits them alike; min and median are over all calls.  The
ratios compare medians: ours / eager and ours / inductor (below 1 means we are faster).
"import + build" is ``from_exported_program`` + ``relax.build`` wall time (no tuning); the
export itself and inductor's first-call compile time are reported beside it.  Outputs are
checked against eager before timing.  Results: ``benchmarks/results/torch-models-<stamp>
.{json,md}`` and ``torch-models-latest.{json,md}``.  Not run in CI.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

BERT = dict(vocab=8192, dim=512, layers=4, heads=8, ffn=2048, max_len=512)
BERT_SEQ = 128
MODELS = ("resnet18", "mobilenet_v2", "bert", "lstm", "gru")

Timer = Callable[[int, int], list[float]]  # (threads, repeats) -> seconds per call


def _model_zoo() -> Any:
    """tests/torch/torch_models.py, loaded by path (this script has the same name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "torch_model_zoo", ROOT / "tests" / "torch" / "torch_models.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    return zoo


def build_model(name: str) -> tuple[Any, tuple[Any, ...]]:
    """A seeded eval-mode model and its example inputs (see the module docstring)."""
    import torch

    torch_models = _model_zoo()

    if name in ("resnet18", "mobilenet_v2"):
        return torch_models.make_model(name, batch=1, image=224)
    if name == "bert":
        torch.manual_seed(0)
        model = torch_models.BertEncoder(**BERT).eval()
        gen = torch.Generator().manual_seed(2)
        ids = torch.randint(0, BERT["vocab"], (1, BERT_SEQ), generator=gen)
        mask = torch.ones(1, BERT_SEQ, dtype=torch.int64)
        mask[:, BERT_SEQ * 3 // 4:] = 0
        return model, (ids, mask)
    if name in ("lstm", "gru"):
        return torch_models.make_model(name, batch=1, seq=32)
    raise SystemExit(f"unknown model {name!r} ({', '.join(MODELS)})")


def _flat(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _rel_err(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(g - w)) / max(1.0, float(np.max(np.abs(w)))))
               for g, w in zip(got, want))


def _torch_timer(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> Timer:
    import torch

    def timer(n: int, repeats: int) -> list[float]:
        torch.set_num_threads(n)
        with torch.inference_mode():
            return time_calls(lambda: fn(*inputs), repeats)

    return timer


def prepare_eager(model: Any, inputs: tuple[Any, ...]) -> tuple[dict[str, Any], Timer, list]:
    import torch

    with torch.inference_mode():
        ref = [t.numpy() for t in _flat(model(*inputs))]
    return {"version": torch.__version__}, _torch_timer(model, inputs), ref


def prepare_inductor(model: Any, inputs: tuple[Any, ...], ref: list[np.ndarray]
                     ) -> tuple[dict[str, Any], Timer]:
    import torch

    compiled = torch.compile(model, backend="inductor")
    t = time.perf_counter()
    with torch.inference_mode():
        out = [o.numpy() for o in _flat(compiled(*inputs))]
    info = {"first_call_s": time.perf_counter() - t, "max_rel_err": _rel_err(out, ref)}
    return info, _torch_timer(compiled, inputs)


def prepare_ours(model: Any, inputs: tuple[Any, ...], ref: list[np.ndarray], target: str
                 ) -> tuple[dict[str, Any], Timer]:
    """Export, import and build; the info (times, error) and a timer of the VM."""
    import torch

    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    t = time.perf_counter()
    ep = torch.export.export(model, inputs)
    export_s = time.perf_counter() - t
    t = time.perf_counter()
    mod = from_exported_program(ep)
    import_s = time.perf_counter() - t
    t = time.perf_counter()
    ex = relax.build(mod, target=target)
    build_s = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    args = [tvm.runtime.tensor(x.numpy()) for x in inputs]
    out = [o.numpy() for o in _flat(vm["main"](*args))]
    info = {"export_s": export_s, "import_s": import_s, "build_s": build_s,
            "import_build_s": import_s + build_s, "max_rel_err": _rel_err(out, ref)}

    def timer(n: int, repeats: int) -> list[float]:
        tvm.runtime.set_num_threads(n)
        try:
            res = vm.time_evaluator("main", number=1, repeat=repeats, warmup=2)(*args)
        finally:
            tvm.runtime.set_num_threads(None)
        return list(res.results)

    return info, timer


def prepare_ours_compile(model: Any, inputs: tuple[Any, ...], ref: list[np.ndarray],
                         target: str) -> tuple[dict[str, Any], Timer]:
    """torch.compile(backend="tvm"): the first call's compile time and a timer."""
    import torch

    import tvm.runtime
    from tvm.relax.frontend.torch import dynamo  # claims "tvm" over torch's built-in one

    dynamo.register()
    compiled = torch.compile(model, backend="tvm", options={"target": target})
    t = time.perf_counter()
    with torch.inference_mode():
        out = [o.numpy() for o in _flat(compiled(*inputs))]
    info = {"first_call_s": time.perf_counter() - t, "max_rel_err": _rel_err(out, ref)}
    torch_timer = _torch_timer(compiled, inputs)

    def timer(n: int, repeats: int) -> list[float]:
        tvm.runtime.set_num_threads(n)
        try:
            return torch_timer(n, repeats)
        finally:
            tvm.runtime.set_num_threads(None)

    return info, timer


COLUMNS = ("eager", "inductor", "ours", "ours_compile")


def run(names: list[str], threads: list[int], repeats: int, mcpu: Optional[str] = None,
        mattr: Optional[str] = None, rounds: int = 3, columns: tuple[str, ...] = COLUMNS
        ) -> dict[str, Any]:
    from node_suite import ensure_llvm
    from target_isa import apply_peer_env, chosen, isa_label, isa_level, ours_target

    ensure_llvm()
    target = ours_target(mcpu, mattr)
    apply_peer_env(isa_level(target) if chosen(mcpu, mattr) else None)  # before torch loads
    import torch
    from target_isa import torch_label

    out: dict[str, Any] = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "cpu": _cpu_name(), "loadavg_before": os.getloadavg()},
        "target": target, "isa": {"ours": isa_label(mcpu, mattr), "torch": torch_label()},
        "torch": torch.__version__, "columns": list(columns), "models": {},
    }
    for name in names:
        model, inputs = build_model(name)
        print(f"[{name}] eager, inductor, ours (export/import/build), ours (torch.compile) ...",
              flush=True)
        eager_info, eager_timer, ref = prepare_eager(model, inputs)
        entry: dict[str, Any] = {"eager": eager_info}
        timers: dict[str, Timer] = {"eager": eager_timer}
        preps = {"inductor": (prepare_inductor, (model, inputs, ref)),
                 "ours": (prepare_ours, (model, inputs, ref, target)),
                 "ours_compile": (prepare_ours_compile, (model, inputs, ref, target))}
        for col, (prep, prep_args) in preps.items():
            if col not in columns:
                continue
            try:
                entry[col], timers[col] = prep(*prep_args)
            except Exception as err:  # noqa: BLE001 - a column that fails is reported
                entry[col] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
                print(f"  {col}: {entry[col]['error']}", flush=True)
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
        torch._dynamo.reset()
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


def _ms(r: dict[str, Any], n: int) -> Optional[dict[str, float]]:
    return (r or {}).get("threads", {}).get(str(n))


def markdown(res: dict[str, Any], threads: list[int]) -> str:
    lines = [
        f"PyTorch models, end to end ({res['date']}, {res['machine']['cpu']}, "
        f"{res['machine']['cpus']} CPUs, load {res['machine']['loadavg_before'][0]:.2f} "
        f"before / {res['machine']['loadavg_after'][0]:.2f} after; torch {res['torch']}). "
        "Median latency in ms (min in parentheses).",
        "",
        f"Ours: {res['target']}. ISA measured: "
        + "; ".join(f"{k} {v}" for k, v in res["isa"].items()) + ".",
        "",
        "| model | threads | eager | inductor | ours | ours (torch.compile) | ours / eager "
        "| ours / inductor | compile / eager |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(t: Optional[dict[str, float]]) -> str:
        return f"{t['median_ms']:.2f} ({t['min_ms']:.2f})" if t else "n/a"

    def ratio(a: Optional[dict[str, float]], b: Optional[dict[str, float]]) -> str:
        return f"{a['median_ms'] / b['median_ms']:.2f}x" if a and b else "n/a"

    for name, r in res["models"].items():
        for n in threads:
            e, i = _ms(r["eager"], n), _ms(r.get("inductor"), n)
            o, c = _ms(r.get("ours"), n), _ms(r.get("ours_compile"), n)
            lines.append(f"| {name} | {n} | {cell(e)} | {cell(i)} | {cell(o)} | {cell(c)} | "
                         f"{ratio(o, e)} | {ratio(o, i)} | {ratio(c, e)} |")
    lines.append("")
    for name, r in res["models"].items():
        o = r.get("ours") or {}
        parts = []
        if "import_build_s" in o:
            parts.append(f"export {o['export_s']:.2f} s, import {o['import_s']:.2f} s + build "
                         f"{o['build_s']:.1f} s = {o['import_build_s']:.1f} s, max relative "
                         f"error vs eager {o['max_rel_err']:.2e}")
        for col in ("inductor", "ours_compile"):
            info = r.get(col) or {}
            if "first_call_s" in info:
                parts.append(f"{col} first call {info['first_call_s']:.1f} s")
            if "error" in info:
                parts.append(f"{col} failed: {info['error']}")
        if "error" in o:
            parts.append(f"ours failed: {o['error']}")
        lines.append(f"- {name}: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3,
                        help="the repeats are taken in this many rounds, each timing every "
                             "column in turn (default 3)")
    parser.add_argument("--columns", default=",".join(COLUMNS),
                        help=f"subset of {','.join(COLUMNS)} (eager is always run)")
    parser.add_argument("--mcpu", default=None,
                        help="compile ours for this CPU (haswell, znver3 ...) and run torch "
                             "at its ISA (default: the host CPU)")
    parser.add_argument("--mattr", default=None,
                        help="LLVM feature overrides for ours, e.g. --mattr=-avx512f")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    columns = tuple(c for c in args.columns.split(",") if c)
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        parser.error(f"unknown column(s) {sorted(unknown)}; choose from {COLUMNS}")
    import torch._dynamo

    # dynamo leaves nn.LSTM/GRU untraced (the frame runs eagerly) unless asked: both
    # torch.compile columns then compile the recurrent models instead of timing eager torch
    torch._dynamo.config.allow_rnn = True
    res = run(args.models.split(","), threads, args.repeats, args.mcpu, args.mattr,
              max(1, args.rounds), columns)
    md = markdown(res, threads)
    write_results(Path(args.out), "torch-models", res, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
