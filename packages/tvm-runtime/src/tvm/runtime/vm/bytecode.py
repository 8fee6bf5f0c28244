"""The VM's bytecode: instructions, operands, symbolic shape expressions and their text form.

A VM function is a list of instructions over numbered registers (the first ones hold the
parameters) and a *shape heap*: int64 slots holding the values of symbolic shape variables
(``n``, ``seq_len``) once :data:`match_shape` bound them.  Instructions are plain dicts, so
the program is JSON (the executable file stores it as such)::

    {"op": "check_tensor_info", "arg": ["reg", 0], "ndim": 2, "dtype": "float32", "ctx": "..."}
    {"op": "match_shape", "arg": ["reg", 0], "dims": [["store", 0], ["imm", 256]], "ctx": "..."}
    {"op": "alloc_storage", "dst": 3, "size": 262144, "device": 0, "scope": "global"}
    {"op": "alloc_tensor", "dst": 4, "storage": ["reg", 3], "offset": 0,
     "shape": ["shape", [128, 512]], "dtype": "float32"}
    {"op": "call", "dst": null, "func": "fused_matmul_add", "args": [["reg", 0], ...]}
    {"op": "ret", "value": ["reg", 4]}
    {"op": "if", "cond": ["reg", 5], "offset": 4}      # cond false: jump by offset
    {"op": "goto", "offset": 3}
    {"op": "move", "dst": 6, "src": ["reg", 7]}

plus ``check_shape_info``, ``check_prim_value``, ``check_tuple_info`` (checks of other kinds
of parameters) and ``match_prim_value`` (bind a symbolic variable from a scalar).

Operands: ``["reg", i]``, ``["const", i]`` (constant pool), ``["imm", v]`` (int, float, bool
or None), ``["str", s]``, ``["dtype", s]``, ``["func", name]``, ``["expr", e]`` (a symbolic
expression) and ``["shape", [e, ...]]``.  Expressions are the run-time format of
:mod:`tvm.runtime.int_expr` (shared with GPU host programs) whose variables are heap slots:
``["var", slot]``, e.g. ``["mul", ["var", 0], 4]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..int_expr import ExprError, format_expr, validate_expr

__all__ = [
    "OPCODES",
    "OPERAND_KINDS",
    "BytecodeError",
    "validate_function",
    "heap_var",
    "format_operand",
    "format_instruction",
    "format_function",
]


class BytecodeError(ValueError):
    """A malformed VM program (a bad instruction, operand or expression)."""


#: opcode -> required fields (besides "op")
OPCODES: dict[str, tuple[str, ...]] = {
    "check_tensor_info": ("arg", "ndim", "dtype", "ctx"),
    "check_shape_info": ("arg", "ndim", "ctx"),
    "check_prim_value": ("arg", "dtype", "ctx"),
    "check_tuple_info": ("arg", "size", "ctx"),
    "match_shape": ("arg", "dims", "ctx"),
    "match_prim_value": ("arg", "dim", "ctx"),
    "alloc_storage": ("dst", "size", "device", "scope"),
    "alloc_tensor": ("dst", "storage", "offset", "shape", "dtype"),
    "call": ("dst", "func", "args"),
    "move": ("dst", "src"),
    "ret": ("value",),
    "if": ("cond", "offset"),
    "goto": ("offset",),
}

OPERAND_KINDS = ("reg", "const", "imm", "str", "dtype", "func", "expr", "shape")

def heap_var(slot: int) -> list:
    """The expression reading heap slot ``slot``."""
    return ["var", slot]


def _check_expr(e: Any, heap_size: int, where: str) -> None:
    try:
        validate_expr(e, lambda k: isinstance(k, int) and 0 <= k < heap_size,
                      f"heap slot (the heap has {heap_size} slots)")
    except ExprError as err:
        raise BytecodeError(f"{where}: {err}") from None


# ---------------------------------------------------------------------------- validation


def _check_operand(o: Any, fn: dict, nconst: int, where: str) -> None:
    if not isinstance(o, list) or len(o) != 2 or o[0] not in OPERAND_KINDS:
        raise BytecodeError(f"{where}: bad operand {o!r} (expected [kind, value] with kind in "
                            f"{', '.join(OPERAND_KINDS)})")
    kind, value = o
    if kind == "reg":
        _check_reg(value, fn, where)
    elif kind == "const":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < nconst:
            raise BytecodeError(f"{where}: constant {value!r} is out of range ({nconst} constants)")
    elif kind == "imm":
        if value is not None and not isinstance(value, (int, float, bool)):
            raise BytecodeError(f"{where}: immediate {value!r} is not a number")
    elif kind in ("str", "dtype", "func"):
        if not isinstance(value, str):
            raise BytecodeError(f"{where}: {kind} operand {value!r} is not a string")
    elif kind == "expr":
        _check_expr(value, fn["heap_size"], where)
    elif kind == "shape":
        if not isinstance(value, list):
            raise BytecodeError(f"{where}: shape operand {value!r} is not a list")
        for d in value:
            _check_expr(d, fn["heap_size"], where)


def _check_reg(value: Any, fn: dict, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < fn["num_regs"]:
        raise BytecodeError(
            f"{where}: register {value!r} is out of range ({fn['num_regs']} registers)"
        )


#: bound on a function's registers and heap slots (a frame allocates that many)
_MAX_SLOTS = 1 << 31


def validate_function(fn: Any, nconst: int) -> None:
    """Check a function record (``name``, ``params``, ``num_regs``, ``heap_size``,
    ``code``); raises :class:`BytecodeError` naming the function and instruction."""
    if not isinstance(fn, dict):
        raise BytecodeError(f"a VM function must be a JSON object, got {type(fn).__name__}")
    name = fn.get("name")
    for key, typ in (("name", str), ("params", list), ("num_regs", int), ("heap_size", int),
                     ("code", list)):
        if not isinstance(fn.get(key), typ):
            raise BytecodeError(f"VM function {name!r}: field {key!r} is missing or not a {typ.__name__}")
    for key in ("num_regs", "heap_size"):
        if not 0 <= fn[key] < _MAX_SLOTS:
            raise BytecodeError(f"VM function {name!r}: {key} {fn[key]} is out of range "
                                f"[0, {_MAX_SLOTS})")
    if len(fn["params"]) > fn["num_regs"]:
        raise BytecodeError(f"VM function {name!r}: more parameters than registers")
    code = fn["code"]
    if not code:
        raise BytecodeError(f"VM function {name!r} has no instructions")
    for pc, ins in enumerate(code):
        where = f"VM function {name!r}, instruction {pc}"
        try:
            _validate_instruction(ins, pc, fn, nconst, where)
        except BytecodeError:
            raise
        except (TypeError, IndexError, KeyError, ValueError, AttributeError) as err:
            # a field of the wrong JSON type where the checks expect another (a None for
            # a list, a one-element operand): malformed, whatever the field
            raise BytecodeError(f"{where}: malformed instruction {ins!r} "
                                f"({type(err).__name__}: {err})") from err
    if code[-1]["op"] not in ("ret", "goto"):
        raise BytecodeError(f"VM function {name!r} does not end with ret")


def _validate_instruction(ins: Any, pc: int, fn: dict, nconst: int, where: str) -> None:
    """One instruction's fields: opcode, operands, registers, jump targets, patterns."""
    code = fn["code"]
    if not isinstance(ins, dict) or ins.get("op") not in OPCODES:
        raise BytecodeError(f"{where}: unknown instruction {ins!r}")
    op = ins["op"]
    missing = [k for k in OPCODES[op] if k not in ins]
    if missing:
        raise BytecodeError(f"{where}: {op} lacks field(s) {', '.join(missing)}")
    for key in ("arg", "src", "storage", "cond", "value"):
        if key in ins:
            _check_operand(ins[key], fn, nconst, where)
    for arg in ins.get("args", ()):
        _check_operand(arg, fn, nconst, where)
    if "dst" in ins and ins["dst"] is not None:
        _check_reg(ins["dst"], fn, where)
    if op in ("if", "goto"):
        target = pc + ins["offset"]
        if isinstance(ins["offset"], bool) or not isinstance(ins["offset"], int) or not (
            0 <= target < len(code)
        ) or ins["offset"] == 0:
            raise BytecodeError(f"{where}: jump offset {ins['offset']!r} leaves the function")
    if op == "match_shape":
        for d in ins["dims"]:
            _check_dim_pattern(d, fn, where)
    if op == "match_prim_value":
        _check_dim_pattern(ins["dim"], fn, where)
    for key in ("size", "offset"):
        if op.startswith("alloc") and key in ins:
            _check_expr(ins[key], fn["heap_size"], where)
    if op == "alloc_tensor":
        _check_operand(ins["shape"], fn, nconst, where)


