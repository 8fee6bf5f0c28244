"""Task schedulers with in-process fakes: the gradient-based one gives the heavier task more
trials, round robin shares evenly, both stop at the global budget."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("tvm.target.llvm")

import tvm.meta_schedule as ms  # noqa: E402
from tvm.meta_schedule.database import MemoryDatabase  # noqa: E402
from tvm.meta_schedule.progress import TaskProgress  # noqa: E402
from tvm.meta_schedule.task_scheduler import GradientBased, RoundRobin, TaskState  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from tune_fakes import FakeBuilder, FakeRunner, MatmulSpace, matmul, tile_time  # noqa: E402

TARGET = "llvm -num-cores=1"


def run(scheduler, weights, trials=16):
    db = MemoryDatabase()
    ms.tune_tasks([matmul(64), matmul(64, m=32)], TARGET, None, trials, 2,
                  task_names=["a", "b"], task_weights=weights, builder=FakeBuilder(),
                  runner=FakeRunner(time_fn=tile_time), database=db, cost_model=None,
                  strategy="replay-trace", space=MatmulSpace(), task_scheduler=scheduler,
                  seed=0, progress=False)
    per_task = [len(db.records_of(db.lookup_workload(m))) for m in (matmul(64),
                                                                   matmul(64, m=32))]
    return per_task, scheduler


def test_gradient_based_gives_the_heavier_task_more_trials():
    (light, heavy), sched = run(GradientBased(), [1.0, 20.0])
    assert light + heavy == 16
    assert heavy >= 2 * light, (light, heavy)
    assert light >= 3          # the default and the warm-up batch of each task
    (a, b), _ = run(GradientBased(), [20.0, 1.0])
    assert a >= 2 * b, (a, b)


def test_round_robin_shares_evenly():
    (a, b), _ = run(RoundRobin(), [1.0, 20.0], trials=14)
    assert (a, b) == (7, 7)


def _state(weight, history, rounds=3):
    st = TaskState(ctx=None, weight=weight, progress=TaskProgress("t", weight, 0.0, 100))
    st.history = list(history)
    st.rounds = rounds
    return st


def test_gradient_mixes_backward_and_forward_estimates():
    sched = GradientBased(alpha=0.5, window_size=2)
    sched.tasks = [
        _state(1.0, [(1, 4.0), (3, 3.0), (5, 2.0)]),     # improving by 0.5 per trial
        _state(1.0, [(1, 4.0), (3, 4.0), (5, 4.0)]),     # stuck
        _state(2.0, [(1, 4.0), (3, 4.0), (5, 4.0)]),     # stuck but twice as heavy
        _state(1.0, [(1, math.inf)], rounds=3),          # only failures: never again
    ]
    g = [sched.gradient(i) for i in range(4)]
    assert g[0] == pytest.approx(0.5 * (4.0 - 2.0) / 4 + 0.5 * 2.0 / 5)
    assert g[1] == pytest.approx(0.5 * 4.0 / 5)
    assert g[2] == pytest.approx(2 * g[1])
    assert g[3] == -math.inf
    sched.max_trials_global = 100
    sched._warmup = 4
    assert sched.next_task_id() == 2
    with pytest.raises(ValueError, match="alpha"):
        GradientBased(alpha=2.0)
