"""Where a model's time goes: our kernels one by one, with their shapes and GFLOP/s.

    python benchmarks/profile_model.py bert                        # host CPU, 1 thread
    python benchmarks/profile_model.py mobilenet_v2 --mcpu=haswell --threads 2
    python benchmarks/profile_model.py resnet18 --runs 20 --top 15

The model (``models.py``'s ResNet-18, MobileNetV2 or BERT-style encoder) is compiled as
``models.py`` compiles it (same target from ``--mcpu``/``--mattr``), profiled ``--runs``
times with ``vm.profile`` and each kernel's *minimum* over the runs is printed (on a
shared machine the minimum is the number to read), next to its share of the sum of those
minima, its parameter shapes and, for matmuls and convolutions, the rate: multiply-adds
are counted from the fused PrimFunc before scheduling (every sum-of-products reduction
block counts 2 FLOPs per point of its iteration domain; symbolic extents take the
benchmark's input shapes: ``batch`` 1, ``seq`` 128).  The end-to-end minimum of ``vm.time_evaluator`` is
printed too; the difference is the VM's own time (calls, allocations, checks).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _load_bench_models() -> Any:
    """benchmarks/models.py under another name (``models`` is tests/onnx/models.py, which
    it imports itself)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_models", HERE / "models.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


bench_models = _load_bench_models()

#: values of the symbolic dimensions the benchmark inputs have
SYMBOLS = {"batch": 1, "seq": bench_models.BERT_SEQ}


def _extent(e: Any) -> Optional[int]:
    from tvm.tir.stmt_functor import post_order_visit

    if hasattr(e, "value"):
        return int(e.value)
    names: list[str] = []
    post_order_visit(e, lambda n: names.append(n.name) if type(n).__name__ == "Var" else None)
    if len(names) == 1 and names[0] in SYMBOLS and type(e).__name__ == "Var":
        return SYMBOLS[names[0]]
    return None


def _has_product(stmt: Any) -> bool:
    from tvm.tir.stmt_functor import post_order_visit

    found: list[Any] = []
    post_order_visit(stmt, lambda n: found.append(n) if type(n).__name__ == "Mul" else None)
    return bool(found)


def flops(func: Any) -> int:
    """2 x the iteration domain of every sum-of-products reduction block (matmul, conv;
    not max/sum reductions); 0 when a domain is unknown."""
    from tvm.tir.stmt_functor import post_order_visit

    total = 0

    def visit(n: Any) -> None:
        nonlocal total
        if type(n).__name__ == "Block" and n.iter_vars and n.init is not None \
                and _has_product(n.body):
            size = 1
            for iv in n.iter_vars:
                ext = _extent(iv.dom.extent)
                if ext is None:
                    return
                size *= ext
            total += 2 * size

    post_order_visit(func.body, visit)
    return total


def signature(func: Any) -> str:
    """The shapes of the PrimFunc's buffer parameters, ``1x64x56x56 64x64x3x3 ...``."""
    out = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is not None:
            out.append("x".join(str(getattr(d, "value", d)) for d in buf.shape))
    return " ".join(out)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=["resnet18", "mobilenet_v2", "bert"])
    ap.add_argument("--mcpu", default=None)
    ap.add_argument("--mattr", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=8, help="profiled runs (minimum per kernel)")
    ap.add_argument("--top", type=int, default=0, help="print only the N slowest kernels")
    args = ap.parse_args(argv)

    from node_suite import ensure_llvm
    from target_isa import isa_label, ours_target

    ensure_llvm()
    import tvm.runtime
    from tvm import relax
    from tvm.ir.target import as_target
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.relax.vm.build import default_pipeline
    from tvm.tir.function import PrimFunc

    target = ours_target(args.mcpu, args.mattr)
    model, feeds = bench_models.build_model(args.model)
    mod = from_onnx(model)
    with as_target(target):
        fused = default_pipeline()(mod)
    kernels = {gv.name_hint: f for gv, f in fused.items() if isinstance(f, PrimFunc)}
    t = time.perf_counter()
    ex = relax.build(mod, target=target)
    compile_s = time.perf_counter() - t
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    inputs = list(feeds.values())
    tvm.runtime.set_num_threads(args.threads)
    e2e = vm.time_evaluator("main", number=1, repeat=max(args.runs, 5), warmup=2)(*inputs)
    best: dict[str, Any] = {}
    for _ in range(args.runs):
        for row in vm.profile("main", *inputs).rows:
            if row.kind == "kernel" and (row.name not in best
                                         or row.total_s < best[row.name].total_s):
                best[row.name] = row
    rows = sorted(best.values(), key=lambda r: -r.total_s)
    total = sum(r.total_s for r in rows)
    print(f"{args.model}: {target} ({isa_label(args.mcpu, args.mattr)}), "
          f"{args.threads} thread(s), compile {compile_s:.1f} s")
    print(f"end to end: min {1e3 * min(e2e.results):.2f} ms; sum of per-kernel minima "
          f"{1e3 * total:.2f} ms over {sum(r.count for r in rows)} calls")
    print(f"{'kernel':58s} {'calls':>5s} {'min us':>9s} {'share':>6s} {'GFLOP/s':>8s}  shapes")
    for r in rows[:args.top or None]:
        func = kernels.get(r.name)
        fl = flops(func) * r.count if func is not None else 0
        rate = f"{fl / r.total_s / 1e9:8.1f}" if fl and r.total_s else " " * 8
        shapes = signature(func) if func is not None else ""
        print(f"{r.name[:58]:58s} {r.count:5d} {1e6 * r.total_s:9.1f} "
              f"{100 * r.total_s / total:5.1f}% {rate}  {shapes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