def _check_dim_pattern(d: Any, fn: dict, where: str) -> None:
    if not isinstance(d, list) or not d or d[0] not in ("imm", "store", "assert", "any"):
        raise BytecodeError(f"{where}: bad dimension pattern {d!r}")
    if d[0] == "imm":
        _check_expr(d[1], 0, where)
    elif d[0] == "store":
        _check_expr(heap_var(d[1]), fn["heap_size"], where)
    elif d[0] == "assert":
        _check_expr(d[1], fn["heap_size"], where)


# ---------------------------------------------------------------------------- text


def format_operand(o: list, heap_names: Sequence[str] = ()) -> str:
    kind, value = o
    if kind == "reg":
        return f"%{value}"
    if kind == "const":
        return f"c[{value}]"
    if kind == "imm":
        return repr(value)
    if kind == "str":
        return _quote(value)
    if kind == "dtype":
        return value
    if kind == "func":
        return f"@{value}"
    if kind == "expr":
        return format_expr(value, heap_names)
    return "[" + ", ".join(format_expr(d, heap_names) for d in value) + "]"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_dim(d: list, heap_names: Sequence[str]) -> str:
    if d[0] == "imm":
        return str(d[1])
    if d[0] == "store":
        return f"let {format_expr(heap_var(d[1]), heap_names)}"
    if d[0] == "assert":
        return format_expr(d[1], heap_names)
    return "_"


