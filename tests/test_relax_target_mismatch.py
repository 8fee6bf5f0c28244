"""A Relax model built for CPU features this host lacks never runs its kernels: the VM call
raises HostMismatchError (JIT kernels) and the exported executable is refused at load."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402
from tvm.target.llvm import host_cpu_features  # noqa: E402
from tvm.target.llvm.host_cpu import host_triple  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.runtime.vm import VirtualMachine  # noqa: E402

MISSING = sorted(f[1:] for f in host_cpu_features() if f.startswith("-"))


@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((16, 64), "float32"), w: R.Tensor((64, 32), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y


def _used_missing_feature():
    for feat in ("avx512f", "avx2", "ndd", "egpr"):
        if feat in MISSING:
            ex = relax.build(Dense, f"llvm -mattr=+{feat}")
            if getattr(ex.kernel_lib, "host_problem", None):
                return feat, ex
    return None, None


@pytest.mark.skipif(not host_triple().startswith("x86_64"), reason="x86 candidate features")
def test_executable_for_missing_features_never_runs(tmp_path):
    feat, ex = _used_missing_feature()
    if feat is None:
        pytest.skip("this host has every candidate feature")
    x = np.ones((16, 64), "float32")
    w = np.ones((64, 32), "float32")
    vm = VirtualMachine(ex, tvm.runtime.cpu())
    with pytest.raises(tvm.runtime.HostMismatchError, match=f"lacks: .*{feat}"):
        vm["main"](x, w)
    path = tmp_path / "model.so"
    ex.export_library(path)
    with pytest.raises(tvm.runtime.HostMismatchError, match=f"model.so.*{feat}"):
        tvm.runtime.load_module(path)
    native = tmp_path / "native.so"  # (another name: the process keeps what it dlopen-ed)
    relax.build(Dense, "llvm").export_library(native)
    out = VirtualMachine(tvm.runtime.load_module(native), tvm.runtime.cpu())["main"](x, w)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w, 0), rtol=1e-5)
