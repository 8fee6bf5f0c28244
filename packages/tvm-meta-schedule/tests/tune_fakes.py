"""In-process stand-ins for the builder, runner and design space, for the tuning tests.

FakeBuilder builds with ``tvm.tir.build`` in this process; FakeRunner times the kernel here
(or reports a time from ``time_fn`` for deterministic tests) and honours the
CorrectnessCheck; MatmulSpace samples the tiles of the two spatial loops of a matmul."""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable, Optional

import numpy as np
import tvm.runtime as rt
from tvm import te, tir
from tvm.meta_schedule.builder.builder import Builder, BuilderResult
from tvm.meta_schedule.runner.runner import Runner, RunnerResult
from tvm.meta_schedule.space_generator.space_generator import SpaceGenerator

_BUILT: dict[str, Any] = {}
_ids = itertools.count()


def matmul(n: int = 64, m: Optional[int] = None, name: str = "C", relu: bool = False) -> Any:
    m = m or n
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, m), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=name)
    if relu:
        D = te.compute((n, m), lambda i, j: te.max(C[i, j], 0.0), name="D")
        return te.create_prim_func([A, B, D])
    return te.create_prim_func([A, B, C])


class FakeBuilder(Builder):
    """Builds in this process; ``fail`` (a predicate on the module) makes a build fail."""

    def __init__(self, fail: Optional[Callable[[Any], bool]] = None) -> None:
        self.fail = fail
        self.built = 0

    def build(self, inputs: list[Any]) -> list[BuilderResult]:
        out = []
        for inp in inputs:
            if self.fail is not None and self.fail(inp.mod):
                out.append(BuilderResult(error_msg="fake build failure"))
                continue
            path = f"mem://{next(_ids)}"
            _BUILT[path] = (tir.build(inp.mod, inp.target), inp.mod)
            self.built += 1
            out.append(BuilderResult(artifact_path=path))
        return out


class FakeRunner(Runner):
    """Runs in this process.  ``time_fn(mod) -> seconds`` replaces the timing (after the
    kernel ran once); ``interrupt_after``: raise KeyboardInterrupt on that run (1-based);
    ``fail_every``: every n-th run is reported as a crash."""

    def __init__(self, time_fn: Optional[Callable[[Any], float]] = None,
                 interrupt_after: Optional[int] = None, fail_every: Optional[int] = None,
                 wrong_every: Optional[int] = None) -> None:
        self.time_fn = time_fn
        self.interrupt_after = interrupt_after
        self.fail_every = fail_every
        self.wrong_every = wrong_every
        self.runs = 0
        self.checks: list[Any] = []

    def run(self, inputs: list[Any]) -> list[Any]:
        return [_LazyFuture(self, inp) for inp in inputs]

    def measure(self, inp: Any) -> RunnerResult:
        self.runs += 1
        if self.interrupt_after is not None and self.runs >= self.interrupt_after:
            raise KeyboardInterrupt
        if self.fail_every and self.runs % self.fail_every == 0:
            return RunnerResult(error_msg="fake crash")
        kernel, mod = _BUILT[inp.artifact_path]
        self.checks.append(inp.check)
        arrays = [a.copy() for a in inp.check.inputs] if inp.check is not None else \
            [np.zeros(i.shape, i.dtype) for i in inp.args_info]
        tensors = [rt.tensor(a) for a in arrays]
        start = time.perf_counter()
        kernel["main"](*tensors)
        sec = time.perf_counter() - start
        if inp.check is not None:
            got = [t.numpy() for t in tensors]
            if self.wrong_every and self.runs % self.wrong_every == 0:
                got[-1] = got[-1] + 1.0
            for g, e in zip(got, inp.check.expected):
                if not np.allclose(g, e, rtol=inp.check.rtol, atol=inp.check.atol):
                    return RunnerResult(error_msg="wrong result")
        if self.time_fn is not None:
            sec = self.time_fn(mod)
        return RunnerResult(run_secs=[sec])


class _LazyFuture:
    def __init__(self, runner: FakeRunner, inp: Any) -> None:
        self.runner, self.inp, self.value = runner, inp, None

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        if self.value is None:
            self.value = self.runner.measure(self.inp)
        return self.value


class MatmulSpace(SpaceGenerator):
    """One design space: the first two loops of the first block split by sampled tiles."""

    def generate_design_space(self, mod: Any) -> list[Any]:
        sch = tir.Schedule(mod)
        block = sch.get_block(_first_block(sch))
        i, j, k = sch.get_loops(block)[:3]
        ti = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
        tj = sch.sample_perfect_tile(j, n=2, max_innermost_factor=16)
        io, ii = sch.split(i, ti)
        jo, ji = sch.split(j, tj)
        sch.reorder(io, jo, ii, k, ji)
        return [sch]


def _first_block(sch: Any) -> str:
    names = [s.block.name_hint for s in sch.state.iter_srefs(sch.func_working_on)
             if s.is_block and s.block.name_hint != "root"]
    return names[0]


def tile_time(mod: Any) -> float:
    """A deterministic fake time: an inner tile of 16 x 16 is fastest."""
    from tvm.tir.stmt import For

    extents = []

    def visit(node: Any) -> None:
        if isinstance(node, For):
            extents.append(int(node.extent.value))

    tir.stmt_functor.post_order_visit(mod["main"].body, visit)
    return 1e-4 * (1.0 + sum(abs(e - 16) for e in extents[:2]) / 16.0) if extents else 1e-4
