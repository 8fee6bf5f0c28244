"""A small GPU simulator for lowered kernels, so GPU lowering is tested for numbers without
a GPU.

Every thread of a block is a Python generator interpreting the kernel's TIR; a thread
pauses at ``tvm_storage_sync`` (resumed when every thread of the block got there) and at
warp shuffles (resumed when its whole warp got there, with the lanes' values exchanged as
CUDA's ``__shfl_*_sync`` would).  Barrier divergence or a warp split across shuffles is
reported as an error.  ``run_gpu_module`` also runs the host function (launches, lets,
workspaces) of a module made by ``tir.get_gpu_pipeline``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from tvm.ffi.dtype import to_numpy_dtype
from tvm.tir import (
    EQ, GE, GT, LE, LT, NE, Add, Allocate, And, AttrStmt, BufferLoad, BufferStore, Call, Cast,
    DeclBuffer, Div, Evaluate, FloatImm, FloorDiv, FloorMod, For, IfThenElse, IntImm, LetStmt,
    Broadcast, Max, Min, Mod, Mul, Not, Or, Ramp, Select, SeqStmt, StringImm, Sub, Var,
)

_BIN = {
    Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
    FloorDiv: lambda a, b: a // b, FloorMod: lambda a, b: a % b,
    Div: lambda a, b: (a / b) if isinstance(a, float) or isinstance(b, float)
    else int(math.copysign(abs(a) // abs(b), a * b)),
    Mod: lambda a, b: math.fmod(a, b) if isinstance(a, float) else a - b * int(a / b),
    Min: min, Max: max, EQ: lambda a, b: a == b, NE: lambda a, b: a != b,
    LT: lambda a, b: a < b, LE: lambda a, b: a <= b, GT: lambda a, b: a > b,
    GE: lambda a, b: a >= b,
}


class SimError(AssertionError):
    pass


class _Block:
    def __init__(self, sim: "KernelSim", grid_idx: tuple, block: tuple) -> None:
        self.sim = sim
        self.grid_idx = grid_idx
        self.block = block
        self.shared: dict[Var, np.ndarray] = {}


class KernelSim:
    """Runs one device kernel (a ``device_kernel_launch`` PrimFunc)."""

    def __init__(self, memory: dict[Var, np.ndarray], warp_size: int = 32) -> None:
        self.memory = memory
        self.warp = warp_size

    # ------------------------------------------------------------------ launch
    def launch(self, func: Any, args: list[Any], grid: tuple, block: tuple) -> None:
        env0 = {}
        for p, a in zip(func.params, args):
            if isinstance(a, np.ndarray):
                self.memory[p] = a
            else:
                env0[p] = a
        for gidx in itertools.product(*(range(g) for g in reversed(grid))):
            gidx = tuple(reversed(gidx))
            blk = _Block(self, gidx, block)
            threads = []
            for tidx in itertools.product(*(range(b) for b in reversed(block))):
                tidx = tuple(reversed(tidx))
                env = dict(env0)
                gen = self.stmt(func.body, env, blk, tidx, {})
                threads.append([gen, None, False])  # generator, pending event, done
            self._run_block(threads, block)

    def _run_block(self, threads: list, block: tuple) -> None:
        def advance(t: list, value: Any = None) -> None:
            try:
                t[1] = t[0].send(value) if t[1] is not None or value is not None else next(t[0])
            except StopIteration:
                t[2] = True
                t[1] = None

        for t in threads:
            advance(t)
        while not all(t[2] for t in threads):
            waiting = [t for t in threads if not t[2]]
            syncs = [t for t in waiting if t[1][0] == "sync"]
            if len(syncs) == len(waiting):
                if any(t[2] for t in threads):
                    raise SimError("some threads finished while others wait at a barrier")
                for t in syncs:
                    advance(t, True)
                continue
            progressed = False
            for w in range(0, len(threads), self.warp):
                warp = threads[w:w + self.warp]
                events = [t[1] for t in warp if not t[2]]
                if not events or any(e[0] != "shfl" for e in events):
                    continue
                if len(events) != len(warp):
                    raise SimError("a warp shuffle reached by only part of the warp")
                values = [e[2] for e in events]
                for lane, t in enumerate(warp):
                    _, kind, _, arg = t[1]
                    if kind == "down":
                        src = lane + arg
                        result = values[src] if src < len(warp) else values[lane]
                    else:
                        result = values[arg]
                    advance(t, result)
                progressed = True
            if not progressed:
                raise SimError("deadlock: threads wait at different barriers/shuffles")

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Any, env: dict, blk: _Block, tidx: tuple, local: dict):
        if isinstance(s, SeqStmt):
            for x in s.seq:
                yield from self.stmt(x, env, blk, tidx, local)
        elif isinstance(s, LetStmt):
            env[s.var] = yield from self.expr(s.value, env, blk, local)
            yield from self.stmt(s.body, env, blk, tidx, local)
        elif isinstance(s, AttrStmt):
            if s.attr_key == "thread_extent":
                tag = s.node.thread_tag
                axis = "xyz".index(tag[-1])
                env[s.node.var] = (blk.grid_idx if tag.startswith("blockIdx") else tidx)[axis]
            yield from self.stmt(s.body, env, blk, tidx, local)
        elif isinstance(s, Allocate):
            count = 1
            for e in s.extents:
                count *= e.value
            dt = to_numpy_dtype(s.dtype)
            if s.scope == "shared":
                arr = blk.shared.setdefault(s.buffer_var, np.full(count, np.nan, dtype=dt)
                                            if dt.kind == "f" else np.zeros(count, dt))
            else:
                arr = np.zeros(count, dtype=dt)
            local[s.buffer_var] = arr
            yield from self.stmt(s.body, env, blk, tidx, local)
        elif isinstance(s, DeclBuffer):
            yield from self.stmt(s.body, env, blk, tidx, local)
        elif isinstance(s, BufferStore):
            value = yield from self.expr(s.value, env, blk, local)
            (idx,) = s.indices
            i = yield from self.expr(idx, env, blk, local)
            self._mem(s.buffer.data, local)[i] = value
        elif isinstance(s, For):
            lo = yield from self.expr(s.min, env, blk, local)
            ext = yield from self.expr(s.extent, env, blk, local)
            for i in range(lo, lo + ext):
                env[s.loop_var] = i
                yield from self.stmt(s.body, env, blk, tidx, local)
        elif isinstance(s, IfThenElse):
            c = yield from self.expr(s.condition, env, blk, local)
            if c:
                yield from self.stmt(s.then_case, env, blk, tidx, local)
            elif s.else_case is not None:
                yield from self.stmt(s.else_case, env, blk, tidx, local)
        elif isinstance(s, Evaluate):
            v = s.value
            if isinstance(v, Call) and v.op.name == "tir.tvm_storage_sync":
                yield ("sync",)
            elif isinstance(v, Call):
                yield from self.expr(v, env, blk, local)
        else:
            raise SimError(f"cannot simulate {type(s).__name__}")

    def _mem(self, data: Var, local: dict) -> np.ndarray:
        if data in local:
            return local[data]
        if data in self.memory:
            return self.memory[data]
        raise SimError(f"no memory for {data.name}")

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any, env: dict, blk: _Block, local: dict):
        if isinstance(e, IntImm):
            return bool(e.value) if e.dtype == "bool" else e.value
        if isinstance(e, FloatImm):
            return e.value
        if isinstance(e, Var):
            return env[e]
        fn = _BIN.get(type(e))
        if fn is not None:
            a = yield from self.expr(e.a, env, blk, local)
            b = yield from self.expr(e.b, env, blk, local)
            return fn(a, b)
        if isinstance(e, And):
            a = yield from self.expr(e.a, env, blk, local)
            if not a:
                return False
            return bool((yield from self.expr(e.b, env, blk, local)))
        if isinstance(e, Or):
            a = yield from self.expr(e.a, env, blk, local)
            if a:
                return True
            return bool((yield from self.expr(e.b, env, blk, local)))
        if isinstance(e, Not):
            return not (yield from self.expr(e.a, env, blk, local))
        if isinstance(e, Select):
            c = yield from self.expr(e.condition, env, blk, local)
            return (yield from self.expr(e.true_value if c else e.false_value, env, blk, local))
        if isinstance(e, Cast):
            v = yield from self.expr(e.value, env, blk, local)
            if isinstance(v, np.ndarray):
                return v.astype(to_numpy_dtype(e.dtype.split("x")[0]))
            return float(v) if e.dtype.startswith("float") else int(v)
        if isinstance(e, Ramp):
            base = yield from self.expr(e.base, env, blk, local)
            stride = yield from self.expr(e.stride, env, blk, local)
            return base + stride * np.arange(e.lanes)
        if isinstance(e, Broadcast):
            v = yield from self.expr(e.value, env, blk, local)
            return np.full(e.lanes, v)
        if isinstance(e, BufferLoad):
            (idx,) = e.indices
            i = yield from self.expr(idx, env, blk, local)
            out = self._mem(e.buffer.data, local)[i]
            return out.copy() if isinstance(out, np.ndarray) else out.item()
        if isinstance(e, Call):
            name = e.op.name
            if name == "tir.if_then_else":
                c = yield from self.expr(e.args[0], env, blk, local)
                return (yield from self.expr(e.args[1] if c else e.args[2], env, blk, local))
            if name == "tir.tvm_warp_activemask":
                return 0xFFFFFFFF
            if name in ("tir.tvm_warp_shuffle_down", "tir.tvm_warp_shuffle"):
                value = yield from self.expr(e.args[1], env, blk, local)
                arg = yield from self.expr(e.args[2], env, blk, local)
                kind = "down" if name.endswith("down") else "idx"
                return (yield ("shfl", kind, value, arg))
            if name in ("tir.exp", "tir.sqrt", "tir.rsqrt"):
                v = yield from self.expr(e.args[0], env, blk, local)
                fn = {"tir.exp": np.exp, "tir.sqrt": np.sqrt,
                      "tir.rsqrt": lambda x: 1.0 / np.sqrt(x)}[name]
                out = fn(np.asarray(v, dtype="float64"))
                return out if isinstance(v, np.ndarray) else float(out)
            raise SimError(f"cannot simulate call {name}")
        raise SimError(f"cannot simulate {type(e).__name__}")


def run_gpu_module(mod: Any, func_name: str, arrays: list[np.ndarray],
                   warp_size: int = 32) -> None:
    """Run host function ``func_name`` of a split module on numpy ``arrays`` (in place)."""
    from tvm.tir import PrimFunc

    host = mod[func_name]
    kernels = {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
    memory: dict[Var, np.ndarray] = {}
    env: dict[Var, Any] = {}
    for p, arr in zip(host.params, arrays):
        buf = host.buffer_map.get(p)
        if buf is None:
            env[p] = arr
            continue
        memory[buf.data] = arr.reshape(-1)
        for dim, size in zip(buf.shape, arr.shape):
            if isinstance(dim, Var):
                env[dim] = size
    sim = KernelSim(memory, warp_size)

    def value(e: Any) -> Any:
        gen = sim.expr(e, env, None, {})
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value
        raise SimError("host expressions cannot shuffle")

    def run(s: Any) -> None:
        if isinstance(s, SeqStmt):
            for x in s.seq:
                run(x)
        elif isinstance(s, (DeclBuffer, AttrStmt)):
            run(s.body)
        elif isinstance(s, LetStmt):
            env[s.var] = value(s.value)
            run(s.body)
        elif isinstance(s, Allocate):
            count = 1
            for e in s.extents:
                count *= value(e)
            memory[s.buffer_var] = np.zeros(count, to_numpy_dtype(s.dtype))
            run(s.body)
        elif isinstance(s, Evaluate) and isinstance(s.value, Call):
            call = s.value
            assert call.op.name == "tir.tvm_call_packed"
            kname = call.args[0].value
            kernel = kernels[kname]
            nargs = len(kernel.params)
            args = []
            for a in call.args[1:1 + nargs]:
                args.append(memory[a] if isinstance(a, Var) and a in memory else value(a))
            dims = dict(zip(kernel.attrs["tir.kernel_launch_params"],
                            (value(x) for x in call.args[1 + nargs:])))
            grid = tuple(dims.get(f"blockIdx.{a}", 1) for a in "xyz")
            block = tuple(dims.get(f"threadIdx.{a}", 1) for a in "xyz")
            sim.launch(kernel, args, grid, block)
        elif isinstance(s, For):
            lo = value(s.min)
            for i in range(lo, lo + value(s.extent)):
                env[s.loop_var] = i
                run(s.body)
        elif isinstance(s, Evaluate):
            return
        else:
            raise SimError(f"cannot run host statement {type(s).__name__}")

    run(host.body)


def kernel_name_of(s: Any) -> str:
    return s.value if isinstance(s, StringImm) else str(s)
