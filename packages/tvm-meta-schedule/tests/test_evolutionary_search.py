"""EvolutionarySearch with hand-written design spaces, a test mutator and a fake database."""

from __future__ import annotations

import numpy as np
import pytest
from search_test_helpers import (
    FakeDatabase, RejectInner, TileMutator, context, decisions, default_space, matmul, tiled,
    vector_len,
)
from tvm import tir
from tvm.ffi.structural import structural_hash
from tvm.meta_schedule.cost_model import CostModel, RandomModel
from tvm.meta_schedule.database.database import TuningRecord
from tvm.meta_schedule.runner.runner import RunnerResult
from tvm.meta_schedule.search_strategy.evolutionary_search import EvolutionarySearch

SMALL = dict(population_size=48, init_min_unmeasured=16, genetic_num_iters=2)


def spaces(func):
    return [default_space(func), tiled(func)]


def replay_hash(func, sch) -> int:
    fresh = tir.Schedule(func)
    sch.trace.apply_to_schedule(fresh)
    return structural_hash(fresh.mod)


def run(strategy, func, max_trials, per_iter, db=None, model=None, seed=0, make=spaces,
        postprocs=None, measure=None):
    ctx = context(func, make, strategy, seed=seed, postprocs=postprocs)
    strategy.pre_tuning(max_trials, per_iter, ctx.generate_design_space(), db,
                        model if model is not None else RandomModel(seed=seed))
    batches = []
    while (batch := strategy.generate_measure_candidates()) is not None:
        results = [RunnerResult(run_secs=[measure(c) if measure else 1e-3]) for c in batch]
        if db is not None:
            wl = db.commit_workload(ctx.mod)
            for c, r in zip(batch, results):
                db.commit_tuning_record(TuningRecord(c.sch.trace, wl, ctx.target, r.run_secs))
        strategy.notify_runner_results(batch, results)
        batches.append(batch)
    strategy.post_tuning()
    return batches


class PreferWideVectors(CostModel):
    """Scores a candidate by its vector length."""

    def update(self, context, candidates, results):
        pass

    def predict(self, context, candidates):
        return np.array([float(vector_len(c.sch)) for c in candidates])


def test_batches_are_distinct_valid_unmeasured_and_start_with_the_default():
    func = matmul()
    batches = run(EvolutionarySearch(**SMALL), func, max_trials=24, per_iter=12)
    assert [len(b) for b in batches] == [12, 12]
    hashes = [structural_hash(c.sch.mod) for b in batches for c in b]
    assert len(set(hashes)) == 24  # never the same candidate twice
    first = batches[0][0]
    assert not decisions(first.sch)  # the default schedule, measured first
    assert structural_hash(first.sch.mod) == structural_hash(default_space(func).mod)
    for b in batches:
        for c in b:
            assert replay_hash(func, c.sch) == structural_hash(c.sch.mod)  # the trace replays
            assert vector_len(c.sch) > 0
            assert [(a.dtype, a.shape) for a in c.args_info] == [("float32", (64, 64))] * 3


def test_respects_max_trials():
    batches = run(EvolutionarySearch(**SMALL), matmul(), max_trials=10, per_iter=4)
    assert [len(b) for b in batches] == [4, 4, 2]


def test_deterministic_for_a_seed():
    def hashes(seed):
        batches = run(EvolutionarySearch(**SMALL), matmul(), 16, 8, seed=seed)
        return [structural_hash(c.sch.mod) for b in batches for c in b]

    assert hashes(1) == hashes(1)
    assert hashes(1) != hashes(2)


def test_cost_model_steers_the_batch():
    func = matmul()
    strategy = EvolutionarySearch(eps_greedy=0.0, **SMALL)
    ctx = context(func, lambda f: [tiled(f)], strategy, seed=0)
    strategy.pre_tuning(16, 16, ctx.generate_design_space(), None, PreferWideVectors())
    guided = [vector_len(c.sch) for c in strategy.generate_measure_candidates()]
    strategy = EvolutionarySearch(eps_greedy=0.0, **SMALL)
    ctx = context(func, lambda f: [tiled(f)], strategy, seed=0)
    strategy.pre_tuning(16, 16, ctx.generate_design_space(), None, RandomModel(seed=0))
    unguided = [vector_len(c.sch) for c in strategy.generate_measure_candidates()]
    assert np.mean(guided) > np.mean(unguided)
    assert min(guided) >= 8 and guided.count(16) >= 3  # the widest vectors come first


def test_never_proposes_what_the_database_has_and_warms_up_from_it():
    func = matmul()
    db = FakeDatabase()
    # two sampled spaces with the same sampling instructions: a record must go back to its own
    three = lambda f: [default_space(f), tiled(f), tiled(f, vectorize=False)]  # noqa: E731
    first = run(EvolutionarySearch(**SMALL), func, 12, 6, db=db, make=three,
                measure=lambda c: 1e-3 / max(vector_len(c.sch), 0.5))
    measured = {structural_hash(c.sch.mod) for b in first for c in b}
    assert len(db.records) == 12
    assert any(vector_len(c.sch) == 0 for b in first for c in b)
    strategy = EvolutionarySearch(init_measured_ratio=0.5, **SMALL)
    again = run(strategy, func, 12, 6, db=db, seed=5, make=three)
    proposed = [structural_hash(c.sch.mod) for b in again for c in b]
    assert not measured & set(proposed)
    assert len(set(proposed)) == 12
    # warm start: the database's best records are mutable members of the population
    warm = strategy._warm_start()
    assert len(warm) == 24 and all(c.shash in measured | set(proposed) for c in warm)
    assert {c.space for c in warm} == {0, 1, 2}


