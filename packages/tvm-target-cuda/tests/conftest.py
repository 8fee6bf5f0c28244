"""Fixtures of the cuda target tests: the plugin, a private kernel cache, nvcc and the GPU.

Tests marked ``gpu`` run kernels and are skipped without a CUDA GPU (and pycuda); the others
only generate code (and compile it with nvcc when it is installed).
"""

from __future__ import annotations

import os
import shutil

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and pycuda (skipped otherwise)")


def has_gpu() -> bool:
    try:
        from tvm.target.cuda.runtime import cuda_available
    except ImportError:
        return False
    return cuda_available()


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU (or pycuda is not installed)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """PTX goes to a per-session cache, not the user's ~/.cache."""
    old = os.environ.get("TVM_CACHE_DIR")
    os.environ["TVM_CACHE_DIR"] = str(tmp_path_factory.mktemp("tvm-cache"))
    yield
    if old is None:
        os.environ.pop("TVM_CACHE_DIR", None)
    else:
        os.environ["TVM_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _cuda_plugin():
    from tvm.target.cuda.plugin import ensure_registered

    ensure_registered()


def has_nvcc() -> bool:
    return bool(shutil.which("nvcc") or os.environ.get("TVM_NVCC")
                or os.path.exists("/usr/local/cuda/bin/nvcc"))


requires_nvcc = pytest.mark.skipif(not has_nvcc(), reason="nvcc (the CUDA toolkit) is not "
                                                          "installed")
