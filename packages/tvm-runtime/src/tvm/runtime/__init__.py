"""tvm.runtime: run compiled tvm modules without the compiler.

Devices and device APIs (found through plugins), tensors with zero-copy DLPack exchange,
modules of compiled kernels following the packed C ABI (``docs/abi.md``), module loaders
and the thread pool behind parallel kernels.  Imports only ``tvm.ffi``, numpy and the
standard library.
"""

from . import hooks
from .device import (
    Device,
    DeviceAPI,
    cpu,
    cuda,
    device,
    ext_dev,
    metal,
    opencl,
    rocm,
    vulkan,
    webgpu,
)
from .error import (
    DeviceUnavailableError,
    FunctionNotFoundError,
    HostMismatchError,
    KernelError,
    ModuleLoadError,
    TVMError,
)
from .file_seal import seal_file
from .module import (
    Module,
    NativeModule,
    SharedLibraryModule,
    load_module,
    module_from_symbols,
    register_module_loader,
)
from .packed_func import PackedCFunc, install_runtime_slots
from .tensor import Tensor, empty, from_dlpack, tensor
from .thread_pool import get_num_threads, set_num_threads

__all__ = [
    "hooks",
    "Device",
    "DeviceAPI",
    "cpu",
    "cuda",
    "opencl",
    "metal",
    "vulkan",
    "webgpu",
    "rocm",
    "ext_dev",
    "device",
    "Tensor",
    "tensor",
    "empty",
    "from_dlpack",
    "Module",
    "NativeModule",
    "SharedLibraryModule",
    "load_module",
    "module_from_symbols",
    "register_module_loader",
    "PackedCFunc",
    "install_runtime_slots",
    "set_num_threads",
    "get_num_threads",
    "TVMError",
    "KernelError",
    "seal_file",
    "DeviceUnavailableError",
    "ModuleLoadError",
    "HostMismatchError",
    "FunctionNotFoundError",
]

__version__ = "0.1.0"

hooks.register_builtins()
