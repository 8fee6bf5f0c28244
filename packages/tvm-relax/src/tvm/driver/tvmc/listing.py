"""Finding one kernel, and the part of it that matters, in a generated listing.

A kernel module's source holds every kernel, and each kernel starts with the packed-call
argument checks (dozens of compare-and-branch blocks) before its loops. ``tvmc show --kernel``
prints the kernel asked for; with ``hot`` (the default) it prints its compute functions (the
code generators split a kernel ``k`` into a checking entry ``k`` and ``k_compute_`` /
``k_parallel_lambda`` / ``k_compute_parallel`` parts); in assembly (and in LLVM IR where the
parts were inlined) it prints their loops, found from the back edges of the control-flow
graph.
"""

from __future__ import annotations

import re

__all__ = ["split_functions", "kernel_source", "loops"]

_LL_DEFINE = re.compile(r"^define\b[^@]*@\"?([\w.$-]+)\"?\(")
_ASM_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):")
_ASM_JUMP = re.compile(r"^\s+j\w*\s+([A-Za-z_.$][\w.$]*)\s*$|^\s+b(?:\.\w+)?\s+([\w.$]+)\s*$")
_LL_LABEL = re.compile(r"^([\w.$-]+):")
_LL_BRANCH = re.compile(r"label %([\w.$-]+)")
_C_FUNC = re.compile(r"^(?!\s)(?:[\w*]+\s+)+\**(\w+)\s*\([^;]*\)\s*\{\s*$")


