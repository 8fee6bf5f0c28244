"""What RPC costs: per-call round trips, transfer rates, and whether timings agree.

Over loopback, against an in-process :class:`tvm.runtime.rpc.RPCServer` (its kernels in the
C runner server, as on a device):

* round trip of one call of a tiny kernel (8 floats): in this process, through a
  ProcessRunner session (pipe), through RPC with numpy arguments (sent and returned each
  call) and with remote tensors (nothing but the request travels);
* upload and download rates of a 64 MiB tensor;
* a 256x256 matmul timed on the server (``run(number, repeat)``) by the process runner and
  by RPC: the network is not in the numbers, so both should agree;
* with ``--qemu``: the same matmul cross-built for aarch64, served under qemu-aarch64.

    python benchmarks/rpc.py [--calls 2000] [--qemu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
from tvm import te, tir
from tvm.runtime import rpc
from tvm.runtime.runner import LocalRunner, ProcessRunner, create_runner


def _add(n: int):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return te.create_prim_func([A, B])


def _matmul(n: int):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def _export(func, target: str, path: str) -> tuple[str, str]:
    mod = tir.build(func, target)
    mod.export_library(path)
    (name,) = mod.function_names
    return path, name


def _per_call(fn, args, calls: int) -> float:
    fn(*args)
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--qemu", action="store_true", help="also an aarch64 server")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    add_lib, add = _export(_add(8), "llvm", os.path.join(folder, "add.so"))
    mm_lib, mm = _export(_matmul(256), "llvm -num-cores=1", os.path.join(folder, "mm.so"))
    x, y = np.arange(8, dtype="float32"), np.zeros(8, "float32")

    print("round trip of one call of an 8-float kernel (us):")
    with LocalRunner().session() as s:
        print(f"  in this process        {_per_call(s.load_module(add_lib)[add], [x, y], args.calls) * 1e6:8.1f}")
    with ProcessRunner().session() as s:
        print(f"  process runner (pipe)  {_per_call(s.load_module(add_lib)[add], [x, y], args.calls) * 1e6:8.1f}")
    with rpc.RPCServer() as srv, rpc.connect(*srv.address) as s:
        f = s.load_module(add_lib)[add]
        print(f"  rpc, numpy arguments   {_per_call(f, [x, y], args.calls) * 1e6:8.1f}")
        dev = s.cpu()
        tx, ty = dev.array(x), dev.empty((8,), "float32")
        print(f"  rpc, remote tensors    {_per_call(f, [tx, ty], args.calls) * 1e6:8.1f}")

        big = np.random.default_rng(0).standard_normal(16 << 20).astype("float32")  # 64 MiB
        t = dev.array(big[:8])
        t.free()
        start = time.perf_counter()
        t = dev.array(big)
        up = time.perf_counter() - start
        start = time.perf_counter()
        back = t.numpy()
        down = time.perf_counter() - start
        assert np.array_equal(back, big)
        print(f"64 MiB tensor: upload {64 / up:7.0f} MiB/s, download {64 / down:7.0f} MiB/s")

        rng = np.random.default_rng(1)
        a = rng.standard_normal((256, 256)).astype("float32")
        b = rng.standard_normal((256, 256)).astype("float32")
        mm_args = [a, b, np.zeros((256, 256), "float32")]
        via_rpc = s.run(mm_lib, mm, mm_args, outputs=[], number=20, repeat=7).times
    with ProcessRunner().session() as p:
        via_pipe = p.run(mm_lib, mm, mm_args, outputs=[], number=20, repeat=7).times
    print("256x256 matmul, median of 7 rounds of 20 calls (us/call): "
          f"process runner {statistics.median(via_pipe) * 1e6:.1f}, "
          f"rpc {statistics.median(via_rpc) * 1e6:.1f}")

    if args.qemu:
        target = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
        arm_lib, arm = _export(_matmul(256), target, os.path.join(folder, "mm_arm.so"))
        with rpc.RPCServer(runner=create_runner("qemu", target=target)) as srv, \
                rpc.connect(*srv.address) as s:
            res = s.run(arm_lib, arm, mm_args, outputs=[-1], number=5, repeat=3)
            np.testing.assert_allclose(res.output(-1), a @ b, rtol=1e-3, atol=1e-3)
            print(f"aarch64 256x256 matmul under qemu via rpc ({s.server_runner}): "
                  f"{statistics.median(res.times) * 1e3:.2f} ms/call (emulated)")


if __name__ == "__main__":
    main()
