"""``relax.build``: a Relax IRModule -> a VM :class:`~tvm.runtime.vm.Executable`.

::

    ex = relax.build(mod)                # for the host target of the plugin registry
    ex = relax.build(mod, target="c")    # or a named one
    print(ex.as_text())
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    out = vm["main"](x, w, b)

The steps, each an IRModule -> IRModule pass (print the module between them with
``PassContext(instruments=[PrintAfterEachPass()])``):

1. :func:`default_pipeline`: the graph passes of the opt level, LegalizeOps (operators to ``call_tir``), AnnotateTIROpPattern,
   FuseOps and FuseTIR (one kernel per fused group; skipped under ``opt_level=0``),
   DeadCodeElimination;
2. :func:`schedule_and_prepack`: the target's default schedules of the PrimFuncs, with the
   repacking of constant weights split out of the kernels and done at compile time
   (AnnotateLayoutFreeBuffers, SplitLayoutRewritePreproc, FoldConstant compiling the
   packing for the host target, :func:`tvm.ir.target.host_target`);
3. :func:`vm_lowering_pipeline`: ToNonDataflow, RemovePurityChecking, CallTIRRewrite
   (explicit outputs), StaticPlanBlockMemory (storage sharing), VMBuiltinLower (explicit
   allocations), VMShapeLower (checks of inputs, symbolic shapes);
4. :func:`~tvm.relax.vm.codegen.codegen` (bytecode) and ``tvm.tir.build`` of the PrimFuncs
   (TIR lowering, code generation; default schedules for PrimFuncs made after step 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

import numpy as np
from tvm.ir.module import IRModule
from tvm.ir.target import Target, as_target, host_target
from tvm.ir.transform import Pass, PassContext, Sequential
from tvm.runtime.vm import Executable

from ..expr import Constant, Function
from .codegen import codegen

if TYPE_CHECKING:
    from ..aot import AOTPackage

__all__ = ["build", "default_pipeline", "vm_lowering_pipeline", "bind_params",
           "schedule_and_prepack"]


def default_pipeline(opt_level: Optional[int] = None, graph: bool = True) -> Sequential:
    """Graph-level passes run by :func:`build` before VM lowering: the graph pipeline of
    ``opt_level`` (default: the current PassContext's; left out with ``graph=False``), then
    legalization and fusion."""
    from .. import transform as T

    if opt_level is None:
        opt_level = PassContext.current().opt_level
    passes: list[Pass] = []
    graph_pipeline = getattr(T, "get_default_graph_pipeline", None)
    if graph and graph_pipeline is not None:
        passes.append(graph_pipeline(opt_level))
    passes += [T.LegalizeOps(), T.AnnotateTIROpPattern(), T.FuseOps(), T.FuseTIR()]
    dce = getattr(T, "DeadCodeElimination", None)
    if dce is not None:
        passes.append(dce())
    return Sequential(passes, name="relax.default_pipeline")


def vm_lowering_pipeline() -> Sequential:
    """The passes from a legalized module to what the VM code generator reads."""
    from .. import transform as T

    return Sequential(
        [
            T.ToNonDataflow(),
            T.RemovePurityChecking(),
            T.CallTIRRewrite(),
            T.StaticPlanBlockMemory(),
            T.VMBuiltinLower(),
            T.VMShapeLower(),
        ],
        name="relax.vm_lowering_pipeline",
    )


def schedule_and_prepack(mod: IRModule, target: Target) -> IRModule:
    """``mod`` with the default schedules of ``target`` applied to its PrimFuncs (they carry
    ``tir.is_scheduled``, so ``tir.build`` leaves them as they are) and the weight packing
    of layout-free buffers moved to compile time: parameters that only receive constants
    are marked ``layout_free_buffers`` before scheduling, the blocks the schedule marks
    ``layout_rewrite_preproc`` are split into PrimFuncs of their own and FoldConstant
    evaluates those on the constants, compiled for the host target of the plugin registry.
    A target without default schedules, a kernel whose weight is not constant, or
    ``opt_level=0`` keeps the packing in the kernel; without a host JIT target installed the
    split-out packing functions stay in the module and run with it."""
    from tvm.ir.module import IRModule as _Module
    from tvm.tir.build import apply_default_schedule
    from tvm.tir.function import PrimFunc

    from .. import transform as T
    from ..transform.split_layout_rewrite_preproc import remove_unused_preproc

    mod = T.AnnotateLayoutFreeBuffers()(mod)
    prims = {gv: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
    if not prims:
        return mod
    scheduled = apply_default_schedule(_Module(prims), target)
    mod = mod.with_functions({gv: scheduled[gv] for gv in prims if scheduled[gv] is not prims[gv]})
    split = T.SplitLayoutRewritePreproc()(mod)
    if split is mod or host_target(allow_none=True) is None:
        return split
    folded = T.FoldConstant(evaluator="compile", layout_rewrite_only=True)(split)
    return remove_unused_preproc(folded)


def bind_params(mod: IRModule, params: Mapping[str, Any], func_name: str = "main") -> IRModule:
    """``mod`` with parameters of ``func_name`` replaced by constants (by parameter name)."""
    from ..transform._lowering_utils import substitute_vars

    if func_name not in mod:
        raise KeyError(f"bind_params: the module has no function {func_name!r}")
    func = mod[func_name]
    names = {p.name_hint: p for p in func.params}
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise KeyError(
            f"bind_params: {func_name} has no parameter(s) {', '.join(unknown)}; its "
            f"parameters are {', '.join(names)}"
        )
    remap = {}
    for name, value in params.items():
        const = value if isinstance(value, Constant) else Constant(np.asarray(
            value.numpy() if hasattr(value, "numpy") else value))
        sinfo = names[name].struct_info
        want = getattr(sinfo, "shape_values", None)
        shape = const.data.shape
        if want is not None and all(hasattr(d, "value") for d in want) and tuple(
                int(d.value) for d in want) != shape:
            raise ValueError(
                f"bind_params: parameter {name} of {func_name} has shape "
                f"{tuple(int(d.value) for d in want)}, the value given has shape {shape}"
            )
        dtype = getattr(sinfo, "dtype", None)
        if dtype not in (None, "void") and const.dtype != dtype:
            raise ValueError(
                f"bind_params: parameter {name} of {func_name} has dtype {dtype}, the value "
                f"given has dtype {const.dtype}"
            )
        remap[names[name]] = const
    new_params = [p for p in func.params if p.name_hint not in params]
    body = substitute_vars(func.body, remap, mod)
    new = Function(new_params, body, func.ret_struct_info, func.is_pure, func.attrs,
                   span=func.span)
    return mod.with_function(func_name, new)


def build(
    mod: Union[IRModule, Function],
    target: Union[str, dict, Target, None] = None,
    params: Optional[Mapping[str, Any]] = None,
    exec_mode: str = "bytecode",
    *,
    pipeline: Union[str, Pass, None] = "default",
    offload: Sequence[Any] = (),
) -> Union[Executable, "AOTPackage"]:
    """Compile ``mod`` for ``target`` into a VM executable (see the module docstring), or
    with ``exec_mode="aot"`` into a :class:`tvm.relax.aot.AOTPackage` (a C package of a
    static-shape ``main``: ``export(folder, name)`` writes ``lib<name>.a``/``.so`` and
    ``<name>.h``; see ``docs/tutorials/deploy_aot.md``).

    ``target`` defaults to the current one (``with Target(...)``), else the host target of
    the plugin registry (:func:`tvm.ir.target.host_target`: the installed kind that
    JIT-compiles for this machine).  ``params`` binds parameters of ``main`` to constants; ``pipeline`` replaces the graph
    passes (a Pass, or None to skip them; the VM lowering always runs).
    ``offload`` names external backends (``["cblas"]``, :mod:`tvm.relax.backend`) that take
    the ops their patterns match, after the graph passes of the default pipeline (so that
    batch norms are already folded into convolutions; with the layouts the backends ask for,
    ``Backend.desired_layouts``) and before legalization; functions already marked
    ``Codegen`` (``partition_for_<backend>``) are compiled by their backends either way.
    The executable's ``offload_report`` says what went where and why other ops stayed (also
    logged at INFO level to logger ``tvm.relax.backend``).
    """
    if exec_mode not in ("bytecode", "aot"):
        raise ValueError(
            f"relax.build: exec_mode {exec_mode!r} is not supported; 'bytecode' (the VM) or "
            "'aot' (a C package of a static-shape program, tvm.relax.aot)"
        )
    if isinstance(mod, Function):
        mod = IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise TypeError(f"relax.build expects an IRModule or a relax.Function, got "
                        f"{type(mod).__name__}")
    tgt = as_target(target)
    if params:
        mod = bind_params(mod, params)
    if pipeline == "default" and offload:
        # the graph passes before partitioning, so that the patterns see what they fold
        # (batch norms into convolution weights and a bias add), in the layouts the
        # backends ask for
        from .. import transform as T
        from ..backend import desired_layouts

        layouts = desired_layouts(offload)
        with tgt:
            mod = T.get_default_graph_pipeline(PassContext.current().opt_level,
                                               desired_layouts=layouts or None)(mod)
        graph = default_pipeline(graph=False)
    elif pipeline == "default":
        graph = default_pipeline()
    elif pipeline is None or isinstance(pipeline, Pass):
        graph = pipeline
    else:
        raise TypeError(f"relax.build: pipeline must be 'default', a Pass or None, got {pipeline!r}")
    mod, external_mods, report = _run_external_codegen(mod, offload)
    if exec_mode == "aot":
        from ..aot import build_aot

        pkg = build_aot(mod, tgt, graph, tuple(external_mods))
        pkg.offload_report = report  # type: ignore[attr-defined]
        return pkg
    mod, result = lower_to_bytecode(mod, tgt, graph)
    kernel_lib = None
    if len(result.kernels.functions):
        from tvm.tir.build import build as tir_build

        kernel_lib = tir_build(result.kernels, tgt)
    if external_mods:
        if kernel_lib is None:
            from tvm.runtime.module import Module

            kernel_lib = Module("external")
        for ext in external_mods:
            kernel_lib.import_module(ext)
    ex = Executable(result.program, result.constants, kernel_lib)
    ex.lowered_mod = mod  # type: ignore[attr-defined]  # the final Relax module, to inspect
    ex.offload_report = report  # type: ignore[attr-defined]
    return ex


def lower_to_bytecode(mod: IRModule, tgt: Any, graph: Optional[Pass]) -> tuple[IRModule, Any]:
    """``mod`` through the graph passes ``graph`` (None: none), scheduling and prepacking
    for ``tgt`` and the VM lowering, and its bytecode (``codegen``'s result): the steps the
    VM executable and the AOT package share."""
    with tgt:
        if graph is not None:
            mod = graph(mod)
        mod = schedule_and_prepack(mod, tgt)
        mod = vm_lowering_pipeline()(mod)
    return mod, codegen(mod, str(tgt))


def _run_external_codegen(mod: IRModule, offload: Sequence[Any]) -> tuple[IRModule, tuple, Any]:
    """Partition for ``offload`` and run the external code generators: ``(module without the
    partitions, the backends' runtime modules, the OffloadReport)``."""
    from ..backend import OffloadReport, partition_for
    from ..transform.run_codegen import EXTERNAL_MODS, RunCodegen

    if isinstance(offload, str):
        offload = [offload]
    report = OffloadReport()
    if offload:
        mod = partition_for(mod, list(offload), report)
    mod = RunCodegen(report=report)(mod)
    if offload:
        import logging

        logging.getLogger("tvm.relax.backend").info("%s", report)
    external = tuple(mod.get_attr(EXTERNAL_MODS) or ())
    if external:
        mod = mod.without_attr(EXTERNAL_MODS)
    return mod, external, report

