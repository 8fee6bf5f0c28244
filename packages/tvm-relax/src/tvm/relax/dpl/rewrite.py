"""The shared driver applying pattern -> replacement tables to Relax functions.

A rule pairs a :class:`~tvm.relax.dpl.Pattern` with a function building the replacement::

    x, s1, s2 = wildcard(), wildcard(), wildcard()
    RULES = [
        RewriteRule(is_op("relax.reshape")(is_op("relax.reshape")(x, s1), s2),
                    lambda call, m: relax.op.reshape(m[x], m[s2]), name="reshape-chain"),
    ]
    mod = rewrite_pass(RULES, "MyPass")(mod)     # or rewrite_bindings(func, RULES)

The driver (:class:`PatternRewriter`) walks every binding in order.  For each bound value
it tries the rules in table order; the first whose pattern matches and whose function
returns an expression (None means "does not apply") wins, and the rules are tried again on
the result until none applies.  Matching sees through variables bound earlier in the
function, *as rewritten*, so chains collapse in one walk.  A replacement is normalised
(nested calls become bindings placed before the rewritten one) and accepted only if its
StructInfo fits the original's (``is_base_of``): a rule can never change a value's shape or
dtype.  A rewritten value that is just another variable replaces the bound dataflow
variable everywhere.  Bindings left unused are removed afterwards.

A rule function is ``fn(value, m) -> Optional[Expr]``: ``value`` is the matched bound value,
``m`` the :class:`~tvm.relax.dpl.Match` (``m[p]``, ``m.value(p)``), and ``m.ctx`` the
rewriter, for ``m.ctx.analyzer``, ``m.ctx.num_uses(var)`` and ``m.ctx.lookup(var)``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Optional, Sequence

from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass

from ..analysis.struct_info_analysis import is_base_of
from ..expr import Call, DataflowVar, Expr, Function, Var, VarBinding
from ..expr_functor import ExprMutator
from .pattern import Match, Pattern

__all__ = ["RewriteRule", "PatternRewriter", "rewrite_bindings", "rewrite_pass"]

RewriteFn = Callable[[Expr, Match], Optional[Expr]]


class RewriteRule:
    """``pattern`` -> ``rewrite(value, match)``; ``name`` appears in statistics and errors."""

    def __init__(self, pattern: Pattern, rewrite: RewriteFn, name: Optional[str] = None):
        if not isinstance(pattern, Pattern):
            raise TypeError(f"RewriteRule: pattern must be a Pattern, got {type(pattern).__name__}")
        if not callable(rewrite):
            raise TypeError(f"RewriteRule: rewrite must be callable, got {rewrite!r}")
        self.pattern = pattern
        self.rewrite = rewrite
        self.name = name or getattr(rewrite, "__name__", "rule")

    def __repr__(self) -> str:
        return f"RewriteRule({self.name}: {self.pattern!r})"


class PatternRewriter(ExprMutator):
    """Applies a rule table to every binding of the functions it visits (module docstring)."""

    def __init__(self, rules: Sequence[RewriteRule], mod: Optional[IRModule] = None,
                 max_steps: int = 32):
        super().__init__(mod)
        self.rules = list(rules)
        for i, rule in enumerate(self.rules):
            if not isinstance(rule, RewriteRule):
                raise TypeError(f"rules[{i}] must be a RewriteRule, got {type(rule).__name__}")
        self.max_steps = max_steps
        self.fired: Counter[str] = Counter()
        self._values: dict[int, tuple[Var, Expr]] = {}
        self._uses: dict[int, int] = {}
        self._origin: dict[int, Var] = {}

    # -- context offered to rule functions ------------------------------------------------------
    @property
    def analyzer(self) -> Any:
        return self.builder_.analyzer

    @property
    def builder(self) -> Any:
        return self.builder_

    def lookup(self, var: Var) -> Optional[Expr]:
        """The (rewritten) value bound to ``var`` by a VarBinding seen so far, or None."""
        entry = self._values.get(id(var))
        return entry[1] if entry is not None and entry[0] is var else None

    def num_uses(self, var: Var) -> int:
        """Uses of ``var`` in the function before rewriting (a large number if unknown)."""
        origin = self._origin.get(id(var), var)
        return self._uses.get(id(origin), 1 << 30)

    # -- driving -------------------------------------------------------------------------------
    def rewrite_function(self, func: Function) -> Function:
        from ..transform._graph_utils import count_uses
        from ..transform.dead_code_elimination import remove_unused_bindings

        self._uses = count_uses(func)
        before = sum(self.fired.values())
        new = self.visit_expr(func)
        if sum(self.fired.values()) == before:
            return func
        return remove_unused_bindings(new, self.builder_.get())

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self._visit_bound_value(binding)
        with self.builder_.spanned(binding.span):  # what a rule adds names the same layer
            rewritten = self._keep_span(self._rewrite(value), binding)
        var = binding.var
        if rewritten is not value and isinstance(rewritten, Var) and isinstance(var, DataflowVar):
            self.var_remap[var] = rewritten
            return
        value = rewritten
        new_var = self.visit_var_def(var)
        if new_var is var and value is binding.value:
            self.builder_.emit_normalized(binding)
            self._record(var, value)
            return
        sinfo = getattr(value, "struct_info_", None)
        if sinfo is not None and sinfo is not new_var.struct_info_ and not _same_sinfo(
            new_var.struct_info, sinfo
        ):
            new_var = type(var)(var.name_hint, sinfo, span=var.span)
        if new_var is not var:
            self.var_remap[var] = new_var
            self._origin[id(new_var)] = var
        self.builder_.emit_normalized(VarBinding(new_var, value, span=binding.span))
        self._record(new_var, value)

    def _record(self, var: Var, value: Expr) -> None:
        self._values[id(var)] = (var, value)

    def _rewrite(self, value: Expr) -> Expr:
        for _ in range(self.max_steps):
            if isinstance(value, Var):
                return value
            for rule in self.rules:
                m = rule.pattern.match(value, self.lookup)
                if m is None:
                    continue
                m.ctx = self
                out = rule.rewrite(value, m)
                if out is None or out is value:
                    continue
                out = self._accept(out, value, rule)
                if out is None:
                    continue
                self.fired[rule.name] += 1
                value = out
                break
            else:
                return value
        return value

    def _accept(self, out: Any, old: Expr, rule: RewriteRule) -> Optional[Expr]:
        """``out`` normalised, if its StructInfo fits ``old``'s; its new bindings are emitted."""
        if not isinstance(out, Expr):
            raise TypeError(
                f"rewrite rule {rule.name!r} returned {type(out).__name__}; expected a Relax "
                "expression or None"
            )
        bb = self.builder_
        if bb.current_block_is_dataflow():
            bb.begin_dataflow_block()
        else:
            bb.begin_binding_block()
        try:
            new = bb.normalize(out)
        finally:
            scratch = bb.end_block()
        old_sinfo = getattr(old, "struct_info_", None)
        if old_sinfo is not None and not is_base_of(old_sinfo, new.struct_info, bb.analyzer):
            return None
        for b in scratch.bindings:
            bb.emit_normalized(b)
            if isinstance(b, VarBinding):
                self._record(b.var, b.value)
        return new


