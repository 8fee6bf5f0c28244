"""A compilation kept stage by stage, for ``tvmc compile``, ``show`` and ``explore``.

:func:`compile_model` runs what ``relax.build`` runs, in the same order, but keeps the
module after each stage so that it can be printed, dumped or drawn:

=============  ====================================================================
stage          what it holds
=============  ====================================================================
``relax``      the imported model
``legalized``  after the graph passes of the opt level and LegalizeOps (``call_tir``)
``fused``      after AnnotateTIROpPattern, FuseOps, FuseTIR, DeadCodeElimination
``tir``        the scheduled kernels (tuned records or default rules), before lowering
``bytecode``   the VM program of the executable
``ll``, ...    the kernels' generated code, in the formats the kernel module has
=============  ====================================================================

The graph stages are ``relax.build``'s own pipeline (``relax.vm.build.default_pipeline``),
with the module kept as LegalizeOps leaves it; the executable is ``relax.build(fused, target,
pipeline=None)``: the graph stages are not run twice, and the result is the executable
``relax.build(mod, target)`` makes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from tvm.ir.instrument import PassInstrument
from tvm.ir.module import IRModule
from tvm.ir.target import Target, as_target
from tvm.ir.transform import PassContext

__all__ = ["GRAPH_STAGES", "CODE_STAGES", "Compiled", "compile_model", "tuning_database"]

GRAPH_STAGES = ("relax", "legalized", "fused", "tir")
CODE_STAGES = ("ll", "asm", "code")


@dataclass
class Compiled:
    """The modules of every stage and the executable."""

    target: Target
    stages: dict[str, IRModule]
    executable: Any = None

    def code(self, fmt: str) -> str:
        """The kernels' generated code: ``"code"`` is the kernel module's own format (C,
        CUDA, ...), ``"ll"``/``"asm"`` LLVM IR and assembly where the target makes them."""
        lib = getattr(self.executable, "kernel_lib", None)
        if lib is None or not lib.function_names:
            raise ValueError("the executable calls no compiled kernel: there is no code")
        return lib.get_source("" if fmt == "code" else fmt)

    def bytecode(self) -> str:
        return self.executable.as_text()


class _KeepAfter(PassInstrument):
    """Keeps the module the pass ``name`` returns, the first time it runs."""

    def __init__(self, name: str) -> None:
        self.pass_name = name
        self.mod: Optional[IRModule] = None

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        if self.mod is None and info.name == self.pass_name:
            self.mod = mod


def tuning_database(records: Optional[str]) -> Any:
    """The tuner's database at ``records`` (its work dir), or None."""
    if not records:
        return None
    path = Path(records)
    if not path.is_dir():
        raise ValueError(f"--tuning-records {records}: not a directory (give the --work-dir "
                         "of `tvmc tune`)")
    try:
        from tvm import meta_schedule as ms
    except ImportError:
        raise ValueError("--tuning-records needs the auto-tuner: pip install tvm-meta-schedule") \
            from None
    return ms.database.JSONDatabase(work_dir=path)


def compile_model(mod: IRModule, target: Any, opt_level: int = 3,
                  instruments: Sequence[Any] = (), records: Optional[str] = None,
                  build: bool = True, disabled_passes: Sequence[str] = ()) -> Compiled:
    """Compile ``mod`` for ``target`` keeping every stage (see the module docstring).

    ``instruments`` run under the PassContext of the whole compilation; ``records`` is a
    tuning work dir whose records replace the default schedules where they exist;
    ``build=False`` stops after the ``fused`` stage (no code is generated);
    ``disabled_passes`` never run (``PassContext(disabled_pass=...)``).
    """
    from tvm import relax
    from tvm.relax.vm.build import default_pipeline

    tgt = as_target(target)
    db = tuning_database(records)
    stages: dict[str, IRModule] = {"relax": mod}
    legalized = _KeepAfter("LegalizeOps")
    ctx = PassContext(opt_level=opt_level, instruments=[*instruments, legalized],
                      disabled_pass=list(disabled_passes))
    with ctx, tgt:
        fused = default_pipeline(opt_level)(mod)
    stages["legalized"] = legalized.mod if legalized.mod is not None else fused
    stages["fused"] = fused
    compiled = Compiled(tgt, stages)
    if not build:
        return compiled
    applied = db.applied(tgt) if db is not None else contextlib.nullcontext()
    with ctx, applied:
        compiled.executable = relax.build(fused, target=tgt, pipeline=None)
    lowered = compiled.executable.lowered_mod
    from tvm.tir.function import PrimFunc

    stages["tir"] = IRModule({gv: f for gv, f in lowered.items() if isinstance(f, PrimFunc)})
    return compiled
