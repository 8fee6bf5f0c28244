"""What TVMScript *text* may name, look up and call: the rules that keep parsing data-safe.

Script text (``T.parse``, ``R.parse``, ``I.parse``, ``from_source``, ``T.prim_func(text)``)
is data: parsing it must not run Python code of the text's choosing.  The evaluator walks
the ``ast`` itself (nothing is handed to Python's ``eval``), and for text it applies these
rules:

* names: what the script binds, the environment (``T``/``R``/``I``, ``metadata``, the
  module's functions, names the caller passed in ``env``) and a few pure builtins
  (:data:`SAFE_BUILTINS`: ``range``, ``float`` ...); never ``__import__``, ``getattr``,
  ``open``, ``eval`` ...;
* names the caller passed in ``env`` are values: one that is a Python callable other than
  tvm's own (or a registered TVMScript decorator) is refused where the text names it, so
  the text cannot call it, not even through a builtin's ``key=``;
* attributes: never a name starting with ``_`` or ``register``; on a vocabulary module (the namespaces
  registered with :func:`~tvm.script.parser_core.register_namespace`) only its ``__all__``
  and the names its module ``__getattr__`` makes up (``T.float16x4``, ``R.nn.softmax``); on
  other values only when they are objects of the tvm packages (``A.data``, ``x.dtype``);
* calls: only tvm's own functions, classes and methods and the safe builtins;
* imports: only of vocabulary modules (``from tvm.script import tir as T``);
* no lambdas, comprehensions or f-strings, and arithmetic on Python literals is bounded
  (``10 ** 10 ** 10`` and ``"a" * 10 ** 12`` are refused, not computed).

A decorated Python function (``@T.prim_func def f(...)``) is the user's own program and
keeps the full Python environment of its definition (closure, globals, builtins).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import types
from collections.abc import Mapping
from typing import Any, Optional

__all__ = [
    "SAFE_BUILTINS", "NAMESPACES", "vocabulary_modules", "is_vocabulary_module", "attribute_error",
    "module_attribute", "call_error", "argument_error", "name_error", "check_literal_op", "import_module",
]

SAFE_BUILTINS: Mapping[str, Any] = types.MappingProxyType({
    name: getattr(builtins, name)
    for name in ("range", "float", "int", "bool", "str", "len", "min", "max", "abs", "slice",
                 "round")
})
_SAFE_IDS = frozenset(id(v) for v in SAFE_BUILTINS.values())

# Python-literal arithmetic a text may ask for (the result's size is bounded).
_MAX_INT_BITS = 1 << 16
_MAX_SEQ_LEN = 1 << 22


# Names a script may use without importing them: alias -> module path (extended by
# :func:`~tvm.script.parser_core.register_namespace`); these modules are the vocabulary.
NAMESPACES: dict[str, str] = {
    "T": "tvm.script.tir",
    "I": "tvm.script.ir",
    "R": "tvm.script.relax",
}


def vocabulary_modules() -> set[str]:
    """The module paths registered as script namespaces (``tvm.script.tir`` ...)."""
    return set(NAMESPACES.values())


def is_vocabulary_module(obj: Any) -> bool:
    return isinstance(obj, types.ModuleType) and obj.__name__ in vocabulary_modules()


def _is_tvm_type(tp: type) -> bool:
    module = getattr(tp, "__module__", None) or ""
    return module == "tvm" or module.startswith("tvm.")


def module_attribute(module: types.ModuleType, attr: str) -> Any:
    """``module.attr`` for a vocabulary module: a public name of its ``__all__`` or one its
    module-level ``__getattr__`` makes up; AttributeError otherwise."""
    if attr.startswith(("_", "register")):
        raise AttributeError(attr)
    if attr in getattr(module, "__all__", ()):
        value = getattr(module, attr)
    else:
        dynamic = module.__dict__.get("__getattr__")
        if dynamic is None:
            raise AttributeError(attr)
        value = dynamic(attr)
    if isinstance(value, types.ModuleType) and not is_vocabulary_module(value):
        raise AttributeError(attr)
    return value


def attribute_error(obj: Any, attr: str) -> Optional[str]:
    """Why ``obj.attr`` is refused in script text (None when it is allowed)."""
    if attr.startswith("_"):
        return f"attribute {attr!r}: names starting with '_' are not TVMScript"
    if attr.startswith("register"):
        return f"attribute {attr!r}: script text may not register parsers or printers"
    if isinstance(obj, types.ModuleType):
        if is_vocabulary_module(obj):
            return None
        return (f"module {obj.__name__!r} is not a TVMScript namespace; script text may use "
                "T., R. and I. only")
    if _is_tvm_type(type(obj)) or (isinstance(obj, type) and _is_tvm_type(obj)):
        return None
    return (f"attribute access on a {type(obj).__name__} value is not TVMScript "
            f"(.{attr})")


def call_error(fn: Any) -> Optional[str]:
    """Why calling ``fn`` is refused in script text (None when it is allowed)."""
    if id(fn) in _SAFE_IDS:
        return None
    if isinstance(fn, types.MethodType):
        owner = fn.__self__
        owner_type = owner if isinstance(owner, type) else type(owner)
        if _is_tvm_type(owner_type):
            return None
    elif isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, type)):
        if _is_tvm_type(fn):
            return None
    elif _is_tvm_type(type(fn)):
        return None
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return f"calling {name!r} is not allowed in TVMScript text (only T./R./I. functions)"


def argument_error(fn: Any, args: list, kwargs: dict) -> Optional[str]:
    """Why calling ``fn`` with these arguments is refused in script text: a TVMScript
    decorator there takes script text, not an object (a tvm function or class) whose source
    it would parse as trusted code in that object's environment."""
    from .entry import lookup_decorator

    if lookup_decorator(fn) is not None and any(not isinstance(v, str) for v in args):
        return "a TVMScript decorator in script text takes script text (a str) only"
    return None


