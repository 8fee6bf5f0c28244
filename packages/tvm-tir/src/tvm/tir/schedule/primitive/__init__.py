"""Schedule primitives, one module per family.

Each module defines functions over the :class:`~tvm.tir.schedule.state.ScheduleState` and
srefs (reusable by other primitives) and a mixin class whose methods are the recorded
:class:`~tvm.tir.schedule.Schedule` primitives.  ``PRIMITIVE_MIXINS`` lists the mixins the
Schedule class inherits from: a new family module adds its mixin here.
"""

from .annotate import AnnotateMixin
from .for_kind import ForKindMixin
from .loop_transform import LoopTransformMixin
from .cache_read_write import CacheReadWriteMixin
from .compute_at import ComputeAtMixin
from .compute_inline import ComputeInlineMixin
from .reduction import ReductionMixin
from .block_annotate import BlockAnnotateMixin
from .layout_transformation import LayoutTransformationMixin
from .blockize_tensorize import BlockizeTensorizeMixin
from .pad_einsum import PadEinsumMixin
from .padding import PaddingMixin

PRIMITIVE_MIXINS: tuple[type, ...] = (
    LoopTransformMixin, ForKindMixin, AnnotateMixin, CacheReadWriteMixin, ComputeAtMixin,
    ComputeInlineMixin, ReductionMixin, BlockAnnotateMixin, LayoutTransformationMixin,
    BlockizeTensorizeMixin, PadEinsumMixin, PaddingMixin,
)

__all__ = ["PRIMITIVE_MIXINS", "LoopTransformMixin", "ForKindMixin", "AnnotateMixin",
           "CacheReadWriteMixin", "ComputeAtMixin", "ComputeInlineMixin",
           "ReductionMixin", "BlockAnnotateMixin", "LayoutTransformationMixin",
           "BlockizeTensorizeMixin", "PadEinsumMixin", "PaddingMixin"]
