"""Running kernels in a child process: the C runner server, optionally under an emulator.

:class:`ProcessRunner` compiles ``server.c`` (shipped beside this module) once per C
compiler into the cache (``tvm.ffi.knobs.cache_dir("runner")``), starts it as
``[*launcher, server]`` (``launcher`` is e.g. ``["qemu-aarch64", "-L", sysroot]``; empty:
a native child process, which isolates crashes of code built for this machine) and talks
to it over its stdin/stdout with the protocol described at the top of ``server.c``.  The
server ``dlopen``-s the library, so no Python runs on the other side; the library's path is
passed as it is (qemu-user and a child share this machine's file system), or with
``upload=True`` its bytes (a server elsewhere, started through a launcher such as ssh).

:class:`RemoteModule` is a :class:`~tvm.runtime.Module` whose functions forward each call
to the session: argument tensors travel to the server, the tensors after the call travel
back and are written into the caller's tensors.  So the host VM runs an executable's
bytecode while every kernel call runs in the server (:meth:`Session.load_executable`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tvm.ffi import knobs
from tvm.ffi.dlpack import ArgTypeCode
from tvm.ffi.dtype import DTypeCode, from_numpy_dtype, parse_dtype, to_numpy_dtype

from ..error import KernelError, ModuleLoadError
from ..file_seal import check_seal
from ..module import Module
from ..packed_func import ParamInfo
from ..tensor import Tensor
from .base import (
    RunnerError,
    RunnerTimeoutError,
    RunnerUnavailableError,
    RunResult,
    Runner,
    Session,
    _check_counts,
    tensor_indices,
)

__all__ = ["ProcessRunner", "ProcessSession", "RemoteModule", "RemoteFunction", "build_server",
           "SERVER_SOURCE"]

#: the C source of the runner server (package data)
SERVER_SOURCE = Path(__file__).with_name("server.c")
PROTOCOL = 1

_OP_QUIT, _OP_HELLO, _OP_LOAD, _OP_CALL, _OP_THREADS, _OP_UPLOAD = range(6)
_FRAME = struct.Struct("<IQ")
_build_lock = threading.Lock()


def _find_host_cc(cc: str | None) -> str:
    for candidate in (cc, knobs.CC.get(), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate
    raise RunnerUnavailableError(
        "process runner: no C compiler to build the runner server (tried $CC, cc, gcc, "
        "clang); install one or pass cc=")


def build_server(cc: str, *, label: str = "host", cflags: Sequence[str] = ()) -> Path:
    """The runner server compiled by ``cc`` (a command, possibly with flags), from the cache
    when the same source, compiler and flags built it before."""
    parts = cc.split() + list(cflags)
    exe = shutil.which(parts[0])
    if exe is None:
        raise RunnerUnavailableError(
            f"runner for {label}: the C compiler {parts[0]!r} is not on PATH (needed once to "
            "build the runner server)")
    source = SERVER_SOURCE.read_bytes()
    key = hashlib.sha256(source + "\0".join([exe, *parts[1:]]).encode()).hexdigest()[:16]
    out = knobs.cache_dir("runner") / f"tvm-runner-server-{label}-{key}"
    if out.exists():
        return out
    with _build_lock:
        if out.exists():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
        cmd = [exe, *parts[1:], "-O2", "-std=c11", "-o", str(tmp), str(SERVER_SOURCE),
               "-ldl", "-lpthread"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RunnerError(f"runner for {label}: building the runner server failed "
                              f"(exit {proc.returncode}):\n  {' '.join(cmd)}\n{proc.stderr}")
        os.replace(tmp, out)
    return out


class ProcessRunner(Runner):
    """Runs kernels in a child process running the C runner server.

    ``launcher``: the command prefix the server runs under (an emulator and its options;
    empty: natively).  ``cc``: the C compiler for the code's machine (the host's by
    default).  ``num_threads``: threads of parallel launches in the server.  ``timeout``:
    seconds one request may take before the server is stopped.  ``upload``: send each
    library's bytes instead of its path (for a server that does not share this machine's
    file system, such as one a subclass starts on a board).
    """

    name = "process"

    def __init__(self, *, launcher: Sequence[str] = (), cc: str | None = None,
                 triple: str = "", num_threads: int = 1, timeout: float = 600.0,
                 env: dict[str, str] | None = None, upload: bool = False) -> None:
        super().__init__(triple)
        self.launcher = tuple(launcher)
        self.cc = cc
        self.num_threads = int(num_threads)
        self.timeout = float(timeout)
        self.env = dict(env or {})
        self.upload = bool(upload)

    def check_available(self) -> None:
        """Raise :class:`RunnerUnavailableError` when the launcher is not installed."""
        if self.launcher and shutil.which(self.launcher[0]) is None:
            raise RunnerUnavailableError(
                f"{self.describe()}: {self.launcher[0]!r} is not on PATH; {self.install_hint()}")

    def install_hint(self) -> str:
        """What to install when the launcher is missing (subclasses say more)."""
        return "install it or pass launcher="

    def server_path(self) -> Path:
        """The compiled runner server for this runner's machine (built once, cached)."""
        cc = self.cc if self.launcher else _find_host_cc(self.cc)
        if cc is None:
            raise RunnerUnavailableError(f"{self.describe()}: no C compiler given (cc=)")
        label = (self.triple or "host").replace("/", "_")
        try:
            return build_server(cc, label=label)
        except RunnerError as err:
            raise type(err)(f"{self.describe()}: {err}") from None

    def session(self) -> ProcessSession:
        self.check_available()
        return ProcessSession(self)


