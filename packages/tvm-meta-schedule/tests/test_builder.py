"""LocalBuilder (worker processes: errors, crashes, timeouts, pinning, Ctrl-C) and the
build -> run path of real kernels through LocalRunner."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

import tvm  # noqa: E402
from tvm import te  # noqa: E402
from tvm.ir.module import IRModule  # noqa: E402
from tvm.tir.build import apply_default_schedule  # noqa: E402
from tvm.meta_schedule.arg_info import args_info, random_inputs  # noqa: E402
from tvm.meta_schedule.builder import BuilderInput, LocalBuilder, default_build  # noqa: E402
from tvm.meta_schedule.runner import CorrectnessCheck, LocalRunner, RunnerInput  # noqa: E402
from tvm.meta_schedule.runner.utils import build_cores, measure_cores  # noqa: E402
from child_processes import children  # noqa: E402

# ---------------------------------------------------------------- f_build for the workers
# (module level: the spawned workers import this module to find them)


def failing_build(mod, target):
    if mod["main"].attrs.get("test.fail"):
        raise ValueError("this kernel is marked to fail")
    return default_build(mod, target)


def crashing_build(mod, target):
    if mod["main"].attrs.get("test.fail"):
        os.kill(os.getpid(), signal.SIGSEGV)
    return default_build(mod, target)


def aborting_build(mod, target):
    os.abort()


def hanging_build(mod, target):
    if mod["main"].attrs.get("test.fail"):
        time.sleep(600)
    return default_build(mod, target)


def affinity_build(mod, target):
    raise RuntimeError(f"affinity={sorted(os.sched_getaffinity(0))}")


# ---------------------------------------------------------------- kernels


def add_mod(n: int = 64) -> IRModule:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.compute((n, n), lambda i, j: A[i, j] + B[i, j], name="C")
    return IRModule({"main": te.create_prim_func([A, B, C])})


def matmul_mod(n: int = 64) -> IRModule:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return IRModule({"main": te.create_prim_func([A, B, C])})


def scheduled(mod: IRModule) -> IRModule:
    """``mod`` scheduled by the default rules, as a tuning candidate would be."""
    return apply_default_schedule(mod, "llvm")


def marked(mod: IRModule) -> IRModule:
    return mod.with_functions({mod.get_global_var("main"): mod["main"].with_attr("test.fail",
                                                                                  True)})


@pytest.fixture(scope="module")
def builder():
    with LocalBuilder(timeout_sec=60) as b:
        yield b


# ---------------------------------------------------------------- tests


def test_build_and_run_add_and_matmul(builder):
    mods = [scheduled(add_mod()), scheduled(matmul_mod())]
    results = builder.build([BuilderInput(m, "llvm") for m in mods])
    assert [r.error_msg for r in results] == [None, None]
    assert all(os.path.isfile(r.artifact_path) for r in results)
    assert all(r.artifact_path.startswith(builder.work_dir) for r in results)
    with LocalRunner(number=2, repeat=3, min_repeat_ms=1) as runner:
        inputs = []
        for mod, res in zip(mods, results):
            info = args_info(mod)
            ins = random_inputs(info, seed=1)
            want = ins[0] + ins[1] if mod is mods[0] else ins[0] @ ins[1]
            check = CorrectnessCheck(ins, [ins[0], ins[1], want])
            inputs.append(RunnerInput(res.artifact_path, "cpu", info, check))
        wrong = CorrectnessCheck(inputs[0].check.inputs, inputs[1].check.expected)
        inputs.append(RunnerInput(results[0].artifact_path, "cpu", inputs[0].args_info, wrong))
        add, mm, bad = [f.result() for f in runner.run(inputs)]
    for res in (add, mm):
        assert res.error_msg is None
        assert len(res.run_secs) == 3 and all(t > 0 for t in res.run_secs)
    assert min(mm.run_secs) > min(add.run_secs)  # 64^3 multiply-adds vs 64^2 adds
    assert bad.run_secs is None and bad.error_msg.startswith("wrong result: argument 2")


def test_the_builder_builds_what_it_is_given(builder):
    """An unscheduled kernel is built as it is: the default rules (which vectorize this
    add) are not applied on top of the candidate's schedule."""
    mod = add_mod()
    (res,) = builder.build([BuilderInput(mod, "llvm")])
    assert res.error_msg is None
    assert "x float>" not in default_build(mod, "llvm").get_source("ll-raw")
    assert "x float>" in tvm.tir.build(mod, "llvm").get_source("ll-raw")
    assert "x float>" in default_build(scheduled(mod), "llvm").get_source("ll-raw")


