"""LocalRunner: timing, isolation (crash, hang), the correctness check, pinning, Ctrl-C.

The misbehaving kernels are hand-written C with the kernel ABI (docs/abi.md), compiled
with the system C compiler; one library holds them all, chosen by ``func_name``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from tvm.meta_schedule.arg_info import TensorInfo, random_inputs
from tvm.meta_schedule.runner import CorrectnessCheck, LocalRunner, RunnerInput, RunnerResult
from tvm.meta_schedule.runner.utils import compare_results, measure_cores
from child_processes import children  # noqa: E402

N = 256
INFO = [TensorInfo("float32", (N,))] * 3

KERNELS_C = r"""
#include <stdint.h>
typedef union { int64_t v_int64; double v_float64; void *v_handle; } TVMValue;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct { void *data; DLDevice device; int32_t ndim; DLDataType dtype;
                 int64_t *shape, *strides; uint64_t byte_offset; } DLTensor;
void (*__TVMAPISetLastError)(const char *msg) = 0;
const char __tvm_module_meta[] = @META@;
#define F(name) int32_t name(TVMValue *a, int32_t *c, int32_t n, TVMValue *r, int32_t *rc, void *x)
#define T(i) ((float *)((DLTensor *)a[i].v_handle)->data)
#define LEN (((DLTensor *)a[0].v_handle)->shape[0])
F(add) { for (int64_t i = 0; i < LEN; ++i) T(2)[i] = T(0)[i] + T(1)[i]; return 0; }
F(wrong) { for (int64_t i = 0; i < LEN; ++i) T(2)[i] = T(0)[i] - T(1)[i]; return 0; }
F(crash) { *(volatile int *)0 = 1; return 0; }
F(hang) { volatile int spin = 1; while (spin) {} return 0; }
F(fails) { if (__TVMAPISetLastError) __TVMAPISetLastError("fails: refused on purpose");
           return -1; }
