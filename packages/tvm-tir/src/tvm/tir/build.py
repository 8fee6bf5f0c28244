"""``tir.build`` and ``tir.lower``: from a PrimFunc (or a module of them) to a runtime module.

::

    mod = tir.lower(func)                      # lowered TIR, to read (mod.show())
    rt_mod = tir.build(func, target="llvm")    # a tvm.runtime.Module from the target plugin
    rt_mod["main"](a, b, c)

The steps of :func:`build`:

1. the input becomes an IRModule; a PrimFunc without ``global_symbol`` gets its name;
2. :func:`apply_default_schedule` lets a target plugin schedule functions that carry no
   schedule (hook ``tvm_tir_default_schedule``);
3. the pipeline runs under the current PassContext and ``with target``: by default
   :func:`get_default_pipeline`, i.e. the lowering passes of :func:`get_lowering_pipeline`
   then MakePackedAPI, or for a GPU target (keys include ``"gpu"``) :func:`get_gpu_pipeline`,
   which ends with host functions and ``device_kernel_launch`` kernels;
4. the code generator of the target (hook ``tvm_tir_codegen``, see :mod:`tvm.tir.hooks`)
   turns the module into a runtime module.

A target whose plugin is not installed fails at step 0 with the error of
:class:`tvm.ir.Target`, which says what to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

from tvm.ffi import PluginError
from tvm.ffi.plugin import get_plugin_manager
from tvm.ir.module import IRModule
from tvm.ir.target import KNOWN_TARGET_DISTRIBUTIONS, Target
from tvm.ir.transform import Pass, Sequential, get_pass

from . import hooks as _hooks  # noqa: F401  (declares the hook specifications)
from .function import PrimFunc
from .schedule.rules.rule import SCHEDULED_ATTR

__all__ = [
    "build", "lower", "get_default_pipeline", "get_lowering_pipeline", "apply_default_schedule",
    "find_codegen", "get_gpu_pipeline", "is_gpu_target",
]

FuncOrModule = Union[PrimFunc, IRModule]
PipelineLike = Union[None, str, Pass, Sequence[Pass]]


def get_lowering_pipeline() -> Sequential:
    """The TIR lowering passes, from blocks to flat, vectorized, simplified loops.

    LegalizeLowPrecision comes right after FlattenBuffer: from there on no float8/float4/
    int4/int2 dtype is left (bytes and bit arithmetic instead), for every target."""
    from . import transform as T

    return Sequential(
        [
            T.LowerInitBlock(),
            T.LowerOpaqueBlock(),
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

    tgt = _as_target(target)
    return Sequential(
        [
            T.LowerCrossThreadReduction(),
            T.LowerInitBlock(),
            T.LowerOpaqueBlock(),
            T.LowerThreadBinding(),
            T.CompactBufferAllocation(),
            get_lowering_pipeline(),
            T.VerifyGPUCode(tgt),
            T.LowerThreadAllreduce(gpu_limits(tgt).thread_warp_size),
            T.InjectStorageSync(),
            T.SplitHostDevice(),
        ],
        name="tir.gpu_pipeline",
    )


def get_default_pipeline(target: Union[None, str, Target] = None) -> Sequential:
    """:func:`get_lowering_pipeline` followed by MakePackedAPI for ``target``'s device, or
    :func:`get_gpu_pipeline` for a GPU target."""
    from .transform.make_packed_api import MakePackedAPI

    device_type = 1  # kDLCPU
    if target is not None:
        tgt = _as_target(target)
        if is_gpu_target(tgt):
            return get_gpu_pipeline(tgt)
        device_type = tgt.device_type
    return Sequential(
        [get_lowering_pipeline(), MakePackedAPI(device_type)], name="tir.default_pipeline"
    )


def _as_target(target: Union[None, str, dict, Target]) -> Target:
    if target is None:
        current = Target.current()
        if current is None:
            raise ValueError("tir.build: no target given and no `with Target(...)` is active")
        return current
    if isinstance(target, Target):
        return target
    if isinstance(target, (str, dict)):
        return Target(target)
    raise TypeError(
        f"tir.build: target must be a string (e.g. 'llvm'), dict or Target, got "
        f"{type(target).__name__} {target!r}"
    )


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


def apply_default_schedule(mod: IRModule, target: Target) -> IRModule:
    """``mod`` scheduled by the target plugin's default rules (hook
    ``tvm_tir_default_schedule``), or unchanged when every PrimFunc is already scheduled
    (``tir.is_scheduled``) or no plugin answers."""
    pending = [
        gv.name_hint for gv, f in mod.items()
        if isinstance(f, PrimFunc) and not f.attrs.get(SCHEDULED_ATTR)
    ]
    if not pending:
        return mod
    result = get_plugin_manager().hook.tvm_tir_default_schedule(mod=mod, target=target)
    if result is None:
        return mod
    if not isinstance(result, IRModule):
        raise TypeError(
            f"a tvm_tir_default_schedule hook returned {type(result).__name__} for target "
            f"{str(target)!r}; expected an IRModule or None"
        )
    return result


def find_codegen(target: Target) -> Callable[[IRModule, Target], Any]:
    """The code generator a plugin provides for ``target`` (hook ``tvm_tir_codegen``)."""
    codegen = get_plugin_manager().hook.tvm_tir_codegen(target=target)
    if codegen is None:
        kind = target.kind_name
        dist = KNOWN_TARGET_DISTRIBUTIONS.get(kind) or target.kind.package
        hint = f" (install or update {dist})" if dist else ""
        raise PluginError(
            f"no installed plugin generates code for target kind {kind!r}{hint}: the kind is "
            "registered but no plugin implements tvm_tir_codegen for it; see "
            "tvm.ffi.format_plugin_table() for the installed plugins"
        )
    if not callable(codegen):
        raise TypeError(
            f"the tvm_tir_codegen hook for target kind {target.kind_name!r} returned "
            f"{codegen!r}, which is not callable(mod, target)"
        )
    return codegen


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
    target: Union[None, str, dict, Target] = "llvm",
    name: Optional[str] = None,
    pipeline: PipelineLike = None,
) -> Any:
    """Compile ``func_or_mod`` for ``target`` into a runtime module (see the module docstring).

    ``name`` names a single PrimFunc (default: its ``global_symbol``, else ``"main"``).
    ``pipeline`` replaces :func:`get_default_pipeline` entirely (include MakePackedAPI if the
    target expects packed functions).
    """
    mod = _as_module(func_or_mod, name)
    tgt = _as_target(target)
    mod = apply_default_schedule(mod, tgt)
    passes = _as_pipeline(pipeline, tgt, lowering_only=False)
    with tgt:
        mod = passes(mod)
    return find_codegen(tgt)(mod, tgt)
