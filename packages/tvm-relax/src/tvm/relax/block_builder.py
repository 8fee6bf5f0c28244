"""BlockBuilder: build Relax functions binding by binding, normalised as they are built.

::

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo([n, 784], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([784, 256], "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv = bb.emit(relax.op.matmul(x, w))         # DataflowVar, StructInfo inferred
            gv = bb.emit_output(relax.op.nn.relu(lv))   # Var visible after the block
        bb.emit_func_output(gv)
    mod = bb.get()

Normalisation (:meth:`BlockBuilder.normalize`) brings any expression into A-normal form:

* call arguments, tuple fields, ``TupleGetItem`` operands and ``If`` conditions become
  *leaves* (variables, constants, shapes, prim values, strings, dtypes, global variables,
  extern functions and tuples of leaves): nested non-leaf expressions are emitted as
  bindings of the current block first;
* function bodies and ``If`` branches become :class:`SeqExpr` whose body is a leaf;
  empty binding blocks are dropped;
* every expression gets its StructInfo: operators through ``FInferStructInfo``, calls of
  functions by matching their parameters, ``If`` by the join (lca) of its branches, and
  ``SeqExpr`` by its body's StructInfo with symbolic variables defined inside erased.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

from tvm.arith import Analyzer
from tvm.ffi import structural_equal, structural_hash
from tvm.ir.base import BaseFunc, GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.span import Span
from tvm.tir.expr import Var as TirVar
from tvm.tir.function import PrimFunc

from .analysis.struct_info_analysis import (
    definable_tir_vars_in_struct_info,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    params_var_map,
    struct_info_lca,
    tir_vars_in_struct_info,
)
from .errors import NormalizeError, StructInfoError
from .expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    as_expr,
    is_leaf,
)
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["BlockBuilder"]


class _BlockFrame:
    __slots__ = ("bindings", "is_dataflow")

    def __init__(self, is_dataflow: bool):
        self.bindings: list[Binding] = []
        self.is_dataflow = is_dataflow


class _FunctionFrame:
    __slots__ = ("name", "params", "attrs", "pure", "private", "blocks", "done", "block_depth")

    def __init__(self, name: str, params: Optional[list[Var]], attrs: dict, pure: bool,
                 private: bool, block_depth: int):
        self.name = name
        self.params = params
        self.attrs = attrs
        self.pure = pure
        self.private = private
        self.blocks: list[BindingBlock] = []
        self.done = False
        self.block_depth = block_depth


_CURRENT = threading.local()


class BlockBuilder:
    """Builds Relax functions into an IRModule (see the module docstring)."""

    def __init__(self, mod: Optional[IRModule] = None):
        self._mod = mod.copy() if mod is not None else IRModule()
        self._func_stack: list[_FunctionFrame] = []
        self._block_stack: list[_BlockFrame] = []
        # symbolic-variable scopes: ids of tir vars defined in each scope
        self._sym_scopes: list[dict[int, TirVar]] = []
        self._bindings: dict[int, tuple[Var, Expr]] = {}
        self._names: dict[str, int] = {}
        self._declared: dict[str, StructInfo] = {}
        self._func_cache: dict[int, list[GlobalVar]] = {}
        self._span: Optional[Span] = None
        self.analyzer = Analyzer()

    # -- current builder ----------------------------------------------------------------------
    @staticmethod
    def current() -> Optional[BlockBuilder]:
        """The builder whose ``function`` scope is innermost in this thread, if any."""
        stack = getattr(_CURRENT, "stack", None)
        return stack[-1] if stack else None

    def __enter__(self) -> BlockBuilder:
        _CURRENT.__dict__.setdefault("stack", []).append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _CURRENT.stack.pop()

    # -- module ---------------------------------------------------------------------------------
    def get(self) -> IRModule:
        """The module built so far (a snapshot)."""
        return self._mod.copy()

    def finalize(self) -> IRModule:
        """Same as :meth:`get` (name kept from TVM)."""
        return self.get()

    def add_func(self, func: BaseFunc, func_name: str) -> GlobalVar:
        """Add ``func`` under a unique name derived from ``func_name``; returns its GlobalVar.

        A PrimFunc structurally equal to one already added is not added twice.
        """
        if not isinstance(func, BaseFunc):
            raise TypeError(f"add_func: expected a function, got {type(func).__name__}")
        if isinstance(func, PrimFunc):
            key = structural_hash(func.without_attr("global_symbol"))
            for gv in self._func_cache.get(key, []):
                if gv in self._mod and structural_equal(
                    self._mod[gv].without_attr("global_symbol"), func.without_attr("global_symbol")
                ):
                    return self._mod.get_global_var(gv.name_hint)
        name = self._unique_global_name(func_name)
        gv = GlobalVar(name)
        self._mod = self._mod.with_function(gv, func)
        if isinstance(func, PrimFunc):
            self._func_cache.setdefault(key, []).append(gv)
        return gv

    def update_func(self, gv: GlobalVar | str, func: BaseFunc) -> None:
        """Replace the function named by ``gv``."""
        self._mod.update_func(gv, func)

    def lookup_function(self, gv: GlobalVar | str) -> Optional[BaseFunc]:
        """The module's function named by ``gv``, or None."""
        return self._mod[gv] if gv in self._mod else None

    def declare_func(self, name: str, struct_info: FuncStructInfo) -> GlobalVar:
        """Declare a function's signature before it exists (forward references, recursion)."""
        if not isinstance(struct_info, FuncStructInfo):
            raise TypeError(f"declare_func: expected a FuncStructInfo, got {struct_info!r}")
        self._declared[name] = struct_info
        return self._mod.get_global_var(name) if name in self._mod else GlobalVar(name)

    def _unique_global_name(self, hint: str) -> str:
        hint = hint or "func"
        if hint not in self._mod:
            return hint
        i = 1
        while f"{hint}{i}" in self._mod:
            i += 1
        return f"{hint}{i}"

    def _fresh_name(self, hint: str, default: str) -> str:
        hint = hint or default
        count = self._names.get(hint, 0)
        self._names[hint] = count + 1
        return hint if count == 0 else f"{hint}{count}"

    # -- scopes ---------------------------------------------------------------------------------
    def begin_scope(self, params: Optional[Sequence[Var]] = None) -> None:
        """Open a variable scope; symbolic variables of ``params`` are defined in it."""
        scope: dict[int, TirVar] = {}
        for p in params or ():
            for v in tir_vars_in_struct_info(p.struct_info):
                scope[id(v)] = v
        self._sym_scopes.append(scope)

    def end_scope(self) -> dict[int, TirVar]:
        """Close the innermost scope; returns the symbolic variables it defined."""
        if not self._sym_scopes:
            raise NormalizeError("end_scope without begin_scope")
        return self._sym_scopes.pop()

    def _sym_defined(self, var: TirVar) -> bool:
        return any(id(var) in scope for scope in self._sym_scopes)

    def begin_binding_block(self) -> None:
        self._block_stack.append(_BlockFrame(False))

    def begin_dataflow_block(self) -> None:
        self._block_stack.append(_BlockFrame(True))

    def end_block(self) -> BindingBlock:
        """Close the innermost block and return it."""
        if not self._block_stack:
            raise NormalizeError("end_block without an open block")
        frame = self._block_stack.pop()
        cls = DataflowBlock if frame.is_dataflow else BindingBlock
        return cls(frame.bindings)

    def current_block_is_dataflow(self) -> bool:
        return bool(self._block_stack) and self._block_stack[-1].is_dataflow

    def _current_block(self, who: str) -> _BlockFrame:
        if not self._block_stack:
            raise NormalizeError(
                f"{who} needs an open block: call it inside `with bb.function(...)` (or "
                "between begin_binding_block/end_block)"
            )
        return self._block_stack[-1]

    # -- functions and dataflow blocks ----------------------------------------------------------
    @contextmanager
    def function(
        self,
        name: str,
        params: Optional[Sequence[Var]] = None,
        attrs: Optional[dict[str, Any]] = None,
        pure: bool = True,
        private: bool = False,
    ) -> Iterator[None]:
        """Build function ``name``; finish it with :meth:`emit_func_output` inside the block."""
        if params is not None:
            params = _check_params(params, name)
        if self._func_stack:
            raise NormalizeError(
                f"bb.function({name!r}) inside bb.function({self._func_stack[-1].name!r}): "
                "nested function scopes are not supported; build it separately and add_func it"
            )
        frame = _FunctionFrame(name, params, dict(attrs or {}), pure, private, len(self._block_stack))
        self._func_stack.append(frame)
        self.begin_scope(params)
        self.begin_binding_block()
        self.__enter__()
        try:
            yield
        finally:
            self.__exit__()
            self._func_stack.pop()
            del self._block_stack[frame.block_depth:]
            self._sym_scopes.pop()
        if not frame.done:
            raise NormalizeError(
                f"function {name!r} was not finished: call bb.emit_func_output(...) inside "
                "`with bb.function(...)`"
            )

    @contextmanager
    def dataflow(self) -> Iterator[None]:
        """A dataflow block: ``emit`` gives DataflowVars, ``emit_output`` exports values."""
        frame = self._function_frame("dataflow()")
        if self.current_block_is_dataflow():
            raise NormalizeError("dataflow blocks cannot be nested")
        self._flush_block(frame)
        self.begin_dataflow_block()
        try:
            yield
        finally:
            if self._block_stack and self._block_stack[-1].is_dataflow:
                self._flush_block(frame)
                self.begin_binding_block()

    def _flush_block(self, frame: _FunctionFrame) -> None:
        block = self.end_block()
        if block.bindings:
            frame.blocks.append(block)

    def _function_frame(self, who: str) -> _FunctionFrame:
        if not self._func_stack:
            raise NormalizeError(f"{who} must be used inside `with bb.function(...)`")
        return self._func_stack[-1]

    def emit_func_output(
        self, output: Any, params: Optional[Sequence[Var]] = None
    ) -> GlobalVar:
        """Finish the current function with result ``output`` and add it to the module."""
        frame = self._function_frame("emit_func_output")
        if frame.done:
            raise NormalizeError(f"emit_func_output was already called for {frame.name!r}")
        if self.current_block_is_dataflow():
            raise NormalizeError(
                "emit_func_output must be called after the `with bb.dataflow()` block; export "
                "values from the dataflow block with bb.emit_output"
            )
        if params is not None:
            if frame.params is not None:
                raise NormalizeError(
                    f"function {frame.name!r}: params were given to bb.function already"
                )
            frame.params = _check_params(params, frame.name)
            for p in frame.params:
                for v in tir_vars_in_struct_info(p.struct_info):
                    self._sym_scopes[-1][id(v)] = v
        if frame.params is None:
            raise NormalizeError(
                f"function {frame.name!r} has no parameters: pass params to bb.function or to "
                "emit_func_output"
            )
        if isinstance(output, (list, tuple)):
            output = Tuple(output)
        body = self.normalize_argument(as_expr(output, "function output"))
        self._flush_block(frame)
        seq = SeqExpr(frame.blocks, body)
        ret = erase_to_well_defined(
            _sinfo(body), params_var_map(frame.params), _keep(frame.params)
        )
        object.__setattr__(seq, "struct_info_", ret)
        attrs = dict(frame.attrs)
        if not frame.private:
            attrs.setdefault("global_symbol", frame.name)
        func = Function(frame.params, seq, ret, frame.pure, attrs)
        frame.done = True
        self.begin_binding_block()  # keeps the block stack balanced for the function() exit
        if frame.name in self._mod:
            self._mod.update_func(frame.name, func)
            return self._mod.get_global_var(frame.name)
        return self.add_func(func, frame.name)

    # -- emitting -------------------------------------------------------------------------------
    def emit(self, expr: Any, name_hint: str = "") -> Var:
        """Normalise ``expr`` and bind it to a fresh variable (a DataflowVar in dataflow blocks)."""
        frame = self._current_block("emit")
        expr = self.normalize(as_expr(expr, "emit"))
        cls = DataflowVar if frame.is_dataflow else Var
        var = cls(self._fresh_name(name_hint, "lv"), _sinfo(expr))
        self._add_binding(frame, VarBinding(var, expr))
        return var

    def emit_output(self, output: Any, name_hint: str = "") -> Var:
        """Inside a dataflow block: bind ``output`` to a Var usable after the block."""
        frame = self._current_block("emit_output")
        if not frame.is_dataflow:
            raise NormalizeError("emit_output is only valid inside `with bb.dataflow()`")
        if isinstance(output, (list, tuple)):
            output = Tuple(output)
        expr = self.normalize(as_expr(output, "emit_output"))
        var = Var(self._fresh_name(name_hint, "gv"), _sinfo(expr))
        self._add_binding(frame, VarBinding(var, expr))
        return var

    def match_cast(self, value: Any, struct_info: StructInfo, name_hint: str = "") -> Var:
        """Bind ``value`` cast (checked at run time) to ``struct_info``; its new symbolic
        variables become defined."""
        frame = self._current_block("match_cast")
        if not isinstance(struct_info, StructInfo):
            raise TypeError(f"match_cast: expected a StructInfo, got {type(struct_info).__name__}")
        value = self.normalize_argument(as_expr(value, "match_cast"))
        cls = DataflowVar if frame.is_dataflow else Var
        var = cls(self._fresh_name(name_hint, "lv"), struct_info)
        self._add_binding(frame, MatchCast(var, value, struct_info))
        return var

    def emit_normalized(self, binding: Binding) -> None:
        """Append an already-normalised binding to the current block."""
        self._add_binding(self._current_block("emit_normalized"), binding)

    @contextmanager
    def spanned(self, span: Optional[Span]) -> Iterator[None]:
        """Inside, every binding added without a span gets ``span``, and so does its value
        when that is a call without one: how a frontend names the model layer of everything
        it emits for one node, and how a mutator keeps a rewritten binding's span on the
        bindings it adds in its place.  A binding of a call whose own span names a layer takes
        that one (a rule that rebuilds a call with its old span keeps the call's layer).
        ``None`` keeps the enclosing span."""
        prev = self._span
        if span is not None:
            self._span = span
        try:
            yield
        finally:
            self._span = prev

    def _add_binding(self, frame: _BlockFrame, binding: Binding) -> None:
        span = self._span
        own = getattr(binding.value, "span", None) if isinstance(binding.value, Call) else None
        if binding.span is None and getattr(own, "name", ""):
            binding = binding.with_fields(span=own)  # a call that names its layer keeps it
        elif span is not None and binding.span is None:
            value = binding.value
            if isinstance(value, Call) and value.span is None:
                value = value.with_fields(span=span)
            binding = binding.with_fields(value=value, span=span)
        frame.bindings.append(binding)
        self._bindings[id(binding.var)] = (binding.var, binding.value)
        if isinstance(binding, MatchCast) and self._sym_scopes:
            for v in definable_tir_vars_in_struct_info(binding.struct_info):
                if not self._sym_defined(v):
                    self._sym_scopes[-1][id(v)] = v

    def lookup_binding(self, var: Var) -> Optional[Expr]:
        """The value bound to ``var`` by this builder, or None."""
        entry = self._bindings.get(id(var))
        return entry[1] if entry is not None and entry[0] is var else None

    # -- emit_te --------------------------------------------------------------------------------
    def emit_te(self, te_func: Callable[..., Any], *args: Any, **kwargs: Any) -> Var:
        """Emit ``call_tir`` of the PrimFunc that ``te_func`` builds from placeholders.

        Tensor arguments (by StructInfo) become ``te.placeholder``s, scalar PrimValues their
        PrimExpr, shape values the list of their PrimExprs; ``te_func`` returns a te tensor
        (or a list).  Symbolic variables in the output shapes or the scalar and shape
        arguments that no input shape defines are passed as ``tir_vars``.  Keywords
        ``primfunc_name_hint``, ``primfunc_attrs`` and ``name_hint`` are consumed here.
        """
        from .te_bridge import build_te_call

        name_hint = kwargs.pop("name_hint", "")
        call = build_te_call(self, te_func, args, kwargs)
        return self.emit(call, name_hint)

    def call_te(self, te_func: Callable[..., Any], *args: Any, **kwargs: Any) -> Call:
        """Like :meth:`emit_te` but returns the ``call_tir`` Call without emitting it."""
        from .te_bridge import build_te_call

        kwargs.pop("name_hint", None)
        return build_te_call(self, te_func, args, kwargs)

    # -- normalisation --------------------------------------------------------------------------
    def normalize(self, expr: Any) -> Expr:
        """``expr`` with StructInfo filled in; non-leaf call arguments are emitted into the
        current block (when one is open)."""
        expr = as_expr(expr, "normalize")
        if isinstance(expr, (GlobalVar, Op)):
            return expr
        if isinstance(expr, Var):
            if expr.struct_info_ is None:
                raise NormalizeError(f"variable {expr.name_hint!r} has no StructInfo")
            return expr
        if isinstance(expr, Call):
            return self._normalize_call(expr)
        if isinstance(expr, Tuple):
            fields = [self.normalize_argument(f) for f in expr.fields]
            if all(a is b for a, b in zip(fields, expr.fields)) and expr.struct_info_ is not None:
                return expr
            return Tuple(fields, span=expr.span)
        if isinstance(expr, TupleGetItem):
            return self._normalize_tuple_get_item(expr)
        if isinstance(expr, If):
            return self._normalize_if(expr)
        if isinstance(expr, SeqExpr):
            return self._normalize_seq(expr)
        if isinstance(expr, Function):
            return self._normalize_function(expr)
        if getattr(expr, "struct_info_", None) is None:
            raise NormalizeError(f"cannot infer the StructInfo of {expr._type_key}")
        return expr

    def normalize_argument(self, expr: Any) -> Expr:
        """Normalise ``expr`` and, if it is not a leaf, bind it in the current block."""
        expr = self.normalize(expr)
        if is_leaf(expr) or not self._block_stack:
            return expr
        frame = self._block_stack[-1]
        cls = DataflowVar if frame.is_dataflow else Var
        var = cls(self._fresh_name("", "lv"), _sinfo(expr))
        self._add_binding(frame, VarBinding(var, expr))
        return var

    def _normalize_call(self, call: Call) -> Call:
        op = call.op
        if isinstance(op, Expr) and not isinstance(op, (Var, ExternFunc)):
            op = self.normalize_argument(op)
        args = [self.normalize_argument(a) for a in call.args]
        changed = op is not call.op or any(a is not b for a, b in zip(args, call.args))
        if not changed and call.struct_info_ is not None:
            return call
        new = call if not changed else Call(op, args, call.attrs, call.sinfo_args, span=call.span)
        sinfo = self.infer_call_struct_info(new)
        if new is call:
            new = Call(op, args, call.attrs, call.sinfo_args, span=call.span)
        object.__setattr__(new, "struct_info_", sinfo)
        return new

    def infer_call_struct_info(self, call: Call) -> StructInfo:
        """The StructInfo of a call whose arguments are normalised."""
        op = call.op
        if isinstance(op, Op):
            from .op.base import infer_struct_info_of_call

            sinfo = infer_struct_info_of_call(call, self)
            if not isinstance(sinfo, StructInfo):
                raise StructInfoError(
                    f"FInferStructInfo returned {type(sinfo).__name__}, not a StructInfo",
                    op=op.name,
                )
            return sinfo
        if isinstance(op, GlobalVar):
            fsinfo = self._global_struct_info(op, call)
            callee = f"@{op.name_hint}"
        else:
            fsinfo = _sinfo(op)
            callee = getattr(op, "name_hint", None) or getattr(op, "global_symbol", None) or "function"
        if isinstance(fsinfo, ObjectStructInfo) or fsinfo is None:
            return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()
        if not isinstance(fsinfo, FuncStructInfo):
            raise StructInfoError(f"cannot call {callee}: it is not a function", span=call.span)
        if fsinfo.params is None:
            if call.sinfo_args:
                return call.sinfo_args[0] if len(call.sinfo_args) == 1 else TupleStructInfo(
                    call.sinfo_args
                )
            if fsinfo.derive_func:
                from tvm.ffi import get_global_func

                return get_global_func(fsinfo.derive_func)(call, self)
            return fsinfo.ret
        return derive_call_ret_struct_info(fsinfo, call.args, self.analyzer, callee, call.span)

    def _global_struct_info(self, gv: GlobalVar, call: Call) -> Optional[StructInfo]:
        declared = self._declared.get(gv.name_hint)
        if declared is not None:
            return declared
        func = self.lookup_function(gv)
        if func is None:
            if call.sinfo_args:
                return None
            raise StructInfoError(
                f"call to unknown global function @{gv.name_hint}: add it to the module "
                "(bb.add_func) or declare its signature (bb.declare_func) first",
                span=call.span,
            )
        return getattr(func, "struct_info_", None) if isinstance(func, Function) else None

    def _normalize_tuple_get_item(self, expr: TupleGetItem) -> Expr:
        value = self.normalize_argument(expr.tuple_value)
        sinfo = _sinfo(value)
        if not isinstance(sinfo, (TupleStructInfo, ObjectStructInfo)):
            raise StructInfoError(
                f"TupleGetItem: the operand is not a tuple (its StructInfo is "
                f"{type(sinfo).__name__})",
                span=expr.span,
            )
        if value is expr.tuple_value and expr.struct_info_ is not None:
            return expr
        new = TupleGetItem(value, expr.index, span=expr.span)
        if new.struct_info_ is None:
            object.__setattr__(new, "struct_info_", ObjectStructInfo())
        return new

    def _normalize_if(self, expr: If) -> If:
        cond = self.normalize_argument(expr.cond)
        csinfo = _sinfo(cond)
        if not isinstance(csinfo, (PrimStructInfo, TensorStructInfo, ObjectStructInfo)) or (
            isinstance(csinfo, TensorStructInfo) and csinfo.ndim not in (0, -1)
        ):
            raise StructInfoError(
                "If: the condition must be a scalar (bool PrimValue or 0-d tensor)", span=expr.span
            )
        then = self.normalize_in_new_scope(expr.true_branch)
        other = self.normalize_in_new_scope(expr.false_branch)
        if cond is expr.cond and then is expr.true_branch and other is expr.false_branch and (
            expr.struct_info_ is not None
        ):
            return expr
        new = If(cond, then, other, span=expr.span)
        object.__setattr__(new, "struct_info_", struct_info_lca(_sinfo(then), _sinfo(other),
                                                                self.analyzer))
        return new

    def normalize_in_new_scope(self, expr: Any, params: Optional[Sequence[Var]] = None) -> SeqExpr:
        """``expr`` normalised as a SeqExpr in its own scope (bodies of functions and branches)."""
        expr = as_expr(expr, "body")
        self.begin_scope(params)
        try:
            if isinstance(expr, SeqExpr):
                return self._normalize_seq(expr, scoped=False)
            self.begin_binding_block()
            body = self.normalize_argument(expr)
            block = self.end_block()
            defined = self._sym_scopes[-1]
        finally:
            self.end_scope()
        seq = SeqExpr([block] if block.bindings else [], body)
        object.__setattr__(seq, "struct_info_", self._erase_inner(_sinfo(body), defined, [block]))
        return seq

    def _normalize_seq(self, seq: SeqExpr, scoped: bool = True) -> SeqExpr:
        if scoped:
            self.begin_scope()
        try:
            blocks: list[BindingBlock] = []
            changed = False
            for block in seq.blocks:
                new_block = self._normalize_block(block)
                changed = changed or new_block is not block
                if new_block.bindings:
                    blocks.append(new_block)
                else:
                    changed = True
            self.begin_binding_block()
            body = self.normalize_argument(seq.body)
            tail = self.end_block()
            if tail.bindings:
                blocks.append(tail)
                changed = True
            changed = changed or body is not seq.body
            defined = self._sym_scopes[-1]
        finally:
            if scoped:
                self.end_scope()
        sinfo = self._erase_inner(_sinfo(body), defined, blocks)
        if not changed:
            if seq.struct_info_ is None:
                object.__setattr__(seq, "struct_info_", sinfo)
            return seq
        new = SeqExpr(blocks, body, span=seq.span)
        object.__setattr__(new, "struct_info_", sinfo)
        return new

    def _normalize_block(self, block: BindingBlock) -> BindingBlock:
        frame = _BlockFrame(isinstance(block, DataflowBlock))
        self._block_stack.append(frame)
        try:
            changed = False
            for binding in block.bindings:
                if isinstance(binding, MatchCast):
                    value = self.normalize_argument(binding.value)
                    new_b = binding if value is binding.value else MatchCast(
                        binding.var, value, binding.struct_info, span=binding.span
                    )
                else:
                    value = self.normalize(binding.value)
                    new_b = binding if value is binding.value else VarBinding(
                        binding.var, value, span=binding.span
                    )
                changed = changed or new_b is not binding
                self._add_binding(frame, new_b)
            changed = changed or len(frame.bindings) != len(block.bindings)
        finally:
            self._block_stack.pop()
        if not changed:
            return block
        return type(block)(frame.bindings, span=block.span)

    def _erase_inner(
        self, sinfo: StructInfo, defined: dict[int, TirVar], blocks: Sequence[BindingBlock]
    ) -> StructInfo:
        inner_vars = {id(b.var) for blk in blocks for b in blk.bindings}
        return erase_to_well_defined(
            sinfo,
            lambda v: None if id(v) in defined else v,
            _KeepVars(lambda var: id(var) not in inner_vars),
        )

    def _normalize_function(self, func: Function) -> Function:
        body = self.normalize_in_new_scope(func.body, func.params)
        ret = func.ret_struct_info
        if ret is None:
            ret = erase_to_well_defined(_sinfo(body), params_var_map(func.params),
                                        _keep(func.params))
        if body is func.body and func.struct_info_ is not None:
            return func
        return Function(func.params, body, ret, func.is_pure, func.attrs, span=func.span)


class _KeepVars:
    """A var_map for erasure: keeps the Relax shape variables ``keep`` accepts."""

    def __init__(self, keep: Callable[[Any], bool]):
        self.keep = keep

    def get(self, var: Any, default: Any = None) -> Any:
        return var if self.keep(var) else default

    def __bool__(self) -> bool:
        return True


def _keep(params: Sequence[Var]) -> _KeepVars:
    ids = {id(p) for p in params}
    return _KeepVars(lambda var: id(var) in ids)


def _sinfo(expr: Any) -> StructInfo:
    sinfo = getattr(expr, "struct_info_", None)
    if sinfo is None:
        if isinstance(expr, (GlobalVar, Op)):
            return ObjectStructInfo()
        raise NormalizeError(f"{getattr(expr, '_type_key', type(expr).__name__)} has no StructInfo")
    return sinfo


def _check_params(params: Sequence[Any], name: str) -> list[Var]:
    out = []
    for i, p in enumerate(params):
        if not isinstance(p, Var) or isinstance(p, DataflowVar):
            raise TypeError(
                f"function {name!r}: parameter {i} must be a relax.Var, got {type(p).__name__}"
            )
        out.append(p)
    return out

