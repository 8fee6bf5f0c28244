"""The ``c`` plugin of tvm (entry point ``[project.entry-points.tvm] c``).

Registers the ``c`` target kind (CPU, device type 1) and answers ``tvm_tir_codegen`` for
it.  Importing this module is cheap; the compiler is looked for when code is built.
Hooks receive a :class:`tvm.ir.target.Target`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from tvm.ffi.plugin import hookimpl

if TYPE_CHECKING:
    from tvm.ir.target import Target

__all__ = ["tvm_register_target_kinds", "tvm_tir_codegen", "C_TARGET_ATTRS", "ensure_registered"]

#: attribute -> (type, default) of the c target kind
C_TARGET_ATTRS = {
    "mcpu": (str, None),
    "cc": (str, None),
    "cflags": (list[str], None),
    "num-cores": (int, None),
    "opt-level": (int, 3),
}


def _kind() -> Any:
    from tvm.ir.target import TargetKind

    return TargetKind(
        "c",
        1,
        attrs=C_TARGET_ATTRS,
        default_keys=("cpu",),
        package="tvm-target-c",
        doc="C source compiled by the system C compiler: -mcpu (-march, default native; "
            "'generic' for none), -cc, -cflags, -num-cores, -opt-level",
    )


@hookimpl
def tvm_register_target_kinds(register: Callable[[Any], None]) -> None:
    register(_kind())


@hookimpl
def tvm_tir_codegen(target: Target) -> Callable[..., Any] | None:
    """``build`` for a ``c`` :class:`tvm.ir.target.Target`, else None."""
    if target.kind_name != "c":
        return None
    from .build import build

    return build


def ensure_registered() -> None:
    """Make the ``c`` kind available even when this distribution is not pip-installed (its
    entry point then does not exist): registers this module as the in-process plugin ``c``."""
    import sys

    from tvm.ffi.plugin import get_plugin_manager, register_plugin
    from tvm.ir.target import UnknownTargetKindError, get_target_kind

    try:
        get_target_kind("c")
        return
    except UnknownTargetKindError:
        pass
    if get_plugin_manager().get_plugin("c") is None:
        register_plugin(sys.modules[__name__], "c", distribution="tvm-target-c")
