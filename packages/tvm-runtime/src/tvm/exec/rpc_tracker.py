"""``python -m tvm.exec.rpc_tracker``: hand RPC servers of a device key to clients.

    python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port 9190

Prints ``tvm rpc tracker listening on HOST:PORT`` once it accepts and runs until
SIGINT/SIGTERM; see :mod:`tvm.runtime.rpc.tracker`.
"""

from __future__ import annotations

import argparse
import logging
import sys

from tvm.exec._cli import add_key_options, read_key, serve_until_signal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tvm.exec.rpc_tracker",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=9190, help="port (0: any free one)")
    add_key_options(parser, "tracker")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)

    from tvm.runtime.rpc import Tracker

    try:
        tracker = Tracker(args.host, args.port, key=read_key(args))
    except OSError as err:
        print(f"rpc_tracker: {err}", file=sys.stderr)
        return 2
    host, port = tracker.address
    serve_until_signal(tracker, f"tvm rpc tracker listening on {host}:{port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
