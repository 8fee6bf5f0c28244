"""``tvmc explore MODEL -o report.html``: the compilation as one self-contained web page."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..compiler import compile_model
from ..progress import PassProgress, Progress
from .common import FORMATTER, add_model_arguments, add_target_arguments, import_model, target_of
from .run import load_inputs, make_inputs

EXAMPLES = """\
examples:
  tvmc explore model.onnx -o report.html
  tvmc explore model.onnx -o report.html --profile           # kernel times on the graph
  tvmc explore model.onnx -o report.html --model-explorer graph.json

The page (no network needed: script, style and data are inside it) draws the Relax graph
before fusion, coloured by the kernel each operator ends in, and after fusion, one node
per kernel call (with its time when profiled); it has a tab per stage's IR, the pass
timings and the profile. --model-explorer also writes the graphs for Google's Model
Explorer (pip install ai-edge-model-explorer; model-explorer graph.json). See
docs/explore.md."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("explore", help="write an HTML report: the graph, each stage, timings",
                       description=__doc__, epilog=EXAMPLES, formatter_class=FORMATTER)
    add_model_arguments(p)
    add_target_arguments(p)
    p.add_argument("-o", "--output", metavar="FILE", help="the page to write (default: MODEL "
                                                          "with suffix .html)")
    p.add_argument("--profile", action="store_true",
                   help="run the model once on random inputs (or --inputs) and show kernel times")
    p.add_argument("--inputs", metavar="NPZ", help="inputs for --profile, keyed by name")
    p.add_argument("--device", default="cpu", help="device for --profile (default cpu)")
    p.add_argument("--model-explorer", metavar="FILE",
                   help="also write the graphs as Model Explorer JSON")
    p.add_argument("--tuning-records", metavar="DIR", help="the work dir of `tvmc tune`")
    return p


def run(args: argparse.Namespace, progress: Progress) -> int:
    from tvm import runtime
    from tvm.ir.instrument import PassTimingInstrument
    from tvm.relax import explore
    from tvm.runtime.vm import VirtualMachine

    mod = import_model(args, progress)
    target = target_of(args)
    timing = PassTimingInstrument()
    with progress.stage(f"compiling for {target}"):
        compiled = compile_model(mod, target, args.opt_level, [PassProgress(progress), timing],
                                 args.tuning_records, disabled_passes=args.disable_pass)
    profile = None
    if args.profile:
        given = load_inputs(args.inputs)
        with progress.stage("profiling"):
            vm = VirtualMachine(compiled.executable, runtime.device(args.device))
            profile = vm.profile("main", *make_inputs(compiled.executable, "main", given, 0))
    output = Path(args.output) if args.output else Path(args.model).with_suffix(".html")
    with progress.stage(f"writing {output}"):
        report = explore.Report(compiled.stages, timing, profile,
                                title=f"{Path(args.model).name} for {target}")
        report.write(output)
    print(f"wrote {output}")
    if args.model_explorer:
        explore.write_model_explorer(args.model_explorer, report)
        print(f"wrote {args.model_explorer} (Model Explorer graphs)")
    return 0
