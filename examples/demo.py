"""The main job: compile a model end to end and show every stage.

    nox -s demo            # or: python examples/demo.py  (with the packages installed)

Part A, the graph level: a Relax model (matmul + bias) in TVMScript -> LegalizeOps -> relax.build
(fusion, default schedules, memory planning, bytecode) -> the VM, for targets "c" and "llvm";
the fused matmul+add kernel as scheduled TIR and its machine-code loops; a per-kernel profile.
Part B, the loop level: te.compute -> TIR PrimFunc -> schedule and trace -> lowered TIR ->
generated LLVM IR / C -> run and check against numpy -> export a shared library, load it back.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

from tvm import ir, relax, te, tir
from tvm.driver.tvmc.listing import kernel_source, loops, split_functions
from tvm.ffi.plugin import format_plugin_table
from tvm.script import relax as R
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


@R.function
def walkthrough(a: R.Tensor((128, 256), "float32"), b: R.Tensor((256, 512), "float32"),
                bias: R.Tensor((512,), "float32")) -> R.Tensor((128, 512), "float32"):
    with R.dataflow():
        lv = R.matmul(a, b)
        out = R.add(lv, bias)
        R.output(out)
    return out


def graph_level(a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> int:
    banner("A1. the Relax model, with inferred StructInfo")
    walkthrough.show()
    mod = ir.IRModule({"main": walkthrough})
    banner("A2. LegalizeOps: every operator becomes a call_tir to a TIR PrimFunc")
    legalized = relax.transform.LegalizeOps()(mod)
    legalized.show()
    for target in ("c", "llvm"):
        banner(f"A3. relax.build(target={target!r}): the VM bytecode")
        start = time.perf_counter()
        ex = relax.build(legalized, target=target)
        print(f"(built in {time.perf_counter() - start:.2f} s)")
        print(ex.as_text())
        vm = relax.VirtualMachine(ex, runtime.cpu())
        result = vm["main"](a, b, bias)
        err = float(np.max(np.abs(result.numpy() - (a @ b + bias))))
        print(f"VM result vs numpy: max abs error {err:.2e}")
        if err > 1e-3:
            print("MISMATCH", file=sys.stderr)
            return 1
    kernel = next(n for n in ex.kernel_lib.function_names if n.startswith("fused_"))
    banner(f"A4. the fused kernel {kernel}: scheduled TIR and its machine-code loops")
    ex.lowered_mod[kernel].show(kernel)
    asm = ex.kernel_lib.get_source("asm")
    found = [loop for name, text in split_functions(asm, "asm").items()
             if name.startswith(kernel + "_") for loop in loops(text, "asm", innermost=True)]
    hot = (max(found, key=lambda loop: loop.count("fma")) if found
           else kernel_source(asm, "asm", kernel)).splitlines()
    print(f"--- {kernel}: the innermost loop of its assembly that does the multiply-adds "
          f"({len(hot)} of {len(asm.splitlines())} lines; `tvmc show --stage asm --kernel "
          f"{kernel}` prints all its loops) ---")
    print("\n".join(hot[:40] + (["    ..."] if len(hot) > 40 else [])))
    banner("A5. per-kernel profile (rows + VM overhead = the measured total)")
    report = vm.profile("main", a, b, bias, repeat=50)
    print(report.table())
    timing = vm.time_evaluator("main", number=50, repeat=1)(a, b, bias)
    print(f"profile total {report.total_s * 1e6:.1f} us (mean of {report.repeat} runs); "
          f"time_evaluator {timing.mean * 1e6:.1f} us")
    return 0


def main() -> int:
    m, k, n = 128, 256, 512
    banner("0. installed plugins")
    print(format_plugin_table())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    bias = rng.standard_normal((n,), dtype=np.float32)
    if graph_level(a, b, bias):
        return 1

    banner("B1. te.compute -> TIR PrimFunc (TVMScript)")
    func = dense_bias_relu(m, k, n)
    func.show()

    banner("B2. schedule (split, parallel, vectorize) and its trace")
    sch = schedule(func)
    sch.trace.show()
    sch.mod.show()

    banner("B3. lowered TIR (blocks to loops, flattened buffers, vector code)")
    lowered = tir.lower(sch.mod)
    lowered.show()

    expected = np.maximum(a @ b + bias, 0.0)

    for target in ("llvm", "c"):
        banner(f"B4. build for target {target!r}")
        timing = PassTimingInstrument()
        start = time.perf_counter()
        with PassContext(opt_level=3, instruments=[timing]):
            lib = tir.build(sch.mod, target=target)
        print(f"compiled in {time.perf_counter() - start:.3f} s; pass timings:")
        print(timing.render())
        fmt = "ll" if target == "llvm" else "c"
        source = lib.get_source(fmt)
        # the compute part of kernel "main", without the packed-call argument checks
        body = kernel_source(source, fmt, "main").splitlines()
        print(f"--- generated {'LLVM IR' if target == 'llvm' else 'C'}: {len(source.splitlines())} "
              f"lines in all; the compute function of 'main', {len(body)} lines ---")
        print("\n".join(body[:40] + (["    ..."] if len(body) > 40 else [])))

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

    banner("B5. export a shared library and load it back")
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