def format_instruction(ins: dict, heap_names: Sequence[str] = ()) -> str:
    """One instruction as text, e.g. ``call fused_matmul_add(%0, %1, %2, %4)``."""
    op = ins["op"]
    fo = lambda o: format_operand(o, heap_names)  # noqa: E731
    fe = lambda e: format_expr(e, heap_names)  # noqa: E731
    if op == "check_tensor_info":
        dtype = ins["dtype"] or "?"
        ndim = ins["ndim"] if ins["ndim"] >= 0 else "?"
        return f"check_tensor_info {fo(ins['arg'])}, ndim={ndim}, dtype={dtype}, {_quote(ins['ctx'])}"
    if op == "check_shape_info":
        ndim = ins["ndim"] if ins["ndim"] >= 0 else "?"
        return f"check_shape_info {fo(ins['arg'])}, ndim={ndim}, {_quote(ins['ctx'])}"
    if op == "check_prim_value":
        return f"check_prim_value {fo(ins['arg'])}, dtype={ins['dtype'] or '?'}, {_quote(ins['ctx'])}"
    if op == "check_tuple_info":
        return f"check_tuple_info {fo(ins['arg'])}, size={ins['size']}, {_quote(ins['ctx'])}"
    if op == "match_shape":
        dims = ", ".join(_format_dim(d, heap_names) for d in ins["dims"])
        return f"match_shape {fo(ins['arg'])}, [{dims}], {_quote(ins['ctx'])}"
    if op == "match_prim_value":
        return f"match_prim_value {fo(ins['arg'])}, {_format_dim(ins['dim'], heap_names)}, {_quote(ins['ctx'])}"
    if op == "alloc_storage":
        return (f"alloc_storage %{ins['dst']} = size={fe(ins['size'])}, device={ins['device']}, "
                f"scope={ins['scope']}")
    if op == "alloc_tensor":
        return (f"alloc_tensor %{ins['dst']} = {fo(ins['storage'])}, offset={fe(ins['offset'])}, "
                f"shape={fo(ins['shape'])}, dtype={ins['dtype']}")
    if op == "call":
        args = ", ".join(fo(a) for a in ins["args"])
        dst = f"%{ins['dst']} = " if ins["dst"] is not None else ""
        return f"call {dst}{ins['func']}({args})"
    if op == "move":
        return f"move %{ins['dst']} = {fo(ins['src'])}"
    if op == "ret":
        return f"ret {fo(ins['value'])}"
    if op == "if":
        return f"if {fo(ins['cond'])}, else goto +{ins['offset']}"
    return f"goto {ins['offset']:+d}"


def format_function(fn: dict) -> str:
    """The text of one VM function: a header, then one numbered instruction per line."""
    names = fn.get("heap_names") or []
    params = ", ".join(f"%{i}: {p}" for i, p in enumerate(fn["params"]))
    lines = [f"@{fn['name']}({params})  # registers={fn['num_regs']} heap={fn['heap_size']}"]
    width = len(str(len(fn["code"]) - 1))
    for pc, ins in enumerate(fn["code"]):
        lines.append(f"  {pc:>{width}}  {format_instruction(ins, names)}")
    return "\n".join(lines)
