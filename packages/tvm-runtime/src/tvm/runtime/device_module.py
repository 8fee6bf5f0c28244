"""Modules of GPU kernels: the host programs that check arguments and launch kernels.

A GPU target (CUDA, OpenCL, Metal) compiles each function into device kernels plus a *host
program* (``tvm.tir.codegen.host_program`` describes the format; its expressions are the
run-time format of :mod:`tvm.runtime.int_expr`, shared with the VM): JSON that binds the
tensors' shapes, checks them, allocates device workspaces and launches kernels with their
grid and block sizes.  This module runs host programs with tvm-runtime alone, so the run
side of every GPU target shares it; a target subclasses :class:`DeviceModule` and supplies
:meth:`DeviceModule.launch` (and a device API for its device type)::

    class OpenCLModule(DeviceModule):
        type_key = "opencl"
        def launch(self, dev, kernel, args, grid, block): ...

    mod["add"](a, b)          # a, b: tvm.runtime.Tensor on the target's device

Arguments are checked before any launch, with messages in the wording of ``docs/abi.md``
(``add: argument A has shape[0] = 7, expected 8``).  A kernel with checks in its code
(index checks) takes an *error record* after its parameters (see
``tvm.tir.codegen.gpu``): the module keeps one per device, passes it to the launch, reads
it back after the kernel and raises the failed check's message as a :class:`KernelError`
(so a launch of such a kernel waits for it to finish).  :func:`save_device_module` /
:func:`load_device_module_payload` write and read the one-file JSON form a target exports.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm.ffi.dtype import DTypeCode, parse_dtype, storage_bytes

from .device import Device
from .error import KernelError, ModuleLoadError
from .int_expr import ExprError, cast_value, compile_expr, is_literal, validate_expr
from .module import Module
from .tensor import Tensor

__all__ = [
    "DeviceModule", "DevicePtr", "HostFunction", "HostProgramError",
    "save_device_module", "load_device_module_payload", "DEVICE_MODULE_VERSION",
    "LAUNCH_TAGS", "kernel_params", "ERROR_RECORD_BYTES", "ERROR_RECORD_ARGS",
]

DEVICE_MODULE_VERSION = 2
#: device modules written before host programs took the shared expression format
_OLD_EXPRESSION_VERSIONS = (1,)
#: the error record a kernel with checks takes (layout: tvm.tir.codegen.gpu)
ERROR_RECORD_BYTES = 64
ERROR_RECORD_ARGS = 7
_ERROR_RECORD_PARAM = {"name": "tvm_error_record", "kind": "handle", "dtype": "int32"}
LAUNCH_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
               "threadIdx.z")


class HostProgramError(ModuleLoadError):
    """A malformed host program (a bug in the code generator or a damaged file)."""


def kernel_params(kernel: dict[str, Any]) -> list[dict[str, Any]]:
    """The parameters a kernel is launched with: its ``params`` and, for a kernel with
    checks, the error record after them."""
    params = list(kernel["params"])
    if kernel.get("error_record"):
        params.append(_ERROR_RECORD_PARAM)
    return params


@dataclass(frozen=True)
class DevicePtr:
    """Device memory passed to a kernel: a device API handle plus a byte offset."""

    handle: int
    offset: int = 0


# --------------------------------------------------------------------------- host functions


def _printf(message: str, args: list[Any]) -> str:
    out, it = [], iter(args)
    i = 0
    while i < len(message):
        ch = message[i]
        if ch == "%" and i + 1 < len(message):
            if message[i + 1] == "%":
                out.append("%")
                i += 2
                continue
            j = i + 1
            while j < len(message) and message[j] not in "diouxXeEfgGcsp":
                j += 1
            out.append(str(next(it, "?")))
            i = j + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class HostFunction:
    """A callable running one host program of a :class:`DeviceModule`."""

    def __init__(self, program: dict[str, Any], module: DeviceModule) -> None:
        if not isinstance(program, dict) or "name" not in program or "body" not in program:
            raise HostProgramError(f"a host program needs 'name' and 'body', got {program!r}")
        self.program = program
        self.name: str = program["name"]
        self.params: list[dict[str, Any]] = list(program.get("params", []))
        self.module = module
        self._compiled: dict[int, tuple[Any, Any]] = {}

    def _eval(self, e: Any, env: dict[str, Any]) -> Any:
        """The value of expression ``e`` (compiled once per expression of the program)."""
        entry = self._compiled.get(id(e))
        if entry is None or entry[0] is not e:
            try:
                validate_expr(e)
            except ExprError as err:
                raise HostProgramError(f"{self.name}: malformed host-program expression: "
                                       f"{err}") from None
            entry = (e, compile_expr(e))
            self._compiled[id(e)] = entry
        try:
            return entry[1](env)
        except ZeroDivisionError:
            raise KernelError(f"{self.name}: division by zero in a launch expression "
                              f"{e!r}") from None
        except KeyError as err:
            raise HostProgramError(f"{self.name}: host-program expression {e!r} uses "
                                   f"{err.args[0]!r}, which is not bound") from None

    def __repr__(self) -> str:
        sig = ", ".join(p["name"] for p in self.params)
        return f"<{self.module.type_key} function {self.name}({sig})>"

    # ------------------------------------------------------------------ arguments
    def _bind(self, args: Sequence[Any]) -> tuple[dict[str, Any], Device]:
        f = self.name
        if len(args) != len(self.params):
            names = ", ".join(p["name"] for p in self.params)
            raise TypeError(f"{f}: expected {len(self.params)} arguments ({names}), got "
                            f"{len(args)}")
        env: dict[str, Any] = {}
        origin: dict[str, str] = {}
        deferred: list[tuple[Any, int, str]] = []
        dev: Device | None = None
        for p, value in zip(self.params, args):
            name = p["name"]
            if p["kind"] == "scalar":
                env[p["var"]] = self._scalar(p, value)
                origin[p["var"]] = f"argument {name}"
                continue
            t = self._tensor(p, value)
            if dev is None:
                dev = t.device
            elif t.device != dev:
                raise KernelError(f"{f}: argument {name} is on {t.device}, but earlier "
                                  f"arguments are on {dev}; all tensors must be on one device")
            shape = p["shape"]
            if t.ndim != len(shape):
                raise KernelError(f"{f}: argument {name} has ndim = {t.ndim}, expected "
                                  f"{len(shape)}")
            for k, (given, want) in enumerate(zip(t.shape, shape)):
                what = f"argument {name} has shape[{k}] = {given}"
                if is_literal(want):
                    if given != want:
                        raise KernelError(f"{f}: {what}, expected {want}")
                elif want[0] == "var" and want[1] not in env:
                    env[want[1]] = int(given)
                    origin[want[1]] = f"argument {name}"
                elif want[0] == "var":
                    if env[want[1]] != given:
                        raise KernelError(f"{f}: {what}, but {want[1]} = {env[want[1]]} from "
                                          f"{origin[want[1]]}")
                else:
                    deferred.append((want, given, what))
            env[p["data"]] = DevicePtr(t.data_ptr, t.byte_offset)
        for want, given, what in deferred:
            expected = self._eval(want, env)
            if expected != given:
                raise KernelError(f"{f}: {what}, expected {expected}")
        if dev is None:
            dev = self.module.default_device()
        return env, dev

    def _tensor(self, p: dict[str, Any], value: Any) -> Tensor:
        f, name, want = self.name, p["name"], self.module.device_type
        if isinstance(value, np.ndarray) or not isinstance(value, Tensor):
            what = "a numpy array" if isinstance(value, np.ndarray) else type(value).__name__
            dname = self.module.device_name
            raise TypeError(
                f"{f}: argument {name} expects a tvm.runtime.Tensor on the {dname} device, "
                f"got {what}; copy it there with tvm.runtime.tensor(x, "
                f"device=tvm.runtime.device('{dname}'))"
            )
        if value.device.device_type != want:
            raise KernelError(f"{f}: argument {name} is on {value.device}, expected the "
                              f"{self.module.device_name} device (device type {want})")
        if value.dtype != p["dtype"]:
            raise KernelError(f"{f}: argument {name} has dtype {value.dtype}, expected "
                              f"{p['dtype']}")
        if not value.is_contiguous:
            raise KernelError(f"{f}: argument {name} is not compact (strides "
                              f"{value.strides}); copy it to a compact tensor first")
        return value

    def _scalar(self, p: dict[str, Any], value: Any) -> Any:
        dtype = p["dtype"]
        code = parse_dtype(dtype)[0]
        if isinstance(value, (Tensor, np.ndarray)) and getattr(value, "ndim", 1) != 0:
            raise TypeError(f"{self.name}: argument {p['name']} expects a {dtype} scalar, got a "
                            "tensor")
        if isinstance(value, np.generic):
            value = value.item()
        if code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError(f"{self.name}: argument {p['name']} expects a float "
                                f"({dtype}), got {type(value).__name__}")
            return float(value)
        if not isinstance(value, (int, bool)):
            raise TypeError(f"{self.name}: argument {p['name']} expects an integer ({dtype}), "
                            f"got {type(value).__name__}")
        return cast_value(int(value), dtype)

    # ------------------------------------------------------------------ running
    def __call__(self, *args: Any) -> None:
        env, dev = self._bind(args)
        self._run(self.program["body"], env, dev)

    def _run(self, s: Any, env: dict[str, Any], dev: Device) -> None:
        kind = s[0]
        if kind == "seq":
            for item in s[1]:
                self._run(item, env, dev)
        elif kind == "let":
            env[s[1]] = self._eval(s[2], env)
            self._run(s[3], env, dev)
        elif kind == "assert":
            if not self._eval(s[1], env):
                raise KernelError(_printf(s[2], [self._eval(a, env) for a in s[3]]))
            self._run(s[4], env, dev)
        elif kind == "alloc":
            _, name, dtype, count, body = s
            nbytes = max(1, int(self._eval(count, env)) * storage_bytes(dtype))
            api = dev.api
            handle = int(api.alloc(dev, nbytes, 64))
            try:
                env[name] = DevicePtr(handle, 0)
                self._run(body, env, dev)
            finally:
                self.module.release_workspace(dev, handle)
        elif kind == "launch":
            self._launch(s, env, dev)
        elif kind == "for":
            lo = int(self._eval(s[2], env))
            for i in range(lo, lo + int(self._eval(s[3], env))):
                env[s[1]] = i
                self._run(s[4], env, dev)
        elif kind == "if":
            if self._eval(s[1], env):
                self._run(s[2], env, dev)
            elif s[3] is not None:
                self._run(s[3], env, dev)
        elif kind != "nop":
            raise HostProgramError(f"{self.name}: unknown host-program statement {kind!r}")

    def _launch(self, s: Any, env: dict[str, Any], dev: Device) -> None:
        _, kname, arg_exprs, extent_exprs = s
        kernel = self.module.kernels.get(kname)
        if kernel is None:
            raise HostProgramError(f"{self.name}: launches unknown kernel {kname!r}")
        args = [self._eval(a, env) for a in arg_exprs]
        dims = {tag: int(self._eval(e, env)) for tag, e in zip(kernel["launch_params"],
                                                             extent_exprs)}
        grid = tuple(dims.get(f"blockIdx.{a}", 1) for a in "xyz")
        block = tuple(dims.get(f"threadIdx.{a}", 1) for a in "xyz")
        if min(grid + block) <= 0:
            return  # an empty launch (a zero-sized dimension): nothing to compute
        checks = kernel.get("error_record")
        if not checks:
            self.module.launch(dev, kname, args, grid, block)
            return
        record = self.module.error_record(dev)
        self.module.launch(dev, kname, [*args, DevicePtr(record)], grid, block)
        self.module.raise_recorded_error(dev, record, checks, self.name)


# --------------------------------------------------------------------------- modules


class DeviceModule(Module):
    """Device kernels plus the host functions that launch them (see the module docstring).

    ``payload`` is the target's one-file form: ``{"format", "version", "target", "kernels",
    "functions", ...}`` with whatever code the target stores (``source``, ``binary``).
    """

    type_key = "device"
    #: DLPack device type of the tensors the functions take
    device_type: int = 0
    #: device name for messages and ``tvm.runtime.device(name)``
    device_name: str = "device"
    #: the file suffix :meth:`export_library` writes (and the target's loader reads)
    file_suffix: str = "tvmdev"

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(self.type_key)
        check_payload(payload, self.type_key)
        self.payload = payload
        self.target: str = str(payload.get("target", ""))
        self.kernels: dict[str, dict[str, Any]] = {k["name"]: k for k in payload["kernels"]}
        self._records: dict[int, int] = {}  # device index -> its error record
        self._records_lock = threading.Lock()
        for program in payload["functions"]:
            fn = HostFunction(program, self)
            self._functions[fn.name] = fn
        if "source" in payload:
            self._sources[payload.get("source_format", self.type_key)] = payload["source"]

    # ------------------------------------------------------------------ target hooks
    def launch(self, dev: Device, kernel: str, args: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> None:
        """Launch ``kernel`` on ``dev`` (arguments: :class:`DevicePtr` or numbers)."""
        raise NotImplementedError(f"{type(self).__name__} cannot launch kernels")

    def default_device(self) -> Device:
        """The device used when a function takes no tensor."""
        return Device(self.device_type, 0)

    # ------------------------------------------------------------------ checks in kernels
    def error_record(self, dev: Device) -> int:
        """The device memory of ``dev``'s error record (made and zeroed on first use)."""
        with self._records_lock:
            handle = self._records.get(dev.index)
            if handle is None:
                handle = int(dev.api.alloc(dev, ERROR_RECORD_BYTES, 64))
                dev.api.copy_from_host(dev, handle, 0, np.zeros(ERROR_RECORD_BYTES, np.uint8))
                self._records[dev.index] = handle
            return handle

    def raise_recorded_error(self, dev: Device, record: int, checks: list[dict[str, Any]],
                             function: str) -> None:
        """Read the error record after a launch (waiting for it); when a check failed, clear
        the record and raise its message."""
        raw = np.zeros(ERROR_RECORD_BYTES, np.uint8)
        dev.api.copy_to_host(dev, record, 0, raw)
        number = int(raw[:4].view(np.int32)[0])
        if number == 0:
            return
        dev.api.copy_from_host(dev, record, 0, np.zeros(ERROR_RECORD_BYTES, np.uint8))
        if not 1 <= number <= len(checks):
            raise KernelError(f"{function}: a kernel reported check {number}, which it does "
                              "not have (a damaged module or a device fault)")
        check = checks[number - 1]
        args = [int(v) for v in raw[8:].view(np.int64)[:check["nargs"]]]
        raise KernelError(_printf(check["message"], args))  # as a CPU kernel's check says it

    def release_workspace(self, dev: Device, handle: int) -> None:
        """Free a workspace after the launches that use it have finished."""
        dev.api.synchronize(dev)
        dev.api.free(dev, handle)

    # ------------------------------------------------------------------ export
    def export_library(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        """Write the module as one JSON file (load it with ``tvm.runtime.load_module``)."""
        if kwargs:
            raise TypeError(f"{type(self).__name__}.export_library takes no options, got "
                            f"{sorted(kwargs)}")
        save_device_module(path, self.payload, self.file_suffix)

    def __repr__(self) -> str:
        return (f"<{type(self).__module__}.{type(self).__name__} functions="
                f"{self.function_names} kernels={list(self.kernels)}>")


def check_payload(payload: Any, fmt: str) -> None:
    """Raise :class:`ModuleLoadError` unless ``payload`` is a device module of format ``fmt``."""
    if not isinstance(payload, dict):
        raise ModuleLoadError(f"a {fmt} module must be a JSON object, got "
                              f"{type(payload).__name__}")
    if payload.get("format") != fmt:
        raise ModuleLoadError(f"expected a {fmt!r} device module, got format "
                              f"{payload.get('format')!r}")
    if payload.get("version") in _OLD_EXPRESSION_VERSIONS:
        raise ModuleLoadError(f"{fmt} module version {payload.get('version')!r} was written "
                              "before host programs took the shared expression format "
                              f"(this runtime reads version {DEVICE_MODULE_VERSION}); rebuild "
                              "it with tvm.tir.build or relax.build")
    if payload.get("version") != DEVICE_MODULE_VERSION:
        raise ModuleLoadError(f"{fmt} module version {payload.get('version')!r} is not "
                              f"supported (this runtime reads version {DEVICE_MODULE_VERSION})")
    for key in ("kernels", "functions"):
        if not isinstance(payload.get(key), list):
            raise ModuleLoadError(f"{fmt} module: {key!r} must be a list")
    for k in payload["kernels"]:
        if not isinstance(k, dict) or not {"name", "params", "launch_params"} <= set(k):
            raise ModuleLoadError(f"{fmt} module: malformed kernel description {k!r}")
        bad = [t for t in k["launch_params"] if t not in LAUNCH_TAGS]
        if bad:
            raise ModuleLoadError(f"{fmt} module: kernel {k['name']!r} launches over {bad}")
        checks = k.get("error_record", [])
        if not isinstance(checks, list) or not all(
                isinstance(c, dict) and isinstance(c.get("message"), str)
                and type(c.get("nargs")) is int and 0 <= c["nargs"] <= ERROR_RECORD_ARGS
                for c in checks):
            raise ModuleLoadError(f"{fmt} module: kernel {k['name']!r} has a malformed "
                                  f"error_record {checks!r}")


def save_device_module(path: str | os.PathLike[str], payload: dict[str, Any],
                       suffix: str = "") -> None:
    """Write ``payload`` as JSON to ``path`` (which should end in ``.<suffix>``)."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"export_library: directory {parent!r} does not exist")
    if suffix and not path.endswith("." + suffix):
        raise ValueError(f"export_library: a {payload.get('format')} module is written to a "
                         f".{suffix} file (tvm.runtime.load_module picks the loader by "
                         f"suffix), got {path!r}")
    from .file_seal import write_file

    write_file(path, [json.dumps(payload).encode("utf-8")])


def load_device_module_payload(path: str | os.PathLike[str], fmt: str) -> dict[str, Any]:
    """Read and check a device module written by :func:`save_device_module`."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModuleLoadError(f"load_module: cannot read {path!r} as a {fmt} module: "
                              f"{err}") from err
    check_payload(payload, fmt)
    return payload
