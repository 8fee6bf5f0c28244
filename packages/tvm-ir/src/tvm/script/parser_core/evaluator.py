"""Evaluating Python expressions of a TVMScript body.

:class:`VarTable` maps names to values in nested scopes over the function's environment
(closure, caller locals, globals, builtins; for script text only the safe builtins).
:class:`ExprEvaluator` walks an ``ast`` expression and computes its value; dialects subclass
it and override the hooks (``binary``, ``compare``, ``bool_op``, ``subscript`` ...) to build
IR instead of Python values.  Every failure becomes a
:class:`~tvm.ir.diagnostics.DiagnosticError` at the offending sub-expression.

Script text (an untrusted :class:`Source`) is never handed to Python's ``eval``: the walk is
the only evaluation, under the rules of :mod:`.vocabulary` for every name, attribute, call and
literal operation.  Only a decorated Python definition (the user's own code) may use
comprehensions and lambdas, which Python evaluates in the definition's environment.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
import operator
import types
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from tvm.ir.diagnostics import DiagnosticError

from .source import Source
from .vocabulary import (
    SAFE_BUILTINS, argument_error, attribute_error, call_error, check_literal_op, name_error,
)

__all__ = ["VarTable", "ExprEvaluator", "MISSING"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_BUILTINS = vars(builtins)


class VarTable:
    """Names bound by the script, in nested scopes, over a read-only environment.

    ``env`` is searched in order after the script's own scopes, then Python's builtins (all
    of them for a ``trusted`` Python definition, :data:`~.vocabulary.SAFE_BUILTINS` for
    script text).
    """

    def __init__(self, env: Sequence[Mapping[str, Any]] = (), trusted: bool = False):
        self.frames: list[dict[str, Any]] = [{}]
        self.env = list(env)
        self.builtins: Mapping[str, Any] = _BUILTINS if trusted else SAFE_BUILTINS

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Names bound inside the ``with`` body are dropped at its end."""
        self.frames.append({})
        try:
            yield
        finally:
            self.frames.pop()

    def add(self, name: str, value: Any) -> None:
        self.frames[-1][name] = value

    def get(self, name: str, default: Any = MISSING) -> Any:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        for mapping in self.env:
            if name in mapping:
                return mapping[name]
        return self.builtins.get(name, default)

    def as_dict(self) -> dict[str, Any]:
        """Every visible name flattened into one dict (for Python's own ``eval`` of a
        trusted definition's comprehensions and lambdas)."""
        out: dict[str, Any] = {}  # Python's eval adds the builtins
        for mapping in reversed(self.env):
            out.update(mapping)
        for frame in self.frames:
            out.update(frame)
        return out

    def defined_in_script(self, name: str) -> bool:
        return any(name in frame for frame in self.frames)

    def all_names(self) -> list[str]:
        names: list[str] = []
        for frame in self.frames:
            names.extend(frame)
        for mapping in self.env:
            names.extend(k for k in mapping if not k.startswith("__"))
        return names

    def suggest(self, name: str) -> str:
        """``"; did you mean 'x'?"`` for a close known name (the script's own first)."""
        own = [n for frame in self.frames for n in frame]
        close = difflib.get_close_matches(name, own, n=1, cutoff=0.6)
        if not close:
            close = difflib.get_close_matches(name, self.all_names(), n=1, cutoff=0.75)
        return f"; did you mean {close[0]!r}?" if close else ""


_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert,
          ast.Not: operator.not_}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
OP_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^",
    ast.BitAnd: "&", ast.MatMult: "@", ast.UAdd: "+", ast.USub: "-", ast.Invert: "~",
    ast.Not: "not", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
    ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
    ast.And: "and", ast.Or: "or",
}

# Expression kinds a trusted Python definition hands to Python's own eval; in script text
# they are refused.
_PYTHON_EVAL = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
                ast.JoinedStr)
_NOT_TVMSCRIPT = {
    "Lambda": "a lambda", "ListComp": "a list comprehension", "SetComp": "a set comprehension",
    "DictComp": "a dict comprehension", "GeneratorExp": "a generator expression",
    "JoinedStr": "an f-string (script text is not run as Python)",
}


