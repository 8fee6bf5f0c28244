"""Fixtures of the opencl target tests: the plugin (installed or not) and the device."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _opencl_plugin():
    """The ``opencl`` target kind and device API, whether or not the distribution is
    pip-installed."""
    from tvm.target.opencl.plugin import ensure_registered

    ensure_registered()


def has_opencl() -> bool:
    try:
        from tvm.target.opencl.runtime import opencl_available
    except ImportError:
        return False
    return opencl_available()


requires_opencl = pytest.mark.skipif(
    not has_opencl(), reason="no OpenCL platform (pip install pyopencl; apt-get install "
                             "pocl-opencl-icd)")
