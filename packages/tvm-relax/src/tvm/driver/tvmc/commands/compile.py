"""``tvmc compile MODEL``: a model to an executable file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..compiler import compile_model
from ..progress import PassProgress, Progress
from .common import FORMATTER, add_model_arguments, add_target_arguments, import_model, target_of

EXAMPLES = """\
examples:
  tvmc compile model.onnx -o model.so
  tvmc compile model.onnx --target "llvm -mcpu=haswell" --input-shapes "x:[8,3,224,224]"
  tvmc compile model.onnx --print-pass-times --print-ir-after FuseOps
  tvmc compile model.onnx --dump-code build/ --tuning-records tuning/

The executable runs with `tvmc run model.so` or, from Python,
relax.VirtualMachine(tvm.runtime.load_module("model.so"), tvm.cpu())."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("compile", help="compile a model to an executable file",
                       description=__doc__, epilog=EXAMPLES, formatter_class=FORMATTER)
    add_model_arguments(p)
    add_target_arguments(p)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="the executable to write (default: MODEL with suffix .so)")
    p.add_argument("--tuning-records", metavar="DIR",
                   help="the work dir of `tvmc tune`: its records schedule the kernels they "
                        "cover, the default rules the rest")
    p.add_argument("--print-ir-after", metavar="PASS", action="append", default=[],
                   help="print the module after each run of PASS (repeatable; 'all' for every "
                        "pass), named as --print-pass-times prints them: LegalizeOps, FuseOps, "
                        "tir.Simplify, ...")
    p.add_argument("--print-pass-times", action="store_true",
                   help="print how long every pass took")
    p.add_argument("--dump-code", metavar="DIR",
                   help="write every stage (Relax, legalized, fused, TIR, bytecode, generated "
                        "code) to files in DIR")
    return p


def instruments_for(args: argparse.Namespace, progress: Progress) -> tuple[list, object]:
    """The pass instruments the compile options ask for, and the timing one (or None)."""
    from tvm.ir.instrument import PassTimingInstrument, PrintAfterEachPass

    instruments: list = [PassProgress(progress)]
    timing = None
    if getattr(args, "print_pass_times", False):
        timing = PassTimingInstrument()
        instruments.append(timing)
    after = getattr(args, "print_ir_after", [])
    if after:
        passes = None if "all" in after else after
        instruments.append(PrintAfterEachPass(stream=sys.stdout, passes=passes))
    return instruments, timing


def warn_unknown_passes(args: argparse.Namespace, seen: PassProgress) -> None:
    """Say so when --print-ir-after names a pass that never ran (a typo prints nothing)."""
    missing = [p for p in getattr(args, "print_ir_after", []) if p != "all" and p not in seen.seen]
    if missing:
        print(f"tvmc: warning: no pass named {', '.join(missing)} ran; the passes were: "
              f"{', '.join(seen.seen)}", file=sys.stderr)


def dump_stages(compiled, folder: Path) -> list[Path]:  # noqa: ANN001
    """Every stage of ``compiled`` as a file in ``folder``; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for i, (stage, mod) in enumerate(compiled.stages.items()):
        path = folder / f"{i:02d}_{stage}.py"
        path.write_text(mod.script(show_meta=False), encoding="utf-8")
        written.append(path)
    if compiled.executable is not None:
        path = folder / "bytecode.txt"
        path.write_text(compiled.bytecode(), encoding="utf-8")
        written.append(path)
        lib = compiled.executable.kernel_lib
        formats = lib.source_formats if lib is not None and lib.function_names else []
        for fmt in formats:
            suffix = {"ll": ".ll", "ll-raw": ".raw.ll", "asm": ".s"}.get(fmt, f".{fmt}")
            path = folder / f"kernels{suffix}"
            path.write_text(lib.get_source(fmt), encoding="utf-8")
            written.append(path)
    return written


def run(args: argparse.Namespace, progress: Progress) -> int:
    mod = import_model(args, progress)
    target = target_of(args)
    instruments, timing = instruments_for(args, progress)
    with progress.stage(f"compiling for {target}"):
        compiled = compile_model(mod, target, args.opt_level, instruments, args.tuning_records,
                                 disabled_passes=args.disable_pass)
    output = Path(args.output) if args.output else Path(args.model).with_suffix(".so")
    with progress.stage(f"writing {output}"):
        compiled.executable.export_library(output)
    if timing is not None:
        print(timing.render())
    warn_unknown_passes(args, instruments[0])
    if args.dump_code:
        for path in dump_stages(compiled, Path(args.dump_code)):
            print(f"wrote {path}")
    kernels = compiled.executable.kernel_lib
    n = len(kernels.function_names) if kernels is not None else 0
    print(f"wrote {output} ({n} kernels, target {target})")
    return 0
