"""Fixtures of the vulkan target tests: the plugin (installed or not), glslang and the
device (lavapipe in CI)."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session", autouse=True)
def _vulkan_plugin():
    """The ``vulkan`` target kind and device API, whether or not the distribution is
    pip-installed."""
    from tvm.target.vulkan.plugin import ensure_registered

    ensure_registered()


def _device_missing() -> str | None:
    if shutil.which("glslangValidator") is None:
        return "glslangValidator is not installed (apt-get install glslang-tools)"
    try:
        from tvm.target.vulkan.runtime import vulkan_available
    except ImportError as err:
        return f"tvm.target.vulkan cannot be imported ({err})"
    try:
        import vulkan  # noqa: F401
    except (ImportError, OSError) as err:
        return f"the vulkan bindings or libvulkan are missing ({err}): pip install vulkan"
    if not vulkan_available():
        return ("no Vulkan device (apt-get install mesa-vulkan-drivers libvulkan1 for "
                "lavapipe)")
    return None


DEVICE_MISSING = _device_missing()
requires_vulkan = pytest.mark.skipif(DEVICE_MISSING is not None, reason=str(DEVICE_MISSING))
requires_glslang = pytest.mark.skipif(shutil.which("glslangValidator") is None,
                                      reason="glslangValidator is not installed (apt-get "
                                             "install glslang-tools)")
