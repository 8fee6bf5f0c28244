"""annotate / unannotate: key-value hints on blocks and loops.

Annotations guide later passes and code generators (``pragma_auto_unroll_max_step``,
``meta_schedule.tiling_structure``, ...).  A value may be a str, number, bool, a sampled
ExprRV (stored as its integer) or a PrimExpr / list of those.
"""

from __future__ import annotations

from typing import Any, Union

from ...expr import PrimExpr, const
from ..error import ScheduleError
from ..handles import BlockRV, ExprRV, LoopRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef

__all__ = ["annotate", "unannotate", "AnnotateMixin"]


def _check_key(primitive: str, key: Any, sref: StmtSRef) -> None:
    if not isinstance(key, str) or not key:
        raise ScheduleError(primitive, f"the annotation key must be a non-empty str, got "
                            f"{key!r}", sref)


def _set_annotations(state: ScheduleState, sref: StmtSRef, annotations: dict) -> None:
    old = sref.stmt
    new = old.with_fields(annotations=annotations)  # type: ignore[union-attr]
    reuse = {old: new} if sref.is_block else None
    state.replace({old: new}, block_reuse=reuse, func_name=sref.func_name)


def annotate(state: ScheduleState, sref: StmtSRef, key: str, value: Any) -> None:
    """Set ``annotations[key] = value`` on a block or loop."""
    _check_key("annotate", key, sref)
    _set_annotations(state, sref, {**sref.stmt.annotations, key: value})  # type: ignore[union-attr]


def unannotate(state: ScheduleState, sref: StmtSRef, key: str) -> None:
    """Remove ``key`` from the annotations of a block or loop."""
    _check_key("unannotate", key, sref)
    annotations = dict(sref.stmt.annotations)  # type: ignore[union-attr]
    if key not in annotations:
        have = ", ".join(map(repr, annotations)) or "none"
        raise ScheduleError("unannotate", f"there is no annotation {key!r} (annotations: "
                            f"{have})", sref)
    del annotations[key]
    _set_annotations(state, sref, annotations)


def _value(sch: Any, value: Any) -> Any:
    if isinstance(value, ExprRV):
        return const(sch._expr_value(value, "annotate"), "int32")
    if isinstance(value, (list, tuple)):
        return tuple(_value(sch, v) for v in value)
    if value is None or isinstance(value, (str, bool, int, float, PrimExpr)):
        return value
    raise TypeError(f"annotate: the value must be a str, number, bool, ExprRV, PrimExpr or a "
                    f"list of those, got {type(value).__name__} {value!r}")


class AnnotateMixin:
    """annotate / unannotate methods of :class:`Schedule`."""

    @instruction("Annotate", inputs=("block_or_loop", "ann_val"), attrs=("ann_key",))
    def annotate(self, block_or_loop: Union[BlockRV, LoopRV], ann_key: str, ann_val: Any
                 ) -> None:
        """Annotate a block or loop with ``ann_key = ann_val``."""
        sref = self._block_or_loop_sref(block_or_loop, "annotate")
        annotate(self._state, sref, ann_key, _value(self, ann_val))

    @instruction("Unannotate", inputs=("block_or_loop",), attrs=("ann_key",))
    def unannotate(self, block_or_loop: Union[BlockRV, LoopRV], ann_key: str) -> None:
        """Remove the annotation ``ann_key`` of a block or loop."""
        unannotate(self._state, self._block_or_loop_sref(block_or_loop, "unannotate"), ann_key)