def _same_sinfo(a: Any, b: Any) -> bool:
    from tvm.ffi import structural_equal

    return structural_equal(a, b)


def rewrite_bindings(
    func: Function, rules: Sequence[RewriteRule], mod: Optional[IRModule] = None
) -> Function:
    """``func`` with ``rules`` applied to its bindings (unused bindings removed)."""
    if not isinstance(func, Function):
        raise TypeError(f"rewrite_bindings expects a relax.Function, got {type(func).__name__}")
    return PatternRewriter(rules, mod).rewrite_function(func)


def rewrite_pass(
    rules: Sequence[RewriteRule] | Callable[[], Sequence[RewriteRule]],
    name: str,
    opt_level: int = 0,
) -> Any:
    """A module pass applying ``rules`` (or the table ``rules()`` returns) to every Relax
    function (except those for external code generators)."""

    @module_pass(opt_level=opt_level, name=name)
    def apply_rules(mod: IRModule, ctx: PassContext) -> IRModule:
        from ..transform._graph_utils import map_relax_functions

        table = rules() if callable(rules) else rules
        return map_relax_functions(
            mod, lambda func, gv: PatternRewriter(table, mod).rewrite_function(func)
        )

    return apply_rules


def is_call_to(expr: Any, name: str) -> bool:
    """Whether ``expr`` is a call of the operator ``name``."""
    op = getattr(expr, "op", None) if isinstance(expr, Call) else None
    return op is not None and getattr(op, "name", None) == name
