"""tvm.runtime.rpc over loopback: sessions (upload, load, call, time, remote tensors, the
host VM), the shared key, malformed and oversized frames, random bytes, errors coming
back as exceptions, the tracker, the command lines, and kernels.c cross-built for aarch64
run by a server under qemu-aarch64."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rt_testing import KERNEL_META, c_string_literal, compile_shared, kernel_source

import tvm.runtime
from tvm.runtime import rpc, seal_file
from tvm.runtime.error import KernelError, ModuleLoadError
from tvm.runtime.rpc.protocol import MAGIC, Connection
from tvm.runtime.runner import ProcessRunner, RemoteModule, RunnerError, create_runner
from tvm.runtime.vm import Executable, VirtualMachine

KEY = "correct horse battery staple"
CRASH_META = {"version": 1, "target": "c", "functions": [
    {"name": n, "symbol": n, "params": []} for n in ("segfault", "spin_forever")]}
CRASH_SOURCE = """
#include <stdint.h>
const char __tvm_module_meta[] = @META@;
int32_t segfault(void* a, int32_t* c, int32_t n, void* r, int32_t* rc, void* h) {
  volatile int* p = 0; *p = 1; return 0; }
int32_t spin_forever(void* a, int32_t* c, int32_t n, void* r, int32_t* rc, void* h) {
  for (volatile int i = 0;; ++i) {} return 0; }
"""


def _children() -> set[int]:
    pids: set[int] = set()
    for task in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else []:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Every test ends its servers, and they their runner processes."""
    before = _children()
    yield
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _children() - before, "a test left child processes running"


@pytest.fixture
def server():
    with rpc.RPCServer(handshake_timeout=2.0) as srv:
        yield srv


@pytest.fixture
def keyed_server():
    with rpc.RPCServer(key=KEY, handshake_timeout=2.0) as srv:
        yield srv


def _args(n=8):
    return [np.arange(n, dtype="float32"), np.zeros(n, "float32"), 2.5]


def _raw(srv) -> tuple[socket.socket, Connection]:
    """A plain socket to ``srv`` that has read the server's hello."""
    sock = socket.create_connection(srv.address, timeout=5)
    conn = Connection(sock, timeout=5)
    hello, _ = conn.recv()
    assert hello["op"] == "hello" and hello["role"] == "server"
    return sock, conn


def _still_serves(srv, kernel_lib, key=None) -> None:
    with rpc.connect(*srv.address, key=key) as s:
        res = s.run(kernel_lib, "add_scalar", _args(4))
        np.testing.assert_array_equal(res.output(1), np.arange(4, dtype="float32") + 2.5)


# ---------------------------------------------------------------------------- sessions


def test_loopback_session_upload_load_call_time_and_download(server, kernel_lib):
    with rpc.connect(*server.address) as s:
        assert s.machine == os.uname().machine and s.server_runner == "process runner (host)"
        assert s.info()["device_key"] == "default"
        mod = s.load_module(kernel_lib)
        assert isinstance(mod, RemoteModule)
        assert mod.function_names == tvm.runtime.load_module(kernel_lib).function_names
        assert s.load_module(kernel_lib) is mod  # the same bytes load once
        # a call writes the outputs back into the caller's arrays, as a local kernel does
        a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
        mod["add_scalar"](a, b, 2.5)
        np.testing.assert_array_equal(b, a + 2.5)
        # run: copies in, outputs and times out, like every runner's session
        res = s.run(mod, "add_scalar", _args(), number=5, repeat=3)
        np.testing.assert_array_equal(res.output(1), a + 2.5)
        assert len(res.times) == 3 and all(t > 0 for t in res.times) and res.number == 5
        assert "rpc session" in res.runner
        # remote tensors stay on the server between calls; numpy() downloads them
        dev = s.cpu()
        ta, tb = dev.array(a), dev.empty((8,), "float32")
        mod["add_scalar"](ta, tb, 1.0)
        mod["add_scalar"](tb, tb, 1.0)
        np.testing.assert_array_equal(tb.numpy(), a + 2.0)
        ta.copyfrom(np.ones(8, "float32"))
        mod["add_scalar"](ta, tb, 0.5)
        np.testing.assert_array_equal(tb.numpy(), np.full(8, 1.5, "float32"))
        tb.free()
        with pytest.raises(KeyError, match="no tensor"):
            tb.numpy()
        # bytes upload, and a library uploaded by name
        name = s.upload(Path(kernel_lib).read_bytes(), "again.so")
        assert s.load(name).function_names == mod.function_names


