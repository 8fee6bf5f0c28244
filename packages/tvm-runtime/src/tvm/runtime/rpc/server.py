"""The RPC server: runs uploaded libraries for remote clients through a local runner.

Each client connection gets its own session of the server's runner, a
:class:`~tvm.runtime.runner.ProcessRunner` (by default the native C runner server in a
child process; under qemu-user for cross-built code with the ``qemu`` runner of the llvm
target, or any ``launcher``).  So a kernel that crashes ends that child, not the RPC server,
and no client's code ever runs in the server's Python.  The server keeps, per session, the
uploaded files (in a private temporary folder, removed at the end) and the tensors the
client allocated (host memory of the server: the runner's device).

Requests (see :mod:`.protocol` for framing, handshake and replies): ``info``, ``upload``
(a file's bytes), ``load`` (an uploaded library: its metadata), ``call`` (a kernel, with
inline tensors or the session's tensors, timed ``number``/``repeat`` as the runners do),
``alloc``/``write``/``read``/``free`` (session tensors), ``close``.

With ``tracker=`` the server registers with a tracker (:mod:`.tracker`) under its
``device_key`` and then serves only the clients the tracker sends, one at a time.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import shutil
import socket
import tempfile
import threading
import time
from typing import Any

import numpy as np

from ..runner.base import Runner, RunnerError
from ..runner.process import ProcessRunner, ProcessSession, RemoteModule
from .protocol import (
    DEFAULT_MAX_FRAME,
    ConnectionClosed,
    Connection,
    RPCError,
    RPCProtocolError,
    check_shape,
    decode_array,
    encode_array,
    error_reply,
    greet,
    introduce,
    refuse,
    welcome,
)

__all__ = ["RPCServer"]

log = logging.getLogger("tvm.rpc.server")
#: the largest frame a client may send before the handshake is done
HANDSHAKE_FRAME = 1 << 16
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class RPCServer:
    """Serves RPC clients on ``host:port`` (port 0: a free one, see :attr:`address`).

    ``key``: the shared key clients must prove (None: anyone who can connect may run
    code: bind to 127.0.0.1 or use a key).  ``runner``: the ProcessRunner sessions run in
    (default: a native one).  ``tracker``: ``(host, port)`` of a tracker to register with
    under ``device_key`` (``tracker_key``: the tracker's shared key).  ``max_frame``: the
    largest message accepted; ``max_tensor_bytes``: the tensors one session may hold;
    ``handshake_timeout`` / ``idle_timeout``: seconds a client may take to say hello / to
    send its next request; ``max_sessions``: clients served at once (``max_connections``:
    connections open at once, handshakes included; more are closed at once); ``assign_timeout``:
    seconds a client the tracker sent has to arrive before the server is free again.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 runner: Runner | None = None, tracker: tuple[str, int] | None = None,
                 device_key: str = "default", tracker_key: str | None = None,
                 max_frame: int = DEFAULT_MAX_FRAME, max_tensor_bytes: int = 4 << 30,
                 handshake_timeout: float = 10.0, idle_timeout: float = 600.0,
                 max_sessions: int = 4, advertise_host: str | None = None,
                 assign_timeout: float = 30.0, max_connections: int = 64) -> None:
        runner = runner if runner is not None else ProcessRunner()
        if not isinstance(runner, ProcessRunner):
            raise TypeError("RPCServer: runner must be a ProcessRunner (a child process "
                            f"isolates the clients' kernels), got {type(runner).__name__}")
        runner.check_available()
        runner.server_path()  # build the C runner server now, not during a client's request
        self.runner = runner
        self.key = key
        self.max_frame = int(max_frame)
        self.max_tensor_bytes = int(max_tensor_bytes)
        self.handshake_timeout = float(handshake_timeout)
        self.idle_timeout = float(idle_timeout)
        self.max_sessions = 1 if tracker else int(max_sessions)
        self.max_connections = int(max_connections)
        self.device_key = device_key
        self._sock = socket.create_server((host, port))
        self._sock.settimeout(0.25)
        self.address: tuple[str, int] = self._sock.getsockname()[:2]
        self._advertise = advertise_host
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: set[Connection] = set()
        self._sessions: set[_ClientSession] = set()
        self._open = 0  # connections accepted and not yet closed
        self._lock = threading.Lock()
        self._active = 0
        self._tracker = _TrackerLink(self, tracker, tracker_key, assign_timeout) \
            if tracker else None

    # ------------------------------------------------------------------ life cycle

    def start(self) -> RPCServer:
        """Serve in a background thread; returns self."""
        self._spawn(self.serve_forever, "tvm-rpc-accept")
        return self

    def serve_forever(self) -> None:
        """Accept clients until :meth:`stop`."""
        if self._tracker is not None:
            self._tracker.start()
        while not self._stop.is_set():
            try:
                sock, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    break
                raise
            with self._lock:
                full = self._open >= self.max_connections
                self._open += not full
            if full:
                log.warning("rpc server: %d connections open; refusing another",
                            self.max_connections)
                sock.close()
                continue
            self._spawn(lambda s=sock: self._serve_client(s), "tvm-rpc-session")

    def stop(self) -> None:
        """Stop accepting, end every session (their runner processes too), and wait."""
        self._stop.set()
        self._sock.close()
        with self._lock:
            conns, sessions = list(self._conns), list(self._sessions)
        for conn in conns:
            conn.close()
        for session in sessions:  # a kernel still running ends now
            if session.backend is not None:
                session.backend.kill()
        if self._tracker is not None:
            self._tracker.stop()
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            if t is not threading.current_thread():
                t.join(10)

    def __enter__(self) -> RPCServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _spawn(self, fn: Any, name: str) -> None:
        t = threading.Thread(target=fn, name=name, daemon=True)
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
        t.start()

    # ------------------------------------------------------------------ one client

    def _serve_client(self, sock: socket.socket) -> None:
        # until the client has proved the key, it may send only small frames
        conn = Connection(sock, timeout=self.handshake_timeout, max_frame=HANDSHAKE_FRAME)
        with self._lock:
            self._conns.add(conn)
        token = None
        try:
            hello, nonce = greet(conn, "server", self.key)
            if self._tracker is not None:
                token = self._tracker.claim(hello.get("token"))
            with self._lock:
                busy = self._active >= self.max_sessions
                if not busy:
                    self._active += 1
            if busy:
                conn.send(error_reply(RPCError(
                    f"the server is busy ({self.max_sessions} clients at once)")))
                return
            try:
                welcome(conn, self.key, nonce, machine=_machine(self.runner),
                        runner=self.runner.describe(), max_frame=self.max_frame)
                conn.settimeout(self.idle_timeout)
                conn.max_frame = self.max_frame
                session = _ClientSession(self, conn)
                with self._lock:
                    self._sessions.add(session)
                try:
                    session.serve()
                finally:
                    with self._lock:
                        self._sessions.discard(session)
            finally:
                with self._lock:
                    self._active -= 1
        except ConnectionClosed:
            pass
        except RPCError as err:  # a malformed frame, a refused key, a timeout
            log.info("rpc server: dropped %s: %s", conn.peer, err)
            refuse(conn, err)
        except Exception:  # noqa: BLE001 - one client must never stop the server
            log.exception("rpc server: error serving %s", conn.peer)
        finally:
            conn.close()
            with self._lock:
                self._conns.discard(conn)
                self._open -= 1
            if token is not None and self._tracker is not None:
                self._tracker.release(token)

    def advertised(self) -> tuple[str, int]:
        """The address the tracker gives clients."""
        host = self._advertise or self.address[0]
        return (host, self.address[1])


