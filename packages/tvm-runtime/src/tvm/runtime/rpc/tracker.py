"""The RPC tracker: hands free servers of a device key to clients, one client at a time.

Servers (``RPCServer(tracker=(host, port), device_key=...)``) keep a connection open to the
tracker: ``register`` once, then the tracker sends ``assign`` with a one-time token when it
gives the server to a client, and the server sends ``free`` when that client's session
ends (or the client never came).  A server whose connection drops is forgotten.  Clients
ask with ``request`` (waiting up to their timeout for a free server of the key) and get
the server's address and the token, which the server requires; ``summary`` lists the
servers.  Framing and handshake are the RPC's (:mod:`.protocol`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .protocol import (
    ConnectionClosed,
    Connection,
    RPCError,
    RPCProtocolError,
    RPCTimeoutError,
    error_reply,
    greet,
    introduce,
    raise_reply,
    refuse,
    welcome,
)

__all__ = ["Tracker", "TrackerClient", "connect_tracker"]

log = logging.getLogger("tvm.rpc.tracker")


@dataclass(eq=False)
class _Server:
    device_key: str
    host: str
    port: int
    conn: Connection
    busy: bool = False
    since: float = field(default_factory=time.monotonic)
    send_lock: threading.Lock = field(default_factory=threading.Lock)


class Tracker:
    """Tracks RPC servers on ``host:port`` (0: a free port, see :attr:`address`);
    ``key``: the shared key servers and clients must prove."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 handshake_timeout: float = 10.0) -> None:
        self.key = key
        self.handshake_timeout = float(handshake_timeout)
        self._sock = socket.create_server((host, port))
        self._sock.settimeout(0.25)
        self.address: tuple[str, int] = self._sock.getsockname()[:2]
        self._servers: list[_Server] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: set[Connection] = set()

    def start(self) -> Tracker:
        """Serve in a background thread; returns self."""
        self._spawn(self.serve_forever)
        return self

    def serve_forever(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    break
                raise
            self._spawn(lambda s=sock: self._serve(s))

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()
        with self._cond:
            conns = list(self._conns)
            self._cond.notify_all()
        for conn in conns:
            conn.close()
        with self._cond:
            threads = list(self._threads)
        for t in threads:
            if t is not threading.current_thread():
                t.join(10)

    def __enter__(self) -> Tracker:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _spawn(self, fn: Any) -> None:
        t = threading.Thread(target=fn, name="tvm-rpc-tracker", daemon=True)
        with self._cond:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
        t.start()

    # ------------------------------------------------------------------ connections

    def _serve(self, sock: socket.socket) -> None:
        conn = Connection(sock, timeout=self.handshake_timeout, max_frame=1 << 20)
        with self._cond:
            self._conns.add(conn)
        try:
            _, nonce = greet(conn, "tracker", self.key)
            welcome(conn, self.key, nonce)
            header, _ = conn.recv()
            if header.get("op") == "register":
                self._registered(conn, header)
                return
            conn.settimeout(3600.0)  # a client may hold its tracker connection a while
            while True:
                op = header.get("op")
                if op == "request":
                    reply = self._request(header, conn.peer)
                elif op == "summary":
                    reply = {"ok": True, "servers": self.summary()}
                else:
                    raise RPCProtocolError(f"rpc tracker: unknown request {op!r}")
                conn.send(reply)
                header, _ = conn.recv()
        except ConnectionClosed:
            pass
        except RPCError as err:
            log.info("rpc tracker: dropped %s: %s", conn.peer, err)
            refuse(conn, err)
        except Exception:  # noqa: BLE001 - one peer must never stop the tracker
            log.exception("rpc tracker: error serving %s", conn.peer)
        finally:
            conn.close()
            with self._cond:
                self._conns.discard(conn)

    def _registered(self, conn: Connection, header: dict[str, Any]) -> None:
        key, host, port = header.get("device_key"), header.get("host"), header.get("port")
        if not isinstance(key, str) or not key or type(port) is not int or not 0 < port < 65536:
            raise RPCProtocolError(f"rpc tracker: a malformed register {header!r}")
        if not isinstance(host, str) or host in ("", "0.0.0.0", "::"):
            host = conn.sock.getpeername()[0]
        server = _Server(key, host, port, conn)
        conn.settimeout(None)
        with server.send_lock:  # listed, then acknowledged before any assignment is sent
            with self._cond:
                self._servers.append(server)
                self._cond.notify_all()
            try:
                conn.send({"op": "registered"})
            except BaseException:
                with self._cond:
                    self._servers.remove(server)
                raise
        log.info("rpc tracker: %s registered at %s:%d", key, host, port)
        try:
            while True:
                msg, _ = conn.recv()
                if msg.get("op") == "free":
                    with self._cond:
                        server.busy, server.since = False, time.monotonic()
                        self._cond.notify_all()
        finally:
            with self._cond:
                self._servers.remove(server)

    def _request(self, header: dict[str, Any], peer: str) -> dict[str, Any]:
        key, timeout = header.get("device_key"), header.get("timeout", 60.0)
        if not isinstance(key, str) or type(timeout) not in (int, float) or timeout < 0:
            return error_reply(ValueError(f"request: malformed {header!r}"))
        deadline = time.monotonic() + float(timeout)
        with self._cond:
            while True:
                free = [s for s in self._servers if s.device_key == key and not s.busy]
                if free:
                    server = min(free, key=lambda s: s.since)
                    server.busy = True
                    break
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    known = sum(s.device_key == key for s in self._servers)
                    return error_reply(TimeoutError(
                        f"no free server for device key {key!r} within {timeout:g} s "
                        f"({known} registered, all busy)" if known else
                        f"no server registered for device key {key!r} (keys: "
                        f"{sorted({s.device_key for s in self._servers})})"))
                self._cond.wait(min(left, 1.0))
        token = os.urandom(16).hex()
        try:
            with server.send_lock:
                server.conn.send({"op": "assign", "token": token})
        except RPCError as err:
            server.conn.close()
            return error_reply(RPCError(f"the server for {key!r} went away: {err}"))
        log.info("rpc tracker: %s:%d (%s) -> %s", server.host, server.port, key, peer)
        return {"ok": True, "host": server.host, "port": server.port, "token": token}

    def summary(self) -> list[dict[str, Any]]:
        """The registered servers: device key, address, whether a client holds it."""
        with self._cond:
            return [{"device_key": s.device_key, "host": s.host, "port": s.port,
                     "busy": s.busy} for s in self._servers]


class TrackerClient:
    """A connection to a tracker (:func:`connect_tracker`)."""

    def __init__(self, host: str, port: int, key: str | None = None,
                 timeout: float = 30.0) -> None:
        self.address = (host, int(port))
        self.key = key
        try:
            sock = socket.create_connection(self.address, timeout=timeout)
        except OSError as err:
            raise RPCError(f"rpc: cannot connect to the tracker at {host}:{port}: {err}") \
                from None
        self._conn = Connection(sock, timeout=timeout, max_frame=1 << 20,
                                peer=f"tracker {host}:{port}")
        try:
            introduce(self._conn, key, "tracker")
        except BaseException:
            self._conn.close()
            raise

    def assign(self, device_key: str, timeout: float = 60.0) -> tuple[str, int, str]:
        """A free server of ``device_key``: ``(host, port, token)`` (the token admits one
        session there).  TimeoutError when none is free within ``timeout`` seconds."""
        self._conn.settimeout(timeout + 30.0)
        self._conn.send({"op": "request", "device_key": device_key, "timeout": timeout})
        try:
            reply = raise_reply(self._conn.recv()[0], self._conn.peer)
        except RPCTimeoutError:
            self.close()
            raise
        return str(reply["host"]), int(reply["port"]), str(reply["token"])

    def request(self, device_key: str, key: str | None = None, *, timeout: float = 60.0,
                session_timeout: float = 600.0) -> Any:
        """A session with a free server of ``device_key`` (``key``: the server's shared
        key); the server is this session's until it is closed."""
        from .client import RPCRunner, RPCSession

        host, port, token = self.assign(device_key, timeout)
        runner = RPCRunner(host, port, key=key, timeout=session_timeout)
        return RPCSession(runner, host, port, token=token)

    def summary(self) -> list[dict[str, Any]]:
        self._conn.send({"op": "summary"})
        return list(raise_reply(self._conn.recv()[0], self._conn.peer)["servers"])

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TrackerClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def connect_tracker(host: str, port: int, key: str | None = None, *,
                    timeout: float = 30.0) -> TrackerClient:
    """A client of the tracker at ``host:port`` (``key``: the tracker's shared key)."""
    return TrackerClient(host, port, key, timeout)
