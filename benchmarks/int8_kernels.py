"""Integer kernels next to their float versions, one kernel at a time, through relax.build:

    dense   1 x 1024 -> 1024      qnn.dense (uint8 x int8, zero point 128) + requantize
                                  vs matmul + relu (float32)
    conv    1x64x56x56, 3x3, 64   qnn.conv2d (zero point 128, padding 1) + requantize, NCHW
                                  (the ONNX layout) and NHWC, vs conv2d + relu (float32)

    python benchmarks/int8_kernels.py                         # host and -mcpu=haswell
    python benchmarks/int8_kernels.py --targets "llvm -mcpu=haswell" --rounds 5

Each kernel is timed in ``--rounds`` rounds (every configuration in turn within a round, so
a change of machine load hits them alike), ``--number`` calls per measurement, on one
thread; the table shows the median (min) ms per call and int8 / fp32.  Results:
``benchmarks/results/int8-kernels-<stamp>`` and ``int8-kernels-latest`` (.json, .md).  Not
run in CI.
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from timing import write_results  # noqa: E402 - benchmarks/ is the script's dir

RESULTS = Path(__file__).resolve().parent / "results"


def _dense(dtype: str, rng: Any) -> tuple[Any, np.ndarray]:
    from tvm import relax
    from tvm.relax import op

    m, k, n = 1, 1024, 1024
    x = relax.Var("x", relax.TensorStructInfo([m, k], dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            if dtype == "uint8":
                w = relax.const(rng.integers(-128, 128, (n, k)).astype("int8"))
                acc = bb.emit(op.qnn.dense(x, w, input_zero_point=128))
                y = bb.emit_output(op.qnn.requantize(acc, 0.001, 0, 0.1, 3, out_dtype="uint8"))
            else:
                w = relax.const(rng.standard_normal((k, n)).astype("float32"))
                y = bb.emit_output(op.nn.relu(op.matmul(x, w)))
        bb.emit_func_output(y)
    return bb.get(), _input((m, k), dtype, rng)


def _conv(dtype: str, rng: Any, layout: str) -> tuple[Any, np.ndarray]:
    from tvm import relax
    from tvm.relax import op

    c, o, h, ks = 64, 64, 56, 3
    xs, ws, kl = ((1, c, h, h), (o, c, ks, ks), "OIHW") if layout == "NCHW" else \
        ((1, h, h, c), (ks, ks, c, o), "HWIO")
    x = relax.Var("x", relax.TensorStructInfo(list(xs), dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            if dtype == "uint8":
                w = relax.const(rng.integers(-128, 128, ws).astype("int8"))
                acc = bb.emit(op.qnn.conv2d(x, w, input_zero_point=128, padding=1,
                                            data_layout=layout, kernel_layout=kl))
                y = bb.emit_output(op.qnn.requantize(acc, 0.0001, 0, 0.1, 3, out_dtype="uint8"))
            else:
                w = relax.const(rng.standard_normal(ws).astype("float32"))
                y = bb.emit_output(op.nn.relu(op.nn.conv2d(x, w, padding=1, data_layout=layout,
                                                           kernel_layout=kl)))
        bb.emit_func_output(y)
    return bb.get(), _input(xs, dtype, rng)


def _input(shape: tuple, dtype: str, rng: Any) -> np.ndarray:
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype("uint8")
    return rng.standard_normal(shape).astype("float32")


KERNELS: dict[str, Callable[[str, Any], tuple[Any, np.ndarray]]] = {
    "dense 1x1024x1024": _dense,
    "conv 64x56x56 3x3 NCHW": lambda d, r: _conv(d, r, "NCHW"),
    "conv 64x56x56 3x3 NHWC": lambda d, r: _conv(d, r, "NHWC"),
}


def _prepare(kernel: str, dtype: str, target: str) -> tuple[Callable[[int], list[float]], str]:
    import tvm.runtime
    from tvm import relax

    mod, x = KERNELS[kernel](dtype, np.random.default_rng(0))
    ex = relax.build(mod, target=target)
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    vm["main"](x)

    def timer(number: int) -> list[float]:
        tvm.runtime.set_num_threads(1)
        try:
            res = vm.time_evaluator("main", number=number, repeat=1, warmup=1)(x)
        finally:
            tvm.runtime.set_num_threads(None)
        return list(res.results)

    return timer, _isa(target)


def _isa(target: str) -> str:
    from tvm.target.llvm.schedule_rules import cpu_info

    cpu = cpu_info(target)
    extra = [f for f in ("avx512vnni", "avxvnni", "dotprod") if f in getattr(cpu, "features", ())]
    return cpu.isa + (" + " + ", ".join(extra) if extra else "")


def run(targets: list[str], rounds: int, number: int, kernels: Optional[list[str]]) -> dict:
    configs = [(k, d, t) for t in targets for k in (kernels or KERNELS)
               for d in ("uint8", "float32")]
    timers, isas = {}, {}
    for key in configs:
        print(f"building {key[0]} {key[1]} for {key[2]}", file=sys.stderr)
        timers[key], isas[key[2]] = _prepare(*key)
    times: dict[tuple, list[float]] = {key: [] for key in configs}
    for r in range(rounds):
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
        for key in configs:
            times[key] += timers[key](number)
    rows = []
    for t in targets:
        for k in (kernels or KERNELS):
            q, f = times[(k, "uint8", t)], times[(k, "float32", t)]
            rows.append({"target": t, "isa": isas[t], "kernel": k,
                         "int8_median_ms": 1e3 * float(np.median(q)), "int8_min_ms": 1e3 * min(q),
                         "fp32_median_ms": 1e3 * float(np.median(f)), "fp32_min_ms": 1e3 * min(f)})
    from tvm.target.llvm.host_cpu import host_cpu_name

    return {"host_cpu": host_cpu_name(), "machine": platform.processor() or platform.machine(),
            "rounds": rounds, "number": number, "threads": 1, "rows": rows}


def markdown(res: dict) -> str:
    lines = [f"int8 kernels vs float32, 1 thread, median (min) ms, host LLVM CPU "
             f"`{res['host_cpu']}`", "",
             "| kernel | target | ISA | int8 | fp32 | int8 / fp32 |", "|---|---|---|---:|---:|---:|"]
    for r in res["rows"]:
        lines.append(f"| {r['kernel']} | `{r['target']}` | {r['isa']} | "
                     f"{r['int8_median_ms']:.3f} ({r['int8_min_ms']:.3f}) | "
                     f"{r['fp32_median_ms']:.3f} ({r['fp32_min_ms']:.3f}) | "
                     f"{r['int8_median_ms'] / r['fp32_median_ms']:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="llvm,llvm -mcpu=haswell",
                        help="comma-separated llvm targets")
    parser.add_argument("--kernels", default=None, help=f"comma-separated, of {list(KERNELS)}")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    kernels = args.kernels.split(",") if args.kernels else None
    res = run(args.targets.split(","), args.rounds, args.number, kernels)
    md = markdown(res)
    print(md)
    if not args.no_save:
        write_results(RESULTS, "int8-kernels", res, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
