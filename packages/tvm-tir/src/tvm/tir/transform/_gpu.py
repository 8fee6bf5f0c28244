"""Pieces shared by the GPU lowering passes: thread tags, the launch limits of a target,
barriers, kernel attributes and the intrinsics the passes introduce.

Intrinsics (registered here; the GPU printers implement them):

``tir.tvm_call_packed(StringImm kernel, *args, *launch_extents)``
    In a host function after SplitHostDevice: launch device kernel ``kernel`` with the
    arguments ``args`` (buffer data handles and scalars, in the kernel's parameter order)
    and one extent per entry of the kernel's ``tir.kernel_launch_params``.
``tir.tvm_storage_sync(StringImm scope)``
    A barrier of the threads of a block over memory ``scope`` (``"shared"``).
``tir.tvm_thread_allreduce(StringImm kind, value, BufferLoad dest, *thread_vars)``
    Every thread of the group spanned by ``thread_vars`` (threadIdx axes) contributes
    ``value``; the ``kind`` (``sum``/``prod``/``max``/``min``) reduction of the group is
    stored into ``dest`` of every thread.  Introduced by LowerCrossThreadReduction, lowered
    by LowerThreadAllreduce.
``tir.tvm_warp_activemask()`` -> uint32; ``tir.tvm_warp_shuffle_down(mask, value, offset,
width)``; ``tir.tvm_warp_shuffle(mask, value, lane, width)``
    Warp (SIMD-group) shuffles: the value of lane ``lane_id + offset`` / of lane ``lane``.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.op import Op

from ..expr import Call, StringImm
from ..stmt import Evaluate, Stmt

__all__ = [
    "THREAD_TAG_ORDER", "is_block_tag", "is_thread_tag", "is_launch_tag", "tag_axis",
    "storage_sync", "is_storage_sync", "call_op", "GPULimits", "gpu_limits",
    "KERNEL_CALLING_CONV", "LAUNCH_PARAMS_ATTR", "THREAD_EXTENT_ATTR", "KERNELS_ATTR",
    "dtype_bytes",
]

#: Launch axes in the order the kernel attributes list them.
THREAD_TAG_ORDER = ("blockIdx.x", "blockIdx.y", "blockIdx.z",
                    "threadIdx.x", "threadIdx.y", "threadIdx.z")

KERNEL_CALLING_CONV = "device_kernel_launch"
LAUNCH_PARAMS_ATTR = "tir.kernel_launch_params"
THREAD_EXTENT_ATTR = "thread_extent"
#: Host-function attribute: names of the kernels it launches.
KERNELS_ATTR = "tir.device_kernels"

for _name, _effect in (("tvm_call_packed", "side_effect"), ("tvm_warp_activemask", "read"),
                       ("tvm_storage_sync", "side_effect"),
                       ("tvm_thread_allreduce", "side_effect"),
                       ("tvm_warp_shuffle", "side_effect"),
                       ("tvm_warp_shuffle_down", "side_effect")):
    if not Op.exists(f"tir.{_name}"):
        Op.register(f"tir.{_name}", TCallEffectKind=_effect)


def is_block_tag(tag: str) -> bool:
    return tag.startswith("blockIdx.")


def is_thread_tag(tag: str) -> bool:
    return tag.startswith("threadIdx.")


def is_launch_tag(tag: str) -> bool:
    return tag in THREAD_TAG_ORDER


def tag_axis(tag: str) -> int:
    """0, 1, 2 for the x, y, z of a launch tag."""
    return "xyz".index(tag[-1])


def call_op(dtype: str, name: str, *args: Any) -> Call:
    return Call(dtype, Op.get(name), tuple(args))


def storage_sync(scope: str = "shared") -> Evaluate:
    """``tir.tvm_storage_sync(scope)`` as a statement."""
    return Evaluate(call_op("int32", "tir.tvm_storage_sync", StringImm(scope)))


def is_storage_sync(stmt: Stmt) -> bool:
    return (isinstance(stmt, Evaluate) and isinstance(stmt.value, Call)
            and getattr(stmt.value.op, "name", "") == "tir.tvm_storage_sync")


class GPULimits:
    """Launch limits of a GPU target (from its attributes, with CUDA-like defaults)."""

    def __init__(self, max_num_threads: int = 1024, max_shared_memory_per_block: int = 49152,
                 max_thread_dims: tuple[int, int, int] = (1024, 1024, 64),
                 thread_warp_size: int = 32, target: str = "") -> None:
        self.max_num_threads = int(max_num_threads)
        self.max_shared_memory_per_block = int(max_shared_memory_per_block)
        self.max_thread_dims = tuple(int(d) for d in max_thread_dims)
        self.thread_warp_size = int(thread_warp_size)
        self.target = target

    def __repr__(self) -> str:
        return (f"GPULimits(max_num_threads={self.max_num_threads}, max_shared_memory_per_"
                f"block={self.max_shared_memory_per_block}, max_thread_dims="
                f"{self.max_thread_dims}, thread_warp_size={self.thread_warp_size})")


def gpu_limits(target: Any = None) -> GPULimits:
    """The limits of ``target`` (default: the current ``with Target(...)``)."""
    if target is None:
        from tvm.ir.target import Target

        target = Target.current()
    if target is None:
        return GPULimits()

    def get(name: str, default: Any) -> Any:
        value = target.get_attr(name) if hasattr(target, "get_attr") else None
        return default if value is None else value

    dims = get("max_thread_dims", (1024, 1024, 64))
    return GPULimits(get("max_num_threads", 1024), get("max_shared_memory_per_block", 49152),
                     tuple(dims) + (1,) * (3 - len(dims)), get("thread_warp_size", 32),
                     str(target))


def dtype_bytes(dtype: str) -> int:
    from tvm.ffi.dtype import storage_bytes

    return storage_bytes(dtype)
