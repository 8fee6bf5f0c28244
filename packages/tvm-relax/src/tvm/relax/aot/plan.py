"""The static plan of an AOT program: the bytecode of a static function, resolved at compile time.

The VM bytecode of ``main`` (:mod:`tvm.runtime.vm.bytecode`) after the VM lowering passes is,
for a program of static shapes, a straight line of storage allocations of constant sizes,
tensors at constant offsets in them, kernel calls and a return.  :func:`make_plan` executes
that line symbolically: every tensor becomes a :class:`TensorRef` (an input, a weight or a
range of one of the program's storages), views
(``vm.builtin.reshape``) share their source's memory, tuples and shapes exist only at compile
time, and what remains to do at run time is the list of kernel calls.  Anything that needs the
VM at run time (symbolic shapes, control flow, calls of other Relax functions, packed
functions without a C implementation) raises :class:`AOTError` naming the function, the
instruction and what is unsupported.

Once the kernels' scratch needs are known (``KernelCall.arena``, :mod:`.arena`),
:func:`place_workspace` lays the storages and the per-call scratch (arenas) out in one
workspace: each lives from the first kernel call that uses it to the last (an output to the
end, a call's arena during that call only), and blocks whose lives overlap get disjoint
64-byte aligned ranges, placed largest first at the lowest offset that fits (greedy by
size, as in TFLite's arena planner).  :attr:`Plan.liveness_bound` is what no placement can
beat: the most bytes of tensors (views counted once, as their source) and scratch live at
one call; ``workspace_size / liveness_bound`` says how close the placement came.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
from tvm.ffi.dtype import storage_bytes
from tvm.runtime.int_expr import evaluate, expr_vars
from tvm.runtime.vm.bytecode import format_instruction

from ..errors import RelaxError

__all__ = ["AOTError", "TensorRef", "KernelCall", "Plan", "make_plan", "place_workspace",
           "ALIGN"]

#: alignment of every storage in the workspace and of every weight in the weights blob
ALIGN = 64


class AOTError(RelaxError):
    """A program the AOT code generator cannot translate (the message says what and where)."""


@dataclass
class TensorRef:
    """A tensor of the program: ``base`` is ``("input", i)``, ``("const", i)``,
    ``("storage", s, byte_offset)`` (in storage ``s``, before :func:`place_workspace`) or
    ``("workspace", byte_offset)`` (after)."""

    index: int
    dtype: str
    shape: tuple[int, ...]
    base: tuple[str, int]

    @property
    def nbytes(self) -> int:
        return storage_bytes(self.dtype) * math.prod(self.shape)


@dataclass
class KernelCall:
    """A call of kernel ``symbol``; arguments are TensorRefs, ints or floats."""

    symbol: str
    args: list[Union[TensorRef, int, float]]
    text: str  # the instruction, for comments in the generated C
    arena: int = 0  # bytes the kernel takes from aligned_alloc in a call (see .arena)
    arena_offset: int = 0  # where in the workspace (place_workspace)


@dataclass
class Plan:
    name: str
    inputs: list[tuple[str, TensorRef]]
    outputs: list[tuple[str, TensorRef]]
    tensors: list[TensorRef] = field(default_factory=list)
    calls: list[KernelCall] = field(default_factory=list)
    workspace_size: int = 0  # the storages and the calls' arenas (place_workspace)
    arena_size: int = 0  # the largest arena of a call
    storage_sizes: list[int] = field(default_factory=list)
    weights: bytes = b""
    weight_offsets: list[int] = field(default_factory=list)
    views: dict[int, int] = field(default_factory=dict)  # a view's tensor index -> source's
    #: a kernel's name -> the symbol its object defines, where they differ (a kernel named
    #: like a libc function, ``exp``, is ``__tvm_fn_exp``: the module metadata says so)
    link_symbols: dict[str, str] = field(default_factory=dict)
    liveness_bound: int = 0  # bytes: the most tensors and scratch live at once (module doc)


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def c_identifier(name: str, taken: set[str]) -> str:
    """``name`` as a C identifier not in ``taken`` (which it joins)."""
    base = re.sub(r"\W", "_", name) or "t"
    if base[0].isdigit():
        base = "_" + base
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


class _Shape(tuple):
    """A shape value (a ``["shape", ...]`` operand, ``shape_of``), not a Relax tuple."""


_VIEW_BUILTINS = {"vm.builtin.reshape"}
_ALIAS_BUILTINS = {"vm.builtin.copy"}


class _Planner:
    def __init__(self, fn: dict, constants: list[np.ndarray], kernels: set[str], name: str):
        self.fn = fn
        self.fname = fn["name"]
        self.kernels = kernels
        self.constants = constants
        self.regs: dict[int, Any] = {}
        self.plan = Plan(name, [], [])
        self.const_refs: dict[int, TensorRef] = {}
        self.weight_chunks: list[bytes] = []
        self.weight_bytes = 0
        self.pc = 0
        self.views: dict[int, int] = {}  # a view's tensor index -> its source's

    def err(self, what: str) -> AOTError:
        ins = self.fn["code"][self.pc]
        return AOTError(f"AOT (@{self.fname}, instruction {self.pc}: "
                        f"{format_instruction(ins, self.fn.get('heap_names') or [])}): {what}")

    def tensor(self, dtype: str, shape: Any, base: tuple[str, int]) -> TensorRef:
        ref = TensorRef(len(self.plan.tensors), dtype, tuple(int(d) for d in shape), base)
        self.plan.tensors.append(ref)
        return ref

    def const(self, i: int) -> TensorRef:
        ref = self.const_refs.get(i)
        if ref is None:
            arr = np.asarray(self.constants[i], order="C")  # (ascontiguousarray makes 0-d 1-d)
            offset = _align(self.weight_bytes)
            raw = arr.tobytes()
            self.weight_chunks += [b"\0" * (offset - self.weight_bytes), raw]
            self.weight_bytes = offset + len(raw)
            self.plan.weight_offsets.append(offset)
            dtype = str(arr.dtype) if arr.dtype != np.bool_ else "bool"
            ref = self.tensor(dtype, arr.shape, ("const", offset))
            self.const_refs[i] = ref
        return ref

    def static(self, e: Any, what: str) -> Any:
        if expr_vars(e):
            raise self.err(f"{what} depends on a symbolic shape; AOT needs static shapes")
        return evaluate(e, {})

    def operand(self, o: list) -> Any:
        kind, value = o
        if kind == "reg":
            if value not in self.regs:
                raise self.err(f"register %{value} is not defined")
            return self.regs[value]
        if kind == "const":
            return self.const(value)
        if kind == "imm":
            return value
        if kind == "expr":
            return self.static(value, "an expression")
        if kind == "shape":
            return _Shape(int(self.static(d, "a shape")) for d in value)
        if kind in ("str", "dtype"):
            return ("str", value)
        raise self.err(f"a {kind} operand has no value in an AOT program")

    def run(self, params: list[tuple[str, str, tuple[int, ...]]]) -> Plan:
        for i, (pname, dtype, shape) in enumerate(params):
            ref = self.tensor(dtype, shape, ("input", i))
            self.regs[i] = ref
            self.plan.inputs.append((pname, ref))
        for pc, ins in enumerate(self.fn["code"]):
            self.pc = pc
            op = ins["op"]
            if op in ("check_tensor_info", "match_shape"):
                self.check(ins)
            elif op == "alloc_storage":
                if ins["device"] != 0 or ins["scope"] != "global":
                    raise self.err("AOT allocates host memory only (device 0, scope global)")
                size = int(self.static(ins["size"], "the storage size"))
                self.regs[ins["dst"]] = ("storage", len(self.plan.storage_sizes), size)
                self.plan.storage_sizes.append(size)
            elif op == "alloc_tensor":
                storage = self.operand(ins["storage"])
                if not (isinstance(storage, tuple) and storage[0] == "storage"):
                    raise self.err("alloc_tensor needs a storage")
                at = int(self.static(ins["offset"], "the tensor offset"))
                shape = self.operand(ins["shape"])
                ref = self.tensor(ins["dtype"], shape, ("storage", storage[1], at))
                if at + ref.nbytes > storage[2]:
                    raise self.err(f"the tensor ({ref.nbytes} bytes at {at}) does not fit "
                                   f"its storage of {storage[2]} bytes")
                self.regs[ins["dst"]] = ref
            elif op == "call":
                self.call(ins)
            elif op == "ret":
                self.ret(self.operand(ins["value"]))
                break
            elif op in ("if", "goto", "move"):
                raise self.err("control flow (if/else) needs the VM; AOT translates straight-"
                               "line programs only")
            else:
                raise self.err(f"the {op} instruction is not supported by AOT")
        self.plan.weights = b"".join(self.weight_chunks)
        self.plan.views = dict(self.views)
        return self.plan

    def check(self, ins: dict) -> None:
        value = self.operand(ins["arg"])
        if not isinstance(value, TensorRef):
            raise self.err("AOT checks tensors only")
        if ins["op"] == "check_tensor_info":
            return
        dims = ins["dims"]
        if any(d[0] != "imm" for d in dims) or tuple(d[1] for d in dims) != value.shape:
            raise self.err("a symbolic or mismatching shape; AOT needs static shapes")

    def call(self, ins: dict) -> None:
        func = ins["func"]
        args = [self.operand(a) for a in ins["args"]]
        dst = ins["dst"]
        text = format_instruction(ins)
        if func in self.kernels:
            for a in args:
                if not isinstance(a, (TensorRef, int, float)):
                    raise self.err(f"kernel {func} takes an argument AOT cannot pass: {a!r}")
            self.plan.calls.append(KernelCall(func, args, text))
            if dst is not None:
                self.regs[dst] = None
            return
        if func == "vm.builtin.make_tuple":
            result: Any = tuple(args)
        elif func == "vm.builtin.tuple_getitem":
            tup, index = args
            if not isinstance(tup, tuple) or isinstance(tup, _Shape) or not (
                    -len(tup) <= index < len(tup)):
                raise self.err("tuple_getitem of a value that is not a tuple or out of range")
            result = tup[index]
        elif func == "vm.builtin.null_value":
            result = None
        elif func in _ALIAS_BUILTINS:
            result = args[0]
        elif func == "vm.builtin.shape_of":
            if not isinstance(args[0], TensorRef):
                raise self.err("shape_of of a value that is not a tensor")
            result = _Shape(args[0].shape)
        elif func in _VIEW_BUILTINS:
            src, shape = args
            if not isinstance(src, TensorRef):
                raise self.err("reshape of a value that is not a tensor")
            shape = tuple(int(d) for d in shape)
            if math.prod(shape) != math.prod(src.shape):
                raise self.err(f"reshape of shape {src.shape} to {shape}")
            result = self.tensor(src.dtype, shape, src.base)
            self.views[result.index] = self.views.get(src.index, src.index)
        elif func.startswith("vm.builtin."):
            raise self.err(f"the builtin {func} has no C implementation in AOT (supported: "
                           "make_tuple, tuple_getitem, null_value, copy, shape_of, reshape)")
        else:
            raise self.err(f"{func} is a Relax function or packed function; AOT calls "
                           "compiled kernels only (no C implementation of it)")
        if dst is not None:
            self.regs[dst] = result

    def ret(self, value: Any) -> None:
        values = list(value) if isinstance(value, tuple) and not isinstance(
            value, _Shape) else [value]
        for i, v in enumerate(values):
            if not isinstance(v, TensorRef):
                raise self.err(f"output {i} is a {type(v).__name__}, not a tensor; AOT "
                               "returns a tensor or a flat tuple of tensors")
        names = ["output"] if len(values) == 1 else [f"output{i}" for i in range(len(values))]
        self.plan.outputs = list(zip(names, values))


def make_plan(fn: dict, params: list[tuple[str, str, tuple[int, ...]]],
              constants: list[np.ndarray], kernels: set[str], name: str) -> Plan:
    """The :class:`Plan` of bytecode function ``fn`` whose parameters are the tensors
    ``params`` (name, dtype, shape)."""
    planner = _Planner(fn, constants, kernels, name)
    return planner.run(params)


def _lives(plan: Plan) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """``[first, last]`` call of each storage and of each tensor (a view as its source)."""
    storages: dict[int, list[int]] = {}
    tensors: dict[int, list[int]] = {}
    end = len(plan.calls)
    uses = [(t, a) for t, call in enumerate(plan.calls) for a in call.args]
    uses += [(end, ref) for _, ref in plan.outputs]
    for t, a in uses:
        if isinstance(a, TensorRef) and a.base[0] == "storage":
            for table, key in ((storages, a.base[1]), (tensors, plan.views.get(a.index, a.index))):
                live = table.setdefault(key, [t, t])
                live[0], live[1] = min(live[0], t), max(live[1], t)
    return storages, tensors


def place_workspace(plan: Plan) -> None:
    """Lay the storages and the calls' arenas out in one workspace (module docstring)."""
    storages, tensors = _lives(plan)
    # (size, first, last, what): largest first; ties by first use
    blocks = [(_align(plan.storage_sizes[s]), a, b, ("storage", s)) for s, (a, b) in storages.items()]
    blocks += [(_align(c.arena), t, t, ("arena", t)) for t, c in enumerate(plan.calls) if c.arena]
    blocks.sort(key=lambda blk: (-blk[0], blk[1]))
    placed: list[tuple[int, int, int, int]] = []  # offset, end, first, last
    where: dict[tuple[str, int], int] = {}
    for size, first, last, what in blocks:
        busy = sorted((o, e) for o, e, a, b in placed if a <= last and first <= b)
        offset = 0
        for o, e in busy:
            if offset + size <= o:
                break
            offset = max(offset, e)
        placed.append((offset, offset + size, first, last))
        where[what] = offset
    for ref in plan.tensors:
        if ref.base[0] == "storage":
            ref.base = ("workspace", where.get(("storage", ref.base[1]), 0) + ref.base[2])
    for t, call in enumerate(plan.calls):
        call.arena_offset = where.get(("arena", t), 0)
    plan.workspace_size = max((e for _, e, _, _ in placed), default=0)
    plan.arena_size = max((_align(c.arena) for c in plan.calls), default=0)
    live = [0] * (len(plan.calls) + 2)
    for index, (a, b) in tensors.items():
        for t in range(a, b + 1):
            live[t] += plan.tensors[index].nbytes
    for t, c in enumerate(plan.calls):
        live[t] += c.arena
    plan.liveness_bound = max(live, default=0)
