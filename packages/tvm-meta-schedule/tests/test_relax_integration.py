"""Relax integration: extract_tasks gives the kernels relax.build schedules (deduplicated,
weighted by call count); a build under db.applied() takes the record where one exists and
the default rules elsewhere; tune_relax + compile_relax end to end with fakes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tvm.relax")
pytest.importorskip("tvm.target.llvm")

import tvm.meta_schedule as ms  # noqa: E402
import tvm.runtime as rt  # noqa: E402
from tvm import relax, tir  # noqa: E402
from tvm.ffi import structural_equal  # noqa: E402
from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin  # noqa: E402
from tvm.meta_schedule.arg_info import args_info  # noqa: E402
from tvm.meta_schedule.database import MemoryDatabase, TuningRecord, normalize_mod  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402
from tvm.script import tir as T  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from tune_fakes import FakeBuilder, FakeRunner, MatmulSpace, tile_time  # noqa: E402

TARGET = "llvm -num-cores=1"


@I.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor((16, 64), "float32"), w1: R.Tensor((64, 64), "float32"),
             b1: R.Tensor((64,), "float32"), w2: R.Tensor((64, 64), "float32"),
             w3: R.Tensor((64, 32), "float32")) -> R.Tensor((16, 32), "float32"):
        with R.dataflow():
            a = R.nn.relu(R.add(R.matmul(x, w1), b1))
            b = R.nn.relu(R.add(R.matmul(a, w2), b1))
            c = R.nn.relu(R.add(R.matmul(b, w2), b1))
            d = R.matmul(c, w3)
            R.output(d)
        return d


def mlp_inputs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(16, 64), (64, 64), (64,), (64, 64), (64, 32)]
    return [rng.uniform(-0.5, 0.5, s).astype("float32") for s in shapes]


def mlp_reference(x, w1, b1, w2, w3):
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    a = relu(x @ w1 + b1)
    b = relu(a @ w2 + b1)
    return relu(b @ w2 + b1) @ w3


class Recorder:
    """Records every PrimFunc relax.build asks the tuned-schedule hook about."""

    def __init__(self):
        self.asked = []

    @hookimpl
    def tvm_tir_tuned_schedule(self, func, target):
        self.asked.append(func)
        return None


def asked_by_build(mod, params=None):
    rec = Recorder()
    register_plugin(rec, "test.recorder")
    try:
        relax.build(mod, TARGET, params=params)
    finally:
        unregister_plugin("test.recorder")
    return rec.asked


def run(ex, inputs):
    vm = relax.VirtualMachine(ex, rt.cpu())
    return vm["main"](*[rt.tensor(a) for a in inputs]).numpy()


def test_extract_tasks_unique_kernels_with_call_counts():
    tasks = ms.extract_tasks(MLP, TARGET)
    assert [(t.task_name, t.weight) for t in tasks] == [("fused_matmul_add_relu", 3),
                                                        ("matmul1", 1)]
    assert all(isinstance(t.mod["main"], tir.PrimFunc) for t in tasks)
    assert str(tasks[0].target) == TARGET


@pytest.mark.parametrize("with_params", [False, True])
def test_extracted_kernels_are_what_build_schedules(with_params):
    inputs = mlp_inputs()
    params = {"w2": inputs[3], "w3": inputs[4]} if with_params else None
    tasks = ms.extract_tasks(MLP, TARGET, params)
    asked = [normalize_mod(f) for f in asked_by_build(MLP, params)]
    for task in tasks:
        assert any(structural_equal(task.mod, a) for a in asked), task.task_name
    # every kernel of the model build asked about is a task (packing functions split out of
    # kernels after scheduling are not)
    kernels = [a for a in asked if "layout_rewrite" not in a.script()]
    assert all(any(structural_equal(t.mod, a) for t in tasks) for a in kernels)
    if with_params:
        assert any("layout_free_buffers" in t.mod["main"].attrs for t in tasks)


@I.ir_module
class TwoCopies:
    @T.prim_func(private=True)
    def add_one(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        T.func_attr({"op_pattern": 8})  # opaque: not fused
        for i in range(8):
            with T.block("y"):
                vi = T.axis.spatial(8, i)
                y[vi] = x[vi] + T.float32(1)

    @T.prim_func(private=True)
    def add_one_again(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        T.func_attr({"op_pattern": 8})
        for i in range(8):
            with T.block("y"):
                vi = T.axis.spatial(8, i)
                y[vi] = x[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = TwoCopies
        with R.dataflow():
            a = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((8,), "float32"))
            b = R.call_tir(cls.add_one_again, (a,), out_sinfo=R.Tensor((8,), "float32"))
            c = R.call_tir(cls.add_one, (b,), out_sinfo=R.Tensor((8,), "float32"))
            R.output(c)
        return c


def test_structurally_equal_kernels_are_one_task():
    tasks = ms.extract_tasks(TwoCopies, TARGET)
    assert len(tasks) == 1
    assert tasks[0].weight == 3
    assert sorted(tasks[0].dispatched) == ["add_one", "add_one_again"]


def tiled_record(db, task, factor):
    sch = tir.Schedule(task.mod)
    block = [s.block.name_hint for s in sch.state.iter_srefs("main")
             if s.is_block and s.block.name_hint != "root"][0]
    i = sch.get_loops(sch.get_block(block))[0]
    n = int(sch.get(i).extent.value)
    t = sch.sample_perfect_tile(i, n=2, max_innermost_factor=64, decision=[n // factor, factor])
    sch.split(i, t)
    wl = db.commit_workload(task.mod)
    db.commit_tuning_record(TuningRecord(sch.trace, wl, TARGET, [1e-6], args_info(task.mod)))
    return sch


def test_build_under_applied_uses_the_record_and_defaults_elsewhere():
    tasks = ms.extract_tasks(MLP, TARGET)
    fused = tasks[0]
    db = MemoryDatabase()
    sch = tiled_record(db, fused, 4)
    with db.applied() as plugin:
        ex = relax.build(MLP, TARGET)
    assert len(plugin.tuned) == 1                        # matmul1 took the default rules
    tuned = plugin.tuned[0]
    assert structural_equal(normalize_mod(tuned)["main"].with_fields(attrs={}),
                            sch.mod["main"].with_fields(attrs={}))
    inputs = mlp_inputs()
    np.testing.assert_allclose(run(ex, inputs), mlp_reference(*inputs), rtol=1e-4, atol=1e-4)
    # without the context the same build asks and nothing answers
    with db.applied("llvm -num-cores=3") as other:
        relax.build(MLP, TARGET)
    assert other.tuned == []


def test_tune_relax_then_compile_relax(tmp_path, capsys):
    inputs = mlp_inputs()
    params = {"w3": inputs[4]}
    db = ms.tune_relax(MLP, params, TARGET, tmp_path, max_trials_global=8,
                       num_trials_per_iter=2, builder=FakeBuilder(),
                       runner=FakeRunner(time_fn=tile_time), cost_model=None,
                       strategy="replay-trace", space=MatmulSpace(), seed=0)
    assert len(db.workloads) == 2 and len(db) == 8
    out = capsys.readouterr().out
    assert "fused_matmul_add_relu" in out and "| 1 | matmul1 | 1 |" in out
    assert "estimated model latency" in out
    ex = ms.compile_relax(db, MLP, TARGET, params)
    np.testing.assert_allclose(run(ex, inputs[:4]), mlp_reference(*inputs), rtol=1e-4,
                               atol=1e-4)
    assert (tmp_path / "logs" / "task_00_fused_matmul_add_relu.log").exists()


def test_kernels_with_symbolic_shapes_are_not_tasks():
    from tvm.ir.module import IRModule

    @R.function
    def dyn(x: R.Tensor(("n", 64), "float32"), w: R.Tensor((64, 64), "float32"),
            v: R.Tensor((8, 64), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.matmul(v, w)
            R.output(y, z)
        return (y, z)

    tasks = ms.extract_tasks(IRModule({"main": dyn}), TARGET)
    assert [t.weight for t in tasks] == [1]
    assert args_info(tasks[0].mod)[0].shape == (8, 64)
