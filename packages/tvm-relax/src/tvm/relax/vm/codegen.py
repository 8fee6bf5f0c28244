"""VM code generation: a lowered Relax module -> bytecode, constants and the PrimFuncs to build.

Input: the module after the VM lowering passes (no dataflow blocks, ``call_tir`` rewritten,
memory explicit, checks inserted by VMShapeLower).  Each Relax function becomes a bytecode
function (:mod:`tvm.runtime.vm.bytecode`): parameters in the first registers, one register
per computed value; leaves (constants, shapes, scalars, strings) are operands, not
instructions.  Mapping:

=====================================================  ==========================================
Relax                                                  instruction
=====================================================  ==========================================
``vm.builtin.check_tensor_info`` (and other checks)    ``check_tensor_info`` ...
``vm.builtin.match_shape`` / ``match_prim_value``      ``match_shape`` / ``match_prim_value``
``relax.memory.alloc_storage`` / ``alloc_tensor``      ``alloc_storage`` / ``alloc_tensor``
call of a PrimFunc / Relax function / ExternFunc       ``call <name>``
``Tuple`` / ``TupleGetItem``                           ``call vm.builtin.make_tuple`` / ``tuple_getitem``
``If``                                                 ``if`` ... ``goto`` (``move`` joins branches)
function result                                        ``ret``
=====================================================  ==========================================

Symbolic variables get shape-heap slots where ``match_shape`` stores them; shape expressions
(allocation sizes, shapes, scalar arguments) become expressions in the run-time format of
``tvm.runtime.int_expr`` over those slots (written by ``tvm.tir.codegen.int_expr``).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.tir import expr as tir
from tvm.tir.codegen.int_expr import to_int_expr
from tvm.tir.function import PrimFunc

from ..errors import RelaxError
from ..expr import (
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)

#: function attribute written by StaticPlanBlockMemory (copied into the executable's stats)
PLAN_ATTR = "relax.memory_plan"

__all__ = ["codegen", "CodegenResult"]

_CHECKS = {
    "vm.builtin.check_tensor_info", "vm.builtin.check_shape_info", "vm.builtin.check_prim_value",
    "vm.builtin.check_tuple_info", "vm.builtin.match_shape", "vm.builtin.match_prim_value",
}


class CodegenResult:
    """The bytecode program, its constants and the module of PrimFuncs to compile."""

    def __init__(self, program: dict[str, Any], constants: list[np.ndarray], kernels: IRModule):
        self.program = program
        self.constants = constants
        self.kernels = kernels


class _ModuleCodegen:
    def __init__(self, mod: IRModule):
        self.mod = mod
        self.constants: list[np.ndarray] = []
        self.const_index: dict[int, int] = {}
        self.kernels: dict[str, PrimFunc] = {}
        self._origin: dict[str, PrimFunc] = {}

    def constant(self, c: Constant) -> list:
        index = self.const_index.get(id(c.data))
        if index is None:
            index = len(self.constants)
            self.constants.append(np.asarray(c.data, order="C"))
            self.const_index[id(c.data)] = index
        return ["const", index]

    def kernel(self, gv: GlobalVar, func: PrimFunc) -> str:
        name = (func.attrs or {}).get("global_symbol") or gv.name_hint
        known = self._origin.get(name)
        if known is not None and known is not func:
            raise RelaxError(f"VM codegen: two PrimFuncs use the symbol {name!r}")
        if known is None:
            self._origin[name] = func
            self.kernels[name] = func if (func.attrs or {}).get("global_symbol") == name else \
                func.with_attr("global_symbol", name)
        return name


class _FunctionCodegen:
    def __init__(self, ctx: _ModuleCodegen, name: str, func: Function):
        self.ctx = ctx
        self.name = name
        self.func = func
        self.code: list[dict[str, Any]] = []
        self.operands: dict[int, list] = {}
        self.slots: dict[int, int] = {}
        self.heap_names: list[str] = []
        self.num_regs = len(func.params)

    def err(self, message: str) -> RelaxError:
        return RelaxError(f"VM codegen (@{self.name}): {message}")

    def run(self) -> dict[str, Any]:
        for i, p in enumerate(self.func.params):
            self.operands[id(p)] = ["reg", i]
        result = self.seq(self.func.body)
        self.code.append({"op": "ret", "value": result})
        return {
            "name": self.name,
            "params": [p.name_hint for p in self.func.params],
            "num_regs": self.num_regs,
            "heap_size": len(self.heap_names),
            "heap_names": self.heap_names,
            "code": self.code,
        }

    def reg(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    # -- expressions --------------------------------------------------------------------------
    def seq(self, seq: Any) -> list:
        if not isinstance(seq, SeqExpr):
            return self.value(seq)
        for block in seq.blocks:
            for b in block.bindings:
                if isinstance(b, MatchCast):
                    raise self.err(
                        f"match_cast to {b.var.name_hint!r} was not lowered; run "
                        "relax.transform.VMShapeLower first"
                    )
                self.operands[id(b.var)] = self.value(b.value)
        return self.arg(seq.body)

    def value(self, v: Any) -> list:
        if isinstance(v, Call):
            return self.call(v)
        if isinstance(v, Tuple):
            return self.emit_call("vm.builtin.make_tuple", [self.arg(f) for f in v.fields])
        if isinstance(v, TupleGetItem):
            return self.emit_call("vm.builtin.tuple_getitem",
                                  [self.arg(v.tuple_value), ["imm", v.index]])
        if isinstance(v, If):
            return self.branch(v)
        if isinstance(v, Function):
            raise self.err("local functions (closures) are not supported by the VM yet")
        return self.arg(v)

    def arg(self, e: Any) -> list:
        if isinstance(e, Var):
            found = self.operands.get(id(e))
            if found is None:
                raise self.err(f"variable {e.name_hint!r} is used before it is defined")
            return found
        if isinstance(e, Constant):
            return self.ctx.constant(e)
        if isinstance(e, ShapeExpr):
            return ["shape", [self.prim(d) for d in e.values]]
        if isinstance(e, PrimValue):
            value = e.value
            if isinstance(value, tir.FloatImm):
                return ["imm", float(value.value)]
            if isinstance(value, tir.IntImm):
                return ["imm", bool(value.value) if value.dtype == "bool" else int(value.value)]
            return ["expr", self.prim(value)]
        if isinstance(e, StringImm):
            return ["str", e.value]
        if isinstance(e, DataTypeImm):
            return ["dtype", e.value]
        if isinstance(e, GlobalVar):
            func = self.ctx.mod[e] if e in self.ctx.mod else None
            if isinstance(func, PrimFunc):
                return ["func", self.ctx.kernel(e, func)]
            return ["func", e.name_hint]
        if isinstance(e, ExternFunc):
            return ["func", e.global_symbol]
        if isinstance(e, Tuple):
            return self.value(e)
        raise self.err(f"cannot use a {type(e).__name__} as an operand")

    def prim(self, e: Any) -> Any:
        """A VM expression (:mod:`tvm.runtime.int_expr`, variables are heap slots) for a
        PrimExpr over bound symbolic variables."""
        return to_int_expr(e, self.heap_key, lambda what: self.err(
            f"cannot evaluate the shape expression {e} in the VM: it {what}"))

    def heap_key(self, var: tir.Var) -> int:
        slot = self.slots.get(id(var))
        if slot is None:
            raise self.err(
                f"symbolic variable {var.name!r} is used before a match_shape defines it "
                "(run relax.transform.VMShapeLower; every symbolic variable must appear "
                "in a parameter's or match_cast's shape)"
            )
        return slot

    def slot(self, var: tir.Var) -> int:
        slot = self.slots.get(id(var))
        if slot is None:
            slot = len(self.heap_names)
            self.slots[id(var)] = slot
            self.heap_names.append(var.name)
        return slot

    # -- calls --------------------------------------------------------------------------------
    def emit_call(self, func: str, args: list, dst: Optional[int] = -1) -> list:
        if dst == -1:
            dst = self.reg()
        self.code.append({"op": "call", "dst": dst, "func": func, "args": args})
        return ["reg", dst] if dst is not None else ["imm", None]

    def call(self, call: Call) -> list:
        op = call.op
        if isinstance(op, ExternFunc):
            if op.global_symbol in _CHECKS:
                self.check(op.global_symbol[len("vm.builtin."):], call)
                return ["imm", None]
            return self.emit_call(op.global_symbol, [self.arg(a) for a in call.args])
        if isinstance(op, GlobalVar):
            func = self.ctx.mod[op] if op in self.ctx.mod else None
            args = [self.arg(a) for a in call.args]
            if isinstance(func, PrimFunc):
                return self.emit_call(self.ctx.kernel(op, func), args, None)
            if isinstance(func, Function):
                return self.emit_call(op.name_hint, args)
            raise self.err(f"call to @{op.name_hint}, which is not in the module")
        if isinstance(op, Op):
            return self.op_call(op.name, call)
        raise self.err(
            f"calling a {type(op).__name__} value is not supported (only global functions, "
            "PrimFuncs and packed functions)"
        )

    def op_call(self, name: str, call: Call) -> list:
        args = call.args
        if name == "relax.memory.alloc_storage":
            size = args[0]
            if not isinstance(size, ShapeExpr) or len(size.values) != 1:
                raise self.err("alloc_storage needs a 1-d shape expression as its size")
            dev = args[1].value if isinstance(args[1], PrimValue) else None
            if not isinstance(dev, tir.IntImm):
                raise self.err("alloc_storage needs a constant device index")
            dst = self.reg()
            self.code.append({"op": "alloc_storage", "dst": dst, "size": self.prim(size.values[0]),
                              "device": int(dev.value),
                              "scope": args[2].value if isinstance(args[2], StringImm) else "global"})
            return ["reg", dst]
        if name == "relax.memory.alloc_tensor":
            storage, offset, shape, dtype = args
            if not isinstance(shape, ShapeExpr) or not isinstance(dtype, DataTypeImm) or \
                    not isinstance(offset, PrimValue):
                raise self.err("alloc_tensor needs a shape expression, an offset and a dtype")
            dst = self.reg()
            self.code.append({"op": "alloc_tensor", "dst": dst, "storage": self.arg(storage),
                              "offset": self.prim(offset.value), "shape": self.arg(shape),
                              "dtype": dtype.value})
            return ["reg", dst]
        if name in ("relax.memory.kill_storage", "relax.memory.kill_tensor"):
            return ["imm", None]
        raise self.err(
            f"operator {name} was not lowered; build with relax.build (which runs LegalizeOps "
            "and the VM lowering passes) or run them first"
        )

    def check(self, kind: str, call: Call) -> None:
        args = call.args
        value = self.arg(args[0])
        ctx = args[-1].value

        def int_of(e: Any) -> int:
            return int(e.value.value)

        if kind == "check_tensor_info":
            self.code.append({"op": kind, "arg": value, "ndim": int_of(args[1]),
                              "dtype": args[2].value or None, "ctx": ctx})
        elif kind == "check_shape_info":
            self.code.append({"op": kind, "arg": value, "ndim": int_of(args[1]), "ctx": ctx})
        elif kind == "check_prim_value":
            self.code.append({"op": kind, "arg": value, "dtype": args[1].value or None,
                              "ctx": ctx})
        elif kind == "check_tuple_info":
            self.code.append({"op": kind, "arg": value, "size": int_of(args[1]), "ctx": ctx})
        else:
            dims = args[1].values if isinstance(args[1], ShapeExpr) else (args[1].value,)
            codes = args[2].value
            if len(codes) != len(dims):
                raise self.err(f"{kind}: {len(codes)} codes for {len(dims)} dimensions")
            pats = [self.dim_pattern(d, c) for d, c in zip(dims, codes)]
            if kind == "match_shape":
                self.code.append({"op": kind, "arg": value, "dims": pats, "ctx": ctx})
            else:
                self.code.append({"op": kind, "arg": value, "dim": pats[0], "ctx": ctx})

    def dim_pattern(self, d: Any, code: str) -> list:
        if code == "I":
            return ["imm", int(d.value)]
        if code == "S":
            if not isinstance(d, tir.Var):
                raise self.err(f"match_shape stores into {d}, which is not a variable")
            return ["store", self.slot(d)]
        if code == "A":
            return ["assert", self.prim(d)]
        return ["any"]

    # -- control flow -------------------------------------------------------------------------
    def branch(self, v: If) -> list:
        cond = self.arg(v.cond)
        dst = self.reg()
        at_if = len(self.code)
        self.code.append({"op": "if", "cond": cond, "offset": 0})
        then = self.seq(v.true_branch)
        self.code.append({"op": "move", "dst": dst, "src": then})
        at_goto = len(self.code)
        self.code.append({"op": "goto", "offset": 0})
        self.code[at_if]["offset"] = len(self.code) - at_if
        other = self.seq(v.false_branch)
        self.code.append({"op": "move", "dst": dst, "src": other})
        self.code[at_goto]["offset"] = len(self.code) - at_goto
        return ["reg", dst]


def codegen(mod: IRModule, target: str = "") -> CodegenResult:
    """Bytecode for every Relax function of a lowered ``mod`` (see the module docstring)."""
    from ..transform._lowering_utils import SOURCE_LAYERS  # not at import: passes load lazily

    ctx = _ModuleCodegen(mod)
    functions = []
    stats: dict[str, Any] = {}
    for gv, func in mod.items():
        if not isinstance(func, Function) or func.body is None:
            continue
        if func.attrs and (func.attrs.get("Codegen") or func.attrs.get("Composite")):
            continue
        functions.append(_FunctionCodegen(ctx, gv.name_hint, func).run())
        plan = (func.attrs or {}).get(PLAN_ATTR)
        if plan:
            stats.setdefault("memory_plan", {})[gv.name_hint] = dict(plan)
    if not functions:
        raise RelaxError("VM codegen: the module has no Relax function to compile")
    # entry functions first (those visible from outside), main before the others
    functions.sort(key=lambda f: (f["name"] != "main",))
    program = {
        "functions": functions,
        "target": target,
        "kernels": sorted(ctx.kernels),
        "stats": stats,
    }
    info = {name: {"source_layers": [str(n) for n in f.get_attr(SOURCE_LAYERS)]}
            for name, f in sorted(ctx.kernels.items()) if f.get_attr(SOURCE_LAYERS)}
    if info:
        program["kernel_info"] = info
    return CodegenResult(program, ctx.constants, IRModule(dict(ctx.kernels)))