def test_rpc_is_a_runner_like_the_others(server, kernel_lib):
    runner = create_runner("rpc", host=server.address[0], port=server.address[1])
    assert isinstance(runner, rpc.RPCRunner) and runner.describe().startswith("rpc runner (")
    res = runner.run(kernel_lib, "add_scalar", _args(), repeat=2)
    np.testing.assert_array_equal(res.output(1), np.arange(8, dtype="float32") + 2.5)
    assert len(res.times) == 2


def test_vm_bytecode_here_kernels_on_the_server(server, kernel_module, tmp_path):
    from test_runner import shift_program

    path = tmp_path / "shift.so"
    Executable(shift_program(), [], kernel_module).export_library(path)
    x = np.linspace(0, 1, 9, dtype="float32")
    with rpc.connect(*server.address) as s:
        ex = s.load_executable(path)
        assert isinstance(ex.kernel_lib, RemoteModule)
        np.testing.assert_allclose(VirtualMachine(ex, tvm.runtime.cpu())["main"](x).numpy(),
                                   x + 3)


def test_server_errors_come_back_as_exceptions_and_the_session_goes_on(server, kernel_lib,
                                                                       tmp_path):
    crash = compile_shared(CRASH_SOURCE.replace("@META@", c_string_literal(
        json.dumps(CRASH_META))), tmp_path / "crash.so")
    unsealed = compile_shared(kernel_source(), tmp_path / "unsealed.so", seal=False)
    with rpc.connect(*server.address) as s:
        mod = s.load_module(kernel_lib)
        with pytest.raises(KernelError, match=r"rpc server 127\.0\.0\.1:\d+: process runner "
                                              r"\(host\): checked_div: argument y must be "
                                              "non-zero"):
            mod["checked_div"](1, 0)
        with pytest.raises(KernelError, match=r"argument B has shape\[0\] = 3"):
            mod["add_scalar"](np.zeros(8, "float32"), np.zeros(3, "float32"), 1.0)
        with pytest.raises(ModuleLoadError, match="not written by tvm"):
            s.load_module(unsealed)  # refused here, before it travels
        with pytest.raises(ModuleLoadError, match="not written by tvm"):
            s.load(s.upload(unsealed))  # and there
        assert s.load_module(unsealed, trusted=True).function_names  # sealed for the trip
        with pytest.raises(ModuleLoadError, match="cannot load the library"):
            s.load_module(b"\x7fELF not a library", trusted=True)
        with pytest.raises(ValueError, match="not a plain file name"):
            s.upload(b"x", "../escape.so")
        with pytest.raises(FileNotFoundError, match="no uploaded file"):
            s.load("never-uploaded.so")
        with pytest.raises(RunnerError, match="killed by signal SIGSEGV"):
            s.load_module(crash)["segfault"]()
        with pytest.raises(KeyError, match="not loaded in this session"):
            mod["add_scalar"](*_args())  # the crash took the runner's modules with it
        mod = s.load_module(kernel_lib)  # the session goes on in a fresh runner
        np.testing.assert_array_equal(s.run(mod, "add_scalar", _args()).output(1),
                                      np.arange(8, dtype="float32") + 2.5)


