"""VerifyGPUCode: reject a GPU candidate that cannot be launched on the target.

The candidate's function is lowered by the target's own GPU pipeline
(:func:`tvm.tir.build.get_gpu_pipeline`) up to and including its launch check, the pass
``tir.VerifyGPUCode``: cross-thread reductions, init blocks and blocks lowered, thread
bindings turned into kernel launches, ``shared``/``local`` buffers compacted to what a
kernel uses.  By then every kernel's thread extents and shared allocations are known, and
the check raises when

* the threads of a block (the product of the ``threadIdx`` extents) exceed the target's
  ``max_num_threads``, or one extent its ``max_thread_dims``;
* the ``shared`` allocations of a kernel exceed ``max_shared_memory_per_block``;
* a thread extent or a shared allocation is not a constant;
* a buffer is accessed outside any kernel, or a loop inside one is ``parallel``.

Any other error of the lowering (a schedule the GPU passes cannot lower) also rejects the
candidate.  The reason of the last rejection is kept in :attr:`VerifyGPUCode.last_error`
and logged at debug level.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from .postproc import Postproc

__all__ = ["VerifyGPUCode", "gpu_launch_check_passes"]

logger = logging.getLogger("tvm.meta_schedule.postproc")

_CHECK_PASS = "tir.VerifyGPUCode"


def gpu_launch_check_passes(target: Any) -> list[Any]:
    """The passes of ``target``'s GPU pipeline, flattened, up to and including its launch
    check ``tir.VerifyGPUCode``."""
    from tvm.ir.transform import Sequential
    from tvm.tir.build import get_gpu_pipeline

    flat: list[Any] = []

    def walk(p: Any) -> bool:
        if isinstance(p, Sequential):
            return any(walk(q) for q in p.passes)
        flat.append(p)
        return p.name == _CHECK_PASS

    if not walk(get_gpu_pipeline(target)):
        raise ValueError(f"the GPU pipeline of {str(target)!r} has no {_CHECK_PASS} pass")
    return flat


class VerifyGPUCode(Postproc):
    """Reject candidates over the GPU ``target``'s launch limits (see the module
    docstring); the target is the tuning context's when not given."""

    name = "verify_gpu_code"

    def __init__(self, target: Any = None):
        self.target = target
        self.last_error: Optional[str] = None
        self._passes: Optional[list[Any]] = None

    def initialize_with_tune_context(self, context: Any) -> None:
        super().initialize_with_tune_context(context)
        if self.target is None:
            self.target = context.target
            self._passes = None

    def _target(self) -> Any:
        from tvm.ir.target import as_target

        if self.target is None:
            raise ValueError("VerifyGPUCode: no target (give one, or initialize the "
                             "postprocessor with a tuning context)")
        target = as_target(self.target)
        if "gpu" not in tuple(target.keys):
            raise ValueError(f"VerifyGPUCode: target {str(target)!r} is not a GPU target "
                             "(its keys have no 'gpu')")
        return target

    def apply(self, sch: Any) -> bool:
        from tvm.ir.module import IRModule
        from tvm.ir.transform import Sequential

        target = self._target()
        if self._passes is None:
            self._passes = gpu_launch_check_passes(target)
        func = sch.mod[sch.func_working_on]
        mod = IRModule({sch.func_working_on: func})
        try:
            with target:
                Sequential(self._passes, name="verify_gpu_code")(mod)
        except Exception as err:  # noqa: BLE001 - any failure to lower rejects the candidate
            self.last_error = f"{type(err).__name__}: {err}"
            logger.debug("VerifyGPUCode rejects a candidate: %s", self.last_error)
            return False
        self.last_error = None
        return True
