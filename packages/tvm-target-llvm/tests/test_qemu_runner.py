"""Cross-compiled kernels executed under qemu-user through the ``qemu`` runner, compared
with the same kernels built for this machine.

K1-K5 are the kernels of ``benchmarks/kernels.py`` (matmul, conv2d, matmul + bias, depthwise
conv2d, softmax; the te definitions of ``schedule_workloads``) at smaller shapes, so that each runs in well under a second under
emulation.  Each is built with the default CPU schedules for aarch64 (+neon) and riscv64
(+v; the code does not depend on the vector length, so one build runs at vlen=128 and
vlen=256; and +v,+zvl256b, whose rules assume 256-bit vectors, at vlen=256), exported by the triple's cross compiler and run by the C runner server under
qemu; the host build runs through the local runner.

Needs qemu-user and the GNU cross toolchains (Debian: qemu-user, gcc-aarch64-linux-gnu,
gcc-riscv64-linux-gnu, libc6-dev-arm64-cross, libc6-dev-riscv64-cross).  Where they are
missing the tests skip; CI installs them and forbids skips.
"""

from __future__ import annotations

import numpy as np
import pytest
import schedule_workloads as wl
from tvm import tir
from tvm.runtime.error import KernelError, ModuleLoadError
from tvm.runtime.runner import (
    LocalRunner,
    RunnerError,
    RunnerUnavailableError,
    create_runner,
)
from tvm.target.llvm.qemu import QemuRunner, qemu_arch

TARGETS = {
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon",
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mattr=+v",
    # a board promising VLEN >= 256: the CPU rules use 32-byte vectors, qemu runs vlen=256
    "riscv64-zvl256b": "llvm -mtriple=riscv64-linux-gnu -mattr=+v,+zvl256b",
    # a board (4x Cortex-A72): a cross target parallelizes only with a core count
    "raspberry-pi-4": "raspberry-pi-4",
}
#: (id, target key, runner options)
CONFIGS = [
    ("aarch64-neon", "aarch64", {}),
    ("riscv64-v-vlen128", "riscv64", {"vlen": 128}),
    ("riscv64-v-vlen256", "riscv64", {"vlen": 256}),
    ("riscv64-zvl256b", "riscv64-zvl256b", {}),
]


# one xdist worker builds each kernel once per triple and runs them all
pytestmark = pytest.mark.xdist_group("qemu_kernels")


def qemu_runner(key: str, **options) -> QemuRunner:
    """The qemu runner for ``TARGETS[key]``; skips where qemu or the cross toolchain is
    missing (never in CI, which installs them and forbids skips)."""
    options.setdefault("timeout", 180.0)  # a hang fails the test in minutes, not ten
    runner = create_runner("qemu", target=TARGETS[key], **options)
    try:
        runner.check_available()
        runner.server_path()
    except RunnerUnavailableError as err:
        pytest.skip(str(err))
    return runner


# ------------------------------------------------------------------ K1-K5, smaller shapes

#: kernel -> (PrimFunc factory, argument shapes; the last argument is the output)
KERNELS = {
    "K1": (lambda: wl.matmul(128, 128, 128), [(128, 128), (128, 128), (128, 128)]),
    "K2": (lambda: wl.conv2d_nchw(1, 32, 28, 28, 32),
           [(1, 32, 28, 28), (32, 32, 3, 3), (1, 32, 28, 28)]),
    "K3": (lambda: wl.matmul(64, 256, 128, bias=True), [(64, 128), (128, 256), (256,), (64, 256)]),
    "K4": (lambda: wl.conv2d_nchw(1, 64, 28, 28, 64, groups=64),
           [(1, 64, 28, 28), (64, 1, 3, 3), (1, 64, 28, 28)]),
    "K5": (lambda: wl.softmax(128, 512), [(128, 512), (128, 512)]),
}


def _inputs(kernel: str) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    shapes = KERNELS[kernel][1]
    return [rng.standard_normal(s).astype("float32") for s in shapes[:-1]] + [
        np.zeros(shapes[-1], "float32")]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """``(kernel, target key or "host") -> (path, function name)``, built on first use."""
    folder = tmp_path_factory.mktemp("qemu_kernels")
    built: dict[tuple[str, str], tuple[str, str]] = {}

    def get(kernel: str, key: str) -> tuple[str, str]:
        if (kernel, key) not in built:
            target = "llvm" if key == "host" else TARGETS[key]
            mod = tir.build(KERNELS[kernel][0](), target)
            (name,) = mod.function_names
            path = str(folder / f"{kernel}_{key}.so")
            mod.export_library(path)
            built[kernel, key] = (path, name)
        return built[kernel, key]

    return get


@pytest.fixture(scope="module")
def host_results(libraries):
    """The host build's output of each kernel (through the local runner)."""
    cache: dict[str, np.ndarray] = {}

    def get(kernel: str) -> np.ndarray:
        if kernel not in cache:
            path, name = libraries(kernel, "host")
            cache[kernel] = LocalRunner().run(path, name, _inputs(kernel)).output(-1)
        return cache[kernel]

    return get


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("config", [c[0] for c in CONFIGS])
def test_kernel_under_qemu_matches_the_host_build(kernel, config, libraries, host_results):
    _, key, options = next(c for c in CONFIGS if c[0] == config)
    runner = qemu_runner(key, **options)
    path, name = libraries(kernel, key)
    args = _inputs(kernel)
    result = runner.run(path, name, args, outputs=[-1], repeat=1)
    expected = host_results(kernel)
    assert result.output(-1).shape == expected.shape
    np.testing.assert_allclose(result.output(-1), expected, rtol=1e-4,
                               atol=1e-4 * max(1.0, float(np.abs(expected).max())))
    assert len(result.times) == 1 and result.times[0] > 0