class ExprEvaluator:
    """Computes the value of an ``ast`` expression against a :class:`VarTable`.

    Subclasses override the hooks to give operators IR meaning; each hook may raise any
    exception, which is reported at the node being evaluated.
    """

    def __init__(self, source: Source, table: VarTable):
        self.source = source
        self.table = table
        self.trusted = source.trusted

    # -- entry -------------------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        kind = type(node).__name__
        method = getattr(self, "eval_" + kind, None)
        if method is None:
            if self.trusted and isinstance(node, _PYTHON_EVAL):
                return self._python_eval(node)
            what = _NOT_TVMSCRIPT.get(kind, kind)
            raise self.source.error(f"unsupported Python syntax in TVMScript expression: {what}",
                                    node)
        try:
            return method(node)
        except RecursionError:
            raise self.error("the expression is nested too deeply to parse", node) from None

    def error(self, message: str, node: ast.AST) -> DiagnosticError:
        return self.source.error(message, node)

    def guard(self, node: ast.AST, fn: Any, *args: Any) -> Any:
        """``fn(*args)``, with any exception reported as a diagnostic at ``node``."""
        try:
            return fn(*args)
        except DiagnosticError:
            raise
        except Exception as err:  # noqa: BLE001 - every user-visible failure gets a location
            raise self.error(_describe(err), node) from err

    # -- leaves ------------------------------------------------------------------------------
    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def eval_Name(self, node: ast.Name) -> Any:
        value = self.table.get(node.id)
        if value is MISSING:
            raise self.error(
                f"undefined variable {node.id!r}{self.table.suggest(node.id)}", node
            )
        self.check_name(value, node)
        return value

    def check_name(self, value: Any, node: ast.Name) -> None:
        """Refuse, in script text, an environment value that is a foreign Python callable."""
        if not self.trusted and not self.table.defined_in_script(node.id):
            reason = name_error(value)
            if reason is not None:
                raise self.error(f"{node.id!r}: {reason}", node)

    def check_attribute(self, obj: Any, node: ast.Attribute) -> None:
        """Refuse ``obj.attr`` in script text unless :mod:`.vocabulary` allows it."""
        if not self.trusted:
            reason = attribute_error(obj, node.attr)
            if reason is not None:
                raise self.error(reason, node)

    def get_attribute(self, obj: Any, attr: str) -> Any:
        """``obj.attr`` (for script text, a vocabulary module answers with its public names
        only); AttributeError when there is none."""
        if not self.trusted and isinstance(obj, types.ModuleType):
            from .vocabulary import module_attribute

            return module_attribute(obj, attr)
        return getattr(obj, attr)

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.eval(node.value)
        self.check_attribute(obj, node)
        try:
            return self.get_attribute(obj, node.attr)
        except AttributeError:
            pass
        except Exception as err:  # noqa: BLE001
            raise self.error(_describe(err), node) from err
        owner = self.source.segment(node.value)
        if isinstance(obj, types.ModuleType):
            what = f"module {owner!r} ({obj.__name__})"
        else:
            what = f"{owner!r} ({type(obj).__name__})"
        candidates = [n for n in dir(obj) if not n.startswith("_")]
        close = difflib.get_close_matches(node.attr, candidates, n=1, cutoff=0.6)
        hint = f"; did you mean {owner}.{close[0]}?" if close else ""
        raise self.error(f"{what} has no attribute {node.attr!r}{hint}", node)

    # -- containers --------------------------------------------------------------------------
    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._elements(node.elts))

    def eval_List(self, node: ast.List) -> list:
        return self._elements(node.elts)

    def eval_Set(self, node: ast.Set) -> set:
        return set(self._elements(node.elts))

    def _elements(self, elts: list[ast.expr]) -> list:
        out: list = []
        for elt in elts:
            if isinstance(elt, ast.Starred):
                out.extend(self.guard(elt, list, self.eval(elt.value)))
            else:
                out.append(self.eval(elt))
        return out

    def eval_Dict(self, node: ast.Dict) -> dict:
        out: dict = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                out.update(self.guard(value, dict, self.eval(value)))
            else:
                out[self.eval(key)] = self.eval(value)
        return out

    def eval_Slice(self, node: ast.Slice) -> slice:
        return slice(
            None if node.lower is None else self.eval(node.lower),
            None if node.upper is None else self.eval(node.upper),
            None if node.step is None else self.eval(node.step),
        )

    # -- operators ---------------------------------------------------------------------------
    def eval_BinOp(self, node: ast.BinOp) -> Any:
        # a left-nested chain (a + b + c ...) is walked iteratively: any length parses
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        a = self.eval(chain[-1].left)
        for link in reversed(chain):
            b = self.eval(link.right)
            if not self.trusted:
                self.guard(link, check_literal_op, type(link.op), a, b)
            a = self.guard(link, self.binary, type(link.op), a, b)
        return a

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        a = self.eval(node.operand)
        return self.guard(node, self.unary, type(node.op), a)

    def eval_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.eval(v) for v in node.values]
        return self.guard(node, self.bool_op, type(node.op), values)

    def eval_Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        results = []
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp)
            results.append(self.guard(node, self.compare, type(op), left, right))
            left = right
        if len(results) == 1:
            return results[0]
        return self.guard(node, self.bool_op, ast.And, results)

    def eval_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        return self.eval(node.body) if self.guard(node.test, bool, cond) else self.eval(node.orelse)

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.eval(node.value)
        return self.subscript(obj, node)

    def eval_Starred(self, node: ast.Starred) -> Any:
        raise self.error("a starred expression is only allowed in calls and sequences", node)

    # -- calls -------------------------------------------------------------------------------
    def eval_Call(self, node: ast.Call) -> Any:
        fn = self.eval(node.func)
        args, kwargs = self.eval_arguments(node)
        return self.call_node(node, fn, args, kwargs)

    def eval_arguments(self, node: ast.Call) -> tuple[list, dict]:
        args = self._elements(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.guard(kw.value, dict, self.eval(kw.value)))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        return args, kwargs

    def call_node(self, node: ast.Call, fn: Any, args: list, kwargs: dict) -> Any:
        """Call ``fn``; argument mismatches are reported with the callee's signature."""
        if not callable(fn):
            raise self.error(
                f"{self.source.segment(node.func)!r} ({type(fn).__name__}) is not callable", node
            )
        if not self.trusted:
            reason = call_error(fn) or argument_error(fn, args, kwargs)
            if reason is not None:
                raise self.error(reason, node)
        try:
            return self.call(fn, args, kwargs)
        except DiagnosticError:
            raise
        except TypeError as err:
            raise self.error(self._call_error(node, fn, args, kwargs, err), node) from err
        except Exception as err:  # noqa: BLE001
            raise self.error(
                f"{self.source.segment(node.func)}: {_describe(err)}", node
            ) from err

    def _call_error(self, node: ast.Call, fn: Any, args: list, kwargs: dict, err: Exception) -> str:
        callee = self.source.segment(node.func)
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return f"{callee}: {err}"
        try:
            sig.bind(*args, **kwargs)
        except TypeError as bind_err:
            return f"wrong arguments to {callee}{_short_signature(sig)}: {bind_err}"
        return f"{callee}: {err}"

    # -- fallback ----------------------------------------------------------------------------
    def _python_eval(self, node: ast.expr) -> Any:
        """A comprehension, lambda or f-string of a trusted Python definition (the user's
        own code), evaluated by Python in the definition's environment."""
        assert self.trusted, "script text is never handed to Python's eval"
        expr = ast.Expression(body=node)
        ast.fix_missing_locations(expr)
        code = self.guard(node, compile, expr, self.source.name, "eval")
        return self.guard(node, eval, code, self.table.as_dict())  # noqa: S307

    # -- hooks ---------------------------------------------------------------------------------
    def binary(self, op: type, a: Any, b: Any) -> Any:
        return _BINARY[op](a, b)

    def unary(self, op: type, a: Any) -> Any:
        return _UNARY[op](a)

    def bool_op(self, op: type, values: list) -> Any:
        result = values[0]
        for v in values[1:]:
            result = (result and v) if op is ast.And else (result or v)
        return result

    def compare(self, op: type, a: Any, b: Any) -> Any:
        return _COMPARE[op](a, b)

    def subscript(self, obj: Any, node: ast.Subscript) -> Any:
        index = self.eval(node.slice)
        return self.guard(node, operator.getitem, obj, index)

    def call(self, fn: Any, args: list, kwargs: dict) -> Any:
        return fn(*args, **kwargs)


def _describe(err: BaseException) -> str:
    text = str(err)
    if isinstance(err, KeyError) and err.args:
        text = str(err.args[0])
    return text or type(err).__name__


def _short_signature(sig: inspect.Signature) -> str:
    text = str(sig)
    return text if len(text) <= 160 else text[:157] + "..."
