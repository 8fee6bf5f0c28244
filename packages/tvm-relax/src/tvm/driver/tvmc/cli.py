"""The ``tvmc`` argument parser, the dispatch to the subcommands and the exit codes.

Every subcommand lives in :mod:`tvm.driver.tvmc.commands` as a module with ``add_parser``
(its arguments, help and examples) and ``run(args, progress) -> int``. Errors print as one
``tvmc <command>: error: ...`` line without a traceback (``--verbose`` shows it).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Optional, Sequence

from .model import ModelError, OptionError
from .progress import Progress

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_ERROR", "EXIT_USAGE", "EXIT_INPUT"]

EXIT_OK = 0
EXIT_ERROR = 1  # compiling, running or tuning failed
EXIT_USAGE = 2  # bad command line (argparse's own code)
EXIT_INPUT = 3  # a model, artifact or data file that does not exist or cannot be read
EXIT_INTERRUPTED = 130

_DESCRIPTION = """\
tvmc: compile, run, tune, profile and inspect models with the tvm compiler.

Each command is a thin shell over the Python API (tvm.relax.build,
relax.VirtualMachine, tvm.meta_schedule); `tvmc COMMAND --help` shows its options
and examples."""

_EPILOG = """\
examples:
  tvmc compile model.onnx --target llvm -o model.so
  tvmc run model.so --inputs x.npz --outputs y.npz --print-time --repeat 20
  tvmc run model.so --profile
  tvmc show model.onnx --stage fused
  tvmc tune model.onnx --target "llvm -num-cores=4" --trials 2000 --work-dir tuning
  tvmc compile model.onnx --tuning-records tuning -o model.so
  tvmc explore model.onnx -o report.html --profile
  tvmc plugins
  tvmc targets

exit codes: 0 success, 1 failure (compile, run, tune), 2 bad command line or
option value, 3 missing or unreadable input file, 130 interrupted."""


def build_parser() -> argparse.ArgumentParser:
    from . import commands

    parser = argparse.ArgumentParser(
        prog="tvmc", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in commands.ALL:
        p = module.add_parser(sub)
        p.add_argument("-v", "--verbose", action="store_true",
                       help="show the full traceback of an error")
        p.add_argument("-q", "--quiet", action="store_true",
                       help="no progress lines on stderr")
        p.set_defaults(handler=module.run)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"tvmc (tvm-relax {version('tvm-relax')})"
    except PackageNotFoundError:
        return "tvmc (tvm-relax, not installed as a distribution)"


def _is_input_error(err: BaseException) -> bool:
    from tvm.runtime.error import ModuleLoadError

    return isinstance(err, (ModelError, FileNotFoundError, IsADirectoryError, ModuleLoadError))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``tvmc`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    progress = Progress(quiet=args.quiet)
    try:
        return int(args.handler(args, progress) or EXIT_OK)
    except KeyboardInterrupt:
        print(f"tvmc {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `tvmc show ... | head`
        return EXIT_OK
    except Exception as err:  # noqa: BLE001 - every failure becomes one message and a code
        if args.verbose:
            traceback.print_exc()
        message = str(err).strip() or type(err).__name__
        kind = "" if isinstance(err, (ModelError, ValueError)) else f"{type(err).__name__}: "
        print(f"tvmc {args.command}: error: {kind}{message}", file=sys.stderr)
        if not args.verbose:
            print("(run with --verbose for the traceback)", file=sys.stderr)
        if isinstance(err, OptionError):
            return EXIT_USAGE
        return EXIT_INPUT if _is_input_error(err) else EXIT_ERROR
