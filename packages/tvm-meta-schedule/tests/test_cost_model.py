"""Cost models: RandomModel (seeded) and XGBModel (learns a ranking, JSON round trip)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from search_test_helpers import matmul, tiled, vector_len
from tvm import tir
from tvm.meta_schedule.cost_model import RandomModel, XGBModel, spearman, top_k_recall
from tvm.meta_schedule.measure_candidate import MeasureCandidate
from tvm.meta_schedule.runner.runner import RunnerResult
from tvm.meta_schedule.tune_context import TuneContext


def candidates(n: int, seed: int) -> list[MeasureCandidate]:
    func = matmul()
    space = tiled(func)
    out = []
    for k in range(n):
        sch = tir.Schedule(func, seed=seed * 1000 + k)
        space.trace.apply_to_schedule(sch, decision_provider=lambda *a: None)
        out.append(MeasureCandidate(sch, []))
    return out


def synthetic_time(cand: MeasureCandidate, rng: np.random.Generator) -> float:
    """Wider vectors are faster (with 10% noise)."""
    return 1e-3 / vector_len(cand.sch) * (1.0 + 0.1 * rng.random())


@pytest.fixture(scope="module")
def ctx():
    return TuneContext(matmul(), "llvm", task_name="matmul", seed=0)


def test_spearman_and_recall():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0
    assert top_k_recall([0.9, 0.1, 0.8, 0.2], [1.0, 0.0, 0.9, 0.5], 2) == 1.0
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])


def test_random_model_is_seeded_and_saves(tmp_path, ctx):
    cands = candidates(8, 0)
    a, b = RandomModel(seed=3), RandomModel(seed=3)
    assert np.array_equal(a.predict(ctx, cands), b.predict(ctx, cands))
    assert not np.array_equal(RandomModel(seed=4).predict(ctx, cands),
                              RandomModel(seed=3).predict(ctx, cands))
    a.save(str(tmp_path / "r.json"))
    c = RandomModel(seed=99)
    c.load(str(tmp_path / "r.json"))
    assert np.array_equal(a.predict(ctx, cands), c.predict(ctx, cands))


def test_xgboost_missing_says_which_extra(monkeypatch, ctx):
    model = XGBModel(num_warmup_samples=0)
    monkeypatch.setitem(sys.modules, "xgboost", None)
    cands = candidates(2, 0)
    with pytest.raises(ImportError, match=r"tvm-meta-schedule\[xgboost\]"):
        model.update(ctx, cands, [RunnerResult(run_secs=[1e-3])] * 2)


@pytest.fixture(scope="module")
def trained(ctx):
    pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    train = candidates(80, 1)
    test = candidates(40, 2)
    model = XGBModel(seed=0, num_warmup_samples=0)
    # measured in batches, as the tuner does; one failed run per batch
    for start in range(0, len(train), 20):
        batch = train[start:start + 20]
        results = [RunnerResult(run_secs=[synthetic_time(c, rng)]) for c in batch]
        results[0] = RunnerResult(error_msg="wrong result")
        model.update(ctx, batch, results)
    return model, test, [synthetic_time(c, rng) for c in test]


def test_xgb_learns_a_ranking(trained, ctx):
    model, test, times = trained
    assert model.data_size == 80
    pred = model.predict(ctx, test)
    assert pred.shape == (40,) and np.isfinite(pred).all()
    rho = spearman(pred, [-t for t in times])
    assert rho > 0.5, rho


def test_xgb_save_load_round_trips(trained, ctx, tmp_path):
    model, test, _ = trained
    path = tmp_path / "model.json"
    model.save(str(path))
    data = json.loads(path.read_text())  # plain JSON, no pickle
    assert data["format"] == "tvm.meta_schedule.XGBModel"
    (group,) = data["groups"].values()
    assert len(group["costs"]) == 80 and group["costs"].count(None) == 4  # failed runs
    loaded = XGBModel()
    loaded.load(str(path))
    assert loaded.data_size == 80
    assert np.array_equal(loaded.predict(ctx, test), model.predict(ctx, test))


def test_xgb_untrained_predicts_seeded_random_scores(ctx):
    cands = candidates(6, 3)
    a = XGBModel(seed=5).predict(ctx, cands)
    b = XGBModel(seed=5).predict(ctx, cands)
    assert np.array_equal(a, b) and a.shape == (6,)


def test_xgb_rejects_mismatched_results(ctx):
    with pytest.raises(ValueError, match="2 candidates but 1 results"):
        XGBModel().update(ctx, candidates(2, 0), [RunnerResult(run_secs=[1.0])])
