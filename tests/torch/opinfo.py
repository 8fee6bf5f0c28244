"""PyTorch's OpInfo database through our compiler: export, import, build, run, compare.

For every entry of ``torch.testing._internal.common_methods_invocations.op_db`` that
supports float32 on CPU, the first few float32 sample inputs are each wrapped in a module
(tensor leaves of the sample are its inputs, everything else a constant), exported with
``torch.export``, imported with ``from_exported_program``, built for llvm, run on the VM and
compared with eager torch.

    python tests/torch/opinfo.py                   # every entry -> tests/torch/results/
    python tests/torch/opinfo.py -k softmax -v     # entries whose name contains "softmax"
    python tests/torch/opinfo.py --jobs 2 --timeout 120 --samples 3
    python tests/torch/opinfo.py --not-passed --merge  # re-run what failed, keep the rest

Sample statuses: ``passed``; ``not_exportable`` (torch.export failed, or no tensor output);
``unsupported`` (the importer raised OpNotSupported: the ATen op is named); ``failed``
(import, build or run error, or values/shape/dtype differ).  An entry is ``passed`` when
every exportable sample passes, ``failed`` when one fails, ``unsupported`` when none fails
but one is unsupported, ``not_exportable`` when no sample exports.  The pass rate counts
entries with at least one exportable sample.  Random ops (an eager result that differs
between two runs on the same inputs, or a seeded ATen op that the imported program also
draws random numbers for: OpInfo reseeds some before each call), and outputs torch leaves
uninitialised (an ``empty*`` op's result), are compared by shape and dtype only.  An entry's
samples stop at the first that fails or is unsupported (the entry cannot pass any more).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
RTOL, ATOL = 1e-4, 1e-5


def entry_name(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def float32_entries() -> dict[str, Any]:
    """``{entry name: OpInfo}`` for the op_db entries that support float32 on CPU."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    out = {}
    for op in op_db:
        try:
            ok = torch.float32 in op.supported_dtypes("cpu")
        except Exception:  # noqa: BLE001 - an entry that cannot say: not float32
            ok = False
        if ok:
            out[entry_name(op)] = op
    return out


def ensure_llvm() -> None:
    """Register the llvm target plugin when running from a source checkout."""
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:
        import tvm.target.llvm.plugin as plugin

        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")


# -- one sample --------------------------------------------------------------------------------
def _module(op: Any, sample: Any) -> tuple[Any, list[Any]]:
    """A module computing ``op(sample.input, *sample.args, **sample.kwargs)`` from the
    sample's tensor leaves (its inputs), and those tensors."""
    import torch
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    fixed = list(leaves)
    fn = op.op

    class Sample(torch.nn.Module):
        def forward(self, *tensors: Any) -> tuple:
            values = list(fixed)
            for i, t in zip(slots, tensors):
                values[i] = t
            inp, args, kwargs = pytree.tree_unflatten(values, spec)
            out = fn(inp, *args, **kwargs)
            return tuple(x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor))

    return Sample(), [leaves[i].detach().clone() for i in slots]


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0] if text else type(err).__name__)[:300]


def _to_numpy(t: Any) -> np.ndarray:
    from tvm.relax.frontend.torch.importer import tensor_to_numpy

    return tensor_to_numpy(t, "output")


