"""The ``cblas`` plugin: registers the cblas backend (entry point ``tvm: cblas``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tvm.ffi.plugin import hookimpl, register_plugin


def make_backend() -> Any:
    """The :class:`~tvm.relax.backend.Backend`: unavailable (with the reason) without a
    CBLAS library."""
    from tvm.relax.backend import Backend

    from .codegen import build_module, patterns
    from .library import find_cblas

    lib, why = find_cblas()

    def codegen(funcs: Sequence[tuple[str, Any]], **options: Any) -> Any:
        if options:
            raise TypeError(f"the cblas codegen takes no options, got {sorted(options)}")
        if lib is None:
            raise RuntimeError(f"cblas: {why}")
        return build_module(funcs, lib)

    return Backend("cblas", patterns(), codegen, unavailable=None if lib else why,
                   package="tvm-contrib-cblas", bind_constants=False)


@hookimpl
def tvm_relax_register_backends(register: Callable[[Any], None]) -> None:
    register(make_backend())


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``cblas``."""
    import sys

    from tvm.ffi.plugin import get_plugin_manager

    if get_plugin_manager().get_plugin("cblas") is not None:
        return
    register_plugin(sys.modules[__name__], "cblas", distribution="tvm-contrib-cblas",
                    version="0.1.0")