def test_stopping_the_server_ends_a_kernel_still_running(tmp_path):
    import threading

    crash = compile_shared(CRASH_SOURCE.replace("@META@", c_string_literal(
        json.dumps(CRASH_META))), tmp_path / "spin.so")
    srv = rpc.RPCServer().start()
    errors: list[BaseException] = []
    with rpc.connect(*srv.address) as s:
        fn = s.load_module(crash)["spin_forever"]

        def call() -> None:
            try:
                fn()
            except BaseException as err:  # noqa: BLE001 - checked below
                errors.append(err)

        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.3)
        start = time.monotonic()
        srv.stop()
        t.join(10)
        assert time.monotonic() - start < 5 and not t.is_alive()
    assert errors and isinstance(errors[0], rpc.RPCError)


# ---------------------------------------------------------------------------- the key


def test_the_shared_key_is_required_and_checked(keyed_server, kernel_lib):
    _still_serves(keyed_server, kernel_lib, key=KEY)
    with pytest.raises(rpc.RPCAuthError, match="requires a shared key"):
        rpc.connect(*keyed_server.address)
    with pytest.raises(rpc.RPCAuthError, match="gave a wrong one"):
        rpc.connect(*keyed_server.address, key="wrong")
    # the key never travels: the hello holds an HMAC of the server's nonce
    sock, conn = _raw(keyed_server)
    conn.send({"op": "hello", "protocol": 1, "nonce": "n", "auth": KEY})
    reply, _ = conn.recv()
    assert reply["ok"] is False and reply["error"]["type"] == "RPCAuthError"
    sock.close()
    _still_serves(keyed_server, kernel_lib, key=KEY)


def test_a_client_checks_the_server_knows_the_key(kernel_lib):
    """A fake server that asks for a key but cannot prove it is refused by the client."""
    listener = socket.create_server(("127.0.0.1", 0))
    import threading

    def fake() -> None:
        sock, _ = listener.accept()
        conn = Connection(sock, timeout=5)
        conn.send({"op": "hello", "protocol": 1, "role": "server", "nonce": "abc",
                   "auth": True})
        conn.recv()
        conn.send({"ok": True, "proof": "0" * 64})
        conn.close()

    t = threading.Thread(target=fake, daemon=True)
    t.start()
    try:
        with pytest.raises(rpc.RPCAuthError, match="could not prove"):
            rpc.connect(*listener.getsockname()[:2], key=KEY)
    finally:
        t.join(5)
        listener.close()


def test_protocol_version_mismatch_is_refused(server, kernel_lib):
    sock, conn = _raw(server)
    conn.send({"op": "hello", "protocol": 99, "nonce": "n"})
    reply, _ = conn.recv()
    assert reply["fatal"] and "speaks protocol 99; this server speaks 1" in \
        reply["error"]["message"]
    sock.close()


# ---------------------------------------------------------------------------- bad frames


def test_oversized_frames_are_refused_on_both_sides(kernel_lib):
    with rpc.RPCServer(max_frame=1 << 17) as srv:
        sock, conn = _raw(srv)
        conn.send({"op": "hello", "protocol": 1, "nonce": "n"})
        assert conn.recv()[0]["max_frame"] == 1 << 17
        sock.sendall(struct.pack("<4sIQ", MAGIC, 10, 1 << 40))
        reply, _ = conn.recv()
        assert reply["fatal"] and "over the limit of 131072 bytes" in reply["error"]["message"]
        assert sock.recv(1) == b""  # and the server closed the connection
        sock.close()
        with rpc.connect(*srv.address) as s:  # the client learns the limit at the hello
            s.upload(b"\0" * (1 << 16), "fits.so")
            with pytest.raises(rpc.RPCProtocolError, match="over the frame limit of 131072"):
                s.upload(b"\0" * (1 << 17), "big.so")
            assert s.alive and s.info()["max_frame"] == 1 << 17  # nothing was sent
        _still_serves(srv, kernel_lib)