def run_sample(op: Any, sample: Any) -> dict[str, Any]:
    """Export, import, build and run one sample; ``{"status", "stage", "reason"}``."""
    import torch

    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.torch import OpNotSupported, from_exported_program

    module, tensors = _module(op, sample)
    with torch.no_grad():
        try:
            want1 = module(*[t.clone() for t in tensors])
            want2 = module(*[t.clone() for t in tensors])
        except Exception as err:  # noqa: BLE001 - an invalid sample, not our bug
            return {"status": "not_exportable", "stage": "eager", "reason": _first_line(err)}
        if not want1:
            return {"status": "not_exportable", "stage": "eager", "reason": "no tensor output"}
        try:
            ep = torch.export.export(module, tuple(t.clone() for t in tensors))
        except Exception as err:  # noqa: BLE001
            return {"status": "not_exportable", "stage": "export",
                    "reason": f"{type(err).__name__}: {_first_line(err)}"}
    unspecified = _uninitialised_outputs(ep)
    try:
        mod = from_exported_program(ep)
    except OpNotSupported as err:
        return {"status": "unsupported", "stage": "import", "reason": _first_line(err)}
    except Exception as err:  # noqa: BLE001
        return {"status": "failed", "stage": "import",
                "reason": f"{type(err).__name__}: {_first_line(err)}"}
    try:
        ex = relax.build(mod, target="llvm")
    except Exception as err:  # noqa: BLE001
        return {"status": "failed", "stage": "build",
                "reason": f"{type(err).__name__}: {_first_line(err)}"}
    try:
        vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
        args = [tvm.runtime.tensor(_to_numpy(t)) for t in tensors]
        out = vm["main"](*args)
        got = [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]
    except Exception as err:  # noqa: BLE001
        return {"status": "failed", "stage": "run",
                "reason": f"{type(err).__name__}: {_first_line(err)}"}
    random = any(a.shape != b.shape or not torch.equal(a, b) and not _same_nan(a, b)
                 for a, b in zip(want1, want2)) or _seeded(ep, mod)
    values = [not random and i not in unspecified for i in range(len(want1))]
    diff = compare(got, [_to_numpy(w) for w in want1], values=values)
    if diff is not None:
        return {"status": "failed", "stage": "compare", "reason": diff}
    return {"status": "passed", **({"note": "random op: shape and dtype compared"}
                                   if random else {})}


# ATen ops whose result's values are unspecified (uninitialised memory)
_UNINITIALISED = ("aten.empty.", "aten.empty_like.", "aten.empty_strided.",
                  "aten.empty_permuted.", "aten.new_empty.", "aten.new_empty_strided.")


def _uninitialised_outputs(ep: Any) -> set[int]:
    """Positions of the user outputs that an ``empty*`` op produces: their values are
    unspecified, so only their shape and dtype can be compared."""
    from tvm.relax.frontend.torch.common import op_name

    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    results = out_node.args[0]
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    kinds = [spec.kind.name for spec in ep.graph_signature.output_specs]
    user = [r for r, kind in zip(results, kinds) if kind == "USER_OUTPUT"]
    return {i for i, node in enumerate(user)
            if getattr(node, "op", None) == "call_function"
            and op_name(node.target).startswith(_UNINITIALISED)}


def _seeded(ep: Any, mod: Any) -> bool:
    """Whether the program draws random numbers in both torch (an ATen op tagged
    nondeterministic_seeded; OpInfo reseeds some before each call, so two eager runs agree)
    and the imported module (it asks the VM for a run-time seed)."""
    import torch

    tag = torch.Tag.nondeterministic_seeded
    seeded = any(tag in getattr(n.target, "tags", ()) for n in ep.graph.nodes
                 if n.op == "call_function")
    return seeded and "vm.builtin.random_seed" in mod.script()


def _same_nan(a: Any, b: Any) -> bool:
    import torch

    if not a.is_floating_point():
        return False
    return bool(torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))
                and torch.equal(a.isnan(), b.isnan()))


def compare(got: list[np.ndarray], want: list[np.ndarray],
            values: "bool | list[bool]" = True) -> Optional[str]:
    """None if the outputs match (allclose, NaN equal to NaN); otherwise what differs.
    ``values`` False (for all outputs, or per output) compares shape and dtype only."""
    if len(got) != len(want):
        return f"{len(got)} output(s), expected {len(want)}"
    check = values if isinstance(values, list) else [values] * len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        if not check[i]:
            continue
        if w.dtype.kind in "fc" or str(w.dtype) == "bfloat16":
            wide = np.complex128 if w.dtype.kind == "c" else np.float64  # keep imag parts
            bad = ~np.isclose(g.astype(wide), w.astype(wide), rtol=RTOL, atol=ATOL,
                              equal_nan=True)
        else:
            bad = g != w
        if np.any(bad):
            idx = tuple(int(v) for v in np.argwhere(bad)[0])  # () for a 0-d output
            return (f"output {i}: {int(np.sum(bad))} of {w.size} value(s) differ (e.g. at "
                    f"{idx}: got {g[idx]!r}, expected {w[idx]!r})")
    return None


