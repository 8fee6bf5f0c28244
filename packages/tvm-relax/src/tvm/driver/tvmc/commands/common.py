"""Arguments several ``tvmc`` commands share: the model and its inputs, the target."""

from __future__ import annotations

import argparse
from typing import Any

from ..model import load_model, parse_input_dtypes, parse_input_shapes
from ..progress import Progress

FORMATTER = argparse.RawDescriptionHelpFormatter


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="the model file (.onnx)")
    p.add_argument("--input-shapes", metavar="SHAPES",
                   help="input shapes overriding the model's, e.g. 'x:[1,3,224,224] "
                        "mask:[1,?]' (a name or ? is a symbolic dimension)")
    p.add_argument("--input-dtypes", metavar="DTYPES",
                   help="input dtypes overriding the model's: one for all ('float16') or "
                        "per input ('x:float16 ids:int64')")


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=None, metavar="TARGET",
                   help="the target, e.g. 'llvm', 'llvm -mcpu=haswell', 'c', 'cuda' (default: "
                        "this machine's CPU; `tvmc targets` lists them)")
    p.add_argument("--opt-level", type=int, default=3, choices=range(4), metavar="N",
                   help="graph optimisation level 0-3 (default 3; 0 runs no graph pass and "
                        "no fusion)")
    p.add_argument("--disable-pass", metavar="PASS", action="append", default=[],
                   help="never run PASS (repeatable; names as --print-pass-times prints them), "
                        "to find which pass makes a result wrong")


def import_model(args: argparse.Namespace, progress: Progress) -> Any:
    shapes = parse_input_shapes(args.input_shapes)
    dtypes = parse_input_dtypes(args.input_dtypes)
    with progress.stage(f"importing {args.model}"):
        return load_model(args.model, shapes, dtypes)


def target_of(args: argparse.Namespace) -> Any:
    from tvm.ir.target import as_target

    return as_target(args.target)
