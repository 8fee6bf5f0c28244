"""TIR passes (each module defines one pass; this package re-exports them)."""

from .make_packed_api import MakePackedAPI, make_packed_api
from .flatten_buffer import FlattenBuffer, flatten_buffer
from .lower_allocation import LowerAllocation, lower_allocation
from .lower_checks import LowerChecks, lower_checks
from .guard_integer_division import GuardIntegerDivision, guard_integer_division
from .lower_init_block import LowerInitBlock, lower_init_block
from .lower_opaque_block import LowerOpaqueBlock, lower_opaque_block
from .remove_no_op import RemoveNoOp, remove_no_op
from .simplify import Simplify, simplify
from .unroll_loop import UnrollLoop, unroll_loop
from .vectorize_loop import VectorizeLoop, vectorize_loop
from ..analysis.verify import VerifyWellFormed, verify_well_formed
from .lower_cross_thread_reduction import LowerCrossThreadReduction, lower_cross_thread_reduction
from .lower_thread_binding import LowerThreadBinding, lower_thread_binding
from .verify_gpu_code import GPUCodeError, VerifyGPUCode, verify_gpu_code
from .lower_thread_allreduce import LowerThreadAllreduce, lower_thread_allreduce
from .inject_storage_sync import InjectStorageSync, inject_storage_sync
from .split_host_device import SplitHostDevice, split_host_device
from .compact_buffer_allocation import CompactBufferAllocation, compact_buffer_allocation
from .legalize_low_precision import LegalizeLowPrecision, legalize_low_precision
from .specialize import specialize
