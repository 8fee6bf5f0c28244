"""Helpers of the GPU end-to-end tests (tests/test_relax_gpu_*.py,
tests/test_relax_shader_targets.py): the OpenCL device (pocl in CI), the Vulkan device and
the WebGPU adapter (lavapipe in CI), and building one module for a GPU target and for llvm
to compare."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


def _opencl_ready() -> str | None:
    """None when OpenCL runs here, else why not."""
    try:
        from tvm.target.opencl.plugin import ensure_registered
        from tvm.target.opencl.runtime import opencl_available
    except ImportError as err:
        return f"tvm-target-opencl is not installed ({err})"
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        return "pyopencl is not installed"
    ensure_registered()
    if not opencl_available():
        return "no OpenCL platform (install an ICD, e.g. apt-get install pocl-opencl-icd)"
    return None


OPENCL_MISSING = _opencl_ready()
requires_opencl = pytest.mark.skipif(OPENCL_MISSING is not None,
                                     reason=str(OPENCL_MISSING))


def _vulkan_ready() -> str | None:
    """None when Vulkan runs here (and glslang compiles shaders), else why not."""
    try:
        from tvm.target.vulkan.plugin import ensure_registered
        from tvm.target.vulkan.runtime import vulkan_available
        from tvm.target.vulkan.spirv import glslang_available
    except ImportError as err:
        return f"tvm-target-vulkan is not installed ({err})"
    try:
        import vulkan  # noqa: F401
    except (ImportError, OSError) as err:
        return f"the vulkan bindings or the Vulkan loader are missing ({err})"
    ensure_registered()
    if not glslang_available():
        return "glslangValidator is not installed (apt-get install glslang-tools)"
    if not vulkan_available():
        return "no Vulkan device (install a driver, e.g. apt-get install mesa-vulkan-drivers)"
    return None


VULKAN_MISSING = _vulkan_ready()
requires_vulkan = pytest.mark.skipif(VULKAN_MISSING is not None,
                                     reason=str(VULKAN_MISSING))


def _webgpu_ready() -> str | None:
    """None when WebGPU runs here (wgpu finds an adapter), else why not."""
    try:
        from tvm.target.webgpu.plugin import ensure_registered
        from tvm.target.webgpu.runtime import webgpu_available
    except ImportError as err:
        return f"tvm-target-webgpu is not installed ({err})"
    try:
        import wgpu  # noqa: F401
    except (ImportError, OSError) as err:
        return f"wgpu is not installed or cannot load wgpu-native ({err})"
    ensure_registered()
    if not webgpu_available():
        return ("no WebGPU adapter (wgpu needs a Vulkan, Metal or D3D12 driver, e.g. apt-get "
                "install mesa-vulkan-drivers)")
    return None


WEBGPU_MISSING = _webgpu_ready()
requires_webgpu = pytest.mark.skipif(WEBGPU_MISSING is not None,
                                     reason=str(WEBGPU_MISSING))


def ensure_llvm() -> None:
    """The llvm plugin, whether or not tvm-target-llvm is pip-installed."""
    pytest.importorskip("tvm.target.llvm")
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:
        import tvm.target.llvm.plugin as plugin

        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")


def run_both(mod: Any, *inputs: Any, target: str = "opencl") -> tuple[Any, Any, Any]:
    """``(gpu_out, cpu_out, gpu_executable)``: ``mod`` built for ``target`` and for llvm, run
    on the same inputs; outputs are numpy arrays (tuples for tuple results)."""
    from tvm import relax

    import tvm.runtime as rt

    ensure_llvm()
    gpu_ex = relax.build(mod, target=target)
    cpu_ex = relax.build(mod, target="llvm")
    gpu = relax.VirtualMachine(gpu_ex, rt.device(target))["main"](*inputs)
    cpu = relax.VirtualMachine(cpu_ex, rt.cpu())["main"](*inputs)
    return to_numpy(gpu, rt.device(target)), to_numpy(cpu, rt.cpu()), gpu_ex


def to_numpy(value: Any, device: Any = None) -> Any:
    """Tensors (checked to be on ``device``) as numpy arrays, through tuples."""
    import tvm.runtime as rt

    if isinstance(value, tuple):
        return tuple(to_numpy(v, device) for v in value)
    if isinstance(value, rt.Tensor):
        if device is not None:
            assert value.device == device, f"a result is on {value.device}, expected {device}"
        return value.numpy()
    return np.asarray(value)
