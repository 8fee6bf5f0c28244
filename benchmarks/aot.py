"""AOT C package latency against the Python VM, and its memory next to the plan's bound.

    python benchmarks/aot.py                                   # resnet18, mobilenet_v2
    python benchmarks/aot.py --models resnet18 --threads 1,2 --runs 20
    python benchmarks/aot.py --mcpu=haswell                    # the AVX2 code path

For each model (``models.py``'s, batch 1, 3x224x224) the program is built twice for the
same target: ``relax.build(mod, target)`` (the VM) and ``relax.build(mod, target,
exec_mode="aot")`` (a C package), exported and linked statically into the C test program
of the AOT tests (``tests/aot_driver.py``), which calls ``<name>_run`` a given number of
times.  A C run's time is the difference of the program's wall time with ``--runs + 1``
runs and with 1 run, divided by ``--runs`` (process start, reading the inputs and writing
the outputs cancel).  The VM's time is ``vm.time_evaluator``'s minimum and its
kernels-only time the sum of the per-kernel minima of ``vm.profile`` (what the VM's
interpreter adds is the difference); both at the same thread count
(``tvm.runtime.set_num_threads`` for the VM, ``<name>_set_num_threads`` through
``OMP_NUM_THREADS`` for C).  The outputs of the C program are checked bit for bit against
the VM's.  The package's workspace (one static block holding every intermediate and the
kernels' scratch arena) and library size are listed too (the planner does not report a
liveness lower bound yet, so the memory target is not measured here).  Results go to
``benchmarks/results/aot-<stamp>.{json,md}``.  Not run in CI.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from timing import write_results  # noqa: E402


def _bench_models() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_models", HERE / "models.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    return time.perf_counter() - t


def measure(name: str, target: str, threads: list[int], runs: int) -> dict[str, Any]:
    import tvm.runtime
    from aot_driver import compile_driver
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    bench = _bench_models()
    model, feeds = bench.build_model(name)
    mod = from_onnx(model)
    inputs = list(feeds.values())
    t = time.perf_counter()
    ex = relax.build(mod, target=target)
    vm_compile = time.perf_counter() - t
    t = time.perf_counter()
    pkg = relax.build(mod, target=target, exec_mode="aot")
    aot_compile = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    want = vm["main"](*inputs).numpy()
    out: dict[str, Any] = {"model": name, "target": target, "vm_compile_s": vm_compile,
                           "aot_compile_s": aot_compile, "threads": {}}
    with tempfile.TemporaryDirectory(prefix="tvm_aot_bench_") as tmp:
        folder = Path(tmp)
        pkg.export(folder, "model")
        prog = compile_driver(folder, "model", pkg)
        in_path, out_path = folder / "in.bin", folder / "out.bin"
        in_path.write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))
        out["workspace_bytes"] = int(pkg.workspace_size)
        out["liveness_bound_bytes"] = int(pkg.plan.liveness_bound)
        out["library_bytes"] = (folder / "libmodel.a").stat().st_size
        for n in threads:
            tvm.runtime.set_num_threads(n)
            e2e = vm.time_evaluator("main", number=1, repeat=runs, warmup=2)(*inputs)
            kernels: dict[str, float] = {}
            for _ in range(max(3, runs // 4)):
                for row in vm.profile("main", *inputs).rows:
                    if row.kind == "kernel":
                        kernels[row.name] = min(kernels.get(row.name, 1e9), row.total_s)
            env = {**os.environ, "OMP_NUM_THREADS": str(n)}
            base = [str(prog), str(in_path), str(out_path)]
            one = min(_wall(base + ["1"], env) for _ in range(3))
            many = min(_wall(base + [str(runs + 1)], env) for _ in range(3))
            got = np.frombuffer(out_path.read_bytes(), dtype=want.dtype).reshape(want.shape)
            out["threads"][n] = {
                "vm_ms": 1e3 * min(e2e.results),
                "vm_kernels_ms": 1e3 * sum(kernels.values()),
                "aot_ms": 1e3 * max(many - one, 0.0) / runs,
                "bit_identical": bool(np.array_equal(got, want)),
            }
    return out


def markdown(results: list[dict[str, Any]], isa: str) -> str:
    lines = [f"AOT package vs the Python VM ({isa}); ms per run (C: wall difference over "
             "runs; VM: minimum, and the sum of per-kernel minima)", "",
             "| model | threads | VM | VM kernels | AOT | AOT / VM kernels | bit-identical |",
             "|---|--:|--:|--:|--:|--:|:-:|"]
    for r in results:
        for n, t in r["threads"].items():
            ratio = t["aot_ms"] / t["vm_kernels_ms"] if t["vm_kernels_ms"] else float("nan")
            lines.append(f"| {r['model']} | {n} | {t['vm_ms']:.2f} | {t['vm_kernels_ms']:.2f} "
                         f"| {t['aot_ms']:.2f} | {ratio:.2f}x | "
                         f"{'yes' if t['bit_identical'] else 'NO'} |")
    lines += ["", "| model | VM compile s | AOT compile s | libmodel.a bytes | workspace bytes "
              "| liveness bound bytes | workspace / bound |", "|---|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        lines.append(f"| {r['model']} | {r['vm_compile_s']:.1f} | {r['aot_compile_s']:.1f} | "
                     f"{r['library_bytes']} | {r['workspace_bytes']} | "
                     f"{r['liveness_bound_bytes']} | "
                     f"{r['workspace_bytes'] / max(1, r['liveness_bound_bytes']):.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--mcpu", default=None)
    parser.add_argument("--mattr", default=None)
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    from target_isa import isa_label, ours_target

    target = ours_target(args.mcpu, args.mattr)
    threads = [int(t) for t in args.threads.split(",")]
    results = [measure(m, target, threads, args.runs) for m in args.models.split(",")]
    md = markdown(results, isa_label(args.mcpu, args.mattr))
    write_results(Path(args.out), "aot", {"results": results}, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
