"""``tvmc run ARTIFACT``: run a compiled executable on inputs, time it, profile it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..model import OptionError
from ..progress import Progress
from .common import FORMATTER

EXAMPLES = """\
examples:
  tvmc run model.so                                   # random inputs, prints the outputs
  tvmc run model.so --inputs x.npz --outputs y.npz    # inputs by parameter name
  tvmc run model.so --print-time --repeat 50
  tvmc run model.so --profile                         # per-kernel table
  tvmc run model.so --profile --profile-format csv --profile-output prof.csv
  tvmc run model.so --device cuda:0

Inputs missing from --inputs are random (seeded by --seed) of the shapes and dtypes the
executable checks; a symbolic dimension needs the input given. --outputs writes output_0,
output_1, ... (one per output tensor, tuples flattened)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help="run a compiled executable, time or profile it",
                       description=__doc__, epilog=EXAMPLES, formatter_class=FORMATTER)
    p.add_argument("artifact", metavar="ARTIFACT", help="an executable from `tvmc compile`")
    p.add_argument("--inputs", metavar="NPZ", help="a .npz file of inputs, keyed by name")
    p.add_argument("--outputs", metavar="NPZ", help="write the outputs to this .npz file")
    p.add_argument("--function", default="main", help="the function to run (default main)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, opencl, ... with an optional "
                                                   ":index (default cpu)")
    p.add_argument("--print-time", action="store_true", help="time the function")
    p.add_argument("--repeat", type=int, default=10, metavar="N",
                   help="measurements for --print-time, timed runs averaged by --profile "
                        "(default 10)")
    p.add_argument("--number", type=int, default=1, metavar="N",
                   help="runs averaged in each measurement (default 1)")
    p.add_argument("--profile", action="store_true",
                   help="time every kernel and VM instruction (a table by default)")
    p.add_argument("--profile-format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--profile-output", metavar="FILE", help="write the profile to FILE")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--trusted", action="store_true",
                   help="load a file this tvm did not write (see docs/abi.md)")
    return p


def input_signature(executable: Any, function: str) -> list[tuple[str, Optional[str],
                                                             Optional[list]]]:
    """``[(name, dtype, shape)]`` of ``function``'s parameters, from the checks its bytecode
    runs on them (``None`` where it checks nothing; a str dimension is symbolic)."""
    record = executable.vm_function(function)
    params = list(record["params"])
    dtypes: dict[int, str] = {}
    shapes: dict[int, list] = {}
    for ins in record["code"]:
        arg = ins.get("arg")
        if not (isinstance(arg, list) and len(arg) == 2 and arg[0] == "reg"):
            continue
        reg = arg[1]
        if not (isinstance(reg, int) and reg < len(params)):
            continue
        if ins["op"] == "check_tensor_info" and ins.get("dtype"):
            dtypes[reg] = ins["dtype"]
        elif ins["op"] == "match_shape" and reg not in shapes:
            shapes[reg] = [d[1] if d[0] == "imm" else f"d{i}"
                           for i, d in enumerate(ins["dims"])]
    return [(name, dtypes.get(i), shapes.get(i)) for i, name in enumerate(params)]


def load_inputs(path: Optional[str]) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` by name (``{}`` without one)."""
    if not path:
        return {}
    if not Path(path).is_file():
        raise FileNotFoundError(f"--inputs {path}: no such file")
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def make_inputs(executable: Any, function: str, given: dict[str, np.ndarray],
                seed: int) -> list[np.ndarray]:
    """The arguments of ``function``: from ``given`` by name, else random."""
    rng = np.random.default_rng(seed)
    signature = input_signature(executable, function)
    names = [s[0] for s in signature]
    extra = sorted(set(given) - set(names))
    if extra:
        raise OptionError(f"--inputs has {', '.join(extra)}, which {function} does not take; "
                         f"its parameters are {', '.join(names)}")
    args = []
    for name, dtype, shape in signature:
        if name in given:
            args.append(given[name])
            continue
        if dtype is None or shape is None or not all(isinstance(d, int) for d in shape):
            raise OptionError(f"parameter {name} of {function} has no static shape and dtype "
                             f"(shape {shape}): give it in --inputs")
        if dtype.startswith("float") or dtype.startswith("bfloat"):
            value = rng.standard_normal(shape).astype(dtype if dtype != "bfloat16" else "float32")
        elif dtype == "bool":
            value = rng.integers(0, 2, shape).astype(bool)
        else:
            value = rng.integers(0, 8, shape).astype(dtype)
        args.append(value)
    return args


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _flatten(v)]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


def _profile_text(report: Any, fmt: str) -> str:
    if fmt == "csv":
        return report.csv()
    if fmt == "json":
        return report.json()
    return report.table()


def run(args: argparse.Namespace, progress: Progress) -> int:
    from tvm import runtime
    from tvm.runtime.vm import VirtualMachine, load_executable

    path = Path(args.artifact)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such executable (make one with `tvmc compile`)")
    if args.repeat < 1 or args.number < 1:
        raise OptionError("--repeat and --number must be at least 1")
    with progress.stage(f"loading {path}"):
        ex = load_executable(os.fspath(path), trusted=True if args.trusted else None)
        device = runtime.device(args.device)
        vm = VirtualMachine(ex, device)
    inputs = make_inputs(ex, args.function, load_inputs(args.inputs), args.seed)
    # a CSV or JSON profile on stdout stays parseable: everything else goes to stderr
    info = sys.stderr if args.profile and args.profile_format != "table" and \
        not args.profile_output else sys.stdout
    with progress.stage(f"running @{args.function} on {device}"):
        outputs = _flatten(vm[args.function](*inputs))
    if args.outputs:
        np.savez(args.outputs, **{f"output_{i}": o for i, o in enumerate(outputs)})
        print(f"wrote {len(outputs)} outputs to {args.outputs}", file=info)
    else:
        with np.printoptions(threshold=20, edgeitems=3, precision=5):
            for i, o in enumerate(outputs):
                print(f"output_{i}: {o.dtype}{list(o.shape)}\n{o}", file=info)
    if args.print_time:
        with progress.stage(f"timing ({args.repeat} x {args.number} runs)"):
            result = vm.time_evaluator(args.function, number=args.number,
                                       repeat=args.repeat)(*inputs)
        print(f"@{args.function} on {device}, {args.repeat} measurements of {args.number} "
              f"runs (ms): mean {result.mean * 1e3:.4f}  median {result.median * 1e3:.4f}  "
              f"std {result.std * 1e3:.4f}  min {result.min * 1e3:.4f}  max "
              f"{result.max * 1e3:.4f}", file=info)
    if args.profile:
        with progress.stage(f"profiling ({args.repeat} runs)"):
            report = vm.profile(args.function, *inputs, repeat=args.repeat)
        text = _profile_text(report, args.profile_format)
        if args.profile_output:
            Path(args.profile_output).write_text(text + ("\n" if not text.endswith("\n") else ""),
                                                 encoding="utf-8")
            print(f"wrote the profile to {args.profile_output}", file=info)
        else:
            print(text)
    return 0