def test_before_the_handshake_only_small_frames_are_read(server, kernel_lib):
    """A client that has not proved the key cannot make the server hold big buffers."""
    sock, conn = _raw(server)
    sock.sendall(struct.pack("<4sIQ", MAGIC, 100, 1 << 20))
    reply, _ = conn.recv()
    assert reply["fatal"] and "over the limit of 65536 bytes" in reply["error"]["message"]
    sock.close()
    _still_serves(server, kernel_lib)


@pytest.mark.parametrize("frame, message", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "does not start with b'TVRP'"),
    (struct.pack("<4sIQ", MAGIC, 5, 0) + b"{oops", "not JSON"),
    (struct.pack("<4sIQ", MAGIC, 2, 0) + b"[]", "not a JSON object"),
    (struct.pack("<4sIQ", MAGIC, 13, 3) + b'{"blobs":[9]}abc', "do not add up"),
    (struct.pack("<4sIQ", MAGIC, 2 << 20, 0), "header limit"),
    (struct.pack("<4sIQ", MAGIC, 40000, 0) + b"[" * 40000, "RecursionError"),
])
def test_garbage_frames_close_the_connection_with_a_clear_error(server, kernel_lib, frame,
                                                                 message):
    sock, conn = _raw(server)
    sock.sendall(frame)
    reply, _ = conn.recv()
    assert reply["ok"] is False and reply["fatal"] and message in reply["error"]["message"]
    assert sock.recv(1) == b""
    sock.close()
    _still_serves(server, kernel_lib)


def test_a_bad_request_after_the_handshake_ends_that_session_only(server, kernel_lib):
    with rpc.connect(*server.address) as s:
        with pytest.raises(rpc.RPCProtocolError, match="unknown request 'launch_missiles'"):
            s.request("launch_missiles")
        assert not s.alive
        with pytest.raises(rpc.RPCError, match="the session is closed"):
            s.info()
    _still_serves(server, kernel_lib)


def test_a_silent_client_times_out(server, kernel_lib):
    sock, _ = _raw(server)
    start = time.monotonic()
    assert sock.recv(1) == b""  # closed after the handshake timeout (2 s)
    assert time.monotonic() - start < 10
    sock.close()
    _still_serves(server, kernel_lib)


def _random_request(rng: random.Random, module: int, symbols: list[str]) -> dict:
    """A request of a known op with random, mostly wrong, fields (a call often names the
    loaded module and one of its functions, so that its arguments reach the runner)."""
    values = [None, True, -1, 0, 1, 2, 7, 2**70, 1.5, "x", "../x.so", [], [1, "a"],
              {"tensor": 1}, {"tensor": "a"}, {"blob": 0, "dtype": "float32", "shape": [2]},
              {"blob": 0, "dtype": "uint8", "shape": [4]}, {"dtype": "object"}]
    op = rng.choice(["info", "upload", "load", "call", "call", "call", "alloc", "write",
                     "read", "free"])
    fields = {f: rng.choice(values) for f in rng.sample(
        ["name", "module", "symbol", "args", "returned", "number", "repeat", "tensor",
         "shape", "dtype", "blob", "update"], rng.randrange(0, 6))}
    if op == "call" and rng.random() < 0.8:
        fields.update(module=module, symbol=rng.choice(symbols),
                      args=[rng.choice(values) for _ in range(rng.randrange(0, 5))],
                      returned=rng.choice([[], [0, 1], [5], ["x"]]))
    return {"op": op, **fields}


def test_an_idle_session_is_closed_by_the_server(kernel_lib):
    with rpc.RPCServer(idle_timeout=0.5) as srv:
        s = rpc.connect(*srv.address)
        s.load_module(kernel_lib)
        time.sleep(1.5)
        with pytest.raises(rpc.RPCError, match="closed the connection"):
            s.info()
        assert not s.alive
        _still_serves(srv, kernel_lib)