# -- one entry ---------------------------------------------------------------------------------
def run_entry(name: str, op: Any, max_samples: int) -> dict[str, Any]:
    import torch

    t0 = time.perf_counter()
    torch.manual_seed(0)
    try:
        samples = list(islice(op.sample_inputs("cpu", torch.float32, requires_grad=False),
                              max_samples))
    except Exception as err:  # noqa: BLE001
        return {"name": name, "status": "not_exportable", "samples": [],
                "reason": f"no samples: {type(err).__name__}: {_first_line(err)}",
                "seconds": time.perf_counter() - t0}
    results = []
    for sample in samples:
        try:
            rec = run_sample(op, sample)
        except Exception as err:  # noqa: BLE001
            rec = {"status": "failed", "stage": "harness",
                   "reason": f"{type(err).__name__}: {_first_line(err)}"}
        results.append(rec)
        if rec["status"] in ("failed", "unsupported"):
            break  # the entry cannot pass any more: spare the remaining builds
    return {"name": name, **entry_status(results), "samples": results,
            "seconds": round(time.perf_counter() - t0, 2)}


def entry_status(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """An entry's status and reason from its samples' (see the module docstring)."""
    for status in ("failed", "unsupported", "passed", "not_exportable"):
        hits = [s for s in samples if s["status"] == status]
        if hits:
            out = {"status": status}
            if status != "passed":
                stage = hits[0].get("stage")
                out["reason"] = (f"{stage}: " if stage else "") + hits[0].get("reason", "")
            return out
    return {"status": "not_exportable", "reason": "no float32 sample"}


def _worker(name: str, op: Any, max_samples: int, queue: Any) -> None:
    import torch

    torch.set_num_threads(1)
    try:
        rec = run_entry(name, op, max_samples)
    except BaseException as err:  # noqa: BLE001
        rec = {"name": name, "status": "failed", "reason": f"crash: {_first_line(err)}",
               "samples": []}
    queue.put(rec)


def run_suite(names: Iterable[str], entries: dict[str, Any], jobs: int = 2,
              timeout: float = 120.0, max_samples: int = 3,
              verbose: bool = False) -> list[dict[str, Any]]:
    """Run entries in ``jobs`` forked worker processes, one process per entry; an entry
    over ``timeout`` s or whose process dies counts as failed."""
    import multiprocessing as mp

    import tvm.relax  # noqa: F401 - imported once: forked workers start warm
    import tvm.relax.frontend.torch  # noqa: F401

    ensure_llvm()
    ctx = mp.get_context("fork")
    pending = list(names)
    results: list[dict[str, Any]] = []
    workers: list[dict[str, Any]] = []
    while pending or workers:
        while pending and len(workers) < jobs:
            name = pending.pop(0)
            q = ctx.Queue()
            p = ctx.Process(target=_worker, args=(name, entries[name], max_samples, q),
                            daemon=True)
            p.start()
            workers.append({"proc": p, "queue": q, "name": name, "t0": time.time()})
        time.sleep(0.02)
        for w in list(workers):
            rec = None
            if not w["queue"].empty():
                rec = w["queue"].get()
                w["proc"].join(5)
            elif not w["proc"].is_alive():
                rec = {"name": w["name"], "status": "failed", "samples": [],
                       "reason": f"crash: worker died (exit code {w['proc'].exitcode})"}
            elif time.time() - w["t0"] > timeout:
                w["proc"].kill()
                rec = {"name": w["name"], "status": "failed", "samples": [],
                       "reason": f"timeout: over {timeout:.0f} s"}
            if rec is not None:
                rec.setdefault("seconds", round(time.time() - w["t0"], 2))
                workers.remove(w)
                results.append(rec)
                if verbose:
                    print(f"{rec['status']:>15}  {rec['name']}  {rec.get('reason', '')[:150]}",
                          flush=True)
    return results


# -- reports -----------------------------------------------------------------------------------
def summarize(results: list[dict[str, Any]], seconds: float, jobs: int) -> dict[str, Any]:
    import torch

    counts = collections.Counter(r["status"] for r in results)
    exportable = len(results) - counts["not_exportable"]
    unsupported_ops = collections.Counter()
    for r in results:
        for s in r.get("samples", []):
            if s["status"] == "unsupported":
                unsupported_ops[s["reason"].split(" ", 1)[0]] += 1
    return {
        "torch_version": torch.__version__,
        "entries": len(results),
        "exportable": exportable,
        "passed": counts["passed"],
        "failed": counts["failed"],
        "unsupported": counts["unsupported"],
        "not_exportable": counts["not_exportable"],
        "pass_rate_exportable": round(counts["passed"] / exportable, 4) if exportable else 0.0,
        "seconds": round(seconds, 1),
        "jobs": jobs,
        "unsupported_aten_ops": dict(unsupported_ops.most_common()),
    }


def write_reports(results: list[dict[str, Any]], summary: dict[str, Any],
                  out_dir: Path = RESULTS) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    results = sorted(results, key=lambda r: r["name"])
    (out_dir / "opinfo.json").write_text(json.dumps(
        {"summary": summary, "entries": results}, indent=1) + "\n")
    s = summary
    lines = [
        "# PyTorch OpInfo conformance",
        "",
        f"torch {s['torch_version']}: {s['entries']} op_db entries with float32 samples, "
        f"{s['exportable']} exportable; **{s['passed']} passed**, {s['failed']} failed, "
        f"{s['unsupported']} unsupported, {s['not_exportable']} not exportable.",
        f"Pass rate over exportable entries: **{s['pass_rate_exportable'] * 100:.1f}%** "
        f"({s['passed']}/{s['exportable']}); run took {s['seconds']:.0f} s with "
        f"{s['jobs']} worker(s)"
        + (f", then {s['rerun']['entries']} entries re-run in {s['rerun']['seconds']:.0f} s "
           "(`--merge`)" if s.get("rerun") else "")
        + ".  Written by `python tests/torch/opinfo.py` (`nox -s torch_opinfo`).",
        "",
        "| entry | status | samples | reason |",
        "|---|---|---|---|",
    ]
    for r in results:
        n = collections.Counter(x["status"] for x in r.get("samples", []))
        counts = ", ".join(f"{k} {v}" for k, v in sorted(n.items()))
        reason = r.get("reason", "").replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| `{r['name']}` | {r['status']} | {counts} | {reason} |")
    if s["unsupported_aten_ops"]:
        lines += ["", "## Unsupported ATen operators (samples)", ""]
        lines += [f"- `{op}`: {n}" for op, n in s["unsupported_aten_ops"].items()]
    (out_dir / "opinfo.md").write_text("\n".join(lines) + "\n")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only entries whose name contains this")
    parser.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per entry")
    parser.add_argument("--samples", type=int, default=3, help="samples per entry")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--not-passed", action="store_true",
                        help="only the entries the results file in --out does not record as "
                             "passed")
    parser.add_argument("--merge", action="store_true",
                        help="replace the re-run entries in the results file in --out and "
                             "keep the others as recorded (the summary says how many were "
                             "re-run)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    t0 = time.time()
    entries = float32_entries()
    names = [n for n in entries if args.k in n]
    recorded_file = Path(args.out) / "opinfo.json"
    recorded = (json.loads(recorded_file.read_text())
                if (args.not_passed or args.merge) and recorded_file.exists() else None)
    if args.not_passed:
        if recorded is None:
            parser.error(f"--not-passed needs a results file, {recorded_file} is missing")
        passed = {e["name"] for e in recorded["entries"] if e["status"] == "passed"}
        names = [n for n in names if n not in passed]
    results = run_suite(names, entries, args.jobs, args.timeout, args.samples, args.verbose)
    seconds = time.time() - t0
    if args.merge and recorded is not None:
        rerun = {r["name"] for r in results}
        kept = [e for e in recorded["entries"] if e["name"] not in rerun and e["name"] in entries]
        summary = summarize(results + kept, recorded["summary"]["seconds"], args.jobs)
        summary["rerun"] = {"entries": len(results), "seconds": round(seconds, 1)}
        results = results + kept
    else:
        summary = summarize(results, seconds, args.jobs)
    write_reports(results, summary, Path(args.out))
    print(f"{summary['entries']} entries in {summary['seconds']:.0f} s: {summary['passed']} "
          f"passed, {summary['failed']} failed, {summary['unsupported']} unsupported, "
          f"{summary['not_exportable']} not exportable; pass rate over exportable "
          f"{summary['pass_rate_exportable'] * 100:.1f}% -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
