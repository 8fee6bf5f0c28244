"""Mutated TVMScript against the parser (``I.parse``).

A case is a script: the printed text of a real module (a TIR kernel with a Relax caller, a
legalized Relax graph with blocks and reductions, a Relax function with symbolic shapes)
changed at the token level (tokens deleted, duplicated, swapped, replaced by others or by
odd literals, lines dropped or re-indented), and hostile Python expressions planted at
random tokens, each of which would create a canary file if it ran.  Oracle: ``I.parse``
returns a module, which prints and parses back to an equal module (free variables matched
by position), or it raises
``DiagnosticError`` with a line and column; the canary never appears.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from typing import Any

from hypothesis import strategies as st

from fuzz.common import Failure, describe

CANARY = "@CANARY@"
#: Python expressions that would create the canary file if the parser ran them
PAYLOADS = [
    f"__import__('os').system('touch {CANARY}')",
    f"open('{CANARY}', 'w')",
    f"exec(\"open('{CANARY}', 'w')\")",
    f"eval(\"open('{CANARY}', 'w')\")",
    f"(lambda: open('{CANARY}', 'w'))()",
    f"[open('{CANARY}', 'w') for _ in range(1)]",
    f"T.prim_func.__globals__['__builtins__']['open']('{CANARY}', 'w')",
    f"getattr(T, '__builtins__')['open']('{CANARY}', 'w')",
    f"R.ops.importlib.import_module('os').system('touch {CANARY}')",
    f"type(T).__call__(open, '{CANARY}', 'w')",
    f"I.parse.__globals__['importlib'].import_module('os').system('touch {CANARY}')",
    f"T.int32.__class__.__subclasses__()[0]('{CANARY}')",
    f"R.const.__globals__['os'].system('touch {CANARY}')",
    "import os",
    f"from os import system; system('touch {CANARY}')",
]
#: odd literals and tokens a mutation may put in place of a token
POOL = ["0", "-1", "1", "7", "2 ** 63", "10 ** 10 ** 10", "1e400", "-0.0", "None", "True",
        "'float32'", "'int8'", "'bogus'", "\"n\"", "T.int32", "T.float32(1)", "R.Tensor",
        "R.Tuple", "(", ")", "[", "]", ":", ",", "=", ".", "@", "**", "lambda", "with",
        "for", "if", "else", "return", "def", "class", "x", "T", "R", "I", "'\\x00'",
        "\"\\ud800\"", "((((((((((((((((((((1))))))))))))))))))))", "[" * 60 + "]" * 60,
        "T.Buffer((4,), 'float32')", "R.shape([2, 3])", "..."]

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:e[+-]?\d+)?|'[^'\n]*'"
                    r"|\"[^\"\n]*\"|\S")

_SYMBOLIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n, 4), dtype="float32") = R.add(x, y)
            b: R.Tensor((n,), dtype="float32") = R.sum(a, axis=[1], keepdims=False)
            c = R.match_cast(b, R.Tensor((n,), dtype="float32"))
            R.output(c)
        return c
'''


@functools.lru_cache(maxsize=None)
def base_scripts() -> dict[str, str]:
    """The printed scripts the mutations start from."""
    from tvm import relax
    from tvm.script import ir as I

    from fuzz import relax_graphs

    graph = {"values": [["input", [2, 3], "float32"], ["input", [3, 4], "float32"],
                        ["matmul", [0, 1], {}], ["nn.softmax", [2], {"axis": -1}],
                        ["sum", [3], {"axis": [0], "keepdims": True}]],
             "seed": 0, "bounds": [2.0, 2.0, 24.0, 1.0, 2.0]}
    legalized = relax.transform.LegalizeOps()(relax_graphs.build_module(graph))
    return {"kernel_and_caller": _kernel_module().script(),
            "legalized_graph": legalized.script(),
            "symbolic": I.parse(_SYMBOLIC).script()}


def _kernel_module() -> Any:
    from tvm.script import ir as I

    return I.parse('''
@I.ir_module
class Mod:
    @T.prim_func
    def scale(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
        for i in range(8):
            b[i] = a[i] * T.float32(2) + T.float32(1)

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = Mod
        y = R.call_tir(cls.scale, (x,), out_sinfo=R.Tensor((8,), "float32"))
        return y
''')


def _mutate(text: str, m: list[Any]) -> str:
    kind = m[0]
    if kind in ("drop_line", "dup_line", "indent_line"):
        lines = text.split("\n")
        k = m[1] % len(lines)
        if kind == "drop_line":
            del lines[k]
        elif kind == "dup_line":
            lines.insert(k, lines[k])
        else:
            lines[k] = " " * (m[2] % 9) + lines[k].lstrip()
        return "\n".join(lines)
    toks = list(_TOKEN.finditer(text))
    if not toks:
        return text
    t = toks[m[1] % len(toks)]
    if kind == "delete":
        new = ""
    elif kind == "copy":
        new = toks[m[2] % len(toks)].group()
    elif kind == "swap":
        u = toks[m[2] % len(toks)]
        if u.start() <= t.start():
            return text
        return (text[:t.start()] + u.group() + text[t.end():u.start()] + t.group()
                + text[u.end():])
    elif kind == "pool":
        new = POOL[m[2] % len(POOL)]
    elif kind == "payload":
        new = PAYLOADS[m[2] % len(PAYLOADS)]
    else:  # insert a payload before the token
        new = PAYLOADS[m[2] % len(PAYLOADS)] + " " + t.group()
    return text[:t.start()] + new + text[t.end():]


def _mutation() -> st.SearchStrategy[list[Any]]:
    n = st.integers(0, 10 ** 6)
    return st.one_of(
        st.tuples(st.sampled_from(["delete", "copy", "swap", "pool", "payload", "insert"]),
                  n, n),
        st.tuples(st.sampled_from(["drop_line", "dup_line", "indent_line"]), n, n),
    ).map(list)


def _build(parts: tuple[str, list[list[Any]]]) -> dict[str, Any]:
    text = base_scripts()[parts[0]]
    for m in parts[1]:
        text = _mutate(text, m)
    return {"base": parts[0], "text": text}


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """Mutated scripts; the case holds the whole text (replayed as is)."""
    return st.tuples(st.sampled_from(sorted(base_scripts())),
                     st.lists(_mutation(), min_size=1, max_size=4)).map(_build)


def check(case: dict[str, Any]) -> str:
    """Parse the text; a refusal must be a located DiagnosticError, nothing may run."""
    from tvm.ffi import assert_structural_equal
    from tvm.ir.diagnostics import DiagnosticError
    from tvm.script import ir as I

    with tempfile.TemporaryDirectory(prefix="tvm-fuzz-canary-") as tmp:
        canary = os.path.join(tmp, "pwned")
        text = case["text"].replace(CANARY, canary)
        try:
            mod = I.parse(text)
        except DiagnosticError as err:
            if os.path.exists(canary):
                raise Failure("code-executed", "the text ran code before it was refused") from err
            span = err.span
            if span is None or not span.line or span.line < 1 or not span.column \
                    or span.column < 1:
                raise Failure("unlocated-error", f"DiagnosticError without a line:column: "
                              f"{err.message[:300]}") from err
            return "refused (DiagnosticError)"
        except RecursionError:
            raise Failure("unexpected-exception", "RecursionError while parsing") from None
        except Exception as err:  # noqa: BLE001 - classified
            raise Failure("unexpected-exception", f"I.parse raised {describe(err)}") from err
        if os.path.exists(canary):
            raise Failure("code-executed", "the text ran code")
    try:
        printed = mod.script()
        again = I.parse(printed)
        # free variables (``T.float32()`` used inline declares one) have no identity in
        # text: the printer declares them, the parser makes new ones, matched by position
        assert_structural_equal(again, mod, map_free_vars=True)
    except Exception as err:  # noqa: BLE001 - a parsed module must print and round-trip
        raise Failure("round-trip", f"parsed, but print -> parse -> equal failed: "
                      f"{describe(err)}") from err
    return "parsed and round-tripped"
