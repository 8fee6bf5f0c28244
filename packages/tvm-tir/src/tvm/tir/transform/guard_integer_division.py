"""GuardIntegerDivision: no integer division of a kernel traps (SIGFPE) on its data.

An integer ``/``, ``%``, ``floordiv`` or ``floormod`` whose divisor may be zero kills the
process on most CPUs, and a signed division of ``INT_MIN`` by ``-1`` does too.  This pass
gives every such division in a PrimFunc the semantics the Relax operators have (see
``relax.topi.elemwise._int_division``): a zero divisor fails the kernel with
``"<function>: integer division by zero"`` (a :func:`tvm.tir.op.checked` value, made an
assert by LowerChecks), and a signed divisor of ``-1`` gives the wrapping negation (the
remainder 0), so the hardware divide never sees ``0`` or ``INT_MIN / -1``.

Left as they are: divisors that are constants other than 0 and -1, divisors the analyzer
proves positive (loop variables are bound to their ranges), divisions already guarded that
way (a divisor ``select(b == 0 ..., c, b)`` with a constant ``c`` not 0 or -1: the Relax
kernels), and divisors made only of the function's shape variables (a buffer dimension of
zero leaves its loops empty; guarding them would put an assert into every dynamic-shape
index computation).  Runs after the blocks are lowered, before LowerChecks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..expr import (
    EQ, BufferLoad, Cast, FloorMod, IntImm, Mod, Or, PrimExpr, Range, Select, Var,
)
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..op import checked
from ..stmt import For
from ..stmt_functor import post_order_visit
from ._common import prim_func_pass

if TYPE_CHECKING:
    from tvm.arith import Analyzer

__all__ = ["GuardIntegerDivision", "guard_integer_division"]

def _is_int(dtype: Any) -> bool:
    text = str(dtype)
    return text.startswith(("int", "uint")) and "x" not in text


def _const(value: Any) -> Optional[int]:
    return value.value if isinstance(value, IntImm) else None


def _or_terms(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, Or):
        return _or_terms(cond.a) + _or_terms(cond.b)
    return [cond]


def _tests_equal(term: PrimExpr, x: PrimExpr, value: int, analyzer: Analyzer) -> bool:
    if not isinstance(term, EQ):
        return False
    for a, b in ((term.a, term.b), (term.b, term.a)):
        if _const(b) == value and analyzer.can_prove_equal(a, x):
            return True
    return False


def _already_guarded(b: PrimExpr, signed: bool, analyzer: Analyzer) -> bool:
    """``select(b == 0 [or b == -1], c, b)`` with a constant ``c`` not 0 or -1."""
    if not isinstance(b, Select) or _const(b.true_value) in (None, 0, -1):
        return False
    terms = _or_terms(b.condition)
    x = b.false_value
    zero = any(_tests_equal(t, x, 0, analyzer) for t in terms)
    minus_one = not signed or any(_tests_equal(t, x, -1, analyzer) for t in terms)
    return zero and minus_one


class _Guard(StmtExprMutator):
    def __init__(self, func: PrimFunc, name: str):
        from tvm.arith import Analyzer  # tvm.arith imports tvm.tir.transform

        super().__init__()
        self.name = name
        self.analyzer = Analyzer()
        self.shape_vars: set[Var] = set()
        for buf in func.buffer_map.values():
            for dim in list(buf.shape) + list(buf.strides or ()):
                post_order_visit(dim, self._collect_var)

    def _collect_var(self, node: Any) -> None:
        if isinstance(node, Var):
            self.shape_vars.add(node)

    def _only_shape_vars(self, expr: PrimExpr) -> bool:
        """Whether ``expr`` reads no memory and no variable but shape variables."""
        ok = True

        def f(node: Any) -> None:
            nonlocal ok
            if isinstance(node, BufferLoad) or (isinstance(node, Var)
                                                and node not in self.shape_vars):
                ok = False

        post_order_visit(expr, f)
        return ok

    def visit_for_(self, s: For) -> Any:
        # a loop of positive constant extent runs its body with the variable in range
        extent = _const(s.extent)
        if extent is not None and extent > 0:
            self.analyzer.bind(s.loop_var, Range.from_min_extent(s.min, s.extent),
                               allow_override=True)
        return self.generic_mutate(s)

    def _needs_guard(self, b: PrimExpr, signed: bool) -> bool:
        c = _const(b)
        if c is not None:
            return c == 0 or (signed and c == -1)
        if self.analyzer.can_prove_greater_equal(b, 1):
            return False
        if _already_guarded(b, signed, self.analyzer):
            return False
        return not self._only_shape_vars(b)

    def _mutate_division(self, e: Any) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        node = e if a is e.a and b is e.b else type(e)(a, b)
        if not _is_int(b.dtype):
            return node
        signed = str(b.dtype).startswith("int")
        if not self._needs_guard(b, signed):
            return node
        dtype = b.dtype
        zero, one = IntImm(dtype, 0), IntImm(dtype, 1)
        what = "modulo" if isinstance(e, (Mod, FloorMod)) else "division"
        if signed:
            by_minus_one = EQ(b, IntImm(dtype, -1))
            safe = Select(Or(EQ(b, zero), by_minus_one), one, b)
            if what == "modulo":
                at_minus_one: PrimExpr = IntImm(a.dtype, 0)
            else:  # -a modulo 2**bits, computed unsigned (signed negation of INT_MIN overflows)
                udt = "u" + str(a.dtype)
                at_minus_one = Cast(a.dtype, Cast(udt, IntImm(a.dtype, 0)) - Cast(udt, a))
            value: PrimExpr = Select(by_minus_one, at_minus_one, type(e)(a, safe))
        else:
            value = type(e)(a, Select(EQ(b, zero), one, b))
        return checked(value, b != zero, f"{self.name}: integer {what} by zero")

    visit_div_ = _mutate_division
    visit_floor_div_ = _mutate_division
    visit_mod_ = _mutate_division
    visit_floor_mod_ = _mutate_division


def guard_integer_division(func: PrimFunc) -> PrimFunc:
    """``func`` with every integer division that could trap guarded (see the module)."""
    name = func.attrs.get("global_symbol") or "kernel"
    guard = _Guard(func, str(name))
    body = guard.visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def GuardIntegerDivision():  # noqa: N802 - pass constructors are CamelCase
    return prim_func_pass(guard_integer_division, "tir.GuardIntegerDivision")