def _braced(lines: list[str], header: re.Pattern) -> dict[str, str]:
    """Functions that start on a line ``header`` matches (group 1: the name) and end at the
    next line that is a lone ``}`` (LLVM IR and the C-like sources print them so)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = header.match(lines[i])
        if m is None:
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j] != "}":
            j += 1
        out[m.group(1)] = "\n".join(lines[i:j + 1])
        i = j + 1
    return out


def split_functions(text: str, fmt: str) -> dict[str, str]:
    """``{function name: its text}`` of a listing: ``"ll"`` (LLVM IR), ``"asm"`` or a
    C-like source (C, CUDA, OpenCL, Metal)."""
    lines = text.splitlines()
    if fmt != "asm":
        return _braced(lines, _LL_DEFINE if fmt == "ll" else _C_FUNC)
    out: dict[str, str] = {}
    symbols = {m.group(1) for m in re.finditer(r"\.type\s+([\w.$]+),\s*[@%]function", text)}
    current, body = None, []
    for line in lines:
        m = _ASM_LABEL.match(line)
        if m is not None and m.group(1) in symbols:
            if current is not None:
                out[current] = "\n".join(body)
            current, body = m.group(1), []
        if current is not None:
            body.append(line)
            if re.match(rf"^\s*\.size\s+{re.escape(current)},", line):
                out[current] = "\n".join(body)
                current, body = None, []
    if current is not None:
        out[current] = "\n".join(body)
    return out


def _blocks(function_text: str, fmt: str) -> list[tuple[str, list[str], list[str]]]:
    """The basic blocks of a function: ``(label, lines, successor labels)`` in text order."""
    label_re = _ASM_LABEL if fmt == "asm" else _LL_LABEL
    blocks: list[tuple[str, list[str]]] = [("<entry>", [])]
    for line in function_text.splitlines():
        m = label_re.match(line)
        if m is not None:
            blocks.append((m.group(1), []))
        blocks[-1][1].append(line)
    out = []
    for i, (label, lines) in enumerate(blocks):
        succs: list[str] = []
        falls = True
        for line in lines:
            text = line.strip()
            if fmt == "asm":
                j = _ASM_JUMP.match(line)
                if j is not None:
                    succs.append(j.group(1) or j.group(2))
                    falls = not re.match(r"(jmp|b)\s", text)
                elif re.match(r"(ret|jmp\s*\*)", text):
                    falls = False
            elif text.startswith(("br ", "switch ", "indirectbr ")):
                succs += _LL_BRANCH.findall(text)
                falls = False
            elif text.startswith(("ret ", "ret\t", "unreachable")) or text == "ret void":
                falls = False
        if fmt == "asm" and falls and i + 1 < len(blocks):
            succs.append(blocks[i + 1][0])
        if fmt == "ll" and falls and i + 1 < len(blocks) and lines:
            succs.append(blocks[i + 1][0])
        out.append((label, lines, succs))
    return out


def loops(function_text: str, fmt: str, innermost: bool = False) -> list[str]:
    """The outermost loops (with ``innermost``: the loops holding no other loop) of a
    function in assembly or LLVM IR (``fmt`` ``"asm"`` / ``"ll"``), each as the text of its
    blocks in program order. A loop is found from a back
    edge of a depth-first walk of the control-flow graph (a branch to a block still on the
    walk's stack) as the blocks that reach the branch without passing the loop's header."""
    blocks = _blocks(function_text, fmt)
    index = {label: i for i, (label, _, _) in enumerate(blocks)}
    succ = [[index[s] for s in b[2] if s in index] for b in blocks]
    pred: list[list[int]] = [[] for _ in blocks]
    for u, vs in enumerate(succ):
        for v in vs:
            pred[v].append(u)
    start = 1 if len(blocks) > 1 and not blocks[0][1] else 0
    state = [0] * len(blocks)  # 0 unseen, 1 on the stack, 2 done
    back: list[tuple[int, int]] = []
    stack = [(start, iter(succ[start]))]
    state[start] = 1
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            state[node] = 2
            stack.pop()
        elif state[nxt] == 1:
            back.append((node, nxt))
        elif state[nxt] == 0:
            state[nxt] = 1
            stack.append((nxt, iter(succ[nxt])))
    bodies: list[set[int]] = []
    for tail, head in back:
        body, work = {head, tail}, [tail] if tail != head else []
        while work:
            for p in pred[work.pop()]:
                if p not in body:
                    body.add(p)
                    work.append(p)
        bodies.append(body)
    if innermost:
        chosen = [b for b in bodies if not any(other < b for other in bodies)]
    else:
        chosen = [b for b in bodies if not any(b < other for other in bodies)]
    unique = sorted({frozenset(b) for b in chosen}, key=min)
    return ["\n".join(line for i in sorted(b) for line in blocks[i][1]).rstrip() for b in unique]


def _is_part(name: str, kernel: str) -> bool:
    return name.startswith(kernel + "_") and any(
        tag in name[len(kernel):] for tag in ("_compute", "_parallel", "_lambda"))


def kernel_source(text: str, fmt: str, kernel: str, hot: bool = True) -> str:
    """The listing of ``kernel`` (see the module docstring); a ValueError listing the
    kernels there are when it has none called so."""
    functions = split_functions(text, fmt)
    names = [n for n in functions if n == kernel or n.startswith(kernel + "_")]
    entries = sorted(n for n in functions if not any(
        _is_part(n, other) for other in functions if other != n))
    if kernel not in functions and f"__tvm_fn_{kernel}" in functions:
        functions[kernel] = functions[f"__tvm_fn_{kernel}"]  # a name C reserves, renamed
    if kernel not in functions:
        shown = ", ".join(e for e in entries if not e.startswith("__")) or "none"
        raise ValueError(f"no kernel {kernel!r} in the generated {fmt} code; kernels: {shown}")
    parts = [n for n in names if _is_part(n, kernel)]
    if not hot:
        return "\n\n".join(functions[n] for n in [kernel, *parts])
    hot_functions = parts or [kernel]
    if fmt == "asm" or (fmt == "ll" and not parts):
        found = [loop for n in hot_functions for loop in loops(functions[n], fmt)]
        if found:
            note = "#" if fmt == "asm" else ";"
            return (f"{note} loops of {kernel} (argument checks left out; --all shows "
                    "them)\n" + "\n\n".join(found))
    return "\n\n".join(functions[n] for n in hot_functions)
