"""``tvmc tune MODEL``: search schedules for the model's kernels on this machine."""

from __future__ import annotations

import argparse

from ..model import OptionError
from ..progress import Progress
from .common import FORMATTER, add_model_arguments, add_target_arguments, import_model, target_of

EXAMPLES = """\
examples:
  tvmc tune model.onnx --trials 2000 --work-dir tuning
  tvmc tune model.onnx --target "llvm -num-cores=8" --trials 500 --work-dir tuning --threads 8
  tvmc compile model.onnx --tuning-records tuning -o model.so

The work dir keeps the records (database_workload.json, database_tuning_record.json) and
the logs; tuning again with the same work dir goes on from them. Needs tvm-meta-schedule
(pip install tvm-meta-schedule[xgboost])."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("tune", help="auto-tune the model's kernels (tvm-meta-schedule)",
                       description=__doc__, epilog=EXAMPLES, formatter_class=FORMATTER)
    add_model_arguments(p)
    add_target_arguments(p)
    p.add_argument("--trials", type=int, required=True, metavar="N",
                   help="measurements over all kernels")
    p.add_argument("--trials-per-iter", type=int, default=64, metavar="N",
                   help="candidates measured per search round (default 64)")
    p.add_argument("--work-dir", required=True, metavar="DIR",
                   help="where the records and logs go")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="threads each measured kernel runs on (default 1)")
    p.add_argument("--cost-model", choices=("xgb", "random"), default="xgb")
    p.add_argument("--seed", type=int, default=None)
    return p


def run(args: argparse.Namespace, progress: Progress) -> int:
    try:
        from tvm import meta_schedule as ms
    except ImportError:
        raise ValueError("tvmc tune needs the auto-tuner: pip install "
                         "'tvm-meta-schedule[xgboost]'") from None
    if args.trials < 1 or args.trials_per_iter < 1:
        raise OptionError("--trials and --trials-per-iter must be at least 1")
    mod = import_model(args, progress)
    target = target_of(args)
    db = ms.tune_relax(mod, None, target, args.work_dir, max_trials_global=args.trials,
                       num_trials_per_iter=args.trials_per_iter, cost_model=args.cost_model,
                       seed=args.seed, num_threads=args.threads, progress=not args.quiet)
    print(f"{len(db)} tuning records in {args.work_dir}; compile with "
          f"`tvmc compile {args.model} --tuning-records {args.work_dir}`")
    return 0
