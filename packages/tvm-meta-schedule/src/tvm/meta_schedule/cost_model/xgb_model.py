"""XGBModel: gradient-boosted trees over per-store features (the default cost model).

The MetaSchedule objective: for each task (workload), a measured candidate's label is its
normalized throughput ``min_time / time`` (1.0 for the task's fastest, 0.0 for a failed
run).  The trees predict one number per BufferStore row; a candidate's score is the *sum*
of its rows' predictions, and training minimizes the weighted squared error of that sum
against the label (custom objective: every row of a candidate gets the candidate's
gradient).  The weight ``label + 0.1`` makes the fast candidates, the ones the search is
after, count most while slow and failed ones still teach what to avoid.

The model retrains from scratch on everything measured so far at each :meth:`update`
(the data is small: a few thousand candidates).  Until ``num_warmup_samples`` candidates
are measured, :meth:`predict` returns seeded random scores, so the search explores.

``save`` writes one JSON file: xgboost's own JSON model and our JSON of the training data
(features and times per task), never pickle; ``load`` restores both, and the loaded model
predicts exactly what the saved one did.  xgboost is imported lazily: it is the extra
``tvm-meta-schedule[xgboost]``.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .cost_model import CostModel

__all__ = ["XGBModel"]

_FORMAT = "tvm.meta_schedule.XGBModel"
_VERSION = 1
_WEIGHT_FLOOR = 0.1
_FEATURE_CACHE_SIZE = 16384

_DEFAULT_PARAMS = {
    "max_depth": 10,
    "eta": 0.2,
    "gamma": 0.001,
    "min_child_weight": 0.0,
    "lambda": 1.0,
    "tree_method": "hist",
    "base_score": 0.0,
    "disable_default_eval_metric": 1,
}


def _xgboost() -> Any:
    try:
        import xgboost
    except ImportError as err:
        raise ImportError(
            "XGBModel needs xgboost: pip install 'tvm-meta-schedule[xgboost]' (or pass "
            "cost_model=ms.cost_model.RandomModel() to search without a learned model)"
        ) from err
    return xgboost


@dataclass
class _Group:
    """The measured candidates of one task: their feature matrices and times (inf: failed)."""

    features: list[np.ndarray] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)

    def labels(self) -> np.ndarray:
        costs = np.asarray(self.costs, dtype=np.float64)
        ok = np.isfinite(costs)
        if not ok.any():
            return np.zeros(len(costs))
        best = costs[ok].min()
        return np.where(ok, best / np.where(ok, costs, 1.0), 0.0)


def _result_cost(result: Any) -> float:
    secs = getattr(result, "run_secs", None)
    if getattr(result, "error_msg", None) or not secs:
        return math.inf
    values = [float(s) for s in secs]
    if not all(math.isfinite(v) and v > 0 for v in values):
        return math.inf
    return sum(values) / len(values)


def _pack(mats: list[np.ndarray], num_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of all matrices stacked, and the candidate index of each row."""
    rows = [m for m in mats if len(m)]
    if not rows:
        return np.zeros((0, num_features), np.float32), np.zeros(0, np.int64)
    owner = np.concatenate([np.full(len(m), k, np.int64) for k, m in enumerate(mats)])
    return np.concatenate(rows).astype(np.float32), owner