def test_random_requests_after_the_handshake_are_errors_not_crashes(server, kernel_lib):
    rng = random.Random(7)
    with rpc.connect(*server.address) as s:
        mod = s.load_module(kernel_lib)
        symbols = [f.symbol for f in mod._functions.values() if f.name != "parallel_meet"]
        s.cpu().empty((2,), "float32")  # tensor 1
        for _ in range(300):
            header = _random_request(rng, mod.module_id, symbols)
            blobs = [rng.randbytes(rng.randrange(0, 16))] if rng.random() < 0.5 else []
            try:
                s.request(header.pop("op"), blobs, **header)
            except (rpc.RPCError, ValueError, TypeError, KeyError, FileNotFoundError,
                    IndexError, MemoryError, OverflowError, KernelError, ModuleLoadError):
                pass
            assert s.alive, header
        np.testing.assert_array_equal(s.run(mod, "add_scalar", _args()).output(1),
                                      np.arange(8, dtype="float32") + 2.5)
    _still_serves(server, kernel_lib)


def test_connections_over_the_limit_are_closed_at_once(kernel_lib):
    with rpc.RPCServer(max_connections=2, handshake_timeout=5) as srv:
        held = [_raw(srv)[0] for _ in range(2)]  # two clients that never say hello
        extra = socket.create_connection(srv.address, timeout=5)
        assert extra.recv(1) == b""  # closed without a hello
        extra.close()
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 5
        while srv._open and time.monotonic() < deadline:
            time.sleep(0.02)
        _still_serves(srv, kernel_lib)


def test_random_bytes_never_stop_the_server(server, kernel_lib):
    rng = random.Random(2024)
    for i in range(60):
        with socket.create_connection(server.address, timeout=5) as sock:
            kind = i % 3
            body = rng.randbytes(rng.randrange(0, 300))
            if kind == 1:  # a valid magic, random lengths and bytes
                body = MAGIC + rng.randbytes(12) + body
            elif kind == 2:  # a plausible header over a random body
                head = json.dumps({"op": rng.choice(["hello", "call", "x"]),
                                   "protocol": 1, "nonce": "n",
                                   "blobs": [rng.randrange(0, 50)]}).encode()
                body = struct.pack("<4sIQ", MAGIC, len(head), rng.randrange(0, 60)) + head + body
            try:
                sock.sendall(body)
                sock.shutdown(socket.SHUT_WR)
                while sock.recv(4096):
                    pass
            except OSError:
                pass
        if i % 20 == 19:
            _still_serves(server, kernel_lib)


# ---------------------------------------------------------------------------- the tracker


def test_the_tracker_hands_each_server_to_one_client_at_a_time(kernel_lib):
    with rpc.Tracker() as tracker, \
            rpc.RPCServer(tracker=tracker.address, device_key="board",
                          assign_timeout=1.0) as srv:
        _wait_registered(srv)
        client = rpc.connect_tracker(*tracker.address)
        assert client.summary() == [{"device_key": "board", "host": "127.0.0.1",
                                     "port": srv.address[1], "busy": False}]
        with client.request("board") as s:
            np.testing.assert_array_equal(
                s.run(kernel_lib, "add_scalar", _args()).output(1),
                np.arange(8, dtype="float32") + 2.5)
            assert client.summary()[0]["busy"] is True
            with pytest.raises(TimeoutError, match="no free server for device key 'board' "
                                                   r"within 0.5 s \(1 registered, all busy\)"):
                client.request("board", timeout=0.5)
        with client.request("board", timeout=10) as s:  # free again once closed
            assert s.machine == os.uname().machine
        with pytest.raises(TimeoutError, match=r"no server registered for device key 'gpu' "
                                               r"\(keys: \['board'\]\)"):
            client.request("gpu", timeout=0.2)
        # a server the tracker manages takes only the clients the tracker sends
        with pytest.raises(rpc.RPCError, match="managed by the tracker"):
            rpc.connect(*srv.address)
        # a client that was given a server but never came holds it only for a while
        client.assign("board")
        assert client.summary()[0]["busy"] is True
        client.close()
        runner = rpc.RPCRunner(tracker=tracker.address, device_key="board",
                               request_timeout=0.3)
        with pytest.raises(TimeoutError, match="all busy"):
            runner.session()
        runner.request_timeout = 10.0
        with runner.session() as s:  # after the server's assign_timeout (1 s)
            assert s.alive


