"""Hand-written design spaces, a mutator, a database and a space generator for the tests of
the features, cost models and evolutionary search (until the real rules are merged)."""

from __future__ import annotations

import random
from typing import Any, Optional

from tvm import te, tir
from tvm.ffi.structural import structural_hash
from tvm.meta_schedule.database.database import Database, TuningRecord, Workload
from tvm.meta_schedule.mutator.mutator import Mutator
from tvm.meta_schedule.postproc.postproc import Postproc
from tvm.meta_schedule.space_generator.space_generator import SpaceGenerator
from tvm.meta_schedule.tune_context import TuneContext
from tvm.tir.schedule.sampling import sample_perfect_tile_factors
from tvm.tir.stmt import For, ForKind
from tvm.tir.stmt_functor import post_order_visit


def matmul(n: int = 64, m: Optional[int] = None, k: Optional[int] = None) -> Any:
    m = n if m is None else m
    k = n if k is None else k
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def tiled(func: Any, tiles: Optional[tuple] = None, vectorize: bool = True,
          parallel: bool = False, unroll: bool = False, seed: int = 0,
          max_innermost_factor: int = 16) -> tir.Schedule:
    """i, j, k split in two by sample_perfect_tile (decisions ``tiles`` or sampled),
    reordered i0 j0 k0 i1 k1 j1, j1 vectorized."""
    sch = tir.Schedule(func, seed=seed)
    block = sch.get_block("C")
    loops = sch.get_loops(block)
    outer, inner = [], []
    for pos, loop in enumerate(loops):
        factors = sch.sample_perfect_tile(loop, 2, max_innermost_factor=max_innermost_factor,
                                          decision=None if tiles is None else tiles[pos])
        a, b = sch.split(loop, factors)
        outer.append(a)
        inner.append(b)
    sch.reorder(outer[0], outer[1], outer[2], inner[0], inner[2], inner[1])
    if vectorize:
        sch.vectorize(inner[1])
    if parallel:
        sch.parallel(outer[0])
    if unroll:
        sch.unroll(inner[0])
    return sch


def default_space(func: Any) -> tir.Schedule:
    """A schedule without sampling instructions: j split by 8 and vectorized."""
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i, j0, k, j1)
    sch.vectorize(j1)
    return sch


def vector_len(sch: Any) -> int:
    """The extent of the vectorized loop of a scheduled matmul (0: none)."""
    found = []

    def visit(node: Any) -> None:
        if isinstance(node, For) and node.kind == ForKind.VECTORIZED:
            found.append(int(node.extent.value))

    post_order_visit(sch.mod["main"].body, visit)
    return max(found, default=0)


class TileMutator(Mutator):
    """Resamples the factors of one sample_perfect_tile of the trace."""

    name = "test.mutate_tile"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        insts = [i for i in trace.insts if i.kind.name == "SamplePerfectTile"]
        if not insts:
            return None
        inst = rng.choice(insts)
        old = trace.decisions[inst]
        extent = 1
        for f in old:
            extent *= f
        n, max_inner = inst.attrs
        new = sample_perfect_tile_factors(rng, extent, n, max_inner)
        if list(new) == list(old):
            return None
        return trace.with_decision(inst, new)


class RejectInner(Postproc):
    """Rejects candidates whose vectorized loop has extent ``bad``."""

    name = "test.reject_inner"

    def __init__(self, bad: int):
        self.bad = bad

    def apply(self, sch: Any) -> bool:
        return vector_len(sch) != self.bad


class Spaces(SpaceGenerator):
    """Returns the design spaces it is given."""

    def __init__(self, make_spaces: Any, postprocs: Optional[list] = None,
                 mutator_probs: Optional[dict] = None):
        super().__init__([], postprocs or [], mutator_probs if mutator_probs is not None
                         else {TileMutator(): 1.0})
        self.make_spaces = make_spaces

    def generate_design_space(self, mod: Any) -> list[Any]:
        return self.make_spaces(mod["main"])


class FakeDatabase(Database):
    """The Database methods the search uses, in memory."""

    def __init__(self) -> None:
        self.workloads: list[Workload] = []
        self.records: list[TuningRecord] = []

    def _find(self, mod: Any) -> Optional[Workload]:
        h = f"{structural_hash(mod) & (2**64 - 1):016x}"
        return next((w for w in self.workloads if w.shash == h), None)

    def has_workload(self, mod: Any) -> bool:
        return self._find(mod) is not None

    def commit_workload(self, mod: Any) -> Workload:
        w = self._find(mod)
        if w is None:
            w = Workload(mod, f"{structural_hash(mod) & (2**64 - 1):016x}")
            self.workloads.append(w)
        return w

    def commit_tuning_record(self, record: TuningRecord) -> None:
        self.records.append(record)

    def get_top_k(self, workload: Workload, k: int, target: Any = None) -> list[TuningRecord]:
        ok = [r for r in self.records if r.workload.shash == workload.shash and r.run_secs]
        return sorted(ok, key=lambda r: r.mean_sec)[:k]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self.records)


def context(func: Any, make_spaces: Any, strategy: Any, seed: int = 0,
            postprocs: Optional[list] = None, mutator_probs: Optional[dict] = None
            ) -> TuneContext:
    return TuneContext(func, "llvm", space_generator=Spaces(make_spaces, postprocs,
                                                             mutator_probs),
                       search_strategy=strategy, task_name="matmul", seed=seed)


def decisions(sch: Any) -> list[tuple]:
    """The sampled decisions of a schedule's trace, in order."""
    return [tuple(sch.trace.decisions[i]) for i in sch.trace.insts if i.kind.has_decision]
