"""A Relax model cross-compiled for aarch64 (NEON) and riscv64 (RVV): relax.build makes the
kernels with LLVM for that triple, and ``Executable.export_library`` writes one shared object
of that triple (linked by the matching cross compiler, or ``cc=``) that holds the kernels
and the VM program.  Running it under qemu-user is the runner's business (tests/ of the
qemu runner); here the file itself is checked.

The exporting tests need the GNU cross compilers (``.ci/run`` installs them; locally they
skip when missing).
"""

from __future__ import annotations

import shutil
import struct
import subprocess

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.runtime.vm import Executable  # noqa: E402
from tvm.runtime.file_seal import SEAL_MAGIC, SEAL_SIZE  # noqa: E402
from tvm.runtime.vm.executable import TRAILER_MAGIC  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.target.llvm.host_cpu import host_triple  # noqa: E402
from walkthrough_model import Walkthrough  # noqa: E402

TARGETS = {
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon",
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mattr=+v",
}
EM = {"aarch64": 183, "riscv64": 243}


def _cross_cc(arch: str) -> str:
    path = shutil.which(f"{arch}-linux-gnu-gcc")
    if path is None:
        pytest.skip(f"no {arch} cross compiler (apt-get install gcc-{arch}-linux-gnu)")
    return path


@pytest.fixture(scope="module", params=sorted(TARGETS))
def cross(request):
    arch = request.param
    return arch, relax.build(Walkthrough, target=TARGETS[arch])


def test_relax_build_lists_the_cross_built_kernels(cross):
    arch, ex = cross
    if host_triple().startswith(arch):
        pytest.skip(f"this machine is {arch}: nothing is cross-compiled")
    assert ex.kernel_lib.function_names == ["fused_matmul_add"]
    assert arch in ex.kernel_lib.options.triple
    assert ex.kernel_device_type == 1
    with pytest.raises(RuntimeError, match="cross-compiled"):
        ex.kernel_lib["fused_matmul_add"]()


def test_exported_executable_holds_its_kernels_for_the_triple(cross, tmp_path):
    arch, ex = cross
    _cross_cc(arch)
    path = tmp_path / f"walkthrough_{arch}.so"
    ex.export_library(path)
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and struct.unpack_from("<H", data, 18)[0] == EM[arch]
    assert data.endswith(SEAL_MAGIC)
    data = data[:-SEAL_SIZE]
    assert data.endswith(TRAILER_MAGIC)
    assert len(data) > 8192  # the kernels, not only the program (it was 848 bytes)
    nm = shutil.which(f"{arch}-linux-gnu-nm")
    if nm:
        out = subprocess.run([nm, "-D", "--defined-only", str(path)], capture_output=True,
                             text=True, check=True).stdout
        assert " T fused_matmul_add" in out and "__tvm_module_meta" in out
    # the program blob reads back without loading the foreign kernels
    blob_len, _ = struct.unpack("<Q8s", data[-16:])
    blob = data[-16 - blob_len:-16]
    back = Executable.from_program_bytes(blob, None, origin=str(path))
    assert back.as_text() == ex.as_text()


def test_export_accepts_cc_for_executables(cross, tmp_path):
    arch, ex = cross
    cc = _cross_cc(arch)
    path = tmp_path / "model.so"
    ex.export_library(path, cc=cc, options=("-Wl,--build-id=none",))
    assert struct.unpack_from("<H", path.read_bytes(), 18)[0] == EM[arch]


def test_export_of_an_executable_without_kernels_accepts_link_options(tmp_path):
    @I.ir_module
    class Identity:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            return x

    ex = relax.build(Identity, target=TARGETS["aarch64"])
    assert ex.kernel_lib is None or not ex.kernel_lib.function_names
    ex.export_library(tmp_path / "id.so", cc="unused-nothing-to-link")
    back = relax.VirtualMachine(tvm.runtime.load_module(tmp_path / "id.so"), tvm.runtime.cpu())
    x = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(back["main"](x).numpy(), x)
