"""``tir.build`` and ``tir.lower``: from a PrimFunc (or a module of them) to a runtime module.

::

    mod = tir.lower(func)                      # lowered TIR, to read (mod.show())
    rt_mod = tir.build(func)                   # for the host target of the plugin registry
    rt_mod = tir.build(func, target="c")       # or a named one
    rt_mod["main"](a, b, c)

The steps of :func:`build`:

1. the input becomes an IRModule; a PrimFunc without ``global_symbol`` gets its name; the
   target becomes a :class:`~tvm.ir.target.Target` (by default the current one, else
   :func:`tvm.ir.target.host_target`, the installed host JIT);
2. :func:`apply_default_schedule` lets a target plugin schedule functions that carry no
   schedule (hook ``tvm_tir_default_schedule``);
3. the pipeline runs under the current PassContext and ``with target``: by default
   :func:`get_default_pipeline`, i.e. the lowering passes of :func:`get_lowering_pipeline`
   then MakePackedAPI, or for a GPU target (keys include ``"gpu"``) :func:`get_gpu_pipeline`,
   which ends with host functions and ``device_kernel_launch`` kernels; both end with the
   target kind's own passes (:func:`get_target_passes`), so instruments see them;
4. the code generator of the target (hook ``tvm_tir_codegen``, see :mod:`tvm.tir.hooks`)
   turns the module into a runtime module.

A target whose plugin is not installed fails at step 1 with the error of
:class:`tvm.ir.Target`, which says what to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

from tvm.ffi.plugin import call_hook
from tvm.ffi.structural import deep_recursion
from tvm.ir.module import IRModule
from tvm.ir.target import Target, as_target, target_kind_plugin
from tvm.ir.transform import Pass, Sequential, get_pass

from .function import PrimFunc
from .hooks import get_codegen
from .schedule.rules.rule import SCHEDULED_ATTR

__all__ = [
    "build", "lower", "get_default_pipeline", "get_lowering_pipeline", "apply_default_schedule",
    "get_gpu_pipeline", "get_target_passes", "is_gpu_target",
]

FuncOrModule = Union[PrimFunc, IRModule]
PipelineLike = Union[None, str, Pass, Sequence[Pass]]


def get_lowering_pipeline() -> Sequential:
    """The TIR lowering passes, from blocks to flat, vectorized, simplified loops.

    CompactBufferAllocation places ``local``/``shared`` buffers where they are used at the
    size they are used (on a CPU: into the body of the parallel loop around their uses, one
    copy per iteration; a CPU schedule marks per-row intermediates ``local`` for that).

    LegalizeLowPrecision comes right after FlattenBuffer: from there on no float8/float4/
    int4/int2 dtype is left (bytes and bit arithmetic instead), for every target.  LowerChecks
    turns the ``tir.check`` values of data-dependent reads (gather indices, integer divisors)
    into asserts once the blocks are gone; GuardIntegerDivision first makes every other integer
    division that could trap (a zero divisor, ``INT_MIN / -1``) one of them."""
    from . import transform as T

    return Sequential(
        [
            T.LowerInitBlock(),
            T.LowerOpaqueBlock(),
            T.GuardIntegerDivision(),
            T.LowerChecks(),
            T.CompactBufferAllocation(),
            T.FlattenBuffer(),
            T.LegalizeLowPrecision(),
            T.Simplify(),
            T.VectorizeLoop(),
            T.UnrollLoop(),
            T.LowerAllocation(),
            T.Simplify(),
            T.RemoveNoOp(),
        ],
        name="tir.lowering_pipeline",
    )


def is_gpu_target(target: Union[str, Target]) -> bool:
    """Whether ``target`` compiles to GPU kernels (its keys include ``"gpu"``)."""
    return "gpu" in tuple(_as_target(target).keys)


def get_gpu_pipeline(target: Union[None, str, Target] = None) -> Sequential:
    """The pipeline of GPU targets: cross-thread reductions, blocks lowered, thread-bound
    loops to kernel launches, shared/local buffers moved to and shrunk for their uses, the
    lowering passes, the launch checks against ``target``'s limits, allreduce and barrier
    lowering, and the host/device split (no MakePackedAPI: the
    target's code generator writes the host side).  Default target: the current one."""
    from . import transform as T
    from .transform._gpu import gpu_limits

    tgt = _as_target(target) if target is not None else Target.current(allow_none=False)
    return Sequential(
        [
            T.LowerCrossThreadReduction(),
            T.LowerInitBlock(),
            T.LowerOpaqueBlock(),
            T.LowerThreadBinding(),
            get_lowering_pipeline(),  # CompactBufferAllocation: after LowerOpaqueBlock
            T.VerifyGPUCode(tgt),
            T.LowerThreadAllreduce(gpu_limits(tgt).thread_warp_size),
            T.InjectStorageSync(),
            T.SplitHostDevice(),
        ],
        name="tir.gpu_pipeline",
    )


def get_target_passes(target: Union[str, Target]) -> list[Pass]:
    """The TIR passes ``target``'s kind declares (``TargetKind.lowering_passes``), looked up
    by name with :func:`tvm.ir.transform.get_pass`; they end the default pipeline and work
    on its output (packed functions, or a GPU target's host functions and kernels)."""
    return [get_pass(name) for name in _as_target(target).kind.lowering_passes]


def get_default_pipeline(target: Union[None, str, Target] = None) -> Sequential:
    """:func:`get_lowering_pipeline` followed by MakePackedAPI for ``target``'s device, or
    :func:`get_gpu_pipeline` for a GPU target, then the target's own passes
    (:func:`get_target_passes`).  Without a target: the CPU pipeline and no target passes."""
    from .transform.make_packed_api import MakePackedAPI

    if target is None:
        passes: list[Pass] = [get_lowering_pipeline(), MakePackedAPI()]
    else:
        tgt = _as_target(target)
        if is_gpu_target(tgt):
            passes = [get_gpu_pipeline(tgt)]
        else:
            passes = [get_lowering_pipeline(), MakePackedAPI(tgt.device_type)]
        passes += get_target_passes(tgt)
    if len(passes) == 1:
        return passes[0]  # type: ignore[return-value]  # the GPU pipeline, as it is
    return Sequential(passes, name="tir.default_pipeline")


def _as_target(target: Union[None, str, dict, Target]) -> Target:
    """``target`` as a Target; None: the current target, else the registry's host target."""
    return as_target(target)


def _as_module(func_or_mod: Any, name: Optional[str]) -> IRModule:
    if isinstance(func_or_mod, PrimFunc):
        symbol = name or func_or_mod.attrs.get("global_symbol") or "main"
        func = func_or_mod
        if func.attrs.get("global_symbol") != symbol:
            func = func.with_attr("global_symbol", symbol)
        return IRModule({symbol: func})
    if isinstance(func_or_mod, IRModule):
        if name is not None:
            raise ValueError(
                f"name={name!r} renames a single PrimFunc; the functions of an IRModule keep "
                "their names (rename them in the module instead)"
            )
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, func in func_or_mod.items():
            if isinstance(func, PrimFunc) and not func.attrs.get("global_symbol"):
                func = func.with_attr("global_symbol", gv.name_hint)
                changed = True
            funcs[gv] = func
        return IRModule(funcs, func_or_mod.attrs) if changed else func_or_mod
    raise TypeError(
        f"expected a tir.PrimFunc or an IRModule, got {type(func_or_mod).__name__}"
    )


def _as_pipeline(pipeline: PipelineLike, target: Optional[Target], lowering_only: bool) -> Pass:
    if pipeline is None or pipeline == "default":
        return get_lowering_pipeline() if lowering_only else get_default_pipeline(target)
    if isinstance(pipeline, Pass):
        return pipeline
    if isinstance(pipeline, str):
        return get_pass(pipeline)
    if isinstance(pipeline, (list, tuple)):
        return Sequential(list(pipeline), name="tir.custom_pipeline")
    raise TypeError(
        "pipeline must be None, 'default', a registered pass name, a Pass or a list of "
        f"passes; got {type(pipeline).__name__} {pipeline!r}"
    )


def apply_default_schedule(mod: IRModule, target: Union[str, dict, Target]) -> IRModule:
    """``mod`` scheduled by the target plugin's default rules (hook
    ``tvm_tir_default_schedule``, asked with a :class:`~tvm.ir.target.Target`), or unchanged
    when every PrimFunc is already scheduled (``tir.is_scheduled``) or no plugin answers.

    Each unscheduled PrimFunc is first offered to hook ``tvm_tir_tuned_schedule`` (a tuning
    record database while it is applied); the functions it schedules keep that schedule."""
    target = _as_target(target)
    pending = [
        gv for gv, f in mod.items()
        if isinstance(f, PrimFunc) and not f.attrs.get(SCHEDULED_ATTR)
    ]
    if not pending:
        return mod
    mod = _apply_tuned_schedules(mod, pending, target)
    if all(mod[gv].attrs.get(SCHEDULED_ATTR) for gv in pending):
        return mod
    result = call_hook("tvm_tir_default_schedule", mod=mod, target=target,
                       owner=target_kind_plugin(target.kind_name))
    if result is None:
        return mod
    if not isinstance(result, IRModule):
        raise TypeError(
            f"a tvm_tir_default_schedule hook returned {type(result).__name__} for target "
            f"{str(target)!r}; expected an IRModule or None"
        )
    return result


def _apply_tuned_schedules(mod: IRModule, pending: list, target: Target) -> IRModule:
    tuned = {}
    for gv in pending:
        func = call_hook("tvm_tir_tuned_schedule", func=mod[gv], target=target)
        if func is None:
            continue
        if not isinstance(func, PrimFunc) or not func.attrs.get(SCHEDULED_ATTR):
            raise TypeError(
                f"a tvm_tir_tuned_schedule hook returned {type(func).__name__} for "
                f"{gv.name_hint}; expected a PrimFunc marked {SCHEDULED_ATTR} or None")
        tuned[gv] = func
    return mod.with_functions(tuned) if tuned else mod


def lower(
    func_or_mod: FuncOrModule,
    name: Optional[str] = None,
    target: Union[None, str, Target] = None,
    pipeline: PipelineLike = None,
) -> IRModule:
    """The lowered (not yet packed) module of ``func_or_mod``, for inspection.

    With a ``target``, default schedules are applied first and passes run under it.
    ``pipeline`` replaces :func:`get_lowering_pipeline`.
    """
    mod = _as_module(func_or_mod, name)
    passes = _as_pipeline(pipeline, None, lowering_only=True)
    if target is None:
        return passes(mod)
    tgt = _as_target(target)
    mod = apply_default_schedule(mod, tgt)
    with tgt:
        return passes(mod)


def build(
    func_or_mod: FuncOrModule,
    target: Union[None, str, dict, Target] = None,
    name: Optional[str] = None,
    pipeline: PipelineLike = None,
) -> Any:
    """Compile ``func_or_mod`` for ``target`` into a runtime module (see the module docstring).

    ``target`` defaults to the current one (``with Target(...)``), else the host target of
    the plugin registry (:func:`tvm.ir.target.host_target`: the installed kind that JIT-compiles
    for this machine).  ``name`` names a single PrimFunc (default: its ``global_symbol``,
    else ``"main"``).  ``pipeline`` replaces :func:`get_default_pipeline` entirely (include
    MakePackedAPI if the target expects packed functions, and :func:`get_target_passes`).
    """
    mod = _as_module(func_or_mod, name)
    tgt = _as_target(target)
    mod = apply_default_schedule(mod, tgt)
    passes = _as_pipeline(pipeline, tgt, lowering_only=False)
    with tgt:
        mod = passes(mod)
    with deep_recursion():  # code generators walk expressions recursively, as passes do
        return get_codegen(tgt)(mod, tgt)
