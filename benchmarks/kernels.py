"""Our CPU kernels next to numpy (OpenBLAS) and torch, on 1 thread and on all threads.

    python benchmarks/kernels.py                       # all kernels, 1 and all threads
    python benchmarks/kernels.py --kernels K1,K2 --threads 1,2 --repeats 30
    python benchmarks/kernels.py --mcpu=haswell        # the AVX2 code path, AVX2 peers

Kernels (float32):

    K1  matmul 1024x1024 @ 1024x1024
    K2  conv2d NCHW 1x64x56x56, 64x64x3x3 weights, padding 1
    K3  matmul 128x256 @ 256x512 + bias
    K4  depthwise conv2d NCHW 1x128x56x56, 3x3, padding 1
    K5  softmax over the last axis of 512x1024 (reported in GB/s: read + write)

"ours" is ``tir.build(func, target)`` of the te definition with the default CPU schedules
(tvm.target.llvm.schedule_rules), for the host CPU (``llvm -mcpu=<host> -num-cores=N``)
or, with ``--mcpu``/``--mattr``, for ``llvm -mcpu=X -mattr=Y -num-cores=N``; the thread
count is set with ``tvm.runtime.set_num_threads``.  For a chosen CPU the peers run the
same ISA (``target_isa.py``: ``OPENBLAS_CORETYPE``, ``ATEN_CPU_CAPABILITY``, oneDNN and
MKL switches); the table names the ISA each column measured.  Peers: numpy (OpenBLAS; threads through threadpoolctl when
installed, else ``OPENBLAS_NUM_THREADS``) and torch (``torch.set_num_threads``) when
importable.  Where numpy has no natural kernel it runs an equivalent (im2col + matmul for
K2, nine shifted multiply-adds for K4).

Each implementation runs in its own subprocess (the peers one per thread count); on the
host ISA numpy's runs with ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` removed from the
environment (they pin an older kernel), for a chosen CPU with ``OPENBLAS_CORETYPE`` set to
the matching OpenBLAS kernel.  Ours measures its thread counts interleaved, call by call, in one
process, so the speedup is not skewed by a change of machine load between runs.  Times are
the minimum and median of ``--repeats`` runs after warm-up; the machine load
(``os.getloadavg``) is recorded before and after.  Results go to
``benchmarks/results/`` (JSON and a markdown table; ``latest.md`` is the last run).
This is a benchmark, not a test: nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
SRC_DIRS = ["tvm-ffi", "tvm-ir", "tvm-tir", "tvm-runtime", "tvm-target-llvm"]

KERNELS: dict[str, dict[str, Any]] = {
    "K1": {"desc": "matmul 1024x1024x1024", "flops": 2 * 1024 ** 3},
    "K2": {"desc": "conv2d 1x64x56x56, 64x64x3x3, pad 1", "flops": 2 * 64 * 64 * 9 * 56 * 56},
    "K3": {"desc": "matmul 128x256 @ 256x512 + bias", "flops": 2 * 128 * 256 * 512 + 128 * 512},
    "K4": {"desc": "depthwise conv2d 1x128x56x56, 3x3, pad 1", "flops": 2 * 128 * 9 * 56 * 56},
    "K5": {"desc": "softmax 512x1024 (last axis)", "bytes": 2 * 512 * 1024 * 4},
}


# -- inputs ----------------------------------------------------------------------------------
def make_inputs(kernel: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype("float32")

    return {
        "K1": lambda: [r(1024, 1024), r(1024, 1024)],
        "K2": lambda: [r(1, 64, 56, 56), r(64, 64, 3, 3)],
        "K3": lambda: [r(128, 256), r(256, 512), r(512)],
        "K4": lambda: [r(1, 128, 56, 56), r(128, 1, 3, 3)],
        "K5": lambda: [r(512, 1024)],
    }[kernel]()


def output_shape(kernel: str) -> tuple[int, ...]:
    return {"K1": (1024, 1024), "K2": (1, 64, 56, 56), "K3": (128, 512),
            "K4": (1, 128, 56, 56), "K5": (512, 1024)}[kernel]


# -- timing ----------------------------------------------------------------------------------
def measure(fn: Callable[[], Any], repeats: int, min_time: float = 0.2) -> dict[str, float]:
    """Warm up, then time at least ``repeats`` calls (and at least ``min_time`` seconds)."""
    fn()
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 20 * repeats:
            break
    times.sort()
    return {"min_s": times[0], "median_s": times[len(times) // 2], "runs": len(times)}


# -- ours ------------------------------------------------------------------------------------
def _ours_funcs() -> dict[str, Callable[[], Any]]:
    from tvm import te

    def matmul(m: int, n: int, k: int, bias: bool) -> Any:
        A = te.placeholder((m, k), name="A")
        B = te.placeholder((k, n), name="B")
        r = te.reduce_axis((0, k), name="k")
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
        if not bias:
            return te.create_prim_func([A, B, C])
        b = te.placeholder((n,), name="bias")
        D = te.compute((m, n), lambda i, j: C[i, j] + b[j], name="T_add")
        return te.create_prim_func([A, B, b, D])

    def conv(c: int, k: int, depthwise: bool) -> Any:
        X = te.placeholder((1, c, 56, 56), name="X")
        W = te.placeholder((k, 1 if depthwise else c, 3, 3), name="W")
        P = te.compute((1, c, 58, 58), lambda n, ch, h, w: te.if_then_else(
            te.all(h >= 1, h < 57, w >= 1, w < 57), X[n, ch, h - 1, w - 1], 0.0),
            name="pad_temp")
        ry = te.reduce_axis((0, 3), name="ry")
        rx = te.reduce_axis((0, 3), name="rx")
        if depthwise:
            Y = te.compute((1, k, 56, 56), lambda n, o, h, w: te.sum(
                P[n, o, h + ry, w + rx] * W[o, 0, ry, rx], axis=[ry, rx]), name="conv")
        else:
            rc = te.reduce_axis((0, c), name="rc")
            Y = te.compute((1, k, 56, 56), lambda n, o, h, w: te.sum(
                P[n, rc, h + ry, w + rx] * W[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
        return te.create_prim_func([X, W, Y])

    def softmax() -> Any:
        X = te.placeholder((512, 1024), name="X")
        k = te.reduce_axis((0, 1024), name="k")
        mx = te.compute((512,), lambda i: te.max(X[i, k], axis=k), name="T_softmax_maxelem")
        ex = te.compute((512, 1024), lambda i, j: te.exp(X[i, j] - mx[i]),
                        name="T_softmax_exp")
        k2 = te.reduce_axis((0, 1024), name="k")
        sm = te.compute((512,), lambda i: te.sum(ex[i, k2], axis=k2), name="T_softmax_expsum")
        out = te.compute((512, 1024), lambda i, j: ex[i, j] / sm[i], name="T_softmax_norm")
        return te.create_prim_func([X, out])

    return {
        "K1": lambda: matmul(1024, 1024, 1024, False),
        "K2": lambda: conv(64, 64, False),
        "K3": lambda: matmul(128, 512, 256, True),
        "K4": lambda: conv(128, 128, True),
        "K5": softmax,
    }


def measure_interleaved(fn: Callable[[], Any], setters: list[Callable[[], None]],
                        repeats: int, min_time: float = 0.2) -> list[dict[str, float]]:
    """Like :func:`measure` for several settings (thread counts) at once: the settings
    alternate call by call, so a change of machine load hits them alike."""
    for set_ in setters:
        set_()
        fn()
        fn()
    times: list[list[float]] = [[] for _ in setters]
    start = time.perf_counter()
    while len(times[0]) < repeats or time.perf_counter() - start < min_time * len(setters):
        for k, set_ in enumerate(setters):
            set_()
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
        if len(times[0]) >= 20 * repeats:
            break
    out = []
    for ts in times:
        ts.sort()
        out.append({"min_s": ts[0], "median_s": ts[len(ts) // 2], "runs": len(ts)})
    return out


def _register_llvm() -> None:
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:  # a source checkout: register the plugin by hand
        import tvm.target.llvm.plugin as plugin

        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")


def run_ours(kernels: list[str], threads: list[int], repeats: int,
             mcpu: Optional[str] = None, mattr: Optional[str] = None,
             mtriple: Optional[str] = None, runner: Optional[str] = None) -> dict[str, Any]:
    """Our kernels.  In this process (the default) every thread count is measured
    interleaved; through a ``runner`` (``local``, ``process``, ``qemu``: the
    :mod:`tvm.runtime.runner` the tests and the tuner use) each kernel is exported to a
    shared library and timed where the runner runs it (``qemu``: emulated, so the times say
    nothing about the hardware; the outputs are still checked)."""
    from target_isa import isa_label, isa_level, ours_target
    from tvm import tir
    from tvm.runtime import set_num_threads

    _register_llvm()
    target = ours_target(mcpu, mattr, mtriple=mtriple)
    funcs = _ours_funcs()
    if mtriple:
        from tvm.target.llvm.schedule_rules import cpu_info

        isa = f"{cpu_info(target).isa} ({mtriple}{', ' + mcpu if mcpu else ''})"
    else:
        isa = isa_label(mcpu, mattr)
    info = {"target": target, "isa": isa, "level": isa_level(target),
            "runner": runner or "in-process"}
    out: dict[str, Any] = {str(t): {"info": info} for t in threads}
    setters = [lambda t=t: set_num_threads(t) for t in threads]
    for k in kernels:
        t0 = time.perf_counter()
        mod = tir.build(funcs[k](), target=target)
        build_s = time.perf_counter() - t0
        args = [*make_inputs(k), np.zeros(output_shape(k), "float32")]
        if runner is None:
            f = mod["main"]
            timed = measure_interleaved(lambda f=f, a=args: f(*a), setters, repeats)
            for t, res in zip(threads, timed):
                res["build_s"] = build_s
                res["check"] = _check(k, args[:-1], args[-1])
                out[str(t)][k] = res
            continue
        for t, res in zip(threads, _run_through(runner, mod, target, args, threads, repeats)):
            res["build_s"] = build_s
            res["check"] = _check(k, args[:-1], res.pop("output"))
            out[str(t)][k] = res
    return out


def _run_through(name: str, mod: Any, target: str, args: list[np.ndarray],
                 threads: list[int], repeats: int) -> list[dict[str, Any]]:
    """Export ``mod`` and time it with runner ``name`` at each thread count."""
    import tempfile

    from tvm.runtime import set_num_threads
    from tvm.runtime.runner import create_runner

    (func,) = mod.function_names
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.so")
        mod.export_library(path)
        for t in threads:
            options: dict[str, Any] = {}
            if name != "local":
                options["num_threads"] = t
            if name == "qemu":
                options["target"] = target
            else:
                set_num_threads(t)
            run = create_runner(name, **options).run(path, func, args, number=1,
                                                     repeat=max(repeats, 1))
            results.append({"min_s": run.min, "median_s": run.median, "runs": len(run.times),
                            "output": run.output(-1)})
    return results


# -- numpy -----------------------------------------------------------------------------------
def _np_conv_im2col(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # C,H,W,3,3
    cols = cols.transpose(0, 3, 4, 1, 2).reshape(x.shape[1] * 9, -1)
    return (w.reshape(w.shape[0], -1) @ cols).reshape(1, w.shape[0], 56, 56)


def _np_depthwise(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros_like(x)
    for dy in range(3):
        for dx in range(3):
            out += xp[:, :, dy:dy + 56, dx:dx + 56] * w[None, :, 0, dy, dx, None, None]
    return out


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def numpy_fns(k: str, args: list[np.ndarray]) -> Callable[[], Any]:
    return {
        "K1": lambda: args[0] @ args[1],
        "K2": lambda: _np_conv_im2col(*args),
        "K3": lambda: args[0] @ args[1] + args[2],
        "K4": lambda: _np_depthwise(*args),
        "K5": lambda: _np_softmax(*args),
    }[k]


def run_numpy(kernels: list[str], threads: int, repeats: int) -> dict[str, Any]:
    from target_isa import openblas_label

    info: dict[str, Any] = {"numpy": np.__version__}
    limiter = None
    try:
        import threadpoolctl

        limiter = threadpoolctl.threadpool_limits(limits=threads, user_api="blas")
        info["blas"] = [{key: p.get(key) for key in
                         ("internal_api", "version", "architecture", "num_threads")}
                        for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
        info["threads_via"] = "threadpoolctl"
    except ImportError:
        info["threads_via"] = "OPENBLAS_NUM_THREADS"
        info["blas"] = "unknown (install threadpoolctl to see the OpenBLAS kernel)"
    info["isa"] = openblas_label(info["blas"])
    out: dict[str, Any] = {"info": info}
    try:
        for k in kernels:
            args = make_inputs(k)
            fn = numpy_fns(k, args)
            res = measure(fn, repeats)
            res["check"] = _check(k, args, np.asarray(fn()))
            res["impl"] = {"K2": "im2col + matmul", "K4": "9 shifted multiply-adds"}.get(k)
            out[k] = res
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    return out


# -- torch -----------------------------------------------------------------------------------
def run_torch(kernels: list[str], threads: int, repeats: int) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F

    from target_isa import torch_label

    torch.set_num_threads(threads)
    out: dict[str, Any] = {"info": {"torch": torch.__version__,
                                    "threads": torch.get_num_threads(), "isa": torch_label()}}
    for k in kernels:
        args = [torch.from_numpy(a) for a in make_inputs(k)]
        fn = {
            "K1": lambda a=args: a[0] @ a[1],
            "K2": lambda a=args: F.conv2d(a[0], a[1], padding=1),
            "K3": lambda a=args: torch.addmm(a[2], a[0], a[1]),
            "K4": lambda a=args: F.conv2d(a[0], a[1], padding=1, groups=128),
            "K5": lambda a=args: torch.softmax(a[0], dim=-1),
        }[k]
        with torch.no_grad():
            res = measure(fn, repeats)
            res["check"] = _check(k, [a.numpy() for a in args], fn().numpy())
        out[k] = res
    return out


# -- checking results ------------------------------------------------------------------------
def _reference(k: str, args: list[np.ndarray]) -> np.ndarray:
    a64 = [a.astype(np.float64) for a in args]
    if k == "K1":
        return a64[0] @ a64[1]
    if k == "K2":
        return _np_conv_im2col(*a64)
    if k == "K3":
        return a64[0] @ a64[1] + a64[2]
    if k == "K4":
        return _np_depthwise(*a64)
    return _np_softmax(a64[0])


def _check(k: str, args: list[np.ndarray], got: np.ndarray) -> bool:
    ref = _reference(k, args)
    scale = np.abs(ref).max() or 1.0
    return bool(np.abs(got - ref).max() <= 1e-4 * scale)


# -- driver ----------------------------------------------------------------------------------
def _child_env(impl: str, threads: int, level: Optional[str] = None) -> dict[str, str]:
    """The environment of a worker: sources on the path, its thread count, and for a
    peer the ISA switches of ``level`` (None: the host ISA, every pin removed)."""
    from target_isa import peer_env

    env = dict(os.environ)
    paths = [str(ROOT / "packages" / d / "src") for d in SRC_DIRS]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["TVM_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if impl != "ours":
        env = peer_env(env, level)
    if impl == "numpy":
        env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def run_child(impl: str, kernels: list[str], threads: list[int], repeats: int,
              mcpu: Optional[str] = None, mattr: Optional[str] = None,
              level: Optional[str] = None, mtriple: Optional[str] = None,
              runner: Optional[str] = None) -> Optional[dict]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", impl,
           "--kernels", ",".join(kernels), "--threads", ",".join(map(str, threads)),
           "--repeats", str(repeats)]
    cmd += [f"--mcpu={mcpu}"] if mcpu else []
    cmd += [f"--mattr={mattr}"] if mattr else []
    cmd += [f"--mtriple={mtriple}"] if mtriple else []
    cmd += [f"--runner={runner}"] if runner else []
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=_child_env(impl, max(threads), level))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  [{impl}, {threads} thread(s)] failed: {last}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _torch_available() -> bool:
    proc = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    return proc.returncode == 0


def _rate(k: str, seconds: float) -> str:
    spec = KERNELS[k]
    if "bytes" in spec:
        return f"{spec['bytes'] / seconds / 1e9:.1f} GB/s"
    return f"{spec['flops'] / seconds / 1e9:.1f} GFLOP/s"


def summarize(results: dict[str, Any], kernels: list[str], threads: list[int]) -> tuple[
        list[list[str]], list[str]]:
    """Table rows and target lines."""
    rows = []
    ratios: dict[tuple[str, int], float] = {}
    for t in threads:
        for k in kernels:
            ours = results.get(f"ours/{t}", {}) or {}
            ok = ours.get(k)
            peers = {}
            for impl in ("numpy", "torch"):
                res = (results.get(f"{impl}/{t}") or {}).get(k)
                if res:
                    peers[impl] = res
            best_name, best = min(peers.items(), key=lambda p: p[1]["min_s"]) \
                if peers else (None, None)
            row = [k, str(t)]
            row.append(f"{ok['min_s'] * 1e3:.3f} / {ok['median_s'] * 1e3:.3f}" if ok else "-")
            row.append(_rate(k, ok["min_s"]) if ok else "-")
            for impl in ("numpy", "torch"):
                res = peers.get(impl)
                row.append(f"{res['min_s'] * 1e3:.3f} ({_rate(k, res['min_s'])})" if res else "-")
            if ok and best:
                ratio = best["min_s"] / ok["min_s"]
                ratios[(k, t)] = ratio
                row.append(f"{ratio:.2f}x vs {best_name}")
            else:
                row.append("-")
            row.append("ok" if ok and ok.get("check") else ("WRONG" if ok else "-"))
            rows.append(row)
    targets = []

    def peer_ratio(k: str, t: int, impl: str) -> Optional[float]:
        ok = (results.get(f"ours/{t}") or {}).get(k)
        res = (results.get(f"{impl}/{t}") or {}).get(k)
        return res["min_s"] / ok["min_s"] if ok and res else None

    def line(name: str, value: Optional[float], goal: float) -> None:
        if value is None:
            targets.append(f"{name}: not measured")
        else:
            targets.append(f"{name}: {value:.2f} (target >= {goal}) "
                           f"{'met' if value >= goal else 'NOT met'}")

    for t in threads:
        line(f"K1 {t}-thread vs numpy", peer_ratio("K1", t, "numpy"), 0.9)
        line(f"K2 {t}-thread vs torch", peer_ratio("K2", t, "torch"), 0.9)
    multi = [t for t in threads if t > 1]
    if 1 in threads and multi:
        t = max(multi)
        for k in ("K1", "K2"):
            one = (results.get("ours/1") or {}).get(k)
            many = (results.get(f"ours/{t}") or {}).get(k)
            sp = one["min_s"] / many["min_s"] if one and many else None
            line(f"{k} speedup {t} threads vs 1", sp, 1.7)
    if ratios:
        worst = min(ratios.items(), key=lambda p: p[1])
        line(f"worst ratio to the best peer ({worst[0][0]}, {worst[0][1]} thread(s))",
             worst[1], 0.5)
    return rows, targets


HEADER = ["kernel", "threads", "ours min/median ms", "ours rate", "numpy ms", "torch ms",
          "ours vs best peer", "result"]


def markdown(rows: list[list[str]], targets: list[str], meta: dict[str, Any]) -> str:
    isa = meta.get("isa", {})
    lines = [f"Run {meta['date']} on {meta['machine']} ({meta['cpus']} CPUs), "
             f"load average {meta['load_before']} before / {meta['load_after']} after.",
             f"Ours: {meta.get('ours_target', '?')}. numpy {meta.get('numpy', '?')}, "
             f"BLAS {meta.get('blas', '?')}. torch {meta.get('torch', 'not installed')}.",
             "ISA measured: " + "; ".join(f"{k} {v}" for k, v in isa.items()) + ".",
             "",
             "| " + " | ".join(HEADER) + " |",
             "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "Ratio: best peer time / our time (above 1: we are faster).", ""]
    lines += [f"- {t}" for t in targets]
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="K1,K2,K3,K4,K5")
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default: 1 and all CPUs)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--no-torch", action="store_true", help="skip torch even if installed")
    ap.add_argument("--mcpu", default=None,
                    help="compile ours for this CPU (haswell, znver3, skylake-avx512 ...) and "
                         "hold the peers to its ISA (default: the host CPU)")
    ap.add_argument("--mattr", default=None,
                    help="LLVM feature overrides for ours, e.g. --mattr=-avx512f (write the "
                         "'=' when the value starts with '-')")
    ap.add_argument("--mtriple", default=None,
                    help="cross-compile ours for this triple (aarch64-linux-gnu, "
                         "riscv64-linux-gnu); its kernels run through --runner (default: qemu) "
                         "and the peers are skipped")
    ap.add_argument("--runner", default=None,
                    help="time ours through a tvm.runtime.runner (local, process, qemu) "
                         "instead of in this process")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--worker", choices=["ours", "numpy", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    kernels = [k.strip().upper() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown:
        ap.error(f"unknown kernels {unknown}; choose from {sorted(KERNELS)}")
    ncpu = os.cpu_count() or 1
    threads = sorted({int(t) for t in args.threads.split(",")}) if args.threads else \
        sorted({1, ncpu})
    from target_isa import is_foreign

    foreign = is_foreign(args.mtriple)
    if foreign and args.runner is None:
        args.runner = "qemu"
    if args.worker:
        if args.worker == "ours":
            print(json.dumps(run_ours(kernels, threads, args.repeats, args.mcpu, args.mattr,
                                      args.mtriple, args.runner)))
        else:
            runner = {"numpy": run_numpy, "torch": run_torch}[args.worker]
            print(json.dumps(runner(kernels, threads[0], args.repeats)))
        return 0

    impls = ["ours", "numpy"] + ([] if args.no_torch or not _torch_available() else ["torch"])
    if foreign:
        impls = ["ours"]  # the peers run on this machine only
    meta: dict[str, Any] = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
        "cpus": ncpu, "load_before": [round(x, 2) for x in os.getloadavg()],
        "kernels": {k: KERNELS[k]["desc"] for k in kernels}, "threads": threads,
        "repeats": args.repeats, "mcpu": args.mcpu, "mattr": args.mattr,
        "mtriple": args.mtriple, "runner": args.runner or "in-process",
    }
    results: dict[str, Any] = {}
    print(f"measuring ours on {threads} thread(s), interleaved ...", file=sys.stderr)
    ours = run_child("ours", kernels, threads, args.repeats, args.mcpu, args.mattr,
                     mtriple=args.mtriple, runner=args.runner) or {}
    for t in threads:
        results[f"ours/{t}"] = ours.get(str(t))
    from target_isa import chosen

    level = None
    if chosen(args.mcpu, args.mattr):
        level = (ours.get(str(threads[0])) or {}).get("info", {}).get("level")
        if level is None:
            print("  the ISA of the chosen CPU is unknown: the peers run the host's",
                  file=sys.stderr)
    for t in threads:
        for impl in impls[1:]:
            print(f"measuring {impl} on {t} thread(s) ...", file=sys.stderr)
            results[f"{impl}/{t}"] = run_child(impl, kernels, [t], args.repeats, level=level)
    meta["isa"] = {}
    meta["load_after"] = [round(x, 2) for x in os.getloadavg()]
    for key, res in results.items():
        info = (res or {}).get("info", {})
        if info.get("isa"):
            meta["isa"].setdefault(key.split("/")[0], info["isa"])
        if key.startswith("ours/"):
            meta["ours_target"] = info.get("target")
        elif key.startswith("numpy/"):
            meta["numpy"] = info.get("numpy")
            blas = info.get("blas")
            if isinstance(blas, list) and blas:
                meta["blas"] = ", ".join(f"{b.get('internal_api')} {b.get('version')} "
                                         f"kernel {b.get('architecture')}" for b in blas)
            else:
                meta["blas"] = blas
        elif key.startswith("torch/"):
            meta["torch"] = info.get("torch")
    rows, targets = summarize(results, kernels, threads)
    text = markdown(rows, targets, meta)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    payload = {"meta": meta, "results": results, "targets": targets}
    (out / f"kernels-{stamp}.json").write_text(json.dumps(payload, indent=1))
    (out / f"kernels-{stamp}.md").write_text(text)
    (out / "latest.md").write_text(text)
    (out / "latest.json").write_text(json.dumps(payload, indent=1))
    print(f"wrote {out / f'kernels-{stamp}.json'} and .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