class XGBModel(CostModel):
    """The default cost model (see the module docstring).

    ``extractor``: a FeatureExtractor (default PerStoreFeature); ``num_boost_round``
    trees per training; ``params`` override xgboost's parameters; ``nthread`` threads
    for xgboost (1 by default: the tuner shares the machine with builders and runners);
    ``seed`` makes training and the warm-up scores reproducible."""

    def __init__(self, extractor: Any = None, num_warmup_samples: int = 16,
                 num_boost_round: int = 100, params: Optional[dict] = None,
                 nthread: int = 1, seed: int = 0):
        if extractor is None:
            from ..feature_extractor.per_store_feature import PerStoreFeature

            extractor = PerStoreFeature()
        if num_boost_round < 1:
            raise ValueError(f"XGBModel: num_boost_round must be >= 1, got {num_boost_round}")
        self.extractor = extractor
        self.num_warmup_samples = int(num_warmup_samples)
        self.num_boost_round = int(num_boost_round)
        self.params = {**_DEFAULT_PARAMS, **(params or {})}
        self.nthread = max(1, int(nthread))
        self.seed = int(seed)
        self._groups: dict[str, _Group] = {}
        self._booster: Any = None
        self._rng = np.random.default_rng(self.seed)
        self._keys: dict[int, tuple[Any, str]] = {}
        self._cache: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()

    # -- data -----------------------------------------------------------------------------
    @property
    def data_size(self) -> int:
        """How many measured candidates the model has seen."""
        return sum(len(g.costs) for g in self._groups.values())

    def _group_key(self, context: Any) -> str:
        mod = getattr(context, "mod", None)
        if mod is None:
            return str(getattr(context, "task_name", "task"))
        hit = self._keys.get(id(mod))
        if hit is None or hit[0] is not mod:
            from tvm.ffi.structural import structural_hash

            hit = (mod, f"{structural_hash(mod) & (2**64 - 1):016x}")
            self._keys[id(mod)] = hit
        return hit[1]

    def _features(self, context: Any, candidates: list[Any]) -> list[np.ndarray]:
        """The candidates' features; the search meets the same candidate many times, so
        they are cached by the structural hash of the scheduled module."""
        from tvm.ffi.structural import structural_hash

        task = self._group_key(context)
        keys = [(task, structural_hash(c.sch.mod)) for c in candidates]
        todo = {k: c for k, c in zip(keys, candidates) if k not in self._cache}
        if todo:
            found = self.extractor.extract_from(context, list(todo.values()))
            for key, mat in zip(todo, found):
                self._cache[key] = np.asarray(mat, dtype=np.float32)
        out = []
        for key in keys:
            self._cache.move_to_end(key)
            out.append(self._cache[key])
        while len(self._cache) > _FEATURE_CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    def _num_features(self) -> int:
        return int(getattr(self.extractor, "num_features", 0)) or next(
            (m.shape[1] for g in self._groups.values() for m in g.features if m.ndim == 2), 0)

    # -- CostModel ------------------------------------------------------------------------
    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        if len(candidates) != len(results):
            raise ValueError(f"XGBModel.update: {len(candidates)} candidates but "
                             f"{len(results)} results")
        if not candidates:
            return
        feats = self._features(context, candidates)
        group = self._groups.setdefault(self._group_key(context), _Group())
        for mat, res in zip(feats, results):
            group.features.append(np.asarray(mat, dtype=np.float32))
            group.costs.append(_result_cost(res))
        self._train()

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        if self._booster is None or self.data_size < self.num_warmup_samples:
            return self._rng.random(len(candidates))
        return self._predict_features(self._features(context, candidates))

    def _predict_features(self, feats: list[np.ndarray]) -> np.ndarray:
        xgb = _xgboost()
        rows, owner = _pack(feats, self._num_features())
        if not len(rows):
            return np.zeros(len(feats))
        per_row = self._booster.predict(xgb.DMatrix(rows, nthread=self.nthread))
        return np.bincount(owner, weights=per_row.astype(np.float64), minlength=len(feats))

    def _train(self) -> None:
        xgb = _xgboost()
        mats: list[np.ndarray] = []
        labels: list[np.ndarray] = []
        for group in self._groups.values():
            mats += group.features
            labels.append(group.labels())
        label = np.concatenate(labels) if labels else np.zeros(0)
        keep = [k for k, m in enumerate(mats) if len(m)]
        if not keep:
            self._booster = None
            return
        mats = [mats[k] for k in keep]
        label = label[keep]
        rows, owner = _pack(mats, self._num_features())
        weight = label + _WEIGHT_FLOOR
        n = len(mats)

        def objective(pred: np.ndarray, _dtrain: Any) -> tuple[np.ndarray, np.ndarray]:
            sums = np.bincount(owner, weights=pred.astype(np.float64), minlength=n)
            grad = (sums - label) * weight
            return grad[owner], weight[owner]

        params = {**self.params, "seed": self.seed, "nthread": self.nthread}
        dtrain = xgb.DMatrix(rows, nthread=self.nthread)
        self._booster = xgb.train(params, dtrain, num_boost_round=self.num_boost_round,
                                  obj=objective, verbose_eval=False)

    # -- files ----------------------------------------------------------------------------
    def save(self, path: str) -> None:
        booster = None
        if self._booster is not None:
            booster = json.loads(bytes(self._booster.save_raw(raw_format="json")))
        data = {
            "format": _FORMAT, "version": _VERSION, "seed": self.seed,
            "num_warmup_samples": self.num_warmup_samples,
            "num_boost_round": self.num_boost_round, "params": self.params,
            "rng_state": self._rng.bit_generator.state,
            "groups": {key: {"features": [m.tolist() for m in g.features],
                             "costs": [c if math.isfinite(c) else None for c in g.costs]}
                       for key, g in self._groups.items()},
            "booster": booster,
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)

    def load(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"{path} is not a saved XGBModel")
        if data.get("version") != _VERSION:
            raise ValueError(f"{path}: XGBModel format version {data.get('version')!r}, this "
                             f"version reads {_VERSION}")
        nfeat = self._num_features()
        groups = {}
        for key, g in data["groups"].items():
            feats = [np.asarray(m, dtype=np.float32).reshape(-1, nfeat) if nfeat else
                     np.asarray(m, dtype=np.float32) for m in g["features"]]
            costs = [math.inf if c is None else float(c) for c in g["costs"]]
            if len(feats) != len(costs):
                raise ValueError(f"{path}: task {key} has {len(feats)} feature matrices but "
                                 f"{len(costs)} times")
            groups[key] = _Group(feats, costs)
        self.seed = int(data["seed"])
        self.num_warmup_samples = int(data["num_warmup_samples"])
        self.num_boost_round = int(data["num_boost_round"])
        self.params = dict(data["params"])
        self._groups = groups
        self._rng = np.random.default_rng(self.seed)
        self._rng.bit_generator.state = data["rng_state"]
        self._booster = None
        if data.get("booster") is not None:
            xgb = _xgboost()
            booster = xgb.Booster()
            booster.load_model(bytearray(json.dumps(data["booster"]), "utf-8"))
            self._booster = booster

    def __repr__(self) -> str:
        return (f"XGBModel({self.data_size} measured, "
                f"{'trained' if self._booster is not None else 'untrained'})")
