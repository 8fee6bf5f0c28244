"""The host side of a GPU function as data: argument checks and kernel launches.

After SplitHostDevice, the host part of a GPU function only binds shapes, allocates device
workspaces and launches kernels.  :func:`host_program` writes it as a JSON-able dict that
``tvm.runtime.device_module`` runs without the compiler (the run side of every GPU target
shares it, like TVM's launch-parameter config)::

    {"name": "add",
     "params": [{"name": "A", "kind": "tensor", "dtype": "float32",
                 "shape": [["var", "n"]], "data": "A"}, ...],
     "body": ["launch", "add_kernel", [["var", "A"], ["var", "B"], ["var", "n"]],
              [["floordiv", ["add", ["var", "n"], 127], 128], 128]]}

Expressions are the run-time format of :mod:`tvm.runtime.int_expr` (shared with the VM's
bytecode, written by :func:`tvm.tir.codegen.int_expr.to_int_expr`) with named variables:
``["var", name]``, literals, ``["add", a, b]``, ``["select", c, t, f]``, ``["cast", dtype,
a]``, ...  Statements:
``["seq", [...]]``, ``["let", name, value, body]``, ``["assert", cond, message, [args],
body]``, ``["alloc", name, dtype, count, body]`` (device workspace of ``count`` elements),
``["launch", kernel, [args], [extents]]`` (one extent per launch tag of the kernel),
``["for", name, min, extent, body]``, ``["if", cond, then, else_or_null]``, ``["nop"]``.
A tensor's ``shape`` entries are expressions: a bare variable binds at its first occurrence,
the rest are checked once every variable is bound.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi.dtype import DTypeCode, parse_dtype

from .. import expr as E
from ..function import PrimFunc
from ..stmt import (
    Allocate, AssertStmt, AttrStmt, DeclBuffer, Evaluate, For, ForKind, IfThenElse, LetStmt,
    SeqStmt, Stmt,
)
from .c_types import CodegenError
from .int_expr import to_int_expr

__all__ = ["host_program", "HOST_PROGRAM_VERSION"]

#: 2: expressions in the shared run-time format (version 1 had its own)
HOST_PROGRAM_VERSION = 2

class _Writer:
    def __init__(self, fname: str, kernels: dict[str, dict]) -> None:
        self.fname = fname
        self.kernels = kernels
        self.names: dict[E.Var, str] = {}
        self.used: set[str] = set()

    def name(self, var: E.Var) -> str:
        got = self.names.get(var)
        if got is None:
            base = var.name or "v"
            got, k = base, 0
            while got in self.used:
                k += 1
                got = f"{base}_{k}"
            self.used.add(got)
            self.names[var] = got
        return got

    def fail(self, what: str) -> CodegenError:
        return CodegenError(f"{self.fname}: the host part of a GPU function {what}; the host "
                            "only checks arguments, allocates workspaces and launches kernels")

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> Any:
        return to_int_expr(e, self.var_key, self.fail)

    def var_key(self, var: E.Var) -> str:
        if var not in self.names:
            raise self.fail(f"uses the variable {var.name!r}, which it never defines")
        return self.names[var]

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> list:
        if isinstance(s, SeqStmt):
            return ["seq", [self.stmt(x) for x in s.seq]]
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            return ["let", self.name(s.var), value, self.stmt(s.body)]
        if isinstance(s, AssertStmt):
            return ["assert", self.expr(s.condition), s.message,
                    [self.expr(a) for a in s.message_args], self.stmt(s.body)]
        if isinstance(s, (AttrStmt, DeclBuffer)):
            return self.stmt(s.body)
        if isinstance(s, Allocate):
            if s.scope not in ("global", ""):
                raise self.fail(f"allocates {s.buffer_var.name!r} in scope {s.scope!r} outside "
                                "any kernel (shared and local memory exist only in kernels)")
            count: Any = E.IntImm("int64", 1)
            for ext in s.extents:
                count = count * ext if not (isinstance(count, E.IntImm) and count.value == 1) \
                    else ext
            return ["alloc", self.name(s.buffer_var), s.dtype, self.expr(count), self.stmt(s.body)]
        if isinstance(s, For):
            if s.kind not in (ForKind.SERIAL, ForKind.UNROLLED):
                raise self.fail(f"has the {s.kind.name.lower()} loop {s.loop_var.name!r} "
                                "outside any kernel")
            return ["for", self.name(s.loop_var), self.expr(s.min), self.expr(s.extent),
                    self.stmt(s.body)]
        if isinstance(s, IfThenElse):
            return ["if", self.expr(s.condition), self.stmt(s.then_case),
                    None if s.else_case is None else self.stmt(s.else_case)]
        if isinstance(s, Evaluate):
            v = s.value
            if isinstance(v, (E.IntImm, E.FloatImm)):
                return ["nop"]
            if isinstance(v, E.Call) and getattr(v.op, "name", "") == "tir.tvm_call_packed":
                return self.launch(v)
            raise self.fail(f"evaluates {v}")
        raise self.fail(f"contains a {type(s).__name__} statement")

    def launch(self, call: E.Call) -> list:
        name = call.args[0]
        if not isinstance(name, E.StringImm):
            raise self.fail("launches a kernel whose name is not a string")
        kernel = self.kernels.get(name.value)
        if kernel is None:
            raise self.fail(f"launches {name.value!r}, which is not a kernel of the module")
        nargs = len(kernel["params"])
        rest = call.args[1:]
        if len(rest) != nargs + len(kernel["launch_params"]):
            raise self.fail(f"launches {name.value!r} with {len(rest)} values; expected "
                            f"{nargs} arguments and {len(kernel['launch_params'])} extents")
        return ["launch", name.value, [self.expr(a) for a in rest[:nargs]],
                [self.expr(a) for a in rest[nargs:]]]


def host_program(func: PrimFunc, kernels: dict[str, dict], name: Optional[str] = None) -> dict:
    """The host program (see the module docstring) of ``func``, the host part of a GPU
    function; ``kernels`` maps kernel names to their descriptions (``params``,
    ``launch_params``)."""
    fname = name or func.attrs.get("global_symbol") or "main"
    w = _Writer(fname, kernels)
    from ..transform.legalize_low_precision import original_dtype

    params: list[dict[str, Any]] = []
    for i, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is None:
            code = parse_dtype(p.dtype)[0]
            if code == DTypeCode.HANDLE:
                raise CodegenError(f"{fname}: parameter {p.name!r} is an opaque handle; GPU "
                                   "functions take tensors and scalars")
            params.append({"name": p.name, "kind": "scalar", "dtype": p.dtype,
                           "var": w.name(p)})
            continue
        if buf.strides:
            raise CodegenError(f"{fname}: buffer {buf.name!r} has explicit strides; GPU "
                               "functions take compact tensors")
        if buf.elem_offset is not None and not (isinstance(buf.elem_offset, E.IntImm)
                                                and buf.elem_offset.value == 0):
            raise CodegenError(f"{fname}: buffer {buf.name!r} has an element offset; GPU "
                               "functions take tensors that start at their data pointer")
        params.append({"name": buf.name, "kind": "tensor", "dtype": original_dtype(func, i),
                       "shape": None, "data": w.name(buf.data), "_buffer": buf})
    buffers = [entry.pop("_buffer") for entry in params if "_buffer" in entry]
    for buf in buffers:  # a bare variable in a shape is bound by its first occurrence
        for dim in buf.shape:
            if isinstance(dim, E.Var):
                w.name(dim)
    tensors = [entry for entry in params if entry["kind"] == "tensor"]
    for entry, buf in zip(tensors, buffers):
        try:
            entry["shape"] = [w.expr(d) for d in buf.shape]
        except CodegenError:
            raise CodegenError(
                f"{fname}: the shape {tuple(buf.shape)} of buffer {buf.name!r} uses a variable "
                "that no argument binds (a symbolic dimension must appear alone in some "
                "argument's shape)") from None
    body = w.stmt(func.body)
    return {"version": HOST_PROGRAM_VERSION, "name": fname, "params": params, "body": body}
