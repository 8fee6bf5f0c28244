"""RPCRunner: candidates measured on an RPC server over loopback (tvm.runtime.rpc), with the
hand-written kernels of test_runner (good, wrong, failing, crashing), through a tracker,
and a tiny matmul tuned for a few trials with every measurement taken over RPC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_runner import INFO, _check, _result, kernels  # noqa: F401 - kernels: a fixture
from tvm import te

import tvm.meta_schedule as ms
from tvm.meta_schedule.runner import RPCRunner
from tvm.runtime import rpc

KEY = "tuning-key"


@pytest.fixture
def server():
    with rpc.RPCServer(key=KEY) as srv:
        yield srv


def test_measures_checks_and_survives_bad_candidates(server, kernels):  # noqa: F811
    host, port = server.address
    with RPCRunner(host, port, key=KEY, number=2, repeat=3, min_repeat_ms=0) as runner:
        assert runner.describe().startswith("RPCRunner(rpc runner (127.0.0.1:")
        good = _result(runner, kernels, "add", _check())
        assert good.error_msg is None and len(good.run_secs) == 3
        assert all(0 < t < 0.01 for t in good.run_secs)
        wrong = _result(runner, kernels, "wrong", _check())
        assert wrong.run_secs is None and wrong.error_msg.startswith(
            "wrong result: argument 2 (C)")
        fails = _result(runner, kernels, "fails")
        assert fails.error_msg.startswith("the kernel failed during timing: rpc server "
                                          "127.0.0.1:") and "refused on purpose" in \
            fails.error_msg
        crash = _result(runner, kernels, "crash")
        assert crash.error_msg.startswith("the kernel crashed during timing") and \
            "SIGSEGV" in crash.error_msg
        missing = _result(runner, kernels, "nope")
        assert "has no function 'nope'" in missing.error_msg
        assert _result(runner, kernels, "add", _check()).run_secs  # and it goes on


def test_min_repeat_ms_grows_the_rounds_on_the_server(server, kernels):  # noqa: F811
    host, port = server.address
    with RPCRunner(host, port, key=KEY, number=1, repeat=2, min_repeat_ms=20) as runner:
        res = _result(runner, kernels, "add")
    assert len(res.run_secs) == 2 and max(res.run_secs) < 1e-3


def test_an_unreachable_server_or_a_wrong_key_is_a_failed_measurement(server,
                                                                      kernels):  # noqa: F811
    host, port = server.address
    res = _result(RPCRunner(host, port, key="wrong"), kernels, "add")
    assert res.error_msg.startswith("rpc failed during connecting") and "wrong one" in \
        res.error_msg
    free = rpc.RPCServer()
    addr = free.address
    free.stop()  # nothing listens there any more
    res = _result(RPCRunner(*addr), kernels, "add")
    assert res.error_msg.startswith("rpc failed during connecting: rpc: cannot connect")


def test_through_a_tracker(kernels):  # noqa: F811
    with rpc.Tracker() as tracker, \
            rpc.RPCServer(tracker=tracker.address, device_key="dev", key=KEY) as srv:
        assert srv._tracker.registered.wait(10)
        with RPCRunner(tracker=tracker.address, device_key="dev", key=KEY,
                       min_repeat_ms=0) as runner:
            assert _result(runner, kernels, "add", _check()).run_secs
        with RPCRunner(tracker=tracker.address, device_key="other", request_timeout=0.2,
                       min_repeat_ms=0) as runner:
            res = _result(runner, kernels, "add")
            assert "no server registered for device key 'other'" in res.error_msg


def _matmul(n: int = 32):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def test_tune_a_tiny_matmul_measuring_over_rpc(server, tmp_path):
    host, port = server.address
    with RPCRunner(host, port, key=KEY, number=1, repeat=2, min_repeat_ms=1) as runner:
        db = ms.tune_tir(_matmul(), "llvm -num-cores=1", tmp_path, max_trials_global=4,
                         num_trials_per_iter=2, runner=runner, cost_model=None,
                         strategy="replay-trace", seed=1, progress=False)
    records = db.get_all_tuning_records()
    assert len(records) == 4
    measured = [r for r in records if r.run_secs]
    assert len(measured) >= 3, [json.dumps(r.to_json())[:300] for r in records]
    assert all(len(r.run_secs) == 2 and all(t > 0 for t in r.run_secs) for r in measured)
    assert db.query_schedule(_matmul(), "llvm -num-cores=1") is not None
    assert (Path(tmp_path) / "logs").is_dir()


def test_tune_an_aarch64_matmul_on_an_emulated_device_over_rpc(tmp_path):
    """The cross path end to end: candidates built for aarch64 here, measured by an RPC
    server whose runner is qemu-aarch64 (the correctness check is left out for a cross
    target: the untuned kernel cannot run here)."""
    from tvm.runtime.runner import RunnerUnavailableError, create_runner

    target = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=1"
    qemu = create_runner("qemu", target=target)
    try:
        qemu.check_available()
        qemu.server_path()
    except RunnerUnavailableError as err:
        pytest.skip(str(err))
    with rpc.RPCServer(runner=qemu, key=KEY) as srv, \
            RPCRunner(*srv.address, key=KEY, number=1, repeat=2, min_repeat_ms=1) as runner:
        db = ms.tune_tir(_matmul(), target, tmp_path, max_trials_global=3,
                         num_trials_per_iter=3, runner=runner, cost_model=None,
                         strategy="replay-trace", seed=0, progress=False)
    records = db.get_all_tuning_records()
    assert len(records) == 3 and all(r.run_secs and len(r.run_secs) == 2 for r in records)