class ProcessSession(Session):
    """One running server process (see :class:`ProcessRunner`)."""

    def __init__(self, runner: ProcessRunner) -> None:
        self.runner = runner
        self._what = runner.describe()
        server = runner.server_path()
        self._stderr = tempfile.TemporaryFile(prefix="tvm-runner-stderr-")
        env = dict(os.environ)
        env.update(runner.env)
        env["TVM_NUM_THREADS"] = str(max(runner.num_threads, 1))
        self._cmd = [*runner.launcher, str(server)]
        try:
            self._proc = subprocess.Popen(self._cmd, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        except OSError as err:
            raise RunnerUnavailableError(f"{self._what}: cannot start {self._cmd}: {err}") \
                from None
        self._modules: dict[str, RemoteModule] = {}
        self._lock = threading.Lock()
        hello = self._request(_OP_HELLO, b"", "start").decode("utf-8", "replace")
        parts = hello.split()
        if len(parts) < 4 or parts[0] != "tvm-runner" or parts[1] != str(PROTOCOL):
            self.close()
            raise RunnerError(f"{self._what}: the server answered {hello!r}; expected "
                              f"protocol {PROTOCOL}")
        #: the machine the server reports (``uname -m`` as the code sees it: aarch64 under
        #: qemu-aarch64)
        self.machine = parts[3]

    # ------------------------------------------------------------------ protocol

    def _fail(self, during: str, reason: str, timeout: bool = False) -> RunnerError:
        stderr = self._stderr_tail()
        tail = f"\nserver stderr:\n{stderr}" if stderr else ""
        cls = RunnerTimeoutError if timeout else RunnerError
        return cls(f"{self._what}: {reason} during {during}{tail}")

    def _stderr_tail(self, limit: int = 2000) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read().decode("utf-8", "replace")[-limit:].strip()
        except (OSError, ValueError):
            return ""

    def _died(self, during: str) -> RunnerError:
        proc = self._proc
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        if rc < 0:
            try:
                sig = signal.Signals(-rc).name
            except ValueError:
                sig = str(-rc)
            reason = f"the runner process was killed by signal {sig}"
        else:
            reason = f"the runner process exited with status {rc}"
        return self._fail(during, reason)

    def _read(self, n: int, deadline: float, during: str) -> bytes:
        fd = self._proc.stdout.fileno()
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                self._kill()
                raise self._fail(during, f"no answer within {self.runner.timeout:g} s (the "
                                         "runner process was stopped)", timeout=True)
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise self._died(during)
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _request(self, op: int, payload: bytes, during: str) -> bytes:
        with self._lock:
            if self._proc is None:
                raise RunnerError(f"{self._what}: the session is closed (during {during})")
            if self._proc.poll() is not None:
                raise self._died(during)
            try:
                self._proc.stdin.write(_FRAME.pack(op, len(payload)))
                self._proc.stdin.write(payload)
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._died(during) from None
            deadline = time.monotonic() + self.runner.timeout
            status, n = _FRAME.unpack(self._read(_FRAME.size, deadline, during))
            body = self._read(n, deadline, during) if n else b""
        if status != 0:
            raise _RequestFailed(body.decode("utf-8", "replace"))
        return body

    def kill(self) -> None:
        """Kill the server process at once, without waiting for it (safe from another
        thread: a request under way there fails with a RunnerError)."""
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def close(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.stdin.write(_FRAME.pack(_OP_QUIT, 0))
                proc.stdin.flush()
                proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._kill()
        for stream in (proc.stdout, proc.stdin):
            try:
                stream.close()
            except OSError:
                pass
        self._stderr.close()
        self._proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    @property
    def alive(self) -> bool:
        """Whether the server process is still running."""
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------------ API

    def load_module(self, path: str | os.PathLike[str], trusted: bool = False
                    ) -> RemoteModule:
        key = os.path.abspath(os.fspath(path))
        if key in self._modules:
            return self._modules[key]
        if not os.path.exists(key):
            raise FileNotFoundError(f"{self._what}: no such file: {key!r}")
        if not trusted:  # as load_module does: only files tvm wrote (see file_seal)
            check_seal(key, self._what)
        if self.runner.upload:
            with open(key, "rb") as f:
                op, payload = _OP_UPLOAD, f.read()
        else:
            op, payload = _OP_LOAD, key.encode("utf-8")
        try:
            body = self._request(op, payload, f"loading {key!r}")
        except _RequestFailed as err:
            raise ModuleLoadError(f"{self._what}: {err}") from None
        (module_id,) = struct.unpack_from("<I", body)
        try:
            meta = json.loads(body[4:].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ModuleLoadError(f"{self._what}: {key!r}: __tvm_module_meta is not valid "
                                  f"JSON: {err}") from None
        module = RemoteModule(self, module_id, meta, key)
        self._modules[key] = module
        return module

    def call(self, module_id: int, symbol: str, args: Sequence[Any], returned: set[int],
             number: int = 1, repeat: int = 0, params: Sequence[ParamInfo] | None = None,
             ) -> tuple[dict[int, bytes], tuple[float, ...]]:
        """One CALL request: ``(bytes of each returned tensor, seconds per call)``."""
        _check_counts(number, repeat)
        name = symbol.encode("utf-8")
        parts = [struct.pack("<II", module_id, len(name)), name,
                 struct.pack("<III", number, repeat, len(args))]
        for i, value in enumerate(args):
            parts.append(_pack_arg(symbol, i, value, i in returned,
                                   params[i] if params and i < len(params) else None))
        try:
            body = self._request(_OP_CALL, b"".join(parts), f"the call of {symbol!r}")
        except _RequestFailed as err:
            raise KernelError(f"{self._what}: {err}") from None
        view = memoryview(body)
        (count,), pos = struct.unpack_from("<I", view), 4
        out: dict[int, bytes] = {}
        for _ in range(count):
            index, nbytes = struct.unpack_from("<IQ", view, pos)
            pos += 12
            out[index] = view[pos:pos + nbytes]
            pos += nbytes
        (rounds,) = struct.unpack_from("<I", view, pos)
        times = struct.unpack_from(f"<{rounds}d", view, pos + 4)
        return out, tuple(times)

    def set_num_threads(self, n: int) -> None:
        """Threads of the server's parallel launches from now on."""
        self._request(_OP_THREADS, struct.pack("<i", int(n)), "set_num_threads")

    def run(self, lib: str | os.PathLike[str] | Module, func: str, args: Sequence[Any], *,
            outputs: Sequence[int] | None = None, number: int = 1, repeat: int = 0
            ) -> RunResult:
        module = lib if isinstance(lib, RemoteModule) else self.load_module(lib)
        fn = module.get_function(func)
        wanted = tensor_indices(args, outputs)
        arrays = [_host_array(fn.name, i, a) if isinstance(a, (np.ndarray, Tensor)) else a
                  for i, a in enumerate(args)]
        data, times = self.call(module.module_id, fn.symbol, arrays, wanted, number, repeat,
                                fn.params)
        result = {i: np.frombuffer(data[i], dtype=arrays[i].dtype).reshape(arrays[i].shape)
                  .copy() for i in sorted(wanted)}
        return RunResult(result, times, number, len(args), self._what)


class _RequestFailed(Exception):
    """The server answered a request with an error message."""


def _host_array(fname: str, index: int, value: Any) -> np.ndarray:
    """A C-contiguous host numpy view of a tensor argument (no copy when it is one)."""
    if isinstance(value, Tensor):
        if value.device.device_type != 1:
            raise TypeError(f"{fname}: argument {index} is on {value.device}; a runner "
                            "takes host tensors")
        if value._array is not None:  # wraps a numpy array
            return np.ascontiguousarray(value._array)
        value._require_compact("runner")
        dtype = to_numpy_dtype(value.dtype)
        nbytes = value.nbytes
        buf = (ctypes.c_char * max(nbytes, 1)).from_address(value.data_ptr + value.byte_offset)
        return np.frombuffer(buf, dtype=np.uint8, count=nbytes).view(dtype).reshape(value.shape)
    return np.ascontiguousarray(value)


def _pack_arg(fname: str, index: int, value: Any, returned: bool,
              param: ParamInfo | None) -> bytes:
    if isinstance(value, np.ndarray):
        code, bits, lanes = parse_dtype(from_numpy_dtype(value.dtype))
        head = struct.pack("<BBBBHI", int(ArgTypeCode.kDLTensorHandle), int(returned),
                           int(code), bits, lanes, value.ndim)
        shape = struct.pack(f"<{value.ndim}q", *value.shape)
        return head + shape + struct.pack("<Q", value.nbytes) + value.tobytes()
    if value is None:
        return struct.pack("<B", int(ArgTypeCode.kNull))
    is_float = isinstance(value, (float, np.floating))
    if param is not None and param.dtype is not None and param.kind == "scalar":
        is_float = parse_dtype(param.dtype)[0] in (DTypeCode.FLOAT, DTypeCode.BFLOAT)
    if is_float:
        return struct.pack("<Bd", int(ArgTypeCode.kFloat), float(value))
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return struct.pack("<Bq", int(ArgTypeCode.kInt), int(value))
    raise TypeError(f"{fname}: argument {index}: a runner cannot pass a "
                    f"{type(value).__name__} (tensors, numbers and None only)")


class RemoteFunction:
    """A kernel of a :class:`RemoteModule`: calling it runs the kernel in the session and
    writes the tensors back into the given ones (as a local kernel writes its outputs)."""

    def __init__(self, module: RemoteModule, meta: dict[str, Any]) -> None:
        self.module = module
        self.name: str = meta["name"]
        self.symbol: str = meta.get("symbol") or self.name
        raw = meta.get("params")
        self.params: tuple[ParamInfo, ...] | None = None if raw is None else tuple(
            ParamInfo.from_meta(self.name, i, e) for i, e in enumerate(raw))

    def __call__(self, *args: Any) -> None:
        if self.params is not None and len(args) != len(self.params):
            raise TypeError(f"{self.name}() takes {len(self.params)} arguments, got {len(args)}")
        arrays = [_host_array(self.name, i, a) if isinstance(a, (np.ndarray, Tensor)) else a
                  for i, a in enumerate(args)]
        writable = {i for i, a in enumerate(arrays)
                    if isinstance(a, np.ndarray) and a.flags.writeable}
        data, _ = self.module.session.call(self.module.module_id, self.symbol, arrays,
                                           writable, params=self.params)
        for i, raw in data.items():
            dst = arrays[i]
            src = np.frombuffer(raw, dtype=dst.dtype).reshape(dst.shape)
            if dst is not args[i] and isinstance(args[i], np.ndarray):
                np.copyto(args[i], src)  # a non-contiguous caller array
            else:
                np.copyto(dst, src)

    def __repr__(self) -> str:
        return f"<RemoteFunction {self.name} in {self.module.session.runner.describe()}>"


class RemoteModule(Module):
    """The kernels of a library loaded in a :class:`ProcessSession` (see the module
    docstring); ``device_type`` 1: they take host tensors."""

    type_key = "remote"
    device_type = 1

    def __init__(self, session: ProcessSession, module_id: int, meta: dict[str, Any],
                 path: str) -> None:
        super().__init__()
        self.session = session
        self.module_id = module_id
        self.path = path
        self.meta = meta
        self.target = str(meta.get("target", ""))
        funcs = meta.get("functions")
        if not isinstance(funcs, list):
            raise ModuleLoadError(f"{session.runner.describe()}: {path!r}: its metadata lists "
                                  "no functions")
        for f in funcs:
            self._functions[f["name"]] = RemoteFunction(self, f)
        entry = meta.get("entry")
        if entry in self._functions:
            self._entry_name = entry

    def __repr__(self) -> str:
        return (f"<RemoteModule {self.path!r} in {self.session.runner.describe()} "
                f"functions={self.function_names}>")
