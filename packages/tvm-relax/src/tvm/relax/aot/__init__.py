"""Ahead-of-time compilation to a C package: ``relax.build(mod, target, exec_mode="aot")``.

For a program of static shapes the result is an :class:`AOTPackage` whose ``export(folder,
name)`` writes ``lib<name>.a``, ``lib<name>.so`` and ``<name>.h``: typed input/output structs,
``int <name>_run(...)``, the weights as const data, one workspace of a constant size (a static
memory plan, so a run allocates no heap memory) and error codes with ``<name>_last_error()``.
See ``docs/tutorials/deploy_aot.md``.
"""

from .build import build_aot
from .package import AOTPackage
from .plan import AOTError, Plan

__all__ = ["build_aot", "AOTPackage", "AOTError", "Plan"]
