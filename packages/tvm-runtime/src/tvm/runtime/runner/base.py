"""The runner abstraction: where compiled code runs, behind one interface.

A :class:`Runner` runs kernels of an exported library (``docs/abi.md``) somewhere: in this
process (:class:`LocalRunner`), in a child process (:class:`~.process.ProcessRunner`,
optionally under an emulator such as qemu-user, which the llvm target provides as the
``qemu`` runner), or on a remote device through RPC (:mod:`tvm.runtime.rpc`, the ``rpc``
runner).  Tests, benchmarks and the auto-tuner talk to this interface only::

    result = runner.run("k.so", "matmul", [a, b, c], number=1, repeat=5)
    result.output(-1), result.times

A :class:`Session` keeps the place alive between calls: modules loaded once, executables
whose bytecode runs in the host VM while each kernel call goes to the session
(:meth:`Session.load_executable`).  Runners are also found by name through the
``tvm_runtime_runner`` hook (:func:`create_runner`).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm.ffi.error import TVMError
from tvm.ffi.plugin import hookimpl

from ..module import Module, load_module
from ..tensor import Tensor

__all__ = [
    "Runner",
    "Session",
    "RunResult",
    "LocalRunner",
    "RunnerError",
    "RunnerTimeoutError",
    "RunnerUnavailableError",
    "create_runner",
]


class RunnerError(TVMError, RuntimeError):
    """The runner could not run the code (its process died, a request failed)."""


class RunnerTimeoutError(RunnerError, TimeoutError):
    """A request to the runner took longer than its timeout (the runner was stopped)."""


class RunnerUnavailableError(RunnerError):
    """The runner cannot start here (an emulator or cross compiler is not installed)."""


@dataclass(frozen=True)
class RunResult:
    """What one :meth:`Session.run` returns.

    ``outputs`` maps argument index -> the tensor's contents after the first call (the
    arguments asked for, all tensors by default); ``times`` holds seconds per call, one
    entry per timed round of ``number`` calls (empty when ``repeat`` was 0).
    """

    outputs: dict[int, np.ndarray]
    times: tuple[float, ...] = ()
    number: int = 1
    num_args: int = 0
    runner: str = ""

    def output(self, index: int = -1) -> np.ndarray:
        """The contents of argument ``index`` after the call (negative counts from the end)."""
        i = index + self.num_args if index < 0 else index
        if i not in self.outputs:
            raise KeyError(f"{self.runner}: argument {index} was not returned "
                           f"(returned: {sorted(self.outputs)})")
        return self.outputs[i]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times) if self.times else float("nan")

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    @property
    def min(self) -> float:
        return min(self.times) if self.times else float("nan")


def _check_counts(number: int, repeat: int) -> None:
    for what, value, low in (("number", number, 1), ("repeat", repeat, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"run: {what} must be an int >= {low}, got {value!r}")


def tensor_indices(args: Sequence[Any], outputs: Sequence[int] | None) -> set[int]:
    """Indices of the arguments to return: ``outputs`` (negative from the end), or every
    tensor argument."""
    n = len(args)
    if outputs is None:
        return {i for i, a in enumerate(args) if isinstance(a, (np.ndarray, Tensor))}
    chosen = set()
    for o in outputs:
        i = o + n if o < 0 else o
        if not 0 <= i < n or not isinstance(args[i], (np.ndarray, Tensor)):
            raise ValueError(f"run: outputs names argument {o}, which is not a tensor argument")
        chosen.add(i)
    return chosen


class Session(ABC):
    """A live connection to the place a :class:`Runner` runs code; close it when done."""

    runner: Runner

    @abstractmethod
    def load_module(self, path: str | os.PathLike[str], trusted: bool = False) -> Module:
        """The kernels of library ``path`` as a module whose functions run in this session
        (called with tensors, they write their outputs into them as a local kernel does).
        The library must carry tvm's seal unless ``trusted`` (see ``load_module``)."""

    @abstractmethod
    def run(self, lib: str | os.PathLike[str] | Module, func: str, args: Sequence[Any], *,
            outputs: Sequence[int] | None = None, number: int = 1, repeat: int = 0
            ) -> RunResult:
        """Call ``func`` of ``lib`` (a path, or a module from :meth:`load_module`) on copies
        of ``args`` once, return the outputs, then time ``repeat`` rounds of ``number``
        calls."""

    def load_executable(self, path: str | os.PathLike[str]) -> Any:
        """An exported VM executable whose kernels run in this session (its bytecode runs
        in the host's VM: ``VirtualMachine(session.load_executable(p), tvm.runtime.cpu())``)."""
        from ..vm.executable import Executable, load_executable, split_executable_file

        found = split_executable_file(path)
        if found is None:
            return load_executable(path)  # refuses with its own message
        lib_len, blob = found
        kernels = self.load_module(path) if lib_len else None
        return Executable.from_program_bytes(blob, kernels, origin=repr(os.fspath(path)))

    def close(self) -> None:  # noqa: B027 - a session that holds nothing has nothing to do
        """Release the session (stop its process)."""

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Runner(ABC):
    """Where compiled code runs; see the module docstring."""

    #: the runner's kind, as :func:`create_runner` names it
    name: str = "runner"

    def __init__(self, triple: str = "") -> None:
        self.triple = triple

    def describe(self) -> str:
        """``"qemu runner (aarch64-linux-gnu)"``: how errors name this runner."""
        return f"{self.name} runner ({self.triple or 'host'})"

    @abstractmethod
    def session(self) -> Session:
        """A new :class:`Session` (use it as a context manager)."""

    def run(self, lib: str | os.PathLike[str], func: str, args: Sequence[Any], *,
            outputs: Sequence[int] | None = None, number: int = 1, repeat: int = 0
            ) -> RunResult:
        """One call in a fresh session; see :meth:`Session.run`."""
        with self.session() as s:
            return s.run(lib, func, args, outputs=outputs, number=number, repeat=repeat)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


