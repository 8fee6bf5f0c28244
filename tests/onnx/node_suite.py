"""The official ONNX backend node test suite through our compiler.

Each case of ``onnx.backend.test`` (generated in memory by newer onnx releases, read from
``onnx/backend/test/data/node/*`` by older ones) is imported with ``from_onnx``, built with
``relax.build(target="llvm")``, run on the VM and compared with the expected outputs.

    python tests/onnx/node_suite.py                 # whole suite, summary to tests/onnx/results/
    python tests/onnx/node_suite.py -k relu -v      # cases whose name contains "relu"
    python tests/onnx/node_suite.py --jobs 2 --timeout 120

Statuses: ``passed``; ``failed`` (wrong values, shapes or dtypes, or a crash while building or
running); ``unsupported`` (the importer raised OpNotImplemented: an op, attribute value or
dtype we do not support); ``out_of_scope`` (training-only, string and image-decoding ops, see
docs/onnx.md).  The pass rate counts every case except out-of-scope ones.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"

# -- scope -------------------------------------------------------------------------------------
TRAINING_OPS = {"Adagrad", "Adam", "Momentum", "Gradient"}
STRING_OPS = {"StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch",
              "TfIdfVectorizer", "LabelEncoder"}
IMAGE_DECODING_OPS = {"ImageDecoder"}
OUT_OF_SCOPE_REASONS = {
    **{op: "training-only operator (ai.onnx.preview.training)" for op in TRAINING_OPS},
    **{op: "string operator" for op in STRING_OPS},
    **{op: "image decoding (encoded byte strings)" for op in IMAGE_DECODING_OPS},
}
STRING_TENSOR = 8

# Inputs that decide output shapes (axes, pads, sizes, ...).  The node suite feeds them as
# graph inputs; a static-shape compiler needs their values.  When the importer reports such
# an input as unsupported, the runner retries with those graph inputs bound as initializers
# (constants) and records the case as passed "with bound shape inputs".
SHAPE_INPUT_SLOTS: dict[str, tuple[int, ...]] = {
    **{op: (1,) for op in (
        "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Unsqueeze",
        "Squeeze", "Split", "Trilu", "TopK", "CumSum", "CumProd", "OneHot", "Reshape",
        "Expand", "Tile", "Upsample", "CenterCropPad", "AffineGrid")},
    "Pad": (1, 2, 3), "Range": (0, 1, 2), "Slice": (1, 2, 3, 4), "ConstantOfShape": (0,),
    "Resize": (1, 2, 3), "Dropout": (1, 2), "Col2Im": (1, 2), "Loop": (0, 1), "DFT": (1, 2),
    "HannWindow": (0,), "HammingWindow": (0,), "BlackmanWindow": (0,), "STFT": (1, 3),
    "MaxUnpool": (2,),
    # sequence positions / split sizes decide the sequence layout; an If whose branches give
    # sequences of different lengths or an empty and a present optional needs its condition
    "SequenceInsert": (2,), "SequenceErase": (1,), "SequenceAt": (1,), "SplitToSequence": (1,),
    "If": (0,),
}

# (name substring, rtol, atol): looser tolerances for families computed differently
TOLERANCES = [
    ("attention", 1e-3, 1e-4), ("resize", 1e-3, 1e-4), ("gridsample", 1e-3, 1e-4),
    ("lstm", 1e-3, 1e-4), ("gru", 1e-3, 1e-4), ("rnn", 1e-3, 1e-4),
    ("dft", 1e-3, 1e-3), ("stft", 1e-3, 1e-3), ("layer_normalization", 1e-3, 1e-4),
    ("softplus", 1e-3, 1e-5), ("mish", 1e-3, 1e-5), ("reduce_log_sum", 1e-3, 1e-5),
]
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-5
LOW_PRECISION = {"float16": 4e-3, "bfloat16": 3e-2}
# compared exactly, without tolerances: conversions to them are bit-exact
EXACT_FLOATS = ("float8_", "float6_", "float4_")
EXACT_INTS = ("int4", "uint4", "int2", "uint2")


def tolerance(name: str) -> tuple[float, float]:
    for key, rtol, atol in TOLERANCES:
        if key in name:
            return rtol, atol
    return DEFAULT_RTOL, DEFAULT_ATOL


# -- cases -------------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    name: str
    op_type: str
    model: Any  # onnx.ModelProto
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


def _op_of(model: Any) -> str:
    nodes = list(model.graph.node)
    if len(nodes) == 1:
        return nodes[0].op_type
    return nodes[0].op_type if nodes else "?"


def _array(value: Any) -> Any:
    import onnx

    if isinstance(value, onnx.TensorProto):
        from onnx import numpy_helper

        return numpy_helper.to_array(value)
    return value


def collect_cases() -> list[Case]:
    """Every node case of the installed onnx, in a stable order."""
    try:
        from onnx.backend.test.case.node import collect_testcases
    except ImportError:  # pragma: no cover - very old onnx
        collect_testcases = None
    import warnings

    cases: list[Case] = []
    if collect_testcases is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = collect_testcases()
        by_name: dict[str, str] = {}
        for tc in raw:
            if tc.model is None or not tc.data_sets:
                continue
            op = _op_of(tc.model)
            if "_expanded" in tc.name:
                op = by_name.get(tc.name.split("_expanded")[0], op)
            else:
                by_name[tc.name] = op
            ins, outs = tc.data_sets[0]
            cases.append(Case(tc.name, op, tc.model, [_array(x) for x in ins],
                              [_array(x) for x in outs]))
    if not cases:
        cases = _cases_from_data_dirs()
    cases.sort(key=lambda c: c.name)
    return cases


def _cases_from_data_dirs(folder: str = "node", prefix: str = "") -> list[Case]:
    """The cases of one test-data folder of the installed onnx package (``node`` in older
    releases; ``pytorch-converted``, ``pytorch-operator``, ``simple`` in every release):
    ``<case>/model.onnx`` and its first ``test_data_set_0``; names get ``prefix``."""
    import onnx
    from onnx import numpy_helper

    base = Path(onnx.__file__).parent / "backend" / "test" / "data" / folder
    out = []
    by_name: dict[str, str] = {}
    for d in sorted(base.iterdir()) if base.is_dir() else ():
        ds = d / "test_data_set_0"
        if not (d / "model.onnx").is_file() or not ds.is_dir():
            continue
        model = onnx.load(str(d / "model.onnx"))

        def read(kind: str, ds: Path = ds) -> list[np.ndarray]:
            arrays = []
            for f in sorted(glob.glob(str(ds / f"{kind}_*.pb")),
                            key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0])):
                t = onnx.TensorProto()
                t.ParseFromString(Path(f).read_bytes())
                arrays.append(numpy_helper.to_array(t))
            return arrays

        op = _op_of(model)
        if "_expanded" in d.name:
            op = by_name.get(d.name.split("_expanded")[0], op)
        else:
            by_name[d.name] = op
        out.append(Case(prefix + d.name, op, model, read("input"), read("output")))
    return out


#: the test-data folders onnx ships besides the node suite (models converted from PyTorch
#: modules and operators, and small hand-made models)
DATA_FOLDERS = ("pytorch-converted", "pytorch-operator", "simple")


def collect_data_cases() -> list[Case]:
    """Every case of :data:`DATA_FOLDERS`, named ``<folder>/<case>``."""
    cases = [c for folder in DATA_FOLDERS for c in _cases_from_data_dirs(folder, folder + "/")]
    cases.sort(key=lambda c: c.name)
    return cases


def onnxruntime_result(case: Case) -> Optional[str]:
    """None when onnxruntime runs ``case`` and matches its expected outputs, else why not
    (the data folders hold cases that no runtime is required to pass)."""
    try:
        import onnxruntime as ort

        sess = ort.InferenceSession(case.model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        feeds = dict(zip(names, case.inputs))
        got = sess.run(None, feeds)
    except Exception as err:  # noqa: BLE001 - any failure of the reference is a reason
        return f"onnxruntime: {_first_line(err)}"
    return compare(case.name, got, case.outputs)


def out_of_scope_reason(case: Case) -> Optional[str]:
    ops = {n.op_type for n in case.model.graph.node} | {case.op_type}
    for op in sorted(ops):
        if op in OUT_OF_SCOPE_REASONS:
            return f"{op}: {OUT_OF_SCOPE_REASONS[op]}"
    for vi in list(case.model.graph.input) + list(case.model.graph.output):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.elem_type == STRING_TENSOR:
            return "string tensors (string data is out of scope)"
    return None


# -- running -----------------------------------------------------------------------------------
def ensure_llvm() -> None:
    """Register the llvm target plugin when running from a source checkout."""
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:
        import tvm.target.llvm.plugin as plugin

        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, (list, tuple)):
        out: list[np.ndarray] = []
        for v in value:
            out.extend(_flatten(v))
        return out
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [np.asarray(value)]


def structured_inputs(model: Any, values: list[Any]) -> tuple[dict[str, Any], list[Any]]:
    """``shape_dict`` entries and VM arguments for the graph inputs ``values``: a sequence
    (a list of arrays) is given by its length (or its element shapes when they are not all
    the model's element type) and passed as a tuple; an empty optional (None) is declared
    with None and passed as nothing."""
    shape_dict: dict[str, Any] = {}
    args: list[Any] = []
    for vi, value in zip(model.graph.input, values):
        if value is None:
            shape_dict[vi.name] = None
        elif isinstance(value, list):
            shapes = [list(np.shape(a)) for a in value]
            # elements all of the model's (possibly symbolic) element type: just the length,
            # so dim_params shared with other inputs stay one symbolic variable
            shape_dict[vi.name] = len(shapes) if _fits_element_type(vi.type, shapes) else shapes
            args.append(tuple(np.asarray(a) for a in value))
        else:
            args.append(np.asarray(value))
    return shape_dict, args


def _fits_element_type(tp: Any, shapes: list[list[int]]) -> bool:
    """Whether sequence type ``tp`` (maybe inside an optional) declares an element shape
    that every shape of ``shapes`` (all equal) matches."""
    while tp.WhichOneof("value") == "optional_type":
        tp = tp.optional_type.elem_type
    if tp.WhichOneof("value") != "sequence_type" or not shapes:
        return False
    tt = tp.sequence_type.elem_type.tensor_type
    if not tt.HasField("shape") or any(s != shapes[0] for s in shapes):
        return False
    dims = tt.shape.dim
    return len(dims) == len(shapes[0]) and all(
        not d.HasField("dim_value") or d.dim_value == n for d, n in zip(dims, shapes[0]))


def _outputs(value: Any, n_outputs: int) -> list[Any]:
    """The VM result as one entry per graph output: arrays, lists of arrays for sequences."""
    def conv(v: Any) -> Any:
        return [conv(x) for x in v] if isinstance(v, (list, tuple)) else np.asarray(_flatten(v)[0])

    return [conv(value)] if n_outputs == 1 else [conv(v) for v in value]


def compare(name: str, got: list[Any], expected: list[Any]) -> Optional[str]:
    """None if ``got`` matches ``expected``; otherwise what differs.  Sequence outputs
    (lists) are compared element by element."""
    if len(got) != len(expected):
        return f"{len(got)} output(s), expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if isinstance(e, list) or isinstance(g, list):
            if not (isinstance(e, list) and isinstance(g, list)):
                kind = "a sequence" if isinstance(g, list) else "a tensor"
                return f"output {i}: {kind}, expected {'a tensor' if kind != 'a tensor' else 'a sequence'}"
            if len(g) != len(e):
                return f"output {i}: a sequence of {len(g)}, expected {len(e)}"
            diff = compare(name, g, e)
            if diff is not None:
                return f"output {i} (a sequence), element {diff.replace('output ', '', 1)}"
            continue
        e = np.asarray(e)
        rtol, atol = tolerance(name)
        if str(e.dtype) in LOW_PRECISION:  # a few ulps of the output dtype
            rtol, atol = max(rtol, LOW_PRECISION[str(e.dtype)]), max(atol, 1e-3)
        if g.shape != e.shape:
            return f"output {i}: shape {g.shape}, expected {e.shape}"
        if g.dtype != e.dtype:
            return f"output {i}: dtype {g.dtype}, expected {e.dtype}"
        if str(e.dtype).startswith(EXACT_FLOATS):  # float8/6/4: same bits, or both NaN
            bad = np.where(np.isnan(e.astype(np.float32)), ~np.isnan(g.astype(np.float32)),
                           g.view(np.uint8) != e.view(np.uint8))
        elif str(e.dtype) in EXACT_INTS:  # int4/int2: same values (one byte per element)
            bad = g.astype(np.int32) != e.astype(np.int32)
        elif e.dtype.kind in "fc" or str(e.dtype) == "bfloat16":
            gf, ef = g.astype(np.float64), e.astype(np.float64)
            bad = ~np.isclose(gf, ef, rtol=rtol, atol=atol, equal_nan=True)
        else:
            bad = g != e
        if np.any(bad):
            idx = tuple(int(v[0]) for v in np.nonzero(bad))
            return (f"output {i}: {int(np.sum(bad))} of {e.size} value(s) differ "
                    f"(e.g. at {idx}: got {g[idx]!r}, expected {e[idx]!r}; rtol={rtol}, atol={atol})")
    return None


def run_case(case: Case) -> dict[str, Any]:
    """Import, build and run one case; a result record."""
    t0 = time.perf_counter()
    rec: dict[str, Any] = {"name": case.name, "op_type": case.op_type}
    reason = out_of_scope_reason(case)
    if reason is not None:
        return {**rec, "status": "out_of_scope", "reason": reason, "seconds": 0.0}
    from tvm.relax.frontend.onnx import OpNotImplemented, from_onnx

    inputs = list(case.inputs)
    shape_dict, args = structured_inputs(case.model, inputs)
    try:
        mod = from_onnx(case.model, shape_dict=shape_dict or None)
    except OpNotImplemented as err:
        bound = bind_shape_inputs(case)
        mod = None
        if bound is not None:
            model, inputs, names = bound
            shape_dict, args = structured_inputs(model, inputs)
            try:
                mod = from_onnx(model, shape_dict=shape_dict or None)
                rec["bound_inputs"] = names
            except OpNotImplemented:
                mod = None
            except Exception as err2:  # noqa: BLE001 - reported per case
                return {**rec, "status": "failed", "stage": "import", "bound_inputs": names,
                        "reason": f"{type(err2).__name__}: {_first_line(err2)}",
                        "seconds": time.perf_counter() - t0}
        if mod is None:
            return {**rec, "status": "unsupported", "reason": str(err).splitlines()[0][:300],
                    "stage": "import", "seconds": time.perf_counter() - t0}
    except Exception as err:  # noqa: BLE001 - reported per case
        return {**rec, "status": "failed", "stage": "import",
                "reason": f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}",
                "seconds": time.perf_counter() - t0}
    try:
        import tvm.runtime
        from tvm import relax

        ensure_llvm()
        ex = relax.build(mod, target="llvm")
    except Exception as err:  # noqa: BLE001
        return {**rec, "status": "failed", "stage": "build",
                "reason": f"{type(err).__name__}: {_first_line(err)}",
                "seconds": time.perf_counter() - t0}
    try:
        vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
        got = _outputs(vm["main"](*args), len(case.model.graph.output))
    except Exception as err:  # noqa: BLE001
        return {**rec, "status": "failed", "stage": "run",
                "reason": f"{type(err).__name__}: {_first_line(err)}",
                "seconds": time.perf_counter() - t0}
    diff = compare(case.name, got, case.outputs)
    status = "passed" if diff is None else "failed"
    out = {**rec, "status": status, "seconds": time.perf_counter() - t0}
    if diff is not None:
        out.update(stage="compare", reason=diff[:400])
    return out


def _all_nodes(graph: Any) -> Iterable[Any]:
    """Nodes of ``graph`` and of its subgraphs (If branches, Loop/Scan bodies)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _all_nodes(attr.g)
            for g in attr.graphs:
                yield from _all_nodes(g)


def bind_shape_inputs(case: Case) -> Optional[tuple[Any, list[np.ndarray], list[str]]]:
    """The case's model with graph inputs that feed shape-deciding slots turned into
    initializers (and the remaining inputs), or None when there are none."""
    from onnx import numpy_helper

    graph = case.model.graph
    names = [vi.name for vi in graph.input]
    values = dict(zip(names, case.inputs))
    nodes = list(_all_nodes(graph))
    producer = {out: node for node in nodes for out in node.output}
    bind: list[str] = []
    stack = [node.input[slot] for node in nodes
             for slot in SHAPE_INPUT_SLOTS.get(node.op_type, ()) if slot < len(node.input)]
    seen: set[str] = set()
    while stack:  # graph inputs the shape-deciding values are computed from
        name = stack.pop()
        if not name or name in seen:
            continue
        seen.add(name)
        if name in values:
            if isinstance(values[name], (np.ndarray, np.generic)):
                bind.append(name)
        elif name in producer and producer[name].op_type not in ("Shape", "Size"):
            node = producer[name]
            stack.extend(node.input)
            for attr in node.attribute:  # values a subgraph takes from the outer scope
                for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    stack.extend(i for n in _all_nodes(g) for i in n.input)
    if not bind:
        return None
    import copy

    model = copy.deepcopy(case.model)
    keep = [vi for vi in model.graph.input if vi.name not in bind]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    for name in bind:
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(values[name]), name))
    return model, [values[vi.name] for vi in keep], bind


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0] if text else "")[:300]


