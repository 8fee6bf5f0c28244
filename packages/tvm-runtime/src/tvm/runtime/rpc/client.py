"""The RPC client: a :class:`~tvm.runtime.runner.Session` whose runner is on another machine.

:func:`connect` returns an :class:`RPCSession`; it is used as every session is
(``load_module``, ``run`` with ``number``/``repeat``, ``load_executable``), plus what only
a remote place needs: :meth:`RPCSession.upload` of bytes, a remote :meth:`~RPCSession.device`
whose tensors (:class:`RemoteTensor`) stay on the server between calls, and
:meth:`RemoteTensor.numpy` to download them.  Modules are the runners'
:class:`~tvm.runtime.runner.RemoteModule`: a call sends numpy arguments over and writes the
results back into them; :class:`RemoteTensor` arguments are updated on the server.
:class:`RPCRunner` is the runner (``create_runner("rpc", host=..., port=...)``).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from tvm.ffi.dtype import DTypeCode, parse_dtype

from ..error import ModuleLoadError
from ..file_seal import check_seal, seal_bytes
from ..module import Module
from ..packed_func import ParamInfo
from ..runner.base import (
    Runner,
    RunnerError,
    RunnerTimeoutError,
    RunResult,
    Session,
    _check_counts,
    tensor_indices,
)
from ..runner.process import RemoteModule, _host_array
from ..tensor import Tensor
from .protocol import (
    DEFAULT_MAX_FRAME,
    Connection,
    RPCError,
    decode_array,
    encode_array,
    introduce,
    raise_reply,
)

__all__ = ["connect", "RPCSession", "RPCRunner", "RPCDevice", "RemoteTensor"]


def connect(host: str, port: int, key: str | None = None, *, timeout: float = 600.0,
            max_frame: int = DEFAULT_MAX_FRAME) -> RPCSession:
    """A session with the RPC server at ``host:port`` (``key``: the server's shared key).
    ``timeout``: seconds to wait for any answer (a long kernel run included)."""
    return RPCRunner(host, port, key=key, timeout=timeout, max_frame=max_frame).session()


class RPCRunner(Runner):
    """Runs kernels on an RPC server: ``host``/``port`` directly, or a server of
    ``device_key`` that the tracker at ``tracker=(host, port)`` assigns (``tracker_key``:
    the tracker's shared key, ``request_timeout``: seconds to wait for a free server).
    ``key`` is the server's shared key."""

    name = "rpc"

    def __init__(self, host: str = "", port: int = 0, *, key: str | None = None,
                 tracker: tuple[str, int] | None = None, device_key: str | None = None,
                 tracker_key: str | None = None, request_timeout: float = 60.0,
                 timeout: float = 600.0, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__("")
        if tracker is None and not host:
            raise TypeError("RPCRunner needs host= and port=, or tracker= and device_key=")
        if tracker is not None and device_key is None:
            raise TypeError("RPCRunner: tracker= needs device_key=")
        self.host, self.port = host, int(port)
        self.key = key
        self.tracker, self.device_key, self.tracker_key = tracker, device_key, tracker_key
        self.request_timeout = float(request_timeout)
        self.timeout = float(timeout)
        self.max_frame = int(max_frame)

    def describe(self) -> str:
        where = (f"{self.host}:{self.port}" if self.tracker is None else
                 f"{self.device_key!r} via tracker {self.tracker[0]}:{self.tracker[1]}")
        return f"rpc runner ({where})"

    def session(self) -> RPCSession:
        if self.tracker is None:
            return RPCSession(self, self.host, self.port)
        from .tracker import connect_tracker

        with connect_tracker(*self.tracker, key=self.tracker_key) as tracker:
            host, port, token = tracker.assign(self.device_key, self.request_timeout)
        return RPCSession(self, host, port, token=token)


class RPCSession(Session):
    """A connection to one RPC server (see the module docstring); close it when done."""

    def __init__(self, runner: RPCRunner, host: str, port: int, token: str | None = None
                 ) -> None:
        self.runner = runner
        self.address = (host, int(port))
        try:
            sock = socket.create_connection(self.address, timeout=min(runner.timeout, 30.0))
        except OSError as err:
            raise RPCError(f"rpc: cannot connect to {host}:{port}: {err}") from None
        self._conn = Connection(sock, timeout=runner.timeout, max_frame=runner.max_frame,
                                peer=f"server {host}:{port}")
        self._lock = threading.Lock()
        try:
            welcome = introduce(self._conn, runner.key, "server", token=token)
        except BaseException:
            self._conn.close()
            raise
        self._closed = False
        limit = welcome.get("max_frame")
        if type(limit) is int and 0 < limit < self._conn.max_frame:
            self._conn.max_frame = limit  # refuse here what the server would refuse
        #: the server's machine (``aarch64`` for a server running its kernels under qemu)
        self.machine: str = str(welcome.get("machine", ""))
        #: how the server runs kernels (its runner's description)
        self.server_runner: str = str(welcome.get("runner", ""))
        self._what = f"rpc session ({host}:{port}, {self.server_runner})"
        self._modules: dict[str, RemoteModule] = {}

    # ------------------------------------------------------------------ transport

    def request(self, op: str, blobs: Sequence[Any] = (), **fields: Any
                ) -> tuple[dict[str, Any], list[memoryview]]:
        """One request and its reply (the server's error raised as a Python exception)."""
        with self._lock:
            if self._closed:
                raise RPCError(f"{self._what}: the session is closed (during {op})")
            message = {"op": op, **fields}
            self._conn.check_size(message, blobs)  # too big: refused, the session goes on
            try:
                self._conn.send(message, blobs)
                header, out = self._conn.recv()
            except BaseException:  # the stream is out of step now (an interrupt too)
                self._shut()
                raise
        if header.get("fatal"):
            self._shut()
        return raise_reply(header, self._conn.peer), out

    def _shut(self) -> None:
        self._closed = True
        self._conn.close()

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        try:
            self.request("close")
        except RPCError:
            pass
        self._shut()

    @property
    def alive(self) -> bool:
        return not self._closed

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def info(self) -> dict[str, Any]:
        """What the server says about itself: machine, runner, triple, device key, limits."""
        header = dict(self.request("info")[0])
        header.pop("ok", None)
        return header

    # ------------------------------------------------------------------ modules

    def upload(self, data: bytes | str | os.PathLike[str], name: str | None = None) -> str:
        """Send a file (its bytes, or a local path) to the server's session folder as
        ``name`` (default: the path's base name); returns the name to :meth:`load` it by."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            name = name or os.path.basename(os.fspath(data))
            with open(data, "rb") as f:
                data = f.read()
        if not name:
            raise ValueError("upload: bytes need a name=")
        return self.request("upload", [data], name=name)[0]["name"]

    def load(self, name: str, origin: str | None = None) -> RemoteModule:
        """The uploaded library ``name`` loaded on the server (it checks the seal)."""
        header, _ = self.request("load", name=name)
        return RemoteModule(self, int(header["module"]), header["meta"], origin or name)

    def load_module(self, path: str | os.PathLike[str] | bytes, trusted: bool = False
                    ) -> RemoteModule:
        """Upload a library (a local path, or its bytes) and load it on the server; the same
        content is loaded once per session.  The library must carry tvm's seal unless
        ``trusted`` (then it is sealed for the trip: the server always checks)."""
        if isinstance(path, (bytes, bytearray, memoryview)):
            data, origin = bytes(path), "<bytes>"
        else:
            origin = os.path.abspath(os.fspath(path))
            if not os.path.exists(origin):
                raise FileNotFoundError(f"{self._what}: no such file: {origin!r}")
            if not trusted:
                check_seal(origin, self._what)
            with open(origin, "rb") as f:
                data = f.read()
        if trusted:
            data = seal_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._modules:
            return self._modules[digest]
        try:
            module = self.load(self.upload(data, f"lib-{digest[:24]}.so"), origin)
        except ModuleLoadError as err:
            raise ModuleLoadError(f"{self._what}: {origin}: {err}") from None
        self._modules[digest] = module
        return module

    # ------------------------------------------------------------------ calls

    def call(self, module_id: int, symbol: str, args: Sequence[Any], returned: set[int],
             number: int = 1, repeat: int = 0, params: Sequence[ParamInfo] | None = None,
             update: bool = True) -> tuple[dict[int, memoryview], tuple[float, ...]]:
        """One call on the server (the interface of
        :meth:`~tvm.runtime.runner.ProcessSession.call`): ``(bytes of each returned tensor,
        seconds per call)``.  :class:`RemoteTensor` arguments are updated there when
        ``update``."""
        _check_counts(number, repeat)
        blobs: list[Any] = []
        wire: list[Any] = []
        for i, value in enumerate(args):
            param = params[i] if params and i < len(params) else None
            wire.append(_wire_arg(symbol, i, value, param, blobs, self))
        try:
            header, out = self.request("call", blobs, module=module_id, symbol=symbol,
                                       args=wire, returned=sorted(returned), number=number,
                                       repeat=repeat, update=update)
        except RunnerError as err:
            if type(err) in (RunnerError, RunnerTimeoutError):
                self._modules.clear()  # the server's runner died and its modules with it
            raise
        sent = header.get("returned", [])
        if len(sent) != len(out):
            raise RPCError(f"{self._what}: the reply lists {len(sent)} tensors and holds "
                           f"{len(out)}")
        return dict(zip(sent, out)), tuple(float(t) for t in header.get("times", []))

    def run(self, lib: str | os.PathLike[str] | Module, func: str, args: Sequence[Any], *,
            outputs: Sequence[int] | None = None, number: int = 1, repeat: int = 0
            ) -> RunResult:
        module = lib if isinstance(lib, RemoteModule) else self.load_module(lib)
        fn = module.get_function(func)
        wanted = tensor_indices(args, outputs)
        arrays = [_host_array(fn.name, i, a) if isinstance(a, (np.ndarray, Tensor)) else a
                  for i, a in enumerate(args)]
        data, times = self.call(module.module_id, fn.symbol, arrays, wanted, number, repeat,
                                fn.params, update=False)
        result = {i: np.frombuffer(data[i], dtype=arrays[i].dtype).reshape(arrays[i].shape)
                  .copy() for i in sorted(wanted)}
        return RunResult(result, times, number, len(args), self._what)

    # ------------------------------------------------------------------ tensors

    def device(self, kind: str = "cpu", index: int = 0) -> RPCDevice:
        """The server's device ``kind`` (the runner's host memory: ``cpu`` only)."""
        if kind != "cpu" or index != 0:
            raise ValueError(f"{self._what}: the server's runner offers cpu(0) only, not "
                             f"{kind}({index})")
        return RPCDevice(self, kind, index)

    def cpu(self, index: int = 0) -> RPCDevice:
        return self.device("cpu", index)


class RPCDevice:
    """A device of an RPC server: makes :class:`RemoteTensor` s there."""

    def __init__(self, session: RPCSession, kind: str, index: int) -> None:
        self.session, self.kind, self.index = session, kind, index

    def empty(self, shape: Sequence[int], dtype: str = "float32") -> RemoteTensor:
        """A zero-filled tensor on the server."""
        shape = [int(d) for d in shape]
        header, _ = self.session.request("alloc", shape=shape, dtype=np.dtype(dtype).name)
        return RemoteTensor(self, int(header["tensor"]), tuple(shape), np.dtype(dtype))

    def array(self, data: Any) -> RemoteTensor:
        """A tensor on the server holding a copy of ``data`` (a numpy array or tensor)."""
        arr = _host_array("array", 0, data) if isinstance(data, Tensor) else np.asarray(data)
        blobs: list[Any] = []
        desc = encode_array(arr, blobs)
        header, _ = self.session.request("alloc", blobs, **desc)
        return RemoteTensor(self, int(header["tensor"]), arr.shape, arr.dtype)

    def __repr__(self) -> str:
        return f"<RPCDevice {self.kind}({self.index}) of {self.session.address}>"


class RemoteTensor:
    """A tensor held by an RPC server's session; pass it to a remote function (it is
    updated there), read it with :meth:`numpy`."""

    def __init__(self, device: RPCDevice, tid: int, shape: tuple[int, ...],
                 dtype: np.dtype) -> None:
        self.device, self.id, self.shape, self.dtype = device, tid, tuple(shape), dtype

    @property
    def session(self) -> RPCSession:
        return self.device.session

    def numpy(self) -> np.ndarray:
        """Download the tensor's contents."""
        header, blobs = self.session.request("read", tensor=self.id)
        return decode_array(header["tensor"], blobs, copy=False)  # the reply's own buffer

    def copyfrom(self, data: Any) -> RemoteTensor:
        """Upload ``data`` (same shape and dtype) into the tensor."""
        blobs: list[Any] = []
        desc = encode_array(np.asarray(data, dtype=self.dtype), blobs)
        self.session.request("write", blobs, tensor=self.id, **desc)
        return self

    def free(self) -> None:
        """Release the tensor on the server now."""
        if self.session.alive:
            self.session.request("free", tensor=self.id)

    def __repr__(self) -> str:
        return f"<RemoteTensor {self.id} {self.dtype.name}{list(self.shape)} on {self.device}>"


def _wire_arg(fname: str, index: int, value: Any, param: ParamInfo | None,
              blobs: list[Any], session: RPCSession) -> Any:
    if isinstance(value, RemoteTensor):
        if value.session is not session:
            raise ValueError(f"{fname}: argument {index} is a tensor of another rpc session")
        return {"tensor": value.id}
    if isinstance(value, np.ndarray):
        return encode_array(value, blobs)
    if value is None:
        return None
    is_float = isinstance(value, (float, np.floating))
    if param is not None and param.dtype is not None and param.kind == "scalar":
        is_float = parse_dtype(param.dtype)[0] in (DTypeCode.FLOAT, DTypeCode.BFLOAT)
    if is_float and isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
        return float(value)
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return int(value)
    raise TypeError(f"{fname}: argument {index}: rpc cannot pass a {type(value).__name__} "
                    "(tensors, numbers and None only)")