# ---------------------------------------------------------------------------- local


class LocalRunner(Runner):
    """Runs kernels in this process (``tvm.runtime.load_module``); times with a monotonic
    clock."""

    name = "local"

    def __init__(self) -> None:
        super().__init__(platform.machine())

    def session(self) -> Session:
        return _LocalSession(self)


@dataclass
class _LocalSession(Session):
    runner: LocalRunner
    _modules: dict[str, Module] = field(default_factory=dict)

    def load_module(self, path: str | os.PathLike[str], trusted: bool = False) -> Module:
        key = os.path.abspath(os.fspath(path))
        if key not in self._modules:
            self._modules[key] = load_module(key, trusted=trusted)
        return self._modules[key]

    def load_executable(self, path: str | os.PathLike[str]) -> Any:
        return self.load_module(path)

    def run(self, lib: str | os.PathLike[str] | Module, func: str, args: Sequence[Any], *,
            outputs: Sequence[int] | None = None, number: int = 1, repeat: int = 0
            ) -> RunResult:
        _check_counts(number, repeat)
        module = lib if isinstance(lib, Module) else self.load_module(lib)
        fn = module.get_function(func)
        wanted = tensor_indices(args, outputs)
        values = [a.numpy() if isinstance(a, Tensor) else
                  np.array(a, copy=True, order="C") if isinstance(a, np.ndarray) else a
                  for a in args]
        fn(*values)
        result = {i: values[i].copy() for i in sorted(wanted)}
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn(*values)
            times.append((time.perf_counter() - start) / number)
        return RunResult(result, tuple(times), number, len(args), self.runner.describe())


# ---------------------------------------------------------------------------- registry


def create_runner(name: str = "local", **options: Any) -> Runner:
    """The runner called ``name`` (``local``, ``process``, ``rpc``, or one a plugin provides
    through the ``tvm_runtime_runner`` hook, e.g. an emulator runner of a target package),
    made with ``options``."""
    from ..hooks import call_runtime_hook

    runner = call_runtime_hook("tvm_runtime_runner", name=name, options=dict(options),
                               required=True)
    if runner is None:
        raise RunnerUnavailableError(
            f"no runner named {name!r}; built in: local, process, rpc (plugins add more "
            "through the tvm_runtime_runner hook, e.g. a target package's 'qemu')")
    return runner


class BuiltinRunnerPlugin:
    """The ``local``, ``process`` and ``rpc`` runners."""

    @staticmethod
    @hookimpl(trylast=True)
    def tvm_runtime_runner(name: str, options: dict[str, Any]) -> Runner | None:
        if name == "local":
            if options:
                raise TypeError(f"the local runner takes no options, got {sorted(options)}")
            return LocalRunner()
        if name == "process":
            from .process import ProcessRunner

            return ProcessRunner(**options)
        if name == "rpc":
            from ..rpc import RPCRunner

            return RPCRunner(**options)
        return None