def test_the_server_runs_emulated_and_sessions_keep_modules(libraries):
    for key, machine in (("aarch64", "aarch64"), ("riscv64", "riscv64")):
        runner = qemu_runner(key, **({"vlen": 256} if key == "riscv64" else {}))
        path, name = libraries("K5", key)
        with runner.session() as s:
            assert s.machine == machine  # uname as the emulated code sees it
            mod = s.load_module(path)
            assert mod.function_names == [name] and mod.target.startswith("llvm")
            x = _inputs("K5")
            mod[name](*x)  # in place, as a local kernel
            np.testing.assert_allclose(x[-1].sum(axis=1), 1.0, rtol=1e-5)
            assert s.load_module(path) is mod


def test_parallel_kernels_under_qemu_on_two_threads(libraries, host_results):
    """The server's parallel launch (pthreads) under emulation: the result does not change."""
    runner = qemu_runner("raspberry-pi-4", num_threads=2)
    path, name = libraries("K2", "raspberry-pi-4")
    ir = tir.build(KERNELS["K2"][0](), TARGETS["raspberry-pi-4"]).get_source("ll")
    assert ir.count("@__TVMBackendParallelLaunch") > 1  # defined, and loaded to launch
    with runner.session() as s:
        one = s.run(path, name, _inputs("K2"), outputs=[-1]).output(-1)
        s.set_num_threads(1)
        np.testing.assert_array_equal(s.run(path, name, _inputs("K2")).output(-1), one)
    np.testing.assert_allclose(one, host_results("K2"), rtol=1e-4, atol=1e-3)


def test_a_library_of_another_architecture_is_refused(libraries):
    runner = qemu_runner("aarch64")
    host_path, _ = libraries("K5", "host")
    with runner.session() as s:
        with pytest.raises(ModuleLoadError, match=r"qemu runner \(aarch64-linux-gnu, -cpu max\): "
                                                  r"cannot load the library"):
            s.load_module(host_path)
        assert s.alive


def test_kernel_checks_under_qemu_name_the_runner_and_the_argument(libraries):
    runner = qemu_runner("aarch64")
    path, name = libraries("K1", "aarch64")
    args = _inputs("K1")
    args[1] = np.zeros((127, 128), "float32")
    with pytest.raises(KernelError, match=r"^qemu runner \(aarch64-linux-gnu, -cpu max\): "
                                          rf"{name}: argument B has shape\[0\] = 127, "
                                          "expected 128"):
        runner.run(path, name, args)


def test_qemu_options_follow_the_target():
    rv = QemuRunner(TARGETS["riscv64"])
    assert rv.cpu == "rv64,v=true,vlen=128" and rv.launcher[0] == "qemu-riscv64"
    assert QemuRunner(TARGETS["riscv64"], vlen=256).cpu == "rv64,v=true,vlen=256"
    assert QemuRunner("llvm -mtriple=riscv64-linux-gnu").cpu == "rv64"
    zvl = "llvm -mtriple=riscv64-linux-gnu -mattr=+v,+zvl256b"
    assert QemuRunner(zvl).cpu == "rv64,v=true,vlen=256"
    assert QemuRunner(zvl, vlen=512).cpu == "rv64,v=true,vlen=512"
    with pytest.raises(ValueError, match=r"needs VLEN >= 256 \(\+zvl256b\), vlen=128"):
        QemuRunner(zvl, vlen=128)
    a64 = QemuRunner(TARGETS["aarch64"], cpu="cortex-a72")
    assert a64.cpu == "cortex-a72" and a64.launcher[0] == "qemu-aarch64"
    assert "-cpu" in a64.launcher and a64.describe() == \
        "qemu runner (aarch64-linux-gnu, -cpu cortex-a72)"
    with pytest.raises(ValueError, match="vlen= applies to riscv64 targets"):
        QemuRunner(TARGETS["aarch64"], vlen=128)
    with pytest.raises(ValueError, match="vlen= needs a riscv64 target with \\+v"):
        QemuRunner("llvm -mtriple=riscv64-linux-gnu", vlen=128)
    with pytest.raises(TypeError, match="needs target="):
        QemuRunner()
    assert qemu_arch("aarch64-unknown-linux-gnu") == "aarch64"
    with pytest.raises(ValueError, match="no qemu-user emulator known"):
        qemu_arch("wasm32-unknown-unknown")


def test_missing_qemu_is_a_clear_error():
    runner = QemuRunner(TARGETS["riscv64"], qemu="qemu-riscv64-not-installed")
    with pytest.raises(RunnerUnavailableError,
                       match=r"qemu runner \(riscv64-linux-gnu, -cpu rv64,v=true,vlen=128\): "
                             r"the emulator 'qemu-riscv64-not-installed' is not on PATH; "
                             r"install qemu-user"):
        runner.run("unused.so", "f", [])
    missing_cc = QemuRunner(TARGETS["aarch64"], cc="aarch64-no-such-gcc")
    if missing_cc.sysroot is not None:
        with pytest.raises(RunnerUnavailableError, match=r"qemu runner \(aarch64-linux-gnu"):
            missing_cc.server_path()


def test_a_server_that_cannot_start_reports_qemus_message():
    runner = qemu_runner("aarch64")
    broken = QemuRunner(TARGETS["aarch64"], sysroot="/nonexistent-sysroot", cc=runner.cc)
    with pytest.raises(RunnerError, match=r"(?s)qemu runner \(aarch64-linux-gnu, -cpu max\): "
                                          r"the runner process exited with status \d+ during "
                                          r"start.*server stderr:.*ld-linux-aarch64"):
        broken.session()