def test_build_error_is_a_result_and_the_next_input_builds():
    with LocalBuilder(timeout_sec=60, f_build=failing_build) as b:
        bad, good = b.build([BuilderInput(marked(add_mod()), "llvm"),
                             BuilderInput(add_mod(), "llvm")])
        assert good.error_msg is None and os.path.isfile(good.artifact_path)
    assert not os.path.exists(good.artifact_path)  # close() removes the artifacts
    assert bad.artifact_path is None
    assert bad.error_msg.startswith("build failed: ValueError: this kernel is marked to fail")


def test_invalid_inputs_are_results(builder):
    bad_target, not_mod, good = builder.build([
        BuilderInput(add_mod(), "nosuchtarget"), BuilderInput("text", "llvm"),
        BuilderInput(add_mod(), "llvm")])
    assert "invalid input" in bad_target.error_msg and "nosuchtarget" in bad_target.error_msg
    assert "must be an IRModule" in not_mod.error_msg
    assert good.error_msg is None
    with pytest.raises(TypeError):
        builder.build(BuilderInput(add_mod(), "llvm"))


def test_crashing_worker_is_a_result_and_replaced():
    with LocalBuilder(timeout_sec=60, f_build=crashing_build, max_workers=2) as b:
        results = b.build([BuilderInput(add_mod(), "llvm"), BuilderInput(marked(add_mod()),
                                                                         "llvm"),
                           BuilderInput(add_mod(32), "llvm")])
        assert results[1].artifact_path is None
        assert "SIGSEGV" in results[1].error_msg and "died" in results[1].error_msg
        assert results[0].error_msg is None and results[2].error_msg is None
        (again,) = b.build([BuilderInput(add_mod(), "llvm")])
        assert again.error_msg is None


def test_aborting_worker():
    with LocalBuilder(timeout_sec=60, f_build=aborting_build) as b:
        (res,) = b.build([BuilderInput(add_mod(), "llvm")])
    assert "SIGABRT" in res.error_msg


def test_build_timeout_stops_the_worker():
    with LocalBuilder(timeout_sec=5, f_build=hanging_build, max_workers=1) as b:
        start = time.monotonic()
        hung, good = b.build([BuilderInput(marked(add_mod()), "llvm"),
                              BuilderInput(add_mod(), "llvm")])
        assert time.monotonic() - start < 30
    assert hung.error_msg.startswith("build timed out after 5 s")
    assert good.error_msg is None


def test_workers_avoid_the_measuring_core():
    avoid = measure_cores()
    with LocalBuilder(f_build=affinity_build, avoid_cores=avoid) as b:
        (res,) = b.build([BuilderInput(add_mod(), "llvm")])
    assert f"affinity={build_cores(avoid)}" in res.error_msg
    if len(os.sched_getaffinity(0)) > 1:
        assert not set(avoid) & set(build_cores(avoid))


def test_ctrl_c_stops_every_worker(sigint_raises):
    before = children()
    b = LocalBuilder(timeout_sec=60, f_build=hanging_build, max_workers=2)
    b._start_workers(2)  # workers are up before the interrupt
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        b.build([BuilderInput(marked(add_mod()), "llvm")] * 2)
    timer.join()
    assert children() - before == set()
    (res,) = b.build([BuilderInput(add_mod(), "llvm")])  # usable again
    assert res.error_msg is None
    work_dir = b.work_dir
    b.close()
    assert not os.path.exists(work_dir)
    assert children() - before == set()
    with pytest.raises(RuntimeError, match="after close"):
        b.build([])


def test_multithreaded_kernel_runs_on_its_cores(builder):
    mod = matmul_mod()
    target = "llvm -num-cores=2"
    (res,) = builder.build([BuilderInput(apply_default_schedule(mod, target),
                                         target)])
    assert res.error_msg is None
    threads = min(2, len(os.sched_getaffinity(0)))
    info = args_info(mod)
    ins = random_inputs(info)
    check = CorrectnessCheck(ins, [ins[0], ins[1], ins[0] @ ins[1]])
    with LocalRunner(number=1, repeat=2, min_repeat_ms=0) as runner:
        (fut,) = runner.run([RunnerInput(res.artifact_path, "cpu", info, check)])
        out = fut.result()
        assert out.error_msg is None and len(out.run_secs) == 2
        assert runner._session_threads == threads
        assert os.sched_getaffinity(runner._session._proc.pid) == set(measure_cores(threads))
    np.testing.assert_allclose(check.expected[2], ins[0] @ ins[1])


def test_f_build_that_cannot_be_sent_is_a_result():
    with LocalBuilder(f_build=lambda mod, target: None) as b:
        (res,) = b.build([BuilderInput(add_mod(), "llvm")])
    assert "module-level functions" in res.error_msg


def test_a_given_work_dir_is_kept(tmp_path):
    folder = tmp_path / "builds"
    with LocalBuilder(work_dir=str(folder)) as b:
        (res,) = b.build([BuilderInput(add_mod(), "llvm")])
        assert res.artifact_path.startswith(str(folder))
    assert folder.is_dir() and os.path.isfile(res.artifact_path)
