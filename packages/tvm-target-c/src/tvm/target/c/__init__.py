"""tvm.target.c: the ``c`` target — TIR printed as C, compiled by the system C compiler.

::

    rt_mod = tvm.tir.build(func, target="c")     # through the plugin
    rt_mod["add"](a, b, c)
    print(rt_mod.get_source())                   # the generated C
    rt_mod.export_library("add.so")              # loads with tvm-runtime alone

The printer is :class:`CSourcePrinter` (the shared ``tvm.tir.codegen.CLikePrinter`` plus
the packed ABI of ``docs/abi.md``); compiled libraries are cached (see :mod:`.compiler`).

Names are imported lazily: loading the plugin (``tvm.target.c.plugin``) must not import
the compiler.
"""

from __future__ import annotations

from tvm.ffi.lazy import lazy_exports

_EXPORTS = {
    "build": ".build",
    "generate_source": ".codegen",
    "CSourcePrinter": ".codegen",
    "CModule": ".module",
    "CompilerOptions": ".compiler",
    "compile_source": ".compiler",
    "find_compiler": ".compiler",
    "cache_dir": ".compiler",
    "clear_cache": ".compiler",
    "CCompileError": ".compiler",
    "CCompilerNotFoundError": ".compiler",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
