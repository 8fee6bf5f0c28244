"""A GPU target kind for the GPU lowering tests (no plugin, no device) and builders."""

from __future__ import annotations

from typing import Any

from tvm import tir
from tvm.ir import IRModule, Target, TargetKind, register_target_kind

KIND = "testgpu"


def ensure_kind() -> None:
    register_target_kind(TargetKind(
        KIND, 2,
        attrs={"max_num_threads": (int, 1024), "thread_warp_size": (int, 32),
               "max_shared_memory_per_block": (int, 49152),
               "max_thread_dims": (list[int], (1024, 1024, 64))},
        default_keys=(KIND, "gpu")), override=True)


def gpu_target(**attrs: Any) -> Target:
    ensure_kind()
    opts = " ".join(f"-{k}={v}" for k, v in attrs.items())
    return Target(f"{KIND} {opts}".strip())


def lower_gpu(func: tir.PrimFunc, target: Any = None, name: str = "main") -> IRModule:
    """``func`` through the GPU pipeline of ``target`` (default: testgpu)."""
    tgt = target if target is not None else gpu_target()
    mod = IRModule({name: func.with_attr("global_symbol", name)})
    with tgt:
        return tir.get_gpu_pipeline(tgt)(mod)


def kernels(mod: IRModule) -> dict[str, tir.PrimFunc]:
    return {gv.name_hint: f for gv, f in mod.items()
            if f.attrs.get("calling_conv") == "device_kernel_launch"}