# -- the whole suite ---------------------------------------------------------------------------
def run_suite(names: Iterable[str], cases: dict[str, Case], jobs: int, timeout: float,
              verbose: bool = False) -> list[dict[str, Any]]:
    """Run cases in ``jobs`` worker processes; a case over ``timeout`` s counts as failed."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    # import the compiler once in the parent: forked workers start warm
    import tvm.relax  # noqa: F401
    import tvm.relax.frontend.onnx  # noqa: F401

    ensure_llvm()
    pending = list(names)
    results: list[dict[str, Any]] = []
    workers: list[dict[str, Any]] = []

    def start(name: str) -> dict[str, Any]:
        q = ctx.Queue()
        p = ctx.Process(target=_worker_one, args=(cases[name], q), daemon=True)
        p.start()
        return {"proc": p, "queue": q, "name": name, "t0": time.time()}

    while pending or workers:
        while pending and len(workers) < jobs:
            workers.append(start(pending.pop(0)))
        time.sleep(0.02)
        for w in list(workers):
            rec = None
            if not w["queue"].empty():
                rec = w["queue"].get()
                w["proc"].join(5)
            elif not w["proc"].is_alive():
                rec = {"name": w["name"], "op_type": cases[w["name"]].op_type,
                       "status": "failed", "stage": "crash",
                       "reason": f"worker died (exit code {w['proc'].exitcode})"}
            elif time.time() - w["t0"] > timeout:
                w["proc"].kill()
                rec = {"name": w["name"], "op_type": cases[w["name"]].op_type,
                       "status": "failed", "stage": "timeout",
                       "reason": f"over {timeout:.0f} s"}
            if rec is not None:
                workers.remove(w)
                results.append(rec)
                if verbose:
                    print(f"{rec['status']:>12}  {rec['name']}  {rec.get('reason', '')[:150]}",
                          flush=True)
    return results


def _worker_one(case: Case, queue: Any) -> None:
    try:
        rec = run_case(case)
    except BaseException as err:  # noqa: BLE001
        rec = {"name": case.name, "op_type": case.op_type, "status": "failed", "stage": "crash",
               "reason": f"{type(err).__name__}: {_first_line(err)}"}
    queue.put(rec)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    counts = collections.Counter(r["status"] for r in results)
    in_scope = len(results) - counts["out_of_scope"]
    per_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        per_op[r["op_type"]][r["status"]] += 1
    import onnx

    bound = sum(1 for r in results if r["status"] == "passed" and r.get("bound_inputs"))
    return {
        "onnx_version": onnx.__version__,
        "total": len(results),
        "passed": counts["passed"],
        "passed_with_bound_shape_inputs": bound,
        "passed_without_binding": counts["passed"] - bound,
        "pass_rate_in_scope_without_binding": round((counts["passed"] - bound) / in_scope, 4)
        if in_scope else 0.0,
        "failed": counts["failed"],
        "unsupported": counts["unsupported"],
        "out_of_scope": counts["out_of_scope"],
        "in_scope": in_scope,
        "pass_rate_in_scope": round(counts["passed"] / in_scope, 4) if in_scope else 0.0,
        "per_op": {op: dict(c) for op, c in sorted(per_op.items())},
    }


def write_reports(results: list[dict[str, Any]], out_dir: Path = RESULTS) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize(results)
    (out_dir / "node_suite.json").write_text(json.dumps(
        {"summary": summary, "cases": sorted(results, key=lambda r: r["name"])}, indent=1))
    lines = [
        "# ONNX backend node suite",
        "",
        f"onnx {summary['onnx_version']}: {summary['total']} cases; "
        f"**{summary['passed']} passed**, {summary['failed']} failed, "
        f"{summary['unsupported']} unsupported, {summary['out_of_scope']} out of scope.",
        f"Pass rate over in-scope cases: **{summary['pass_rate_in_scope'] * 100:.1f}%** "
        f"({summary['passed']}/{summary['in_scope']}); "
        f"{summary['passed_with_bound_shape_inputs']} of the passes needed shape-deciding "
        "inputs (axes, pads, sizes, ...) bound as constants; without those: "
        f"{summary['pass_rate_in_scope_without_binding'] * 100:.1f}%.",
        "",
        "| op type | passed | failed | unsupported | out of scope |",
        "|---|---:|---:|---:|---:|",
    ]
    for op, c in summary["per_op"].items():
        lines.append(f"| {op} | {c.get('passed', 0)} | {c.get('failed', 0)} | "
                     f"{c.get('unsupported', 0)} | {c.get('out_of_scope', 0)} |")
    lines += ["", "## Failures and unsupported cases", ""]
    for r in sorted(results, key=lambda r: r["name"]):
        if r["status"] in ("failed", "unsupported"):
            lines.append(f"- `{r['name']}` ({r['status']}, {r.get('stage', '')}): "
                         f"{r.get('reason', '')[:200]}")
    (out_dir / "node_suite.md").write_text("\n".join(lines) + "\n")
    return summary


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    parser.add_argument("--op", default="", help="only cases of this op type")
    parser.add_argument("--suite", choices=("node", "data"), default="node",
                        help="the node suite, or onnx's other test-data folders "
                             f"({', '.join(DATA_FOLDERS)})")
    parser.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per case")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--write-known-failures", action="store_true",
                        help="record this run's failures and unsupported cases in "
                             "known_failures.json (strict expected failures for pytest)")
    args = parser.parse_args(argv)
    cases = {c.name: c for c in (collect_cases() if args.suite == "node"
                                 else collect_data_cases())}
    names = [n for n, c in cases.items() if args.k in n and (not args.op or c.op_type == args.op)]
    t0 = time.time()
    results = run_suite(names, cases, args.jobs, args.timeout, args.verbose)
    summary = write_reports(results, Path(args.out))
    if args.write_known_failures:
        known = {r["name"]: f"{r['status']}: {r.get('stage', '')}: {r.get('reason', '')}"[:300]
                 for r in sorted(results, key=lambda r: r["name"])
                 if r["status"] in ("failed", "unsupported")}
        (Path(__file__).parent / "known_failures.json").write_text(json.dumps(known, indent=1))
    print(f"{summary['total']} cases in {time.time() - t0:.0f} s: {summary['passed']} passed, "
          f"{summary['failed']} failed, {summary['unsupported']} unsupported, "
          f"{summary['out_of_scope']} out of scope; in-scope pass rate "
          f"{summary['pass_rate_in_scope'] * 100:.1f}% -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
