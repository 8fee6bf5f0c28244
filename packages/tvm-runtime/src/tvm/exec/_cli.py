"""What the RPC command lines share: the shared key, addresses, running until a signal."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from tvm.ffi import knobs


def add_key_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--key", default=None,
                        help=f"the shared key clients of this {what} must prove (HMAC); "
                             "prefer --key-file or $TVM_RPC_KEY, which other users cannot "
                             "see in the process list")
    parser.add_argument("--key-file", default=None, help="read the shared key from this file")


def read_key(args: argparse.Namespace) -> str | None:
    if args.key_file:
        with open(args.key_file, encoding="utf-8") as f:
            return f.read().strip()
    return args.key or knobs.RPC_KEY.get() or None


def host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def serve_until_signal(service: Any, banner: str) -> None:
    """Run ``service`` (start/stop) until SIGINT or SIGTERM; print ``banner`` first."""
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    service.start()
    print(banner, flush=True)
    try:
        done.wait()
    finally:
        service.stop()
    sys.stdout.flush()
