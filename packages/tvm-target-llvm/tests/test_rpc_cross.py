"""RPC to a cross device: a matmul built by tvm for aarch64, uploaded to an RPC server
(``python -m tvm.exec.rpc_server --runner qemu``: Python on this machine, the kernels
aarch64 code under qemu-user) over loopback, run, timed and compared with numpy; and a
Relax executable for aarch64 whose bytecode runs here and whose kernels run there.

Needs qemu-user and the aarch64 cross toolchain (Debian: qemu-user, gcc-aarch64-linux-gnu,
libc6-dev-arm64-cross); the tests skip with the reason where they are missing (CI installs
them and forbids skips)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from tvm import te, tir
from tvm.runtime import rpc
from tvm.runtime.runner import RunnerUnavailableError, create_runner

TARGET = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
KEY = "cross-key"


@pytest.fixture(scope="module")
def qemu_available():
    runner = create_runner("qemu", target=TARGET)
    try:
        runner.check_available()
        runner.server_path()  # the cross compiler builds the runner server
    except RunnerUnavailableError as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def cross_server(qemu_available):
    """The RPC server command line, its kernels under qemu-aarch64; yields its address."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TVM_RPC_KEY=KEY)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tvm.exec.rpc_server", "--port", "0", "--runner", "qemu",
         "--target", TARGET, "--timeout", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "listening on" in line, f"{line!r} {proc.stderr.read() if proc.poll() else ''}"
        host, port = line.split("listening on ")[1].split()[0].rsplit(":", 1)
        yield host, int(port)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()


def matmul(n: int):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def test_an_aarch64_matmul_uploaded_over_rpc_runs_under_qemu(cross_server, tmp_path):
    n = 64
    lib = tmp_path / "matmul_aarch64.so"
    mod = tir.build(matmul(n), TARGET)
    mod.export_library(str(lib))
    (name,) = mod.function_names
    with open(lib, "rb") as f:
        assert f.read(20)[18] == 183  # e_machine EM_AARCH64: not code for this machine
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    with rpc.connect(*cross_server, key=KEY) as s:
        assert s.machine == "aarch64" and "qemu runner (aarch64-linux-gnu" in s.server_runner
        res = s.run(lib, name, [a, b, np.zeros((n, n), "float32")], outputs=[-1], repeat=2)
        np.testing.assert_allclose(res.output(-1), a @ b, rtol=1e-4, atol=1e-4)
        assert len(res.times) == 2 and all(t > 0 for t in res.times)
        # remote tensors: the inputs go over once, the output stays there until read
        dev = s.cpu()
        ta, tb, tc = dev.array(a), dev.array(b), dev.empty((n, n), "float32")
        s.load_module(lib)[name](ta, tb, tc)
        np.testing.assert_allclose(tc.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_an_aarch64_relax_executable_with_kernels_over_rpc(cross_server, tmp_path):
    pytest.importorskip("tvm.relax", reason="tvm-relax builds the executable (not a "
                                            "dependency of tvm-target-llvm)")
    from tvm import ir, relax
    from tvm.runtime import cpu
    from tvm.runtime.vm import VirtualMachine
    from tvm.script import relax as R

    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32")
             ) -> R.Tensor((8, 4), "float32"):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y

    path = tmp_path / "model_aarch64.so"
    relax.build(ir.IRModule({"main": main}), target=TARGET).export_library(str(path))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16)).astype("float32")
    w = rng.standard_normal((16, 4)).astype("float32")
    with rpc.connect(*cross_server, key=KEY) as s:
        vm = VirtualMachine(s.load_executable(path), cpu())
        got = vm["main"](x, w).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)
