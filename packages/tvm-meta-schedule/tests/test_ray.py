"""RayBuilder + RayRunner on a local Ray cluster (2 CPUs, one measuring resource)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("tvm.target.llvm")

from tvm import tir  # noqa: E402
from tvm.meta_schedule.arg_info import TensorInfo, args_info, random_inputs  # noqa: E402
from tvm.meta_schedule.builder import BuilderInput, RayBuilder  # noqa: E402
from tvm.meta_schedule.runner import CorrectnessCheck, RayRunner, RunnerInput  # noqa: E402

from test_builder import add_mod, matmul_mod, scheduled  # noqa: E402
import test_runner  # noqa: E402

kernels = test_runner.kernels  # the fixture: misbehaving C kernels


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        pytest.skip("this process is already connected to a Ray cluster")
    ray.init(num_cpus=2, include_dashboard=False, resources={"tvm_measure": 1},
             configure_logging=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def gpu_bound(mod):
    """A kernel bound to GPU threads: the llvm codegen refuses it (a real build error)."""
    sch = tir.Schedule(mod)
    sch.bind(sch.get_loops(sch.get_block("C"))[0], "blockIdx.x")
    return sch.mod


def test_build_and_run_on_ray(cluster):
    mods = [scheduled(add_mod()), scheduled(matmul_mod()), gpu_bound(add_mod())]
    with RayBuilder(timeout_sec=60) as builder:
        add, mm, bad = builder.build([BuilderInput(m, "llvm") for m in mods])
        assert add.error_msg is None and mm.error_msg is None
        assert add.artifact_path.startswith(builder.work_dir)
        assert bad.artifact_path is None and "bound to a GPU thread" in bad.error_msg
        runner = RayRunner(number=2, repeat=3, min_repeat_ms=1)
        inputs = []
        for mod, res, op in ((mods[0], add, "add"), (mods[1], mm, "matmul")):
            info = args_info(mod)
            ins = random_inputs(info, seed=2)
            want = ins[0] + ins[1] if op == "add" else ins[0] @ ins[1]
            inputs.append(RunnerInput(res.artifact_path, "cpu", info,
                                      CorrectnessCheck(ins, [ins[0], ins[1], want])))
        wrong = CorrectnessCheck(inputs[0].check.inputs, inputs[1].check.expected)
        inputs.append(RunnerInput(add.artifact_path, "cpu", inputs[0].args_info, wrong))
        futures = runner.run(inputs)
        results = [f.result() for f in futures]
        assert all(f.done() for f in futures)
    for res in results[:2]:
        assert res.error_msg is None
        assert len(res.run_secs) == 3 and all(t > 0 for t in res.run_secs)
    assert min(results[1].run_secs) > min(results[0].run_secs)
    assert results[2].run_secs is None
    assert results[2].error_msg.startswith("wrong result: argument 2")


def test_a_crash_on_the_measuring_node_is_a_result(cluster, kernels):
    info = [TensorInfo("float32", (256,))] * 3
    runner = RayRunner(number=1, repeat=2, min_repeat_ms=0, node_ip=ray.util.get_node_ip_address())
    crash, good = [f.result() for f in runner.run([
        RunnerInput(kernels, "cpu", info, func_name="crash"),
        RunnerInput(kernels, "cpu", info, func_name="add")])]
    assert "crashed" in crash.error_msg and "SIGSEGV" in crash.error_msg
    assert good.error_msg is None and len(good.run_secs) == 2


def test_no_measuring_node_is_a_clear_result(cluster, kernels):
    runner = RayRunner(resources={"no_such_resource": 1})
    (fut,) = runner.run([RunnerInput(kernels, "cpu", [TensorInfo("float32", (4,))] * 3)])
    assert fut.done()
    assert "no_such_resource" in fut.result().error_msg
    with pytest.raises(ValueError, match="not both"):
        RayRunner(resources={"a": 1}, node_ip="1.2.3.4")


def _busy_servers() -> set[int]:
    """Runner servers under this process (the local cluster's workers are its descendants)
    that are running (state R: the hanging kernel spins)."""
    parent, state, name = {}, {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parent[int(pid)], state[int(pid)] = int(fields[1]), fields[0]
        name[int(pid)] = stat[stat.index("(") + 1:stat.rindex(")")]
    me, out = os.getpid(), set()
    for pid in parent:
        if not name[pid].startswith("tvm-runner-serv") or state[pid] != "R":
            continue
        p = pid
        while p > 1 and p != me:
            p = parent.get(p, 0)
        if p == me:
            out.add(pid)
    return out


def test_ctrl_c_cancels_the_measurement_on_the_node(cluster, kernels, sigint_raises):
    info = [TensorInfo("float32", (256,))] * 3
    runner = RayRunner(timeout_sec=60, number=1, repeat=1, min_repeat_ms=0)
    (fut,) = runner.run([RunnerInput(kernels, "cpu", info, func_name="hang")])
    deadline = time.monotonic() + 60
    while not _busy_servers():
        assert time.monotonic() < deadline, "the hanging kernel never started"
        time.sleep(0.1)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        fut.result()
    timer.join()
    deadline = time.monotonic() + 10
    while _busy_servers():  # the node's runner killed its child at once
        assert time.monotonic() < deadline, "the hanging kernel still runs"
        time.sleep(0.1)
    (good,) = runner.run([RunnerInput(kernels, "cpu", info, func_name="add")])
    assert good.result().run_secs


def test_tune_a_kernel_through_ray(cluster, tmp_path):
    """The whole loop with Ray's builder and runner: tune_tir measures on the cluster, the
    records land in the database, and the best one replays to a correct kernel."""
    import numpy as np
    from tvm import meta_schedule as ms

    mod = matmul_mod()
    with RayBuilder(timeout_sec=120) as builder:
        db = ms.tune_tir(mod, "llvm -num-cores=1", tmp_path / "work", max_trials_global=6,
                         num_trials_per_iter=3, builder=builder,
                         runner=RayRunner(number=1, repeat=2, min_repeat_ms=1),
                         cost_model="random", seed=0)
    records = db.get_all_tuning_records()
    assert len(records) >= 3 and any(r.run_secs for r in records)
    sch = db.query_schedule(mod, "llvm -num-cores=1")
    lib = tir.build(sch.mod["main"], target="llvm")
    a, b, c = random_inputs(args_info(mod), seed=1)
    lib["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
