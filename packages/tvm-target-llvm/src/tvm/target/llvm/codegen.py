"""Lowered TIR -> LLVM IR (an ``llvmlite.ir.Module``).

:class:`CodeGenLLVM` turns PrimFuncs that went through
:func:`tvm.tir.transform.make_packed_api` into functions of the packed C calling convention
of ``docs/abi.md`` and adds the module-level pieces every kernel module carries: the
runtime slot globals ``__TVMAPISetLastError`` and ``__TVMBackendParallelLaunch`` (function
pointers the runtime fills after loading) and the ``__tvm_module_meta`` JSON string.

The work is split by concern: expressions (:mod:`.codegen_expr`), statements
(:mod:`.codegen_stmt`), intrinsic calls (:mod:`.intrinsics`), the packed-API intrinsics and
error reporting (:mod:`.packed`) and outlined functions — compute scopes and parallel loops
(:mod:`.outline`).  Each concern is a mixin of the one class below.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from llvmlite import ir
from tvm import tir
from tvm.tir.codegen.c_types import _LIBC_NAMES
from tvm.tir.functor import snake_name

from .codegen_expr import ExprCodegen
from .codegen_stmt import StmtCodegen
from .dtypes import I8, I32, PTR, reg_type
from .intrinsics import IntrinsicCodegen
from .outline import OutlineCodegen
from .packed import PackedCodegen

__all__ = ["CodeGenLLVM", "META_SYMBOL"]

META_SYMBOL = "__tvm_module_meta"


class CodeGenLLVM(ExprCodegen, StmtCodegen, IntrinsicCodegen, PackedCodegen, OutlineCodegen):
    """Generates one LLVM module from lowered, packed PrimFuncs.

    ``num_parallel_tasks`` is passed to ``__TVMBackendParallelLaunch`` (0: the runtime's
    thread count).  ``protected_slots`` gives the runtime slot globals protected visibility
    so that references bind inside the module (ELF only).  ``threading`` is ``"pool"``
    (parallel loops through the runtime slot) or ``"omp"`` (through libgomp, see
    :mod:`.outline`).  ``define_slots`` false makes the slot globals declarations: the
    module is one part of several, whose header part (:meth:`header`) defines them.
    """

    _tables: dict[tuple[type, str], dict[type, Any]] = {}

    def __init__(self, module_name: str = "tvm_module", triple: str = "",
                 data_layout: str = "", num_parallel_tasks: int = 0,
                 protected_slots: bool = True, threading: str = "pool",
                 define_slots: bool = True) -> None:
        if threading not in ("omp", "pool"):
            raise ValueError(f"llvm codegen: threading must be 'omp' or 'pool', got {threading!r}")
        self.module = ir.Module(name=module_name)
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self.num_parallel_tasks = int(num_parallel_tasks)
        self.protected_slots = protected_slots
        self.define_slots = define_slots
        self.threading = threading
        self._strings: dict[str, ir.GlobalVariable] = {}
        self._next_suffix: dict[str, int] = {}  # unique_name: the next suffix to try
        self._meta_functions: list[dict[str, Any]] = []
        self.var_align: dict[tir.Var, int] = {}
        self.var_multiple: dict[tir.Var, int] = {}
        # per-function state (saved and restored around outlined functions)
        self.builder: ir.IRBuilder = None  # type: ignore[assignment]
        self.function: ir.Function = None  # type: ignore[assignment]
        self.entry_block: ir.Block = None  # type: ignore[assignment]
        self.var_map: dict[tir.Var, ir.Value] = {}
        self.func_name = ""
        self.noalias = False
        self.in_parallel = False
        # inside an omp parallel body: the launch's shared record that task errors go to
        self.task_error: ir.Value | None = None
        # local value numbering (ExprCodegen.numbered): the block its table is valid in
        self._vn_block: ir.Block | None = None
        self._vn: dict = {}
        # the function whose entry block holds the message buffer, and the buffer
        self._msg_buffer: tuple[Any, ir.Value] | None = None
        self._init_slots()

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self, node: Any, prefix: str) -> Any:
        cls = type(node)
        table = CodeGenLLVM._tables.setdefault((type(self), prefix), {})
        handler = table.get(cls)
        if handler is None:
            for base in cls.__mro__:
                handler = getattr(type(self), f"{prefix}{snake_name(base)}", None)
                if handler is not None:
                    break
            if handler is None:
                what = "expression" if prefix == "_e_" else "statement"
                raise NotImplementedError(
                    f"llvm codegen: {what} {cls.__name__} is not supported in "
                    f"{self.func_name or 'this module'}"
                    + ("; lower blocks to loops first (tir lowering passes)"
                       if cls.__name__ in ("Block", "BlockRealize", "Reduce") else "")
                )
            table[cls] = handler
        return handler(self, node)

    def expr(self, e: tir.PrimExpr) -> ir.Value:
        """The LLVM value of ``e`` (emitted at the builder's position)."""
        return self._dispatch(e, "_e_")

    def stmt(self, s: tir.Stmt) -> None:
        """Emit statement ``s`` at the builder's position."""
        self._dispatch(s, "_s_")

    # ------------------------------------------------------------------ function state
    @contextlib.contextmanager
    def new_function(self, fn: ir.Function, name: str) -> Iterator[None]:
        """Make ``fn`` the function being emitted (with a fresh entry block) for the block."""
        saved = (self.builder, self.function, self.entry_block, self.var_map, self.func_name,
                 self.in_parallel, self.task_error)
        self.function = fn
        # "entry" holds only the stack slots (see alloca); code starts in "start".
        self.entry_block = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self.builder = ir.IRBuilder(start)
        self.var_map = {}
        self.func_name = name
        self.task_error = None
        try:
            yield
            ir.IRBuilder(self.entry_block).branch(start)
        finally:
            (self.builder, self.function, self.entry_block, self.var_map, self.func_name,
             self.in_parallel, self.task_error) = saved

    @contextlib.contextmanager
    def bind_var(self, var: tir.Var, value: ir.Value) -> Iterator[None]:
        """Bind ``var`` to ``value`` for the extent of the block (restoring any outer one)."""
        missing = object()
        old = self.var_map.get(var, missing)
        self.var_map[var] = value
        try:
            yield
        finally:
            if old is missing:
                self.var_map.pop(var, None)
            else:
                self.var_map[var] = old

    def alloca(self, typ: ir.Type, name: str = "", align: int = 0) -> ir.Value:
        """A stack slot in the entry block (so loops do not grow the stack)."""
        slot = ir.IRBuilder(self.entry_block).alloca(typ, name=name)
        slot.type = PTR  # an opaque pointer, like every other pointer we handle
        if align:
            slot.align = align
        return slot

    def new_block(self, name: str) -> ir.Block:
        return self.function.append_basic_block(name)

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type],
                var_arg: bool = False) -> ir.Function:
        """Declare (once) the external function ``name``."""
        existing = self.module.globals.get(name)
        fnty = ir.FunctionType(ret, args, var_arg=var_arg)
        if existing is not None:
            if not isinstance(existing, ir.Function) or existing.function_type != fnty:
                raise TypeError(
                    f"llvm codegen: {name} is used with type {fnty} but was declared as "
                    f"{getattr(existing, 'function_type', existing.type)}"
                )
            return existing
        return ir.Function(self.module, fnty, name=name)

    def unique_name(self, base: str) -> str:
        """``base``, or ``base.N`` with the first free N (remembered per base, so that naming
        thousands of strings stays linear)."""
        if base not in self.module.globals:
            return base
        i = self._next_suffix.get(base, 1)
        while f"{base}.{i}" in self.module.globals:
            i += 1
        self._next_suffix[base] = i + 1
        return f"{base}.{i}"

    def global_string(self, text: str) -> ir.GlobalVariable:
        """A private NUL-terminated constant string."""
        g = self._strings.get(text)
        if g is None:
            data = bytearray(text.encode("utf-8")) + b"\0"
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.module, ty, self.unique_name(".str"))
            g.global_constant = True
            g.linkage = "private"
            g.unnamed_addr = True
            g.initializer = ir.Constant(ty, data)
            self._strings[text] = g
        return g

    # ------------------------------------------------------------------ functions
    def add_function(self, func: tir.PrimFunc, name: str | None = None) -> ir.Function:
        """Emit a packed PrimFunc (output of MakePackedAPI) as an exported function."""
        from tvm.tir.transform.make_packed_api import packed_params

        symbol = func.attrs.get("global_symbol") or name
        if not symbol:
            raise ValueError("llvm codegen: the PrimFunc has neither global_symbol nor a name")
        public = name or symbol
        if symbol in _LIBC_NAMES:
            # A kernel called ``exp`` or ``asin`` would capture libm's symbol (float64 math
            # calls it): export it under another symbol; the module metadata maps the public
            # name to it (docs/abi.md), as the C target does.
            symbol = f"__tvm_fn_{symbol}"
        if func.buffer_map:
            raise ValueError(
                f"llvm codegen: {symbol} still has a buffer_map; run "
                "tvm.tir.transform.MakePackedAPI() (or tir.build) before code generation"
            )
        arg_types = [reg_type(p.dtype) for p in func.params]
        fn = ir.Function(self.module, ir.FunctionType(I32, arg_types), name=symbol)
        fn.attributes.add("nounwind")
        self.noalias = bool(func.attrs.get("tir.noalias", False))
        with self.new_function(fn, symbol):
            for p, arg in zip(func.params, fn.args):
                arg.name = p.name
                self.var_map[p] = arg
            self.stmt(func.body)
            if not self.builder.block.is_terminated:
                self.builder.ret(ir.Constant(I32, 0))
        if func.attrs.get("calling_conv") == "packed":
            self._meta_functions.append({"name": public, "symbol": symbol,
                                         "params": packed_params(func)})
        return fn

    @property
    def meta_functions(self) -> list[dict[str, Any]]:
        """The module metadata's entries of the packed functions added so far."""
        return list(self._meta_functions)

    def finish(self, target: str = "llvm", requirements: dict[str, Any] | None = None,
               functions: list[dict[str, Any]] | None = None) -> ir.Module:
        """Add ``__tvm_module_meta`` (with ``requirements``: triple, cpu, features; the
        entries of ``functions``, by default those added here) and return the module."""
        meta = {"version": 1, "target": target, **(requirements or {}),
                "functions": self._meta_functions if functions is None else functions}
        data = bytearray(json.dumps(meta).encode("utf-8")) + b"\0"
        ty = ir.ArrayType(I8, len(data))
        g = ir.GlobalVariable(self.module, ty, META_SYMBOL)
        g.global_constant = True
        g.initializer = ir.Constant(ty, data)
        return self.module
