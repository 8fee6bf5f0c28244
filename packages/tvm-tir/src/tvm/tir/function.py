"""PrimFunc: a TIR function — parameters, the buffers bound to them, and a body."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from tvm.ffi import def_field, ignore_field, register_object
from tvm.ir.base import BaseFunc
from tvm.ir.span import Span

from .buffer import Buffer
from .expr import Var
from .stmt import Stmt

__all__ = ["PrimFunc"]


@register_object("tir.PrimFunc")
class PrimFunc(BaseFunc):
    """A loop-level function.

    ``params`` are scalar or handle variables; ``buffer_map`` binds handle parameters to the
    buffers the body reads and writes.  ``attrs`` holds function attributes such as
    ``global_symbol`` and ``tir.noalias``.
    """

    params: tuple[Var, ...] = def_field()
    buffer_map: dict = def_field()
    body: Stmt = None  # type: ignore[assignment]
    ret_type: str = "void"
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(
        self,
        params: Sequence[Var],
        body: Stmt,
        ret_type: str = "void",
        buffer_map: Optional[Mapping[Var, Buffer]] = None,
        attrs: Optional[Mapping[str, Any]] = None,
        *,
        span: Optional[Span] = None,
    ):
        object.__setattr__(self, "params", tuple(params))
        object.__setattr__(self, "buffer_map", dict(buffer_map or {}))
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "ret_type", ret_type)
        object.__setattr__(self, "attrs", dict(attrs or {}))
        object.__setattr__(self, "span", span)

    def with_attr(self, key: str, value: Any) -> PrimFunc:
        return self.with_fields(attrs={**self.attrs, key: value})

    def script(self, name: Optional[str] = None) -> str:
        """This function as TVMScript (``@T.prim_func``); it parses back to an equal function."""
        from tvm.script.tir.printer import print_prim_func

        return print_prim_func(self, name)

    def show(self, name: Optional[str] = None) -> None:
        """Print :meth:`script`."""
        print(self.script(name), end="")

    def with_body(self, body: Stmt) -> PrimFunc:
        return self.with_fields(body=body)

    def specialize(self, param_map: Mapping[Any, Any]) -> PrimFunc:
        """Bind some parameters (or symbolic shape variables) to values or buffers."""
        from .transform.specialize import specialize

        return specialize(self, param_map)