def test_the_tracker_forgets_a_server_that_stops_and_needs_its_key(kernel_lib):
    with rpc.Tracker(key=KEY) as tracker:
        with pytest.raises(rpc.RPCAuthError, match="requires a shared key"):
            rpc.connect_tracker(*tracker.address)
        srv = rpc.RPCServer(tracker=tracker.address, device_key="b", tracker_key=KEY,
                            key="server-key").start()
        _wait_registered(srv)
        runner = create_runner("rpc", tracker=tracker.address, device_key="b",
                               tracker_key=KEY, key="server-key")
        res = runner.run(kernel_lib, "add_scalar", _args())
        np.testing.assert_array_equal(res.output(1), np.arange(8, dtype="float32") + 2.5)
        srv.stop()
        with rpc.connect_tracker(*tracker.address, key=KEY) as client:
            deadline = time.monotonic() + 10
            while client.summary() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client.summary() == []


def _wait_registered(srv) -> None:
    assert srv._tracker.registered.wait(10), "the server did not register with the tracker"


# ---------------------------------------------------------------------------- command lines


def _start(module: str, *args: str) -> tuple[subprocess.Popen, tuple[str, int]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", module, "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise AssertionError(f"{module} did not start: {line!r} {proc.stderr.read()}")
    host, port = line.split("listening on ")[1].split()[0].rsplit(":", 1)
    return proc, (host, int(port))


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_the_command_lines_serve_and_stop_on_sigterm(kernel_lib, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    tracker, taddr = _start("tvm.exec.rpc_tracker")
    try:
        server, addr = _start("tvm.exec.rpc_server", "--key-file", str(key_file),
                              "--tracker", f"{taddr[0]}:{taddr[1]}", "--device-key", "cli")
        try:
            with rpc.connect_tracker(*taddr) as client:
                deadline = time.monotonic() + 20
                while not client.summary() and time.monotonic() < deadline:
                    time.sleep(0.1)
                with client.request("cli", key=KEY) as s:
                    assert s.address[1] == addr[1]
                    res = s.run(kernel_lib, "add_scalar", _args(), repeat=1)
                    np.testing.assert_array_equal(res.output(1),
                                                  np.arange(8, dtype="float32") + 2.5)
        finally:
            _stop(server)
    finally:
        _stop(tracker)


# ---------------------------------------------------------------------------- cross


def test_a_server_running_aarch64_kernels_under_qemu(tmp_path):
    """kernels.c cross-built for aarch64, uploaded over RPC, run by the server under qemu."""
    cc, qemu, sysroot = "aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"
    if not (shutil.which(cc) and shutil.which(qemu) and Path(sysroot).is_dir()):
        pytest.skip(f"needs {cc}, {qemu} and {sysroot} (CI installs them)")
    src = tmp_path / "kernels.c"
    src.write_text(kernel_source(KERNEL_META))
    lib = tmp_path / "kernels_aarch64.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    seal_file(lib)
    runner = ProcessRunner(launcher=[qemu, "-L", sysroot], cc=cc, triple="aarch64-linux-gnu")
    with rpc.RPCServer(runner=runner, key=KEY) as srv, \
            rpc.connect(*srv.address, key=KEY) as s:
        assert s.machine == "aarch64"
        res = s.run(lib, "add_scalar", _args(16), repeat=2)
        np.testing.assert_array_equal(res.output(1), np.arange(16, dtype="float32") + 2.5)
        with pytest.raises(KernelError, match=r"process runner \(aarch64-linux-gnu\): "
                                              "checked_div: argument y must be non-zero"):
            s.load_module(lib)["checked_div"](3, 0)
