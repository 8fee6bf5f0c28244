"""Import-time folding through the Relax operators' own numpy semantics.

A node whose inputs are all known at import time (constants, and :class:`SymValue` shape
values known up to symbolic dimensions) is converted as usual, but with the importer's
builder in *folding* mode: every call the converter emits, and the expression it returns,
is evaluated by its op's declared evaluator (``FNumpyEval``, the one FoldConstant uses)
instead of being bound.  Symbolic values travel as placeholder variables whose values are
numpy object arrays of ints and ``PrimExpr``; integer evaluators compute on them directly.
That is how ``Shape -> Gather -> Concat -> Reshape`` chains become static (or symbolic)
shapes while importing, with no ONNX-private folding code.  A call that cannot be evaluated
(no evaluator, a TIR kernel, a result too large) aborts the fold, and the node is converted
normally.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from tvm.ir.op import Op
from tvm.tir.expr import IntImm, PrimExpr

from ...block_builder import BlockBuilder
from ...expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from ...struct_info import TensorStructInfo, TupleStructInfo
from ...transform.numpy_eval import NumpyEvalError, constant_value, evaluate_with_numpy

__all__ = ["NotFoldable", "FoldScope", "ImportBuilder"]


class NotFoldable(Exception):
    """A call met while folding cannot be evaluated at import time."""


def _is_int_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


class FoldScope:
    """The known values of one node being folded: placeholders for symbolic inputs."""

    def __init__(self, bb: BlockBuilder, max_elements: int):
        self.bb = bb
        self.max_elements = max_elements
        self.values: dict[int, tuple[Var, np.ndarray]] = {}

    def placeholder(self, values: np.ndarray, dtype: str) -> Var:
        var = Var("folded", TensorStructInfo(list(values.shape), dtype))
        self.values[id(var)] = (var, values)
        return var

    def symbolic_value(self, expr: Any) -> Optional[np.ndarray]:
        """The object array of a placeholder (None for anything else)."""
        entry = self.values.get(id(expr)) if isinstance(expr, Var) else None
        return entry[1] if entry is not None and entry[0] is expr else None

    # -- evaluation ----------------------------------------------------------------------------
    def value_of(self, expr: Any) -> Any:
        """The numpy value of a folded argument (raises NotFoldable if unknown)."""
        sym = self.symbolic_value(expr)
        if sym is not None:
            return sym
        if isinstance(expr, Tuple):
            return tuple(self.value_of(f) for f in expr.fields)
        try:
            return constant_value(expr)
        except NumpyEvalError as err:
            raise NotFoldable(str(err)) from None

    def fold(self, expr: Any) -> Expr:
        """``expr`` with every call evaluated: a Constant, a placeholder or a Tuple of them."""
        if isinstance(expr, Var):
            if self.symbolic_value(expr) is None:
                value = self.bb.lookup_binding(expr)
                if isinstance(value, Constant):
                    return value
                raise NotFoldable(f"{expr.name_hint} is computed at run time")
            return expr
        if isinstance(expr, Tuple):
            return Tuple([self.fold(f) for f in expr.fields])
        if isinstance(expr, TupleGetItem):
            tup = self.fold(expr.tuple_value)
            if isinstance(tup, Tuple):
                return tup.fields[expr.index]
            raise NotFoldable("tuple lookup of a runtime value")
        if isinstance(expr, Call):
            return self._evaluate(expr)
        return expr  # constants, shapes, scalars, dtype and string immediates

    def _evaluate(self, call: Call) -> Expr:
        if not isinstance(call.op, Op) or call.op.get_attr("FPurity") is False:
            raise NotFoldable("not an operator call")
        args = [self.fold(a) for a in call.args]
        call = self.bb.normalize(Call(call.op, args, call.attrs, call.sinfo_args, span=call.span))
        values = [self.value_of(a) for a in args]
        try:
            value = evaluate_with_numpy(call, values, symbolic=True)
        except NumpyEvalError as err:
            raise NotFoldable(str(err)) from None
        except (TypeError, ValueError, AttributeError, IndexError) as err:
            # an evaluator that cannot compute on symbolic values
            raise NotFoldable(f"{call.op.name}: {type(err).__name__}: {err}") from None
        if value is None:
            raise NotFoldable(f"{call.op.name} declares no numpy semantics")
        return self._as_expr(value, call.struct_info)

    def _as_expr(self, value: Any, sinfo: Any) -> Expr:
        if isinstance(sinfo, TupleStructInfo):
            return Tuple([self._as_expr(v, s) for v, s in zip(value, sinfo.fields)])
        array = np.asarray(value)
        if array.size > self.max_elements:
            raise NotFoldable("the result is too large to fold")
        if array.dtype != object:
            return Constant(array)
        entries = [int(v.value) if isinstance(v, IntImm) else v for v in array.flat]
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in entries):
            from tvm.ffi.dtype import to_numpy_dtype

            return Constant(np.array(entries, to_numpy_dtype(sinfo.dtype)).reshape(array.shape))
        if not _is_int_dtype(sinfo.dtype) or not all(
            isinstance(v, (int, np.integer)) or (isinstance(v, PrimExpr) and _is_int_dtype(v.dtype))
            for v in entries
        ):
            raise NotFoldable("a symbolic value that is not an integer")
        out = np.empty(array.shape, dtype=object)
        for idx, v in zip(np.ndindex(*array.shape), entries):
            out[idx] = int(v) if isinstance(v, np.integer) else v
        return self.placeholder(out, sinfo.dtype)


class ImportBuilder(BlockBuilder):
    """The importer's BlockBuilder: with :attr:`folding` set, emitted calls are evaluated by
    their ops' numpy semantics instead of bound (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.folding: Optional[FoldScope] = None

    def emit(self, expr: Any, name_hint: str = "") -> Any:
        if self.folding is None:
            return super().emit(expr, name_hint)
        return self.folding.fold(expr)

    def call_te(self, te_func: Any, *args: Any, **kwargs: Any) -> Call:
        if self.folding is not None:
            raise NotFoldable("a TIR kernel is not evaluated at import time")
        return super().call_te(te_func, *args, **kwargs)

    def add_func(self, func: Any, func_name: str) -> Any:
        if self.folding is not None:
            raise NotFoldable("a function is not evaluated at import time")
        return super().add_func(func, func_name)

    def match_cast(self, value: Any, struct_info: Any, name_hint: str = "") -> Var:
        if self.folding is not None:
            raise NotFoldable("match_cast is not evaluated at import time")
        return super().match_cast(value, struct_info, name_hint)

    def emit_normalized(self, binding: Any) -> None:
        if self.folding is not None:
            raise NotFoldable("a pre-built binding is not evaluated at import time")
        super().emit_normalized(binding)
