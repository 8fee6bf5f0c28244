"""``tvmc show MODEL --stage STAGE``: the program at one stage of compilation."""

from __future__ import annotations

import argparse

from ..compiler import CODE_STAGES, GRAPH_STAGES, compile_model
from ..listing import kernel_source
from ..progress import Progress
from .common import FORMATTER, add_model_arguments, add_target_arguments, import_model, target_of

STAGES = (*GRAPH_STAGES, "bytecode", *CODE_STAGES)

EXAMPLES = """\
stages:
  relax      the imported model (Relax)
  legalized  after the graph passes and LegalizeOps: every operator a call_tir
  fused      after FuseOps/FuseTIR: one TIR PrimFunc per kernel
  tir        the scheduled kernels (default rules or --tuning-records)
  bytecode   the VM program
  ll, asm    LLVM IR / assembly of the kernels (llvm targets)
  code       the kernels' code in the target's own language (C, CUDA, OpenCL, Metal)

examples:
  tvmc show model.onnx                              # the Relax model
  tvmc show model.onnx --stage fused --kernel fused_matmul_add_relu
  tvmc show model.onnx --stage asm --kernel fused_matmul_add_relu
  tvmc show model.onnx --stage code --target c
  tvmc show model.onnx --stage relax --show-meta    # with the weights' values

--kernel picks one function; for generated code it prints the kernel's compute part
(without the argument checks; --all prints those too)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("show", help="print the program at a stage of compilation",
                       description=__doc__, epilog=EXAMPLES, formatter_class=FORMATTER)
    add_model_arguments(p)
    add_target_arguments(p)
    p.add_argument("--stage", choices=STAGES, default="relax", help="the stage (default relax)")
    p.add_argument("--kernel", metavar="NAME", help="only this function / kernel")
    p.add_argument("--all", action="store_true",
                   help="with --kernel on generated code: the whole kernel, checks included")
    p.add_argument("--show-meta", action="store_true",
                   help="print the metadata block (the values of large constants)")
    p.add_argument("--tuning-records", metavar="DIR", help="the work dir of `tvmc tune`")
    return p


def run(args: argparse.Namespace, progress: Progress) -> int:
    mod = import_model(args, progress)
    target = target_of(args)
    build = args.stage not in ("relax", "legalized", "fused")
    compiled = None
    if args.stage != "relax":
        with progress.stage(f"compiling for {target} up to stage {args.stage}"):
            compiled = compile_model(mod, target, args.opt_level, records=args.tuning_records,
                                     build=build, disabled_passes=args.disable_pass)
    if args.stage in GRAPH_STAGES:
        stage_mod = mod if compiled is None else compiled.stages[args.stage]
        if args.kernel:
            if args.kernel not in stage_mod:
                names = ", ".join(gv.name_hint for gv in stage_mod.get_global_vars())
                raise ValueError(f"stage {args.stage} has no function {args.kernel!r}; it has: "
                                 f"{names}")
            from tvm.relax.expr import Function

            func = stage_mod[args.kernel]
            meta = {"show_meta": args.show_meta} if isinstance(func, Function) else {}
            print(func.script(args.kernel, **meta), end="")
        else:
            print(stage_mod.script(show_meta=args.show_meta), end="")
        return 0
    if args.stage == "bytecode":
        text = compiled.bytecode()
        if args.kernel:
            from tvm.runtime.vm.bytecode import format_function

            text = format_function(compiled.executable.vm_function(args.kernel)) + "\n"
        print(text, end="")
        return 0
    code = compiled.code(args.stage)
    if args.kernel:
        lib = compiled.executable.kernel_lib
        fmt = args.stage if args.stage != "code" else lib.source_formats[0]
        code = kernel_source(code, "ll" if fmt.startswith("ll") else fmt, args.kernel,
                             hot=not args.all)
    print(code.rstrip("\n"))
    return 0