def name_error(value: Any) -> Optional[str]:
    """Why a name of the environment whose value is ``value`` is refused in script text."""
    if not callable(value) or isinstance(value, type) and _is_tvm_type(value):
        return None
    from .entry import lookup_decorator

    if lookup_decorator(value) is not None:
        return None
    reason = call_error(value)
    return None if reason is None else reason.replace("calling", "the Python callable", 1)


def _seq_len(value: Any) -> Optional[int]:
    return len(value) if isinstance(value, (str, bytes, tuple, list)) else None


def check_literal_op(op: type, a: Any, b: Any) -> None:
    """Refuse Python-literal arithmetic whose result would be huge (ValueError)."""
    if op is ast.Pow and isinstance(a, int) and isinstance(b, int) and abs(a) > 1:
        if b * max(abs(a).bit_length(), 1) > _MAX_INT_BITS:
            raise ValueError(f"the literal {a} ** {b} is too large")
    elif op is ast.LShift and isinstance(a, int) and isinstance(b, int) and a:
        if b + abs(a).bit_length() > _MAX_INT_BITS:
            raise ValueError(f"the literal {a} << {b} is too large")
    elif op is ast.Mult:
        for seq, count in ((a, b), (b, a)):
            n = _seq_len(seq)
            if n is not None and isinstance(count, int) and n * count > _MAX_SEQ_LEN:
                raise ValueError("the repeated sequence is too long")
    elif op is ast.Add:
        n, m = _seq_len(a), _seq_len(b)
        if n is not None and m is not None and n + m > _MAX_SEQ_LEN:
            raise ValueError("the concatenated sequence is too long")


def import_module(name: str, trusted: bool) -> types.ModuleType:
    """Import ``name`` for an import statement of script text (vocabulary modules only
    unless the text is trusted); ImportError otherwise."""
    if not trusted and name not in vocabulary_modules():
        allowed = ", ".join(sorted(vocabulary_modules()))
        raise ImportError(f"script text may import TVMScript namespaces only ({allowed}), "
                          f"not {name!r}")
    return importlib.import_module(name)

