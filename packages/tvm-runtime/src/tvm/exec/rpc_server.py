"""``python -m tvm.exec.rpc_server``: serve RPC clients, running their kernels here.

    python -m tvm.exec.rpc_server --host 0.0.0.0 --port 9090 --key-file secret
    python -m tvm.exec.rpc_server --runner qemu --target "llvm -mtriple=aarch64-linux-gnu"
    python -m tvm.exec.rpc_server --tracker tracker:9190 --device-key rpi4

Prints ``tvm rpc server listening on HOST:PORT`` once it accepts (``--port 0``: a free
port) and runs until SIGINT/SIGTERM.  Kernels run in a runner of
:mod:`tvm.runtime.runner` (``--runner``: ``process``, natively in a child process; ``qemu``
from the llvm target; or a ``process`` runner under ``--launcher``).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from typing import Any

from tvm.exec._cli import add_key_options, host_port, read_key, serve_until_signal


def make_runner(args: argparse.Namespace) -> Any:
    """The runner the options name (``create_runner`` with the options given)."""
    from tvm.runtime.runner import create_runner

    options: dict[str, Any] = {}
    if args.target:
        options["target"] = args.target
    if args.launcher:
        options["launcher"] = shlex.split(args.launcher)
    if args.cc:
        options["cc"] = args.cc
    if args.triple:
        options["triple"] = args.triple
    if args.num_threads:
        options["num_threads"] = args.num_threads
    if args.timeout:
        options["timeout"] = args.timeout
    return create_runner(args.runner, **options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tvm.exec.rpc_server",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=9090, help="port (0: any free one)")
    add_key_options(parser, "server")
    parser.add_argument("--tracker", type=host_port, default=None,
                        help="HOST:PORT of a tracker to register with")
    parser.add_argument("--device-key", default="default",
                        help="the device key this server registers under at the tracker")
    parser.add_argument("--tracker-key", default=None, help="the tracker's shared key")
    parser.add_argument("--advertise-host", default=None,
                        help="the host name the tracker gives clients (default: --host, "
                             "or the address the tracker sees)")
    parser.add_argument("--runner", default="process",
                        help="where kernels run: process (default), qemu, or a plugin's")
    parser.add_argument("--target", default=None, help="the target of a qemu runner")
    parser.add_argument("--launcher", default=None,
                        help="command prefix of a process runner (e.g. 'qemu-aarch64 -L "
                             "/usr/aarch64-linux-gnu')")
    parser.add_argument("--cc", default=None, help="C compiler of the runner server")
    parser.add_argument("--triple", default=None, help="the kernels' triple (process runner)")
    parser.add_argument("--num-threads", type=int, default=None,
                        help="threads of the kernels' parallel loops")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds one kernel call may take")
    parser.add_argument("--max-frame-mb", type=int, default=1024,
                        help="largest message accepted, in MiB")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)

    from tvm.runtime.rpc import RPCServer
    from tvm.runtime.runner import RunnerError

    try:
        server = RPCServer(args.host, args.port, key=read_key(args), runner=make_runner(args),
                           tracker=args.tracker, device_key=args.device_key,
                           tracker_key=args.tracker_key, max_frame=args.max_frame_mb << 20,
                           advertise_host=args.advertise_host)
    except (RunnerError, TypeError, ValueError, OSError) as err:
        print(f"rpc_server: {err}", file=sys.stderr)
        return 2
    host, port = server.address
    serve_until_signal(server, f"tvm rpc server listening on {host}:{port} "
                               f"({server.runner.describe()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
