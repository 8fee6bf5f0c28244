"""The ``dnnl`` plugin: registers the oneDNN backend (entry point ``tvm: dnnl``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from tvm.ffi.plugin import hookimpl, register_plugin


def make_backend() -> Any:
    """The :class:`~tvm.relax.backend.Backend`: unavailable (with the reason) without
    oneDNN."""
    from tvm.relax.backend import Backend

    from . import library
    from .codegen import build_module, patterns

    lib, why = library.find_dnnl()

    def codegen(funcs: Sequence[tuple[str, Any]], **options: Any) -> Any:
        if options:
            raise TypeError(f"the dnnl codegen takes no options, got {sorted(options)}")
        if lib is None:
            raise RuntimeError(f"dnnl: {why}")
        return build_module(funcs, lib)

    return Backend("dnnl", patterns(), codegen, unavailable=None if lib else why,
                   package="tvm-contrib-dnnl", bind_constants=False,
                   desired_layouts={"relax.nn.conv2d": ["NHWC", "OHWI"]})


@hookimpl
def tvm_relax_register_backends(register: Callable[[Any], None]) -> None:
    register(make_backend())


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``dnnl``."""
    from tvm.ffi.plugin import get_plugin_manager

    if get_plugin_manager().get_plugin("dnnl") is not None:
        return
    register_plugin(sys.modules[__name__], "dnnl", distribution="tvm-contrib-dnnl",
                    version="0.1.0")