def _id_field(header: dict[str, Any], name: str, op: str) -> int:
    value = header.get(name)
    if type(value) is not int:
        raise ValueError(f"{op}: {name} must be an int id, got {value!r}")
    return value


def _machine(runner: ProcessRunner) -> str:
    return (runner.triple or platform.machine()).split("-")[0]


class _ClientSession:
    """The state of one connected client: its runner session, files and tensors."""

    def __init__(self, server: RPCServer, conn: Connection) -> None:
        self.server = server
        self.conn = conn
        self.folder = tempfile.mkdtemp(prefix="tvm-rpc-session-")
        self.backend: ProcessSession | None = None
        self.modules: dict[int, RemoteModule] = {}
        self.tensors: dict[int, np.ndarray] = {}
        self.tensor_bytes = 0
        self._next = 1

    def serve(self) -> None:
        try:
            while True:
                header, blobs = self.conn.recv()
                op = header.get("op")
                handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
                if handler is None:
                    raise RPCProtocolError(f"rpc: unknown request {op!r}")
                try:
                    reply, out = handler(header, blobs)
                except RPCProtocolError:
                    raise
                except Exception as err:  # noqa: BLE001 - a failed request, told to the client
                    if not isinstance(err, (RunnerError, ValueError, TypeError, KeyError,
                                            OSError, MemoryError)):
                        log.warning("rpc server: %s failed: %s: %s", op, type(err).__name__,
                                    err)
                    self.conn.send(error_reply(err))
                    continue
                self.conn.send({"ok": True, **reply}, out)
                if op == "close":
                    return
        finally:
            if self.backend is not None:
                self.backend.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    def _id(self) -> int:
        self._next += 1
        return self._next - 1

    def _session(self) -> ProcessSession:
        if self.backend is None or not self.backend.alive:
            if self.backend is not None:  # a kernel crashed it: start afresh
                self.backend.close()
                self.modules.clear()
            self.backend = self.server.runner.session()
        return self.backend

    # ------------------------------------------------------------------ requests

    def op_info(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        runner = self.server.runner
        return {"machine": _machine(runner), "runner": runner.describe(),
                "triple": runner.triple, "device_key": self.server.device_key,
                "max_frame": self.server.max_frame}, []

    def op_upload(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        name = header.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"upload: {name!r} is not a plain file name (letters, digits, "
                             "'_', '.', '-'; no folders)")
        if len(blobs) != 1:
            raise ValueError("upload: expected the file's bytes as one blob")
        with open(os.path.join(self.folder, name), "wb") as f:
            f.write(blobs[0])
        return {"name": name, "size": len(blobs[0])}, []

    def op_load(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        name = header.get("name")
        path = os.path.join(self.folder, str(name))
        if not isinstance(name, str) or not _NAME.match(name) or not os.path.isfile(path):
            raise FileNotFoundError(f"load: no uploaded file {name!r}")
        module = self._session().load_module(path)  # checks the file's seal
        self.modules[module.module_id] = module
        return {"module": module.module_id, "meta": module.meta}, []

    def op_call(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        if self.backend is not None and not self.backend.alive:
            self.modules.clear()  # a kernel crashed the runner, and its modules with it
        module = self.modules.get(_id_field(header, "module", "call"))
        if module is None or self.backend is not module.session:
            raise KeyError(f"call: module {header.get('module')!r} is not loaded in this "
                           "session (a crashed kernel unloads them all)")
        symbol = header.get("symbol")
        fn = next((f for f in module._functions.values() if f.symbol == symbol), None)
        if fn is None:
            raise KeyError(f"call: the module has no function with symbol {symbol!r}")
        raw_args, wanted = header.get("args"), header.get("returned", [])
        if not isinstance(raw_args, list) or not isinstance(wanted, list):
            raise ValueError("call: args and returned must be lists")
        number, repeat = header.get("number", 1), header.get("repeat", 0)
        update = bool(header.get("update", False))
        args: list[Any] = []
        stored: dict[int, int] = {}
        for i, a in enumerate(raw_args):
            if type(a) is int and not -(1 << 63) <= a < 1 << 63:
                raise ValueError(f"call: argument {i} ({a}) does not fit in 64 bits")
            if a is None or type(a) in (int, float):
                args.append(a)
            elif isinstance(a, dict) and "tensor" in a:
                stored[i] = _id_field(a, "tensor", "call")
                args.append(self._tensor(stored[i]))
            else:
                args.append(decode_array(a, blobs, copy=False))
        returned = {i for i in wanted if type(i) is int and 0 <= i < len(args)
                    and isinstance(args[i], np.ndarray) and i not in stored}
        if update:
            returned |= set(stored)
        data, times = module.session.call(module.module_id, fn.symbol, args, returned,
                                          number, repeat, fn.params)
        out: list[memoryview] = []
        sent = []
        for i in sorted(data):
            if i in stored:
                dst = self.tensors[stored[i]]
                np.copyto(dst, np.frombuffer(data[i], dtype=dst.dtype).reshape(dst.shape))
            else:
                sent.append(i)
                out.append(data[i])
        return {"returned": sent, "times": list(times)}, out

    def _tensor(self, tid: Any) -> np.ndarray:
        arr = self.tensors.get(tid)
        if arr is None:
            raise KeyError(f"no tensor {tid!r} in this session (freed, or never allocated)")
        return arr

    def op_alloc(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        if "blob" in header:
            arr = decode_array(header, blobs, copy=False)  # the frame's buffer is ours
        else:
            shape, dtype = check_shape(header)
            arr = np.zeros(shape, dtype)
        if self.tensor_bytes + arr.nbytes > self.server.max_tensor_bytes:
            raise MemoryError(f"alloc: this session would hold {self.tensor_bytes + arr.nbytes}"
                              f" bytes of tensors, over the server's limit of "
                              f"{self.server.max_tensor_bytes}")
        tid = self._id()
        self.tensors[tid] = arr
        self.tensor_bytes += arr.nbytes
        return {"tensor": tid}, []

    def op_write(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        dst = self._tensor(_id_field(header, "tensor", "write"))
        src = decode_array(header, blobs, copy=False)
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise ValueError(f"write: a {src.dtype} tensor of shape {list(src.shape)} does not "
                             f"fit tensor {header.get('tensor')} ({dst.dtype}, "
                             f"{list(dst.shape)})")
        np.copyto(dst, src)
        return {}, []

    def op_read(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        out: list[Any] = []
        desc = encode_array(self._tensor(_id_field(header, "tensor", "read")), out)
        return {"tensor": desc}, out

    def op_free(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        arr = self.tensors.pop(_id_field(header, "tensor", "free"), None)
        if arr is not None:
            self.tensor_bytes -= arr.nbytes
        return {}, []

    def op_close(self, header: dict[str, Any], blobs: list[memoryview]) -> tuple[dict, list]:
        return {}, []


# ---------------------------------------------------------------------------- the tracker


class _TrackerLink:
    """The server's registration with a tracker: it keeps the connection (reconnecting
    when it drops), learns the tokens of the clients sent to it, and says when it is free."""

    def __init__(self, server: RPCServer, address: tuple[str, int], key: str | None,
                 assign_timeout: float) -> None:
        self.server = server
        self.assign_timeout = float(assign_timeout)
        self.address = (address[0], int(address[1]))
        self.key = key
        self._cond = threading.Condition()
        self._token: str | None = None
        self._token_time = 0.0
        self._in_use = False
        self._conn: Connection | None = None
        self._send_lock = threading.Lock()
        self.registered = threading.Event()

    def start(self) -> None:
        self.server._spawn(self._run, "tvm-rpc-tracker-link")

    def stop(self) -> None:
        conn = self._conn
        if conn is not None:
            conn.close()

    def _run(self) -> None:
        while not self.server._stop.is_set():
            try:
                sock = socket.create_connection(self.address, timeout=10)
                conn = Connection(sock, timeout=None, peer=f"tracker {self.address[0]}:{self.address[1]}")
                conn.settimeout(10)
                introduce(conn, self.key, "tracker")
                host, port = self.server.advertised()
                conn.send({"op": "register", "device_key": self.server.device_key,
                           "host": host, "port": port})
                ack, _ = conn.recv()  # the tracker lists this server once it answers
                if ack.get("op") != "registered":
                    raise RPCProtocolError(f"the tracker answered the registration with {ack!r}")
                conn.settimeout(None)
                self._conn = conn
                self.registered.set()
                while True:
                    header, _ = conn.recv()
                    if header.get("op") == "assign" and isinstance(header.get("token"), str):
                        with self._cond:
                            self._token = header["token"]
                            self._token_time = time.monotonic()
                            self._cond.notify_all()
                        self.server._spawn(lambda t=header["token"]: self._expire(t),
                                           "tvm-rpc-token-expiry")
            except (OSError, RPCError) as err:
                self.registered.clear()
                self._conn = None
                if self.server._stop.is_set():
                    return
                log.info("rpc server: tracker %s: %s (retrying)", self.address, err)
                self.server._stop.wait(1.0)

    def claim(self, token: Any) -> str:
        """The token a connecting client gave, when it is the one the tracker assigned
        (waiting briefly for the assignment to arrive); RPCError otherwise."""
        deadline = time.monotonic() + 5.0
        with self._cond:
            while self._token is None or self._token != token:
                left = deadline - time.monotonic()
                if not isinstance(token, str) or left <= 0:
                    raise RPCError(
                        f"this server is managed by the tracker at {self.address[0]}:"
                        f"{self.address[1]}; request it there (no valid tracker token)")
                self._cond.wait(left)
            self._token, self._in_use = None, True
            return token

    def _expire(self, token: str) -> None:
        """Free the server when the client it was assigned to never comes."""
        self.server._stop.wait(self.assign_timeout)
        with self._cond:
            if self._token == token:
                self._token = None
                self._send_free()

    def release(self, token: str) -> None:
        with self._cond:
            self._in_use = False
            self._send_free()

    def _send_free(self) -> None:
        conn = self._conn
        if conn is None:
            return
        with self._send_lock:
            try:
                conn.send({"op": "free"})
            except RPCError:
                pass
