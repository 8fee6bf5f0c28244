"""Fixtures of the webgpu target tests: the plugin (installed or not) and the adapter
(lavapipe through wgpu in CI)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _webgpu_plugin():
    """The ``webgpu`` target kind and device API, whether or not the distribution is
    pip-installed."""
    from tvm.target.webgpu.plugin import ensure_registered

    ensure_registered()


def _device_missing() -> str | None:
    try:
        from tvm.target.webgpu.runtime import webgpu_available
    except ImportError as err:
        return f"tvm.target.webgpu cannot be imported ({err})"
    try:
        import wgpu  # noqa: F401
    except (ImportError, OSError) as err:
        return f"wgpu is missing or cannot load wgpu-native ({err}): pip install wgpu==0.32.0"
    if not webgpu_available():
        return ("no WebGPU adapter (wgpu needs a Vulkan, Metal or D3D12 driver: apt-get "
                "install mesa-vulkan-drivers libvulkan1 for lavapipe)")
    return None


DEVICE_MISSING = _device_missing()
requires_webgpu = pytest.mark.skipif(DEVICE_MISSING is not None, reason=str(DEVICE_MISSING))