def test_postprocs_reject_and_the_search_ends_when_the_space_is_exhausted():
    # 16x16x16 with inner tiles of at most 4: 3 x 3 x 3 = 27 tilings; rejecting vector
    # length 1 leaves 18, plus the default schedule
    func = matmul(16)
    strategy = EvolutionarySearch(population_size=32, init_min_unmeasured=8, max_fail_count=2,
                                  genetic_num_iters=1)
    batches = run(strategy, func, 100, 8, postprocs=[RejectInner(1)],
                  make=lambda f: [default_space(f), tiled(f, max_innermost_factor=4)])
    found = [c for b in batches for c in b]
    assert len(found) == 19
    assert all(vector_len(c.sch) != 1 for c in found)
    assert len({structural_hash(c.sch.mod) for c in found}) == 19


class RaiseOn(RejectInner):
    def apply(self, sch):
        if vector_len(sch) == self.bad:
            raise ValueError("a postproc that fails on this candidate")
        return True


def test_a_failing_candidate_is_dropped_and_a_failing_space_is_reported(caplog):
    func = matmul()
    batches = run(EvolutionarySearch(**SMALL), func, 16, 8, postprocs=[RaiseOn(2)])
    assert sum(len(b) for b in batches) == 16
    assert all(vector_len(c.sch) != 2 for b in batches for c in b)
    # every candidate fails: no batch, and the reason is in the log
    with caplog.at_level("WARNING"):
        batches = run(EvolutionarySearch(**SMALL), func, 16, 8, postprocs=[RaiseOn(0)],
                      make=lambda f: [tiled(f, vectorize=False)])
    assert batches == []
    assert "a postproc that fails on this candidate" in caplog.text


def test_bad_arguments():
    with pytest.raises(ValueError, match="population_size"):
        EvolutionarySearch(population_size=0)
    with pytest.raises(ValueError, match="eps_greedy"):
        EvolutionarySearch(eps_greedy=1.5)
    strategy = EvolutionarySearch()
    with pytest.raises(ValueError, match="initialize_with_tune_context"):
        strategy.pre_tuning(8, 4, [tiled(matmul())])
    ctx = context(matmul(), spaces, EvolutionarySearch())
    with pytest.raises(ValueError, match="no design space"):
        ctx.search_strategy.pre_tuning(8, 4, [])


class CountingMutator(TileMutator):
    def __init__(self):
        self.calls = 0
        self.changed = 0

    def apply(self, trace, rng):
        self.calls += 1
        new = super().apply(trace, rng)
        self.changed += new is not None
        return new


def test_mutators_drawn_from_the_space_generator_are_used():
    func = matmul()
    mutator = CountingMutator()
    strategy = EvolutionarySearch(**SMALL)
    ctx = context(func, spaces, strategy, mutator_probs={mutator: 1.0})
    strategy.pre_tuning(8, 8, ctx.generate_design_space(), None, RandomModel(seed=0))
    assert len(strategy.generate_measure_candidates()) == 8
    assert mutator.calls > 0 and mutator.changed > 0
    # without mutators the search still proposes (samples of the initial population)
    strategy = EvolutionarySearch(**SMALL)
    ctx = context(func, spaces, strategy, mutator_probs={})
    strategy.pre_tuning(8, 8, ctx.generate_design_space(), None, None)
    assert len(strategy.generate_measure_candidates()) == 8


def test_xgb_guided_search_learns_from_measurements():
    pytest.importorskip("xgboost")
    from tvm.meta_schedule.cost_model import XGBModel

    func = matmul()
    strategy = EvolutionarySearch(eps_greedy=0.0, **SMALL)
    ctx = context(func, lambda f: [tiled(f)], strategy, seed=0)
    model = XGBModel(num_warmup_samples=8, num_boost_round=30)
    strategy.pre_tuning(32, 8, ctx.generate_design_space(), None, model)
    means = []
    while (batch := strategy.generate_measure_candidates()) is not None:
        # measured: wider vectors are faster; the model is retrained as results arrive
        results = [RunnerResult(run_secs=[1e-3 / vector_len(c.sch)]) for c in batch]
        model.update(ctx, batch, results)
        strategy.notify_runner_results(batch, results)
        means.append(np.mean([vector_len(c.sch) for c in batch]))
    assert len(means) == 4 and model.data_size == 32
    # the batch after the first training is all 16-wide; the first was random
    assert means[1] == 16 and means[0] < 16


def test_the_default_population_follows_the_batch():
    """Every member of the population is a replayed schedule: its size follows the batch
    (4 per trial, 32..512) unless given."""
    func = matmul()
    sizes = []
    for strategy, per_iter in ((EvolutionarySearch(), 4), (EvolutionarySearch(), 64),
                               (EvolutionarySearch(population_size=48), 64)):
        ctx = context(func, spaces, strategy)
        strategy.pre_tuning(8, per_iter, ctx.generate_design_space(), None, RandomModel(0))
        sizes.append(strategy._population)
    assert sizes == [EvolutionarySearch.MIN_POPULATION, 256, 48]
