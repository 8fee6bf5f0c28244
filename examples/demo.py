"""The main job: compile a small program end to end and show every stage.

    nox -s demo            # or: python examples/demo.py  (with the packages installed)

Stages: te.compute -> TIR PrimFunc (TVMScript) -> schedule -> lowered TIR -> code for the
"llvm" and "c" targets -> run on the CPU and check against numpy -> export a shared library
and load it back.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

from tvm import te, tir
from tvm.ffi.plugin import format_plugin_table
from tvm.ir.transform import PassContext, PassTimingInstrument
from tvm import runtime


def banner(title: str) -> None:
    print(f"\n{'=' * 78}\n== {title}\n{'=' * 78}")


def dense_bias_relu(m: int, k: int, n: int):
    """out = relu(A @ B + bias): the walkthrough's workload at the tensor level."""
    a = te.placeholder((m, k), "float32", name="A")
    b = te.placeholder((k, n), "float32", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    r = te.reduce_axis((0, k), name="k")
    mm = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="matmul")
    out = te.compute((m, n), lambda i, j: te.max(mm[i, j] + bias[j], 0.0), name="out")
    return te.create_prim_func([a, b, bias, out])


def schedule(func: tir.PrimFunc) -> tir.Schedule:
    sch = tir.Schedule(func)
    block = sch.get_block("matmul")
    i, j, _ = sch.get_loops(block)
    _, ji = sch.split(j, factors=[None, 8])
    sch.parallel(i)
    sch.vectorize(sch.get_loops(sch.get_block("out"))[-1])
    del ji
    return sch


def main() -> int:
    m, k, n = 128, 256, 512
    banner("0. installed plugins")
    print(format_plugin_table())

    banner("1. te.compute -> TIR PrimFunc (TVMScript)")
    func = dense_bias_relu(m, k, n)
    func.show()

    banner("2. schedule (split, parallel, vectorize) and its trace")
    sch = schedule(func)
    sch.trace.show()
    sch.mod.show()

    banner("3. lowered TIR (blocks to loops, flattened buffers, vector code)")
    lowered = tir.lower(sch.mod)
    lowered.show()

    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    bias = rng.standard_normal((n,), dtype=np.float32)
    expected = np.maximum(a @ b + bias, 0.0)

    for target in ("llvm", "c"):
        banner(f"4. build for target {target!r}")
        timing = PassTimingInstrument()
        start = time.perf_counter()
        with PassContext(opt_level=3, instruments=[timing]):
            lib = tir.build(sch.mod, target=target)
        print(f"compiled in {time.perf_counter() - start:.3f} s; pass timings:")
        print(timing.render())
        source = lib.get_source("ll" if target == "llvm" else "")
        lines = source.splitlines()
        # Skip the argument checks' message strings / the C preamble: show the kernel body.
        marker = "define" if target == "llvm" else "static"
        start = next((i for i, line in enumerate(lines) if line.startswith(marker)), 0)
        print(f"--- generated {'LLVM IR' if target == 'llvm' else 'C'} "
              f"({len(lines)} lines; 25 from line {start + 1}) ---")
        print("\n".join(lines[start:start + 25]))

        out = runtime.empty((m, n), "float32")
        lib["main"](a, b, bias, out)
        err = float(np.max(np.abs(out.numpy() - expected)))
        print(f"run on {runtime.cpu(0)}: max |ours - numpy| = {err:.2e}")
        if err > 1e-3:
            print("MISMATCH", file=sys.stderr)
            return 1
        try:
            lib["main"](a[:, :100], b, bias, out)
        except Exception as exc:  # the kernel's own argument check
            print(f"a wrong-shaped argument is rejected: {type(exc).__name__}: {exc}")

    banner("5. export a shared library and load it back")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dense_bias_relu.so")
        lib.export_library(path)
        loaded = runtime.load_module(path)
        out2 = runtime.empty((m, n), "float32")
        loaded["main"](a, b, bias, out2)
        print(f"{path}: functions {loaded.function_names}, "
              f"max error {float(np.max(np.abs(out2.numpy() - expected))):.2e}")
    print("\nall stages ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
