"""tvm.runtime.vm: the virtual machine that runs compiled Relax programs.

* :class:`Executable` — bytecode functions, constants and the kernel library; ``as_text()``,
  ``export_library(path)`` (one file that :func:`tvm.runtime.load_module` reads back);
* :class:`VirtualMachine` — ``VirtualMachine(ex, tvm.runtime.cpu())["main"](*inputs)``,
  ``profile`` and ``time_evaluator``;
* :mod:`.bytecode` — the instruction set and its text form; :mod:`.builtins` — functions
  ``call`` finds by name (``vm.builtin.*``) and :func:`register_builtin`.

Only tvm-runtime is needed to load and run an exported executable.
"""

from .builtins import ShapeTuple, get_builtin, list_builtins, register_builtin
from . import data_dependent as _data_dependent  # noqa: F401 - registers builtins
from .random import initial_seed, manual_seed
from .bytecode import BytecodeError, format_function, format_instruction
from .executable import Executable, is_executable_file, load_executable
from .memory import Storage, StoragePool
from .profiler import BenchmarkResult, ProfileReport, ProfileRow
from .vm import VirtualMachine, VMError, VMStepLimitError

__all__ = [
    "Executable",
    "VirtualMachine",
    "VMError",
    "VMStepLimitError",
    "ShapeTuple",
    "Storage",
    "StoragePool",
    "ProfileReport",
    "ProfileRow",
    "BenchmarkResult",
    "BytecodeError",
    "register_builtin",
    "get_builtin",
    "list_builtins",
    "manual_seed",
    "initial_seed",
    "load_executable",
    "is_executable_file",
    "format_function",
    "format_instruction",
]
