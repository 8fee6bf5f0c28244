"""The wire protocol of tvm's RPC: framed messages, the handshake, errors, tensor encoding.

**Frame**: ``"TVRP"`` (4 bytes), the header's length (u32 LE), the payload's length (u64
LE), the header (UTF-8 JSON object), the payload.  The header's ``"blobs"`` lists the
lengths of the binary parts the payload is cut into (tensor contents, library bytes); they
must add up to the payload's length.  A frame longer than the receiver's ``max_frame``, a
header over :data:`MAX_HEADER`, a wrong magic, JSON that is not an object: each is a
:class:`RPCProtocolError` and the connection is closed.  Nothing in a frame is executed or
unpickled: headers are JSON, payloads are bytes read into numpy arrays of a listed dtype.

**Handshake** (the side that accepted speaks first)::

    accepter -> {"op": "hello", "protocol": 1, "role": "server"|"tracker", "nonce": N1,
                 "auth": bool}
    connecter -> {"op": "hello", "protocol": 1, "nonce": N2, "auth": HMAC(key, "client"+N1),
                  ...extra fields (a tracker token)}
    accepter -> {"ok": true, "proof": HMAC(key, "server"+N2), ...} or an error, then close

``auth`` is present only where the accepter has a shared key; the HMAC is SHA-256, compared
in constant time (:func:`hmac.compare_digest`) on both sides, so a key is never sent and
each side proves it knows it.

**Replies**: ``{"ok": true, ...}`` or ``{"ok": false, "error": {"type": T, "message": M}}``;
the client raises the error, prefixed with the peer (``rpc server HOST:PORT: ...``), as the
Python exception ``T`` names where that is one of
:data:`ERROR_TYPES`, else :class:`RPCError`.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..error import KernelError, ModuleLoadError
from ..runner.base import RunnerError, RunnerTimeoutError, RunnerUnavailableError

__all__ = ["PROTOCOL", "MAGIC", "MAX_HEADER", "DEFAULT_MAX_FRAME", "RPCError",
           "RPCProtocolError", "RPCAuthError", "RPCTimeoutError", "Connection",
           "error_reply", "raise_reply", "encode_array", "decode_array", "ERROR_TYPES"]

PROTOCOL = 1
MAGIC = b"TVRP"
_PREFIX = struct.Struct("<4sIQ")
#: the largest JSON header a peer accepts
MAX_HEADER = 1 << 20
#: the largest frame (header and payload) accepted unless a side says otherwise
DEFAULT_MAX_FRAME = 1 << 30
_AUTH_TAG = b"tvm-rpc-auth-1:"

#: numpy dtypes a tensor may have on the wire
DTYPES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64", "complex64", "complex128"])
MAX_NDIM = 32


class RPCError(RunnerError):
    """An RPC request failed (also: the server's error of a type not in ERROR_TYPES)."""


class RPCProtocolError(RPCError):
    """A peer sent something that is not a well-formed message (the connection is closed)."""


class RPCAuthError(RPCError):
    """The shared key was missing or wrong (or the peer could not prove it knows it)."""


class RPCTimeoutError(RPCError, RunnerTimeoutError):
    """The peer did not answer in time."""


#: error types that travel as themselves
ERROR_TYPES: dict[str, type[BaseException]] = {
    cls.__name__: cls for cls in (
        KernelError, ModuleLoadError, RunnerError, RunnerTimeoutError, RunnerUnavailableError,
        RPCError, RPCProtocolError, RPCAuthError, RPCTimeoutError, ValueError, TypeError,
        KeyError, IndexError, FileNotFoundError, MemoryError, TimeoutError)}


def new_nonce() -> str:
    return os.urandom(16).hex()


def auth_code(key: str | bytes, role: str, nonce: str) -> str:
    """HMAC-SHA256 of ``role + nonce`` under the shared ``key`` (hex)."""
    raw = key.encode("utf-8") if isinstance(key, str) else key
    return hmac.new(raw, _AUTH_TAG + role.encode() + b":" + nonce.encode(), "sha256").hexdigest()


def check_code(key: str | bytes, role: str, nonce: str, got: Any) -> bool:
    """Whether ``got`` is the right :func:`auth_code` (constant-time compare)."""
    if not isinstance(got, str):
        return False
    return hmac.compare_digest(auth_code(key, role, nonce).encode(), got.encode("utf-8",
                                                                                   "replace"))


class Connection:
    """One socket speaking frames: :meth:`send` and :meth:`recv` a header and its blobs.

    ``timeout``: seconds a receive or send may wait (None: forever); ``max_frame``: the
    largest frame accepted; ``peer``: how errors name the other side.
    """

    def __init__(self, sock: socket.socket, *, timeout: float | None = 60.0,
                 max_frame: int = DEFAULT_MAX_FRAME, peer: str = "") -> None:
        self.sock = sock
        self.max_frame = int(max_frame)
        self.peer = peer or _peer_name(sock)
        sock.settimeout(timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def settimeout(self, timeout: float | None) -> None:
        self.sock.settimeout(timeout)

    def _encode(self, header: dict[str, Any], blobs: Sequence[bytes | memoryview]
                ) -> tuple[bytes, list[memoryview]]:
        views = [memoryview(b).cast("B") for b in blobs]
        head = json.dumps({**header, "blobs": [len(v) for v in views]},
                          separators=(",", ":")).encode("utf-8")
        total = sum(len(v) for v in views)
        if len(head) > MAX_HEADER or len(head) + total > self.max_frame:
            raise RPCProtocolError(
                f"rpc: the message to {self.peer} is {len(head) + total} bytes, over the "
                f"frame limit of {self.max_frame} (header limit {MAX_HEADER})")
        return head, views

    def check_size(self, header: dict[str, Any], blobs: Sequence[bytes | memoryview] = ()
                   ) -> None:
        """RPCProtocolError when the frame would be over the limit (nothing is sent)."""
        self._encode(header, blobs)

    def send(self, header: dict[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> None:
        """Send one frame (``header`` gains ``"blobs"``, the blobs' lengths)."""
        head, views = self._encode(header, blobs)
        total = sum(len(v) for v in views)
        try:
            self.sock.sendall(_PREFIX.pack(MAGIC, len(head), total) + head)
            for v in views:
                self.sock.sendall(v)
        except TimeoutError:
            raise RPCTimeoutError(f"rpc: sending to {self.peer} timed out") from None
        except OSError as err:
            raise RPCError(f"rpc: the connection to {self.peer} failed while sending: "
                           f"{err}") from None

    def recv(self) -> tuple[dict[str, Any], list[memoryview]]:
        """One frame: its header (a dict) and its blobs.  RPCProtocolError on a malformed
        or oversized frame, RPCError when the peer closed, RPCTimeoutError on a timeout."""
        prefix = self._exact(_PREFIX.size, first=True)
        magic, head_len, payload_len = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise RPCProtocolError(f"rpc: {self.peer} sent a frame that does not start with "
                                   f"{MAGIC!r} (got {bytes(magic)!r}): not a tvm rpc peer")
        if head_len > MAX_HEADER or head_len + payload_len > self.max_frame:
            raise RPCProtocolError(
                f"rpc: {self.peer} announced a frame of {head_len} + {payload_len} bytes, "
                f"over the limit of {self.max_frame} bytes (header limit {MAX_HEADER})")
        try:
            header = json.loads(bytes(self._exact(head_len)).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            raise RPCProtocolError(f"rpc: {self.peer} sent a header that is not JSON: "
                                   f"{type(err).__name__}: {err}") from None
        if not isinstance(header, dict):
            raise RPCProtocolError(f"rpc: {self.peer} sent a header that is not a JSON "
                                   f"object ({type(header).__name__})")
        sizes = header.pop("blobs", [])
        if (not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes)
                or sum(sizes) != payload_len):
            raise RPCProtocolError(f"rpc: {self.peer} sent blob sizes {sizes!r} that do not "
                                   f"add up to its payload of {payload_len} bytes")
        payload = self._exact(payload_len) if payload_len else memoryview(b"")
        blobs, pos = [], 0
        for s in sizes:
            blobs.append(payload[pos:pos + s])  # views of the frame's own (writable) buffer
            pos += s
        return header, blobs

    def _exact(self, n: int, first: bool = False) -> memoryview:
        """``n`` bytes, in a fresh buffer owned by the caller (not zero-filled first)."""
        view = memoryview(np.empty(n, np.uint8)).cast("B")
        got = 0
        while got < n:
            try:
                k = self.sock.recv_into(view[got:], min(n - got, 1 << 22))
            except TimeoutError:
                raise RPCTimeoutError(f"rpc: no message from {self.peer} within "
                                      f"{self.sock.gettimeout():g} s") from None
            except OSError as err:
                raise RPCError(f"rpc: the connection to {self.peer} failed: {err}") from None
            if k == 0:
                if first and got == 0:
                    raise ConnectionClosed(f"rpc: {self.peer} closed the connection")
                raise RPCProtocolError(f"rpc: {self.peer} closed the connection in the "
                                       f"middle of a frame ({got} of {n} bytes)")
            got += k
        return view

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class ConnectionClosed(RPCError):
    """The peer closed the connection between frames."""


def _peer_name(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "the peer"


def error_reply(err: BaseException) -> dict[str, Any]:
    """The reply header carrying ``err`` (its type name travels, never its object)."""
    kind = type(err).__name__
    message = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    return {"ok": False, "error": {"type": kind, "message": message}}


def raise_reply(header: dict[str, Any], peer: str) -> dict[str, Any]:
    """``header`` when it says ok; else raise the error it carries (see :data:`ERROR_TYPES`)."""
    if header.get("ok") is True:
        return header
    err = header.get("error")
    if not isinstance(err, dict):
        raise RPCProtocolError(f"rpc: {peer} answered {header!r}, neither ok nor an error")
    kind, message = str(err.get("type", "")), str(err.get("message", ""))
    message = message.removeprefix("rpc: ")
    cls = ERROR_TYPES.get(kind)
    if cls is None:
        raise RPCError(f"rpc {peer}: {kind}: {message}")
    raise cls(f"rpc {peer}: {message}")


# ---------------------------------------------------------------------------- tensors


def encode_array(arr: np.ndarray, blobs: list[bytes | memoryview]) -> dict[str, Any]:
    """The JSON description of ``arr``; its bytes are appended to ``blobs``."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.name not in DTYPES:
        raise TypeError(f"rpc: cannot send a tensor of dtype {arr.dtype} (supported: "
                        f"{', '.join(sorted(DTYPES))})")
    blobs.append(memoryview(arr).cast("B") if arr.size else b"")
    return {"blob": len(blobs) - 1, "dtype": arr.dtype.name, "shape": list(arr.shape)}


def check_shape(desc: dict[str, Any]) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a tensor description names (ValueError when malformed)."""
    dtype, shape = desc.get("dtype"), desc.get("shape")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"rpc: tensor dtype {dtype!r} is not one of {sorted(DTYPES)}")
    if (not isinstance(shape, list) or len(shape) > MAX_NDIM
            or not all(type(d) is int and d >= 0 for d in shape)):
        raise ValueError(f"rpc: tensor shape {shape!r} is not a list of at most {MAX_NDIM} "
                         "non-negative ints")
    return tuple(shape), np.dtype(dtype)


def decode_array(desc: Any, blobs: Sequence[memoryview], copy: bool = True) -> np.ndarray:
    """The numpy array a description from :func:`encode_array` names (ValueError when the
    description or its blob does not fit)."""
    if not isinstance(desc, dict):
        raise ValueError(f"rpc: a tensor description must be an object, got {desc!r}")
    shape, dtype = check_shape(desc)
    index = desc.get("blob")
    if type(index) is not int or not 0 <= index < len(blobs):
        raise ValueError(f"rpc: tensor blob index {index!r} is not one of the message's "
                         f"{len(blobs)} blobs")
    data = blobs[index]
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != need:
        raise ValueError(f"rpc: a {dtype.name} tensor of shape {list(shape)} needs {need} "
                         f"bytes, the message holds {len(data)}")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape)
    return arr.copy() if copy else arr


# ---------------------------------------------------------------------------- handshake


def greet(conn: Connection, role: str, key: str | bytes | None) -> tuple[dict[str, Any], str]:
    """The accepting side's first two steps: send hello, read and check the peer's (its
    version and, with a ``key``, its HMAC).  Returns the peer's hello and the nonce to
    prove the key with (:func:`welcome`); a refusal raises (:func:`refuse` tells the peer
    why)."""
    nonce = new_nonce()
    conn.send({"op": "hello", "protocol": PROTOCOL, "role": role, "nonce": nonce,
               "auth": key is not None})
    hello, _ = conn.recv()
    if hello.get("op") != "hello":
        raise RPCProtocolError(f"rpc: {conn.peer} opened with {hello.get('op')!r}, "
                               "expected hello")
    if hello.get("protocol") != PROTOCOL:
        raise RPCProtocolError(f"rpc: {conn.peer} speaks protocol "
                               f"{hello.get('protocol')!r}; this {role} speaks {PROTOCOL}")
    if key is not None and not check_code(key, "client", nonce, hello.get("auth")):
        missing = hello.get("auth") is None
        raise RPCAuthError(f"rpc: this {role} requires a shared key; the client "
                           + ("gave none" if missing else "gave a wrong one"))
    if not isinstance(hello.get("nonce"), str) or len(hello["nonce"]) > 128:
        raise RPCProtocolError(f"rpc: {conn.peer}'s hello has no nonce")
    return hello, hello["nonce"]


def welcome(conn: Connection, key: str | bytes | None, nonce: str, **extra: Any) -> None:
    """The accepting side's last step: accept the peer, proving the key when there is one."""
    proof = auth_code(key, "server", nonce) if key is not None else None
    conn.send({"ok": True, "proof": proof, **extra})


def introduce(conn: Connection, key: str | bytes | None, expect_role: str,
              **extra: Any) -> dict[str, Any]:
    """The connecting side of the handshake; returns the accepter's welcome.  RPCAuthError
    when a key is needed and missing or wrong, or the accepter cannot prove ``key``."""
    hello, _ = conn.recv()
    if hello.get("op") != "hello" or hello.get("role") != expect_role:
        raise RPCProtocolError(f"rpc: {conn.peer} is not a tvm rpc {expect_role} (it said "
                               f"{hello.get('op')!r} as {hello.get('role')!r})")
    if hello.get("protocol") != PROTOCOL:
        raise RPCProtocolError(f"rpc: {conn.peer} speaks protocol {hello.get('protocol')!r}; "
                               f"this client speaks {PROTOCOL}")
    if hello.get("auth") and key is None:
        raise RPCAuthError(f"rpc: {conn.peer} requires a shared key (key=)")
    nonce = new_nonce()
    code = auth_code(key, "client", str(hello.get("nonce"))) if key is not None else None
    conn.send({"op": "hello", "protocol": PROTOCOL, "nonce": nonce, "auth": code, **extra})
    reply = raise_reply(conn.recv()[0], conn.peer)
    if key is not None and hello.get("auth") and not check_code(key, "server", nonce,
                                                                 reply.get("proof")):
        raise RPCAuthError(f"rpc: {conn.peer} could not prove it knows the shared key")
    return reply


def refuse(conn: Connection, err: BaseException) -> None:
    """Tell the peer why its connection is being closed (when it still listens)."""
    if isinstance(err, (ConnectionClosed, RPCTimeoutError)):
        return
    try:
        conn.send({**error_reply(err), "fatal": True})
    except RPCError:
        pass
