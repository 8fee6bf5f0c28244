"""Hand-built TIR used by the lowering-pass tests, plus a tiny TIR interpreter.

The interpreter runs lowered (and un-lowered loop-level) PrimFuncs on numpy arrays, so the
pass tests can check that a pass keeps the numbers, not only the structure.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from tvm.ffi.dtype import to_numpy_dtype
from tvm.ir.module import IRModule
from tvm.tir import (
    EQ, GE, GT, LE, LT, NE, Add, Allocate, And, AssertStmt, AttrStmt, Block, BlockRealize,
    Broadcast, BufferLoad, BufferRegion, BufferStore, Call, Cast, DeclBuffer, Div, Evaluate,
    FloatImm, FloorDiv, FloorMod, For, ForKind, IfThenElse, IntImm, IterVar, IterVarType, Let,
    LetStmt, Max, Min, Mod, Mul, Not, Or, PrimFunc, Ramp, Range, Select, SeqStmt, Sub, Var,
    decl_buffer,
)


def func_of(params, body, buffer_map, name="main"):
    return PrimFunc(params, body, buffer_map=buffer_map, attrs={"global_symbol": name})


def mod_of(func, name="main"):
    return IRModule({name: func})


def matmul_blocks(n=8, m=8, k=8, dtype="float32"):
    """``C = A @ B`` as te.create_prim_func would write it: a root block and a reduction
    block with ``init``."""
    a, b, c = (Var(x, "handle") for x in "abc")
    A = decl_buffer((n, k), dtype, "A")
    B = decl_buffer((k, m), dtype, "B")
    C = decl_buffer((n, m), dtype, "C")
    i, j, r = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    ivs = (
        IterVar(Range(0, n), vi, IterVarType.DATA_PAR),
        IterVar(Range(0, m), vj, IterVarType.DATA_PAR),
        IterVar(Range(0, k), vk, IterVarType.COMM_REDUCE),
    )
    update = BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj))
    init = BufferStore(C, FloatImm(dtype, 0.0), (vi, vj))
    block = Block(ivs, (BufferRegion.full_region(A), BufferRegion.full_region(B)),
                  (BufferRegion.full_region(C),), "C", update, init)
    realize = BlockRealize((i, j, r), IntImm("bool", 1), block)
    loops = For(i, 0, n, ForKind.SERIAL, For(j, 0, m, ForKind.SERIAL, For(r, 0, k, ForKind.SERIAL, realize)))
    root = BlockRealize((), IntImm("bool", 1), Block((), (), (), "root", loops))
    return func_of([a, b, c], root, {a: A, b: B, c: C}, "matmul")


# --------------------------------------------------------------------------- interpreter


class _Return(Exception):
    pass


class Interpreter:
    """Evaluates a PrimFunc over numpy arrays (buffers) and Python scalars."""

    def __init__(self) -> None:
        self.env: dict[Var, Any] = {}
        self.mem: dict[Var, np.ndarray] = {}

    def run(self, func: PrimFunc, *args: Any) -> None:
        for p, arg in zip(func.params, args):
            buf = func.buffer_map.get(p)
            if buf is None:
                self.env[p] = arg
            else:
                self.mem[buf.data] = arg.reshape(-1)
                for dim, size in zip(buf.shape, arg.shape):
                    if isinstance(dim, Var):
                        self.env[dim] = size
        self.stmt(func.body)

    # -- expressions ---------------------------------------------------------------------
    def expr(self, e: Any) -> Any:
        if isinstance(e, IntImm):
            return bool(e.value) if e.dtype == "bool" else e.value
        if isinstance(e, FloatImm):
            return e.value
        if isinstance(e, Var):
            return self.env[e]
        if isinstance(e, Ramp):
            base, stride = self.expr(e.base), self.expr(e.stride)
            return np.array([base + k * stride for k in range(e.lanes)])
        if isinstance(e, Broadcast):
            return np.full(e.lanes, self.expr(e.value))
        if isinstance(e, BufferLoad):
            data = self.mem[e.buffer.data]
            idx = self._flat(e.buffer, [self.expr(i) for i in e.indices])
            return data[idx].copy() if isinstance(idx, np.ndarray) else data[idx]
        if isinstance(e, Cast):
            v = self.expr(e.value)
            np_dt = to_numpy_dtype(e.dtype.split("x")[0] if "x" in e.dtype else e.dtype)
            return np.asarray(v).astype(np_dt) if isinstance(v, np.ndarray) else np_dt.type(v).item()
        if isinstance(e, Select):
            c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
            return np.where(c, t, f) if isinstance(c, np.ndarray) or isinstance(t, np.ndarray) else (t if c else f)
        if isinstance(e, Let):
            self.env[e.var] = self.expr(e.value)
            return self.expr(e.body)
        if isinstance(e, Not):
            v = self.expr(e.a)
            return np.logical_not(v) if isinstance(v, np.ndarray) else not v
        if isinstance(e, (And, Or)):
            a, b = self.expr(e.a), self.expr(e.b)
            fn = np.logical_and if isinstance(e, And) else np.logical_or
            return fn(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else fn(a, b).item()
        if isinstance(e, Call):
            name = e.op.name
            args = [self.expr(a) for a in e.args]
            if name == "tir.if_then_else":
                return args[1] if args[0] else args[2]
            if name == "tir.likely":
                return args[0]
            fn = getattr(np, name.split(".")[1])
            return fn(*args)
        ops = {
            Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
            FloorDiv: lambda a, b: a // b, FloorMod: lambda a, b: a % b,
            Min: np.minimum, Max: np.maximum,
            EQ: lambda a, b: a == b, NE: lambda a, b: a != b, LT: lambda a, b: a < b,
            LE: lambda a, b: a <= b, GT: lambda a, b: a > b, GE: lambda a, b: a >= b,
        }
        if type(e) in ops:
            return ops[type(e)](self.expr(e.a), self.expr(e.b))
        if isinstance(e, (Div, Mod)):
            a, b = self.expr(e.a), self.expr(e.b)
            if "float" in e.dtype:
                return a / b
            q = np.trunc(np.asarray(a) / np.asarray(b)).astype(np.int64)
            q = q if isinstance(a, np.ndarray) else int(q)
            return q if isinstance(e, Div) else a - b * q
        raise NotImplementedError(type(e).__name__)

    def _flat(self, buffer, idx):
        shape = [self.expr(s) for s in buffer.shape]
        if buffer.strides:
            strides = [self.expr(s) for s in buffer.strides]
        else:
            strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        flat = 0
        for i, s in zip(idx, strides):
            flat = flat + np.asarray(i) * s if isinstance(i, np.ndarray) else flat + i * s
        if buffer.elem_offset is not None:
            flat = flat + self.expr(buffer.elem_offset)
        return flat

    # -- statements ----------------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        if isinstance(s, SeqStmt):
            for x in s.seq:
                self.stmt(x)
        elif isinstance(s, For):
            lo, ext = self.expr(s.min), self.expr(s.extent)
            for v in range(lo, lo + ext):
                self.env[s.loop_var] = v
                self.stmt(s.body)
        elif isinstance(s, BufferStore):
            data = self.mem[s.buffer.data]
            idx = self._flat(s.buffer, [self.expr(i) for i in s.indices])
            data[idx] = self.expr(s.value)
        elif isinstance(s, IfThenElse):
            if self.expr(s.condition):
                self.stmt(s.then_case)
            elif s.else_case is not None:
                self.stmt(s.else_case)
        elif isinstance(s, LetStmt):
            self.env[s.var] = self.expr(s.value)
            self.stmt(s.body)
        elif isinstance(s, Allocate):
            size = math.prod(self.expr(x) for x in s.extents)
            self.mem[s.buffer_var] = np.zeros(size, to_numpy_dtype(s.dtype))
            self.stmt(s.body)
        elif isinstance(s, (DeclBuffer, AttrStmt)):
            self.stmt(s.body)
        elif isinstance(s, AssertStmt):
            assert self.expr(s.condition), s.message
            self.stmt(s.body)
        elif isinstance(s, Evaluate):
            self.expr(s.value)
        elif isinstance(s, BlockRealize):
            if self.expr(s.predicate):
                for iv, v in zip(s.block.iter_vars, s.iter_values):
                    self.env[iv.var] = self.expr(v)
                self.block(s.block)
        elif isinstance(s, Block):
            self.block(s)
        else:
            raise NotImplementedError(type(s).__name__)

    def block(self, b: Block) -> None:
        for buf in b.alloc_buffers:
            size = math.prod(self.expr(x) for x in buf.shape)
            self.mem[buf.data] = np.zeros(size, to_numpy_dtype(buf.dtype))
        if b.init is not None:
            first = all(
                self.env[iv.var] == self.expr(iv.dom.min)
                for iv in b.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE
            )
            if first:
                self.stmt(b.init)
        self.stmt(b.body)


def run_func(func: PrimFunc, *arrays: Any) -> list:
    """Run ``func`` on copies of ``arrays``; returns the arrays after the run."""
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in arrays]
    Interpreter().run(func, *copies)
    return copies


# --------------------------------------------------------------------------- debug text


def show(node: Any, indent: int = 0) -> str:
    """A compact Python-like rendering of TIR (for assertion messages and debugging)."""
    pad = "    " * indent
    e = _show_expr
    if isinstance(node, PrimFunc):
        return f"def {node.attrs.get('global_symbol', 'f')}({', '.join(p.name for p in node.params)}):\n" + show(node.body, 1)
    if isinstance(node, SeqStmt):
        return "".join(show(s, indent) for s in node.seq)
    if isinstance(node, For):
        ann = f" {dict(node.annotations)}" if node.annotations else ""
        return f"{pad}for {node.loop_var.name} in {node.kind.name.lower()}({e(node.min)}, {e(node.extent)}){ann}:\n" + show(node.body, indent + 1)
    if isinstance(node, BufferStore):
        return f"{pad}{node.buffer.name}[{', '.join(e(i) for i in node.indices)}] = {e(node.value)}\n"
    if isinstance(node, IfThenElse):
        out = f"{pad}if {e(node.condition)}:\n" + show(node.then_case, indent + 1)
        if node.else_case is not None:
            out += f"{pad}else:\n" + show(node.else_case, indent + 1)
        return out
    if isinstance(node, LetStmt):
        return f"{pad}{node.var.name} = {e(node.value)}\n" + show(node.body, indent)
    if isinstance(node, Allocate):
        return f"{pad}{node.buffer_var.name} = allocate({node.dtype}, {[e(x) for x in node.extents]}, {node.scope}, {dict(node.annotations)})\n" + show(node.body, indent)
    if isinstance(node, DeclBuffer):
        b = node.buffer
        return f"{pad}{b.name} = decl_buffer({[e(x) for x in b.shape]}, data={b.data.name})\n" + show(node.body, indent)
    if isinstance(node, AttrStmt):
        return f"{pad}attr {node.attr_key} = {e(node.value)}\n" + show(node.body, indent)
    if isinstance(node, Evaluate):
        return f"{pad}evaluate({e(node.value)})\n"
    if isinstance(node, BlockRealize):
        b = node.block
        return f"{pad}block {b.name_hint}({', '.join(e(v) for v in node.iter_values)}) where {e(node.predicate)}:\n" + show(b.body, indent + 1)
    return f"{pad}{type(node).__name__}\n"


def _show_expr(x: Any) -> str:
    if isinstance(x, (IntImm, FloatImm)):
        return str(x.value)
    if isinstance(x, Var):
        return x.name
    if isinstance(x, BufferLoad):
        return f"{x.buffer.name}[{', '.join(_show_expr(i) for i in x.indices)}]"
    if isinstance(x, Ramp):
        return f"ramp({_show_expr(x.base)}, {_show_expr(x.stride)}, {x.lanes})"
    if isinstance(x, Broadcast):
        return f"bcast({_show_expr(x.value)}, {x.lanes})"
    if isinstance(x, Cast):
        return f"{x.dtype}({_show_expr(x.value)})"
    if isinstance(x, Call):
        return f"{x.op.name}({', '.join(_show_expr(a) for a in x.args)})"
    sym = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%", EQ: "==", NE: "!=",
           LT: "<", LE: "<=", GT: ">", GE: ">=", And: "and", Or: "or", Div: "/"}
    if type(x) in sym:
        return f"({_show_expr(x.a)} {sym[type(x)]} {_show_expr(x.b)})"
    if isinstance(x, (Min, Max)):
        return f"{type(x).__name__.lower()}({_show_expr(x.a)}, {_show_expr(x.b)})"
    if isinstance(x, Not):
        return f"not {_show_expr(x.a)}"
    if isinstance(x, Select):
        return f"select({_show_expr(x.condition)}, {_show_expr(x.true_value)}, {_show_expr(x.false_value)})"
    return type(x).__name__


def find_all(node: Any, cls: type) -> list:
    """Every sub-node of type ``cls`` in pre-order."""
    from tvm.tir import pre_order_visit

    found: list = []
    pre_order_visit(node, lambda x: found.append(x) if isinstance(x, cls) else None)
    return found


def find_first(node: Any, cls: type) -> Any:
    """The first sub-node of type ``cls`` in pre-order (AssertionError if none)."""
    found = find_all(node, cls)
    assert found, f"no {cls.__name__} in\n{show(node)}"
    return found[0]
