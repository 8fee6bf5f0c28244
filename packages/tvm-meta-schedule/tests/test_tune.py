"""tune_tir / tune_tasks end to end with in-process fakes: records, the best schedule, the
default schedule measured for comparison, determinism, resume, logs, summary, FLOPs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from tvm import te
from tvm.ffi import structural_equal

pytest.importorskip("tvm.target.llvm")

import tvm.meta_schedule as ms  # noqa: E402
from tvm.meta_schedule.database import RECORD_FILE, JSONDatabase  # noqa: E402
from tvm.meta_schedule.progress import estimate_flops  # noqa: E402
from tvm.meta_schedule.search_strategy import ReplayTrace  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from tune_fakes import FakeBuilder, FakeRunner, MatmulSpace, matmul, tile_time  # noqa: E402

TARGET = "llvm -num-cores=1"


def tune(work_dir, trials=6, seed=1, runner=None, strategy="replay-trace", **kw):
    return ms.tune_tir(matmul(), TARGET, work_dir, max_trials_global=trials,
                       num_trials_per_iter=3, builder=FakeBuilder(),
                       runner=runner or FakeRunner(time_fn=tile_time), cost_model=None,
                       strategy=strategy, space=MatmulSpace(), seed=seed, **kw)


def decisions(work_dir):
    lines = (Path(work_dir) / RECORD_FILE).read_text().splitlines()
    return [json.dumps(json.loads(line)["trace"]["decisions"]) for line in lines]


def test_tune_tir_records_the_default_and_the_candidates(tmp_path, capsys):
    db = tune(tmp_path)
    assert isinstance(db, JSONDatabase)
    records = db.get_all_tuning_records()
    assert len(records) == 6                      # the budget, the default included
    default = records[0]
    assert not default.trace.decisions and len(default.trace) > 3   # the rules' trace
    sampled = records[1:]
    assert all(len(r.trace.decisions) == 2 for r in sampled)
    assert len(set(decisions(tmp_path)[1:])) == 5             # no candidate twice

    best = min(records, key=lambda r: r.mean_sec)
    sch = db.query_schedule(matmul(), TARGET)
    expected = ms.database.replay_record(best, matmul())
    assert structural_equal(sch.mod, expected.mod)

    out = capsys.readouterr().out
    assert "[1/1] main: " in out and "trials" in out and "GFLOP/s" in out
    assert "Tuning summary" in out and "| 0 | main | 1 | 6 |" in out
    logs = tmp_path / "logs"
    assert "new best" in (logs / "task_00_main.log").read_text()
    assert "Tuning summary" in (logs / "tune.log").read_text()


def test_same_seed_same_decisions(tmp_path):
    tune(tmp_path / "a", seed=7)
    tune(tmp_path / "b", seed=7)
    tune(tmp_path / "c", seed=8)
    assert decisions(tmp_path / "a") == decisions(tmp_path / "b")
    assert decisions(tmp_path / "a") != decisions(tmp_path / "c")


def test_resume_skips_what_was_measured(tmp_path, capsys):
    tune(tmp_path, trials=4, seed=3, progress=False)
    first = decisions(tmp_path)
    builder = FakeBuilder()
    ms.tune_tir(matmul(), TARGET, tmp_path, max_trials_global=4, num_trials_per_iter=3,
                builder=builder, runner=FakeRunner(time_fn=tile_time), cost_model=None,
                strategy="replay-trace", space=MatmulSpace(), seed=3)
    row = [line for line in capsys.readouterr().out.splitlines()
           if line.startswith("| 0 | main |")][0]
    assert row.split("|")[7].strip() != "-"        # the default's time, from the records
    after = decisions(tmp_path)
    assert after[:len(first)] == first
    new = after[len(first):]
    assert len(new) == 4 and not set(new) & set(first[1:])   # no candidate measured twice
    assert "[]" not in new        # the default schedule is not measured again


def test_failed_and_wrong_candidates_are_recorded_and_tuning_goes_on(tmp_path):
    runner = FakeRunner(time_fn=tile_time, fail_every=3, wrong_every=4)
    db = tune(tmp_path, trials=9, runner=runner, progress=False)
    records = db.get_all_tuning_records()
    assert len(records) == 9
    failed = [r for r in records if r.run_secs is None]
    assert len(failed) >= 3
    # the correctness check of every run holds the untuned kernel's result on its inputs
    check = runner.checks[0]
    a, b, _ = check.inputs
    np.testing.assert_allclose(check.expected[2], a @ b, rtol=1e-4, atol=1e-4)
    assert all(c is check for c in runner.checks)


def test_keyboard_interrupt_keeps_what_was_measured(tmp_path, capsys):
    runner = FakeRunner(time_fn=tile_time, interrupt_after=5)
    with pytest.raises(KeyboardInterrupt):
        tune(tmp_path, trials=12, runner=runner)
    assert "interrupted" in capsys.readouterr().out
    again = JSONDatabase(tmp_path)
    assert len(again) == 4 and again.skipped == 0          # runs 1-4 were committed
    assert all(r.run_secs for r in again.get_all_tuning_records())
    assert "interrupted" in (tmp_path / "logs" / "tune.log").read_text()


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown search strategy 'annealing'"):
        tune(tmp_path, strategy="annealing")
    with pytest.raises(ValueError, match="max_trials_global"):
        tune(tmp_path, trials=0)


def test_flops_of_a_matmul_and_an_epilogue():
    assert estimate_flops(matmul(64)) == 2 * 64 ** 3
    assert estimate_flops(matmul(64, relu=True)) == 2 * 64 ** 3 + 64 * 64
    x = te.placeholder((8, 32), name="x")
    y = te.compute((8, 32), lambda i, j: te.exp(x[i, j]) * 2.0 + 1.0, name="y")
    assert estimate_flops(te.create_prim_func([x, y])) == 3 * 8 * 32
    n = te.placeholder((8,), "int32", name="n")
    m = te.compute((8,), lambda i: n[i] * 3 + 1, name="m")
    assert estimate_flops(te.create_prim_func([n, m])) == 0     # integer ops are not FLOPs


def test_replay_trace_proposes_each_candidate_once_and_ends_when_exhausted():
    from tvm.meta_schedule import TuneContext

    ctx = TuneContext(matmul(4), TARGET, space_generator=MatmulSpace(),
                      search_strategy=ReplayTrace(max_fail_count=200), seed=5)
    strategy = ctx.search_strategy
    strategy.pre_tuning(50, 4, ctx.generate_design_space())
    seen = []
    while (batch := strategy.generate_measure_candidates()) is not None:
        assert len(batch) <= 4
        seen += [c.sch.trace.as_json() for c in batch]
        strategy.notify_runner_results(batch, [None] * len(batch))
    assert len(seen) == len(set(seen)) == 9      # 3 tilings of i times 3 of j
    with pytest.raises(ValueError, match="no design space"):
        strategy.pre_tuning(4, 4, [])


class RaisingRunner(FakeRunner):
    """A runner with a bug: its future raises on the second candidate."""

    def measure(self, inp):
        if self.runs == 1:
            self.runs += 1
            raise RuntimeError("runner bug")
        return super().measure(inp)


def test_a_builder_or_runner_that_raises_costs_only_its_candidates(tmp_path):
    db = tune(tmp_path, trials=6, runner=RaisingRunner(time_fn=tile_time), progress=False)
    records = db.get_all_tuning_records()
    assert len(records) == 6 and sum(r.run_secs is None for r in records) == 1

    class RaisingBuilder(FakeBuilder):
        def build(self, inputs):
            if len(inputs) == 3:
                raise RuntimeError("builder bug")
            return super().build(inputs)

    db = ms.tune_tir(matmul(), TARGET, tmp_path / "b", max_trials_global=7,
                     num_trials_per_iter=3, builder=RaisingBuilder(),
                     runner=FakeRunner(time_fn=tile_time), cost_model=None,
                     strategy="replay-trace", space=MatmulSpace(), seed=1, progress=False)
    records = db.get_all_tuning_records()
    assert len(records) == 7 and sum(r.run_secs is None for r in records) == 6


def test_progress_rewrites_one_line_on_a_terminal_and_prints_lines_otherwise():
    import io

    from tvm.meta_schedule.progress import Progress, TaskProgress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, tty in ((Tty(), True), (io.StringIO(), False)):
        tasks = [TaskProgress("dense", 2.0, 2e6, 8, trials=3, best_sec=1e-3, default_sec=2e-3),
                 TaskProgress("softmax", 1.0, 0.0, 8, trials=1, failed=1)]
        progress = Progress(tasks, 16, stream=stream)
        progress.update(0)
        progress.update(0)
        table = progress.finish()
        text = stream.getvalue()
        assert text.count("[1/2] dense: 3/8 trials, best 1000.0 us (2.0 GFLOP/s)") == 2
        assert ("\r" in text) is tty and text.endswith(table + "\n")
        assert "model 2.000 ms (+1 task without a time)" in text    # 2 x 1 ms
        assert "| 0 | dense | 2 | 3 | 0 | 1000.0 | 2000.0 | 2.0 | 2.00x |" in table
        assert "| 1 | softmax | 1 | 1 | 1 | - | - | - | - |" in table
