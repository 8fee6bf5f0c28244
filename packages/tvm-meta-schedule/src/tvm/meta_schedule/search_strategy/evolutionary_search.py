"""EvolutionarySearch: a genetic search over sampled decisions, guided by a cost model.

Each batch (:meth:`EvolutionarySearch.generate_measure_candidates`):

1. *Initial population*: the task's best measured records from the database (at most
   ``population * init_measured_ratio``; their decisions put back onto the design
   space they came from, so they can be mutated) and fresh random samples: a design space
   (drawn uniformly) replayed on ``tir.Schedule(mod, seed=...)`` with every sampling
   decision drawn anew, then the space generator's postprocs; failures are discarded (a
   space without sampling instructions has one candidate, which the first batch takes).
   Sampling goes on in rounds of ``population - measured`` tries until
   ``init_min_unmeasured`` (at most a round's worth) new candidates are found or ``max_fail_count`` rounds in a row
   found none.
2. *Evolution*, ``genetic_num_iters`` times: the cost model scores the population; each
   slot of the next one takes a parent drawn with probability proportional to its score;
   with probability ``genetic_mutate_prob`` it is mutated (a mutator drawn by the space
   generator's ``mutator_probs``, ``mutator.apply(trace, rng)``, the trace replayed and
   postprocessed; up to ``genetic_max_fail_count`` tries), otherwise kept.  Every
   unmeasured candidate met on the way is remembered with its score.
3. *Pick*: ``(1 - eps_greedy)`` of the batch are the best-scored of those, ``eps_greedy``
   random samples of step 1 (exploration).  Candidates are deduplicated by the structural
   hash of the scheduled module, and none measured before (database or this run) is
   proposed again.

The first batch starts with the default schedules: every design space without sampling
instructions and ``design_spaces[0]`` as it is (with its recorded decisions, a target's
best-known ones), so tuning never ends worse than the untuned kernel.  Without a cost
model the scores are random (a pure random search).  Everything random comes from
``random.Random(context.seed)``: the same seed and the same measurements give the same
batches.  The search ends when ``max_trials`` candidates were proposed or nothing new can
be generated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .search_strategy import SearchStrategy

__all__ = ["EvolutionarySearch"]


@dataclass
class _Candidate:
    """A postprocessed schedule, the trace it was replayed from (before postprocs: what
    mutators change) and the structural hash of its module."""

    sch: Any
    trace: Any
    shash: int
    space: int


@dataclass
class _Space:
    trace: Any
    samples: list[Any]     # the sampling instructions, in order

    @property
    def sampled(self) -> bool:
        return bool(self.samples)


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"EvolutionarySearch: {name} must be an int >= {low}, got {value!r}")
    return value


def _check_prob(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"EvolutionarySearch: {name} must be in [0, 1], got {value!r}")
    return float(value)


class EvolutionarySearch(SearchStrategy):
    """See the module docstring for the algorithm and what each parameter controls.

    ``population_size`` None (the default) sizes the population to the batch: four
    candidates per trial of a batch, between :attr:`MIN_POPULATION` and
    :attr:`MAX_POPULATION`."""

    MIN_POPULATION = 32
    MAX_POPULATION = 512

    def __init__(self, population_size: Optional[int] = None, init_measured_ratio: float = 0.2,
                 init_min_unmeasured: int = 50, max_fail_count: int = 5,
                 genetic_num_iters: int = 4, genetic_mutate_prob: float = 0.85,
                 genetic_max_fail_count: int = 10, eps_greedy: float = 0.05):
        self.population_size = (None if population_size is None
                                else _check_int("population_size", population_size, 1))
        self.init_measured_ratio = _check_prob("init_measured_ratio", init_measured_ratio)
        self.init_min_unmeasured = _check_int("init_min_unmeasured", init_min_unmeasured, 1)
        self.max_fail_count = _check_int("max_fail_count", max_fail_count, 1)
        self.genetic_num_iters = _check_int("genetic_num_iters", genetic_num_iters, 0)
        self.genetic_mutate_prob = _check_prob("genetic_mutate_prob", genetic_mutate_prob)
        self.genetic_max_fail_count = _check_int("genetic_max_fail_count",
                                                 genetic_max_fail_count, 1)
        self.eps_greedy = _check_prob("eps_greedy", eps_greedy)
        self.context: Any = None
        self._running = False

    # -- the loop -------------------------------------------------------------------------
    def pre_tuning(self, max_trials: int, num_trials_per_iter: int, design_spaces: list[Any],
                   database: Any = None, cost_model: Any = None) -> None:
        from ..arg_info import args_info

        if self.context is None:
            raise ValueError("EvolutionarySearch: initialize_with_tune_context(context) first "
                             "(a TuneContext does it when given the strategy)")
        self.max_trials = _check_int("max_trials", max_trials, 1)
        self.num_trials_per_iter = _check_int("num_trials_per_iter", num_trials_per_iter, 1)
        # a population in proportion to the batch: every member is a replayed schedule
        # (tens of milliseconds in Python), so a fixed 512 would cost minutes per small batch
        self._population = self.population_size or min(
            self.MAX_POPULATION, max(self.MIN_POPULATION, 4 * num_trials_per_iter))
        if not design_spaces:
            raise ValueError("EvolutionarySearch: no design space (the space generator "
                             "returned none)")
        ctx = self.context
        self._rng = random.Random(ctx.seed)
        self._spaces = []
        for sch in design_spaces:
            trace = getattr(sch, "trace", None)
            if trace is None:
                raise TypeError(f"EvolutionarySearch: a design space must be a tir.Schedule, "
                                f"got {type(sch).__name__}")
            trace = trace.copy()
            self._spaces.append(_Space(trace, [i for i in trace.insts if i.kind.has_decision]))
        gen = ctx.space_generator
        self._postprocs = list(getattr(gen, "postprocs", None) or [])
        probs = getattr(gen, "mutator_probs", None) or {}
        self._mutators = [(m, float(p)) for m, p in probs.items() if p > 0]
        self._args_info = args_info(ctx.mod)
        self._database = database
        self._cost_model = cost_model
        self._workload = database.commit_workload(ctx.mod) if database is not None else None
        self._measured: set[int] = self._measured_in_database()
        self._pending: set[int] = set()
        self._trials = 0
        self._replayed: dict[tuple, Optional[_Candidate]] = {}
        self._last_error: Optional[str] = None
        self._warm_cache: dict[str, Optional[_Candidate]] = {}
        self._first_batch = True
        self._running = True

    def generate_measure_candidates(self) -> Optional[list[Any]]:
        from ..measure_candidate import MeasureCandidate

        if not self._running:
            raise ValueError("EvolutionarySearch: call pre_tuning before "
                             "generate_measure_candidates")
        if self._trials >= self.max_trials:
            return None
        num = min(self.num_trials_per_iter, self.max_trials - self._trials)
        seen: set[int] = set()
        picked: list[_Candidate] = []
        if self._first_batch:
            self._first_batch = False
            for cand in self._defaults():
                if len(picked) < num and self._is_new(cand.shash, seen):
                    seen.add(cand.shash)
                    picked.append(cand)
        if len(picked) < num:
            picked += self._search(num - len(picked), seen)
        if not picked:
            self.context.logger.info("evolutionary search: nothing new to measure, stopping")
            return None
        for cand in picked:
            self._pending.add(cand.shash)
        self._trials += len(picked)
        return [MeasureCandidate(c.sch, list(self._args_info)) for c in picked]

    def notify_runner_results(self, candidates: list[Any], results: list[Any]) -> None:
        if len(candidates) != len(results):
            raise ValueError(f"EvolutionarySearch: {len(candidates)} candidates but "
                             f"{len(results)} results")
        for cand in candidates:
            shash = _shash(cand.sch.mod)
            self._pending.discard(shash)
            self._measured.add(shash)

    def post_tuning(self) -> None:
        self._running = False

    # -- candidates -----------------------------------------------------------------------
    def _is_new(self, shash: int, seen: set[int]) -> bool:
        return shash not in seen and shash not in self._measured and shash not in self._pending

    def _make(self, space: int, trace: Any, fresh: bool) -> Optional[_Candidate]:
        """Replay ``trace`` (sampling anew when ``fresh``) and postprocess; None on failure."""
        from tvm.tir.schedule import Schedule

        ctx = self.context
        sch = Schedule(ctx.mod, seed=self._rng.randrange(1, 2**31 - 1))
        provider = (lambda inst, inputs, attrs, decision: None) if fresh else None
        try:
            trace.apply_to_schedule(sch, decision_provider=provider)
            before = sch.trace.copy()
            for post in self._postprocs:
                if not post.apply(sch):
                    return None
        except Exception as err:  # noqa: BLE001 - an invalid candidate is dropped, not fatal
            self._last_error = f"{type(err).__name__}: {err}"
            ctx.logger.debug("candidate of design space %d dropped: %s", space,
                             self._last_error)
            return None
        return _Candidate(sch, before, _shash(sch.mod), space)

    def _defaults(self) -> list[_Candidate]:
        """The design spaces that are default schedules, as they are."""
        out = []
        for k, space in enumerate(self._spaces):
            if k == 0 or not space.sampled:
                cand = self._make(k, space.trace, fresh=False)
                if cand is None:
                    self.context.logger.warning("design space %d (a default schedule) fails "
                                                "to replay or is rejected by a postproc", k)
                else:
                    out.append(cand)
        return out

    def _measured_in_database(self) -> set[int]:
        """Structural hashes of every candidate the database holds for this task."""
        from tvm.tir.schedule import Schedule

        out: set[int] = set()
        if self._database is None:
            return out
        for rec in self._database.get_all_tuning_records():
            if rec.workload.shash != self._workload.shash or not self._same_target(rec):
                continue
            sch = Schedule(self.context.mod)
            try:
                rec.trace.apply_to_schedule(sch)
            except Exception as err:  # noqa: BLE001 - a stale record is only not deduplicated
                self.context.logger.debug("a database record does not replay: %s", err)
                continue
            out.add(_shash(sch.mod))
        return out

    def _same_target(self, rec: Any) -> bool:
        return rec.target is None or str(rec.target) == str(self.context.target)

    def _warm_start(self) -> list[_Candidate]:
        """The best measured records, as mutable members of a design space."""
        k = int(self._population * self.init_measured_ratio)
        if self._database is None or k <= 0:
            return []
        out = []
        for rec in self._database.get_top_k(self._workload, k, self.context.target):
            cand = self._from_record(rec.trace)
            if cand is not None:
                out.append(cand)
        return out

    def _from_record(self, rec_trace: Any) -> Optional[_Candidate]:
        """A record's decisions put back onto the design space it came from: the spaces
        whose sampling instructions its trace starts with are tried (those whose whole
        instruction sequence it starts with first) until one replays to the record's
        candidate; failing that, the first that replays at all (a close relative)."""
        from tvm.tir.schedule import Trace

        key = rec_trace.as_json()
        if key in self._warm_cache:
            return self._warm_cache[key]
        rec = [(i.kind.name, rec_trace.decisions.get(i)) for i in rec_trace.insts
               if i.kind.has_decision]
        rec_kinds = [name for name, _ in rec]
        all_kinds = [i.kind.name for i in rec_trace.insts]
        ranked = []
        for k, space in enumerate(self._spaces):
            kinds = [i.kind.name for i in space.samples]
            if kinds != rec_kinds[:len(kinds)] or (not kinds and rec_kinds):
                continue
            same_steps = [i.kind.name for i in space.trace.insts] == all_kinds[:len(space.trace)]
            ranked.append((not same_steps, kinds != rec_kinds, k))
        found = fallback = None
        for *_, k in sorted(ranked):
            space = self._spaces[k]
            decisions = dict(space.trace.decisions)
            decisions.update({inst: d for inst, (_, d) in zip(space.samples, rec)})
            cand = self._make(k, Trace(space.trace.insts, decisions), fresh=False)
            if cand is not None and cand.shash in self._measured:
                found = cand
                break
            fallback = fallback or cand
        self._warm_cache[key] = found or fallback
        return self._warm_cache[key]

    def _sample_init(self, num_measured: int, seen: set[int]) -> list[_Candidate]:
        """Fresh random samples of the design spaces, new and unmeasured."""
        # a space without sampling has one candidate, which the first batch took
        spaces = [k for k, s in enumerate(self._spaces) if s.sampled]
        if not spaces:
            return []
        per_round = max(self._population - num_measured, 1)
        out: list[_Candidate] = []
        barren = 0
        while len(out) < min(self.init_min_unmeasured, per_round) and barren < self.max_fail_count:
            found = 0
            for _ in range(per_round):
                k = spaces[self._rng.randrange(len(spaces))]
                cand = self._make(k, self._spaces[k].trace, fresh=True)
                if cand is not None and self._is_new(cand.shash, seen):
                    seen.add(cand.shash)
                    out.append(cand)
                    found += 1
            barren = 0 if found else barren + 1
        if not out and self._last_error is not None:
            self.context.logger.warning("evolutionary search: no new candidate; the last "
                                        "failure was %s", self._last_error)
        return out

    # -- evolution ------------------------------------------------------------------------
    def _score(self, cands: list[_Candidate], cache: dict[int, float]) -> np.ndarray:
        from ..measure_candidate import MeasureCandidate

        todo = [c for c in cands if c.shash not in cache]
        uniq = list({c.shash: c for c in todo}.values())
        if uniq:
            if self._cost_model is None:
                scores = [self._rng.random() for _ in uniq]
            else:
                scores = self._cost_model.predict(
                    self.context, [MeasureCandidate(c.sch, list(self._args_info)) for c in uniq])
            for c, s in zip(uniq, np.asarray(scores, dtype=np.float64).reshape(-1)):
                cache[c.shash] = float(s) if np.isfinite(s) else 0.0
        return np.array([cache[c.shash] for c in cands], dtype=np.float64)

    def _mutate(self, parent: _Candidate) -> Optional[_Candidate]:
        mutators, weights = zip(*self._mutators)
        for _ in range(self.genetic_max_fail_count):
            mutator = self._rng.choices(mutators, weights=weights)[0]
            try:
                trace = mutator.apply(parent.trace, self._rng)
            except Exception as err:  # noqa: BLE001 - a failing mutation is a failed try
                self.context.logger.debug("mutator %r failed: %s", mutator, err)
                continue
            if trace is None:
                continue
            key = (parent.space, tuple(trace.decisions.get(i) for i in trace.insts
                                       if i.kind.has_decision))
            if key not in self._replayed:  # mutations often meet a candidate again
                self._replayed[key] = self._make(parent.space, trace, fresh=False)
            child = self._replayed[key]
            if child is not None:
                return child
        return None

    def _search(self, num: int, seen: set[int]) -> list[_Candidate]:
        warm = self._warm_start()
        randoms = self._sample_init(len(warm), set(seen))
        population = warm + randoms
        if not population:
            return []
        cache: dict[int, float] = {}
        self._replayed = {}
        best: dict[int, tuple[float, int, _Candidate]] = {}
        for it in range(self.genetic_num_iters + 1):
            scores = self._score(population, cache)
            for cand, score in zip(population, scores):
                if cand.shash not in best and self._is_new(cand.shash, seen):
                    best[cand.shash] = (score, len(best), cand)
            if it == self.genetic_num_iters or not self._mutators:
                break
            population = self._next_generation(population, scores)
            if not population:
                break
        self._replayed = {}
        ranked = [c for _, _, c in sorted(best.values(), key=lambda e: (-e[0], e[1]))]
        num_rand = int(num * self.eps_greedy)
        rand_pool = list(randoms)
        self._rng.shuffle(rand_pool)
        out: list[_Candidate] = []

        def take(pool: list[_Candidate], limit: int) -> None:
            for cand in pool:
                if len(out) >= limit:
                    return
                if self._is_new(cand.shash, seen):
                    seen.add(cand.shash)
                    out.append(cand)

        take(ranked, num - num_rand)
        take(rand_pool, num)
        take(ranked, num)
        self.context.logger.info(
            "evolutionary search: population %d (%d measured), %d unmeasured met, best score "
            "%.4g, %d picked", len(warm) + len(randoms), len(warm), len(best),
            max((s for s, _, _ in best.values()), default=0.0), len(out))
        return out

    def _next_generation(self, population: list[_Candidate], scores: np.ndarray
                         ) -> list[_Candidate]:
        weights = np.maximum(scores, 0.0)
        if not weights.sum() > 0:
            weights = np.ones(len(population))
        cumulative = np.cumsum(weights).tolist()
        nxt: list[_Candidate] = []
        members: set[int] = set()
        for _ in range(self._population):
            parent = self._rng.choices(population, cum_weights=cumulative)[0]
            if self._rng.random() >= self.genetic_mutate_prob:
                nxt.append(parent)
                members.add(parent.shash)
                continue
            child = self._mutate(parent)
            if child is not None and child.shash not in members:
                nxt.append(child)
                members.add(child.shash)
        return nxt


def _shash(mod: Any) -> int:
    from tvm.ffi.structural import structural_hash

    return structural_hash(mod)
