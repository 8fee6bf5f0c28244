"""Relax models cross-compiled for aarch64 (NEON) and riscv64 (RVV) and executed under
qemu-user, compared with the same model built for this machine.

The executable is exported for the triple (``relax.build`` + ``export_library``, the cross
compiler picked by the triple) and loaded into a qemu runner session:
``session.load_executable`` reads the VM program from the file and has the C runner server
``dlopen`` the same file under qemu.  The bytecode runs in this process's VM; each kernel
call is forwarded to the server over its pipe (argument tensors there, the tensors after
the call back), so no Python runs under emulation.  One build per triple serves both RISC-V
vector lengths (the vector code does not depend on it).

Models: the walkthrough (128x256 @ 256x512 + 512) and MobileNetV2 at the reduced size of
``tests/onnx/test_models.py`` (width 0.25, 32x32 input, 10 classes) to keep CI time low:
building it for one triple takes ~15 s on 2 cores, running it under qemu well under 1 s.

Needs qemu-user and the GNU cross toolchains; they skip where missing, and CI (which
installs them, ``.ci/run``) forbids skips.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.runtime.runner import RemoteModule, RunnerUnavailableError, create_runner  # noqa: E402
from tvm.runtime.vm import Executable, VirtualMachine  # noqa: E402

import tvm.runtime  # noqa: E402

TARGETS = {
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon",
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mattr=+v",
}
CONFIGS = {"aarch64-neon": ("aarch64", {}), "riscv64-v-vlen128": ("riscv64", {"vlen": 128}),
           "riscv64-v-vlen256": ("riscv64", {"vlen": 256})}


def _runner(config: str):
    key, options = CONFIGS[config]
    runner = create_runner("qemu", target=TARGETS[key], timeout=180.0, **options)
    try:
        runner.check_available()
        runner.server_path()
    except RunnerUnavailableError as err:
        pytest.skip(str(err))
    return runner, key


def _mobilenet():
    pytest.importorskip("onnx")
    from tvm.relax.frontend.onnx import from_onnx

    sys.path.insert(0, str(Path(__file__).parent / "onnx"))
    try:
        import models
    finally:
        sys.path.pop(0)

    model = models.mobilenet_v2(width_mult=0.25, image_size=32, classes=10)
    return from_onnx(model), [models.image_input(1, 32)["input"]]


def _walkthrough():
    from walkthrough_model import Walkthrough, walkthrough_inputs

    return Walkthrough, walkthrough_inputs()


MODELS = {"walkthrough": _walkthrough, "mobilenet_v2": _mobilenet}

# one xdist worker takes them all, so each model is built once per triple (the builds, not
# the emulated runs, are what costs here)
pytestmark = pytest.mark.xdist_group("qemu_models")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(model, target key or "host") -> (exported path, inputs)``, built on first use."""
    folder = tmp_path_factory.mktemp("qemu_models")
    cache: dict[tuple[str, str], tuple[Path, list[np.ndarray]]] = {}
    mods: dict[str, tuple] = {}

    def get(model: str, key: str):
        if (model, key) not in cache:
            if model not in mods:
                mods[model] = MODELS[model]()
            mod, inputs = mods[model]
            ex = relax.build(mod, target="llvm" if key == "host" else TARGETS[key])
            path = folder / f"{model}_{key}.so"
            ex.export_library(path)
            cache[model, key] = (path, inputs)
        return cache[model, key]

    return get


@pytest.fixture(scope="module")
def host_outputs(built):
    cache: dict[str, np.ndarray] = {}

    def get(model: str) -> np.ndarray:
        if model not in cache:
            path, inputs = built(model, "host")
            vm = VirtualMachine(tvm.runtime.load_module(path), tvm.runtime.cpu())
            cache[model] = vm["main"](*inputs).numpy()
        return cache[model]

    return get


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_model_under_qemu_matches_the_host_build(model, config, built, host_outputs):
    runner, key = _runner(config)
    path, inputs = built(model, key)
    expected = host_outputs(model)
    with runner.session() as session:
        ex = session.load_executable(path)
        assert isinstance(ex, Executable) and isinstance(ex.kernel_lib, RemoteModule)
        assert ex.kernel_lib.target.startswith(TARGETS[key].split()[0])
        assert set(ex.program["kernels"]) <= set(ex.kernel_lib.function_names)
        vm = VirtualMachine(ex, tvm.runtime.cpu())
        got = vm["main"](*inputs).numpy()
        again = vm["main"](*inputs).numpy() if model == "mobilenet_v2" else got  # stays up
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4,
                               atol=1e-4 * max(1.0, float(np.abs(expected).max())))
    np.testing.assert_array_equal(again, got)
