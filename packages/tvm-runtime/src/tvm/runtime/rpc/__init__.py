"""RPC: run and time compiled kernels on another machine, through the runner interface.

A device runs ``python -m tvm.exec.rpc_server``; a workstation connects and uses the
returned session as any :class:`~tvm.runtime.runner.Session`::

    from tvm.runtime import rpc

    with rpc.connect("board", 9090, key=secret) as sess:
        mod = sess.load_module("model_aarch64.so")      # uploaded, loaded there
        res = sess.run(mod, "main", [a, b, c], repeat=10)
        res.output(-1), res.times

The server runs every client's kernels in a :class:`~tvm.runtime.runner.ProcessRunner`
(natively, or under qemu-user for cross-built code); ``python -m tvm.exec.rpc_tracker``
hands servers of a device key to clients one at a time (:func:`connect_tracker`).  The
wire protocol is in :mod:`.protocol`; see docs/tutorials/rpc.md.
"""

from .client import RemoteTensor, RPCDevice, RPCRunner, RPCSession, connect
from .protocol import PROTOCOL, RPCAuthError, RPCError, RPCProtocolError, RPCTimeoutError
from .server import RPCServer
from .tracker import Tracker, TrackerClient, connect_tracker

__all__ = ["connect", "connect_tracker", "RPCSession", "RPCRunner", "RPCDevice",
           "RemoteTensor", "RPCServer", "Tracker", "TrackerClient", "RPCError",
           "RPCProtocolError", "RPCAuthError", "RPCTimeoutError", "PROTOCOL"]