"""
NAMES = ["add", "wrong", "crash", "hang", "fails"]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    params = [{"name": x, "kind": "tensor", "dtype": "float32", "shape": ["n"]} for x in "ABC"]
    meta = {"version": 1, "target": "c",
            "functions": [{"name": n, "symbol": n, "params": params} for n in NAMES]}
    literal = '"' + json.dumps(meta).replace("\\", "\\\\").replace('"', '\\"') + '"'
    folder = tmp_path_factory.mktemp("kernels")
    src = folder / "kernels.c"
    src.write_text(KERNELS_C.replace("@META@", literal))
    out = folder / "kernels.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)], check=True)
    try:  # a runtime that checks seals loads only what tvm wrote, or what is sealed
        from tvm.runtime.file_seal import seal_file
    except ImportError:
        pass
    else:
        seal_file(out)
    return str(out)


def _check(ins=None):
    ins = ins if ins is not None else random_inputs(INFO, seed=3)
    return CorrectnessCheck(ins, [ins[0], ins[1], ins[0] + ins[1]])


def _result(runner, path, func, check=None) -> RunnerResult:
    (fut,) = runner.run([RunnerInput(path, "cpu", INFO, check, func_name=func)])
    assert fut.done()
    return fut.result()


def test_times_and_checks_a_good_kernel(kernels):
    with LocalRunner(number=2, repeat=4, min_repeat_ms=0) as runner:
        res = _result(runner, kernels, "add", _check())
    assert res.error_msg is None
    assert len(res.run_secs) == 4 and all(0 < t < 0.01 for t in res.run_secs)


def test_min_repeat_ms_grows_the_rounds(kernels):
    with LocalRunner(number=1, repeat=2, min_repeat_ms=30) as runner:
        _result(runner, kernels, "add")  # starts the server
        start = time.monotonic()
        res = _result(runner, kernels, "add")
        elapsed = time.monotonic() - start
    assert len(res.run_secs) == 2
    # a calibration round and two timed rounds of >= 30 ms each, for a kernel of ~100 ns
    assert elapsed >= 0.09
    assert max(res.run_secs) < 1e-3


def test_cache_flush_and_cooldown_still_measure(kernels):
    with LocalRunner(number=2, repeat=3, min_repeat_ms=1, cooldown_sec=0.02,
                     enable_cpu_cache_flush=True) as runner:
        start = time.monotonic()
        res = _result(runner, kernels, "add", _check())
        assert time.monotonic() - start >= 0.04  # two cooldowns
    assert res.error_msg is None and len(res.run_secs) == 3 and min(res.run_secs) > 0


def test_wrong_result_is_rejected(kernels):
    with LocalRunner(number=1, repeat=1, min_repeat_ms=0) as runner:
        res = _result(runner, kernels, "wrong", _check())
        assert res.run_secs is None
        assert res.error_msg.startswith("wrong result: argument 2 (C)")
        assert "max abs diff" in res.error_msg
        # the same runner then accepts the right kernel
        assert _result(runner, kernels, "add", _check()).run_secs


def test_nan_expected_where_the_kernel_gives_nan(kernels):
    ins = random_inputs(INFO, seed=4)
    ins[0][:5] = np.nan
    with LocalRunner(number=1, repeat=1, min_repeat_ms=0) as runner:
        assert _result(runner, kernels, "add", _check(ins)).error_msg is None


def test_segfault_fails_and_the_runner_keeps_working(kernels):
    with LocalRunner(number=1, repeat=2, min_repeat_ms=0) as runner:
        res = _result(runner, kernels, "crash")
        assert res.run_secs is None
        assert "crashed" in res.error_msg and "SIGSEGV" in res.error_msg
        assert len(_result(runner, kernels, "add").run_secs) == 2


def test_hang_times_out_and_the_runner_keeps_working(kernels):
    with LocalRunner(timeout_sec=0.5, number=1, repeat=1, min_repeat_ms=0) as runner:
        start = time.monotonic()
        res = _result(runner, kernels, "hang")
        assert time.monotonic() - start < 5
        assert res.run_secs is None and res.error_msg.startswith("timeout")
        assert _result(runner, kernels, "add", _check()).run_secs


def test_kernel_error_missing_function_and_files(kernels, tmp_path):
    with LocalRunner(number=1, repeat=1, min_repeat_ms=0) as runner:
        res = _result(runner, kernels, "fails")
        assert "the kernel failed" in res.error_msg and "refused on purpose" in res.error_msg
        assert "no function 'nope'" in _result(runner, kernels, "nope").error_msg
        assert "no built artifact" in _result(runner, str(tmp_path / "x.so"), "add").error_msg
        junk = tmp_path / "junk.so"
        junk.write_bytes(b"not a library")
        assert "cannot load" in _result(runner, str(junk), "add").error_msg
        (gpu,) = runner.run([RunnerInput(kernels, "cuda", INFO)])
        assert "CPU only" in gpu.result().error_msg
        assert _result(runner, kernels, "add").run_secs


def test_bad_check_is_a_result_not_an_exception(kernels):
    ins = random_inputs(INFO)
    bad = CorrectnessCheck(ins[:2], ins[:2])  # two inputs for a kernel of three arguments
    with LocalRunner(number=1, repeat=1, min_repeat_ms=0) as runner:
        assert "3 arguments" in _result(runner, kernels, "add", bad).error_msg


def test_measuring_process_is_pinned(kernels):
    core = measure_cores()[0]
    with LocalRunner(number=1, repeat=1, min_repeat_ms=0) as runner:
        _result(runner, kernels, "add")
        pid = runner._session._proc.pid
        assert os.sched_getaffinity(pid) == {core}
    assert os.sched_getaffinity(0) != {core} or len(os.sched_getaffinity(0)) == 1


def test_ctrl_c_stops_the_measuring_process(kernels, sigint_raises):
    before = children()
    runner = LocalRunner(timeout_sec=60, number=1, repeat=1, min_repeat_ms=0)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.run([RunnerInput(kernels, "cpu", INFO, func_name="hang")])
    timer.join()
    assert time.monotonic() - start < 10
    assert children() - before == set()
    # and the runner can be used again
    assert _result(runner, kernels, "add").run_secs
    runner.close()
    assert children() - before == set()


def test_options_are_checked():
    with pytest.raises(ValueError, match="repeat"):
        LocalRunner(repeat=0)
    with pytest.raises(ValueError, match="timeout_sec"):
        LocalRunner(timeout_sec=-1)
    with pytest.raises(ValueError, match="core"):
        LocalRunner(core=10_000)
    with pytest.raises(TypeError):
        LocalRunner().run("not a list")


def test_compare_results_messages():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    assert compare_results({0: a}, [a.copy()], 1e-5, 1e-5) is None
    b = a.copy()
    b[1, 2] += 1
    msg = compare_results({0: a}, [b], 1e-5, 1e-5, ["X"])
    assert "argument 0 (X)" in msg and "(1, 2)" in msg and "max abs diff 1" in msg
    c = a.copy()
    c[0, 0] = np.nan
    assert "1 of 6" in compare_results({0: c}, [a], 1e-5, 1e-5)
    assert compare_results({0: c}, [c.copy()], 1e-5, 1e-5) is None
    i = np.arange(4, dtype="int32")
    assert compare_results({0: i}, [i + 1], 0, 0).startswith("wrong result")
    assert "shape" in compare_results({0: a}, [a.ravel()], 1e-5, 1e-5)


def test_without_ray_the_error_names_the_extra(monkeypatch):
    import sys

    from tvm.meta_schedule.builder import RayBuilder
    from tvm.meta_schedule.runner import RayRunner

    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    for make in (RayRunner, RayBuilder):
        with pytest.raises(ImportError, match=r"pip install 'tvm-meta-schedule\[ray\]'"):
            make()


def test_make_check_from_a_reference_kernel(kernels):
    with LocalRunner(number=1, repeat=1, min_repeat_ms=0) as runner:
        check = runner.make_check(kernels, INFO, func_name="add", seed=5)
        a, b, _ = check.inputs
        np.testing.assert_array_equal(check.expected[2], a + b)
        assert _result(runner, kernels, "add", check).error_msg is None
        assert _result(runner, kernels, "wrong", check).error_msg.startswith("wrong result")
        with pytest.raises(RuntimeError, match="reference kernel 'crash'"):
            runner.make_check(kernels, INFO, func_name="crash")
        assert _result(runner, kernels, "add", check).error_msg is None


def test_the_child_ends_itself_when_a_call_outlives_the_timeout(kernels, monkeypatch):
    """The timer's watchdog: a hanging child dies even if its parent never stops it
    (e.g. a Ray worker killed meanwhile); here the parent's timeout is 20 s, the watchdog's
    1 s."""
    from tvm.meta_schedule.runner import local_runner

    monkeypatch.setattr(local_runner, "_WATCHDOG_GRACE_SEC", -19.0)
    with LocalRunner(timeout_sec=20, number=1, repeat=1, min_repeat_ms=0) as runner:
        start = time.monotonic()
        res = _result(runner, kernels, "hang")
        assert time.monotonic() - start < 10
        assert "SIGALRM" in res.error_msg
        assert _result(runner, kernels, "add").run_secs
