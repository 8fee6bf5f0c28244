"""The static plan of an AOT program: the bytecode of a static function, resolved at compile time.

The VM bytecode of ``main`` (:mod:`tvm.runtime.vm.bytecode`) after the VM lowering passes is,
for a program of static shapes, a straight line of storage allocations of constant sizes,
tensors at constant offsets in them, kernel calls and a return.  :func:`make_plan` executes
that line symbolically: every storage gets a place in one workspace (64-byte aligned), every
tensor becomes a :class:`TensorRef` (an input, a weight or a workspace range), views
(``vm.builtin.reshape``) share their source's memory, tuples and shapes exist only at compile
time, and what remains to do at run time is the list of kernel calls.  Anything that needs the
VM at run time (symbolic shapes, control flow, calls of other Relax functions, packed
functions without a C implementation) raises :class:`AOTError` naming the function, the
instruction and what is unsupported.
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

__all__ = ["AOTError", "TensorRef", "KernelCall", "Plan", "make_plan", "ALIGN"]

#: alignment of every storage in the workspace and of every weight in the weights blob
ALIGN = 64


class AOTError(RelaxError):
    """A program the AOT code generator cannot translate (the message says what and where)."""


@dataclass
class TensorRef:
    """A tensor of the program: ``base`` is ``("input", i)``, ``("const", i)`` or
    ``("workspace", byte_offset)``."""

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


@dataclass
class Plan:
    name: str
    inputs: list[tuple[str, TensorRef]]
    outputs: list[tuple[str, TensorRef]]
    tensors: list[TensorRef] = field(default_factory=list)
    calls: list[KernelCall] = field(default_factory=list)
    workspace_size: int = 0  # the storages, then the arena
    arena_offset: int = 0
    arena_size: int = 0
    weights: bytes = b""
    weight_offsets: list[int] = field(default_factory=list)


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
        offset = 0
        for pc, ins in enumerate(self.fn["code"]):
            self.pc = pc
            op = ins["op"]
            if op in ("check_tensor_info", "match_shape"):
                self.check(ins)
            elif op == "alloc_storage":
                if ins["device"] != 0 or ins["scope"] != "global":
                    raise self.err("AOT allocates host memory only (device 0, scope global)")
                size = int(self.static(ins["size"], "the storage size"))
                self.regs[ins["dst"]] = ("storage", offset, size)
                offset = _align(offset + size)
            elif op == "alloc_tensor":
                storage = self.operand(ins["storage"])
                if not (isinstance(storage, tuple) and storage[0] == "storage"):
                    raise self.err("alloc_tensor needs a storage")
                at = int(self.static(ins["offset"], "the tensor offset"))
                shape = self.operand(ins["shape"])
                ref = self.tensor(ins["dtype"], shape, ("workspace", storage[1] + at))
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
        self.plan.workspace_size = _align(offset)
        self.plan.weights = b"".join(self.weight_chunks)
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
