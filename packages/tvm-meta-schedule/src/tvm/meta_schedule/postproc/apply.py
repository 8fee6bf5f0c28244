"""Running the postprocessors of a candidate."""

from __future__ import annotations

import logging
from typing import Any, Sequence

from tvm.tir.schedule.error import ScheduleError
from tvm.tir.schedule.rules import RuleNotApplicable

__all__ = ["apply_postprocs"]

logger = logging.getLogger("tvm.meta_schedule.postproc")


def apply_postprocs(sch: Any, postprocs: Sequence[Any]) -> bool:
    """Apply ``postprocs`` to ``sch`` in order; False (the candidate is rejected) as soon as
    one returns False or one of its primitives refuses (ScheduleError, ValueError ...)."""
    for post in postprocs:
        try:
            ok = post.apply(sch)
        except (ScheduleError, RuleNotApplicable, ValueError, TypeError) as err:
            logger.info("postproc %s rejected a candidate: %s: %s", post.name,
                        type(err).__name__, err)
            return False
        if not ok:
            logger.debug("postproc %s rejected a candidate", post.name)
            return False
    return True
