"""QuantizeConfig: how :func:`tvm.relax.quantize.quantize` calibrates and quantizes."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence, Union

__all__ = ["QuantizeConfig"]

_METHODS = ("minmax", "percentile", "entropy")


@dataclasses.dataclass(frozen=True)
class QuantizeConfig:
    """Post-training quantization settings.

    * ``calibrate``: how an activation's range is chosen from the calibration data:
      ``"minmax"`` (the observed range), ``"percentile"`` (the ``percentile``-th percentile of
      ``|x|``) or ``"entropy"`` (the threshold minimising the KL divergence between the
      histogram of ``|x|`` and its quantized form, TensorRT-style).
    * ``activation_dtype``: ``"uint8"`` (asymmetric, with a zero point) or ``"int8"``
      (symmetric, zero point 0).
    * ``weight_dtype``: ``"int8"``, symmetric, one scale per output channel.
    * ``skip``: layers kept float: a binding's variable name, a layer (span) name, or the
      index of the layer among the quantizable conv2d / matmul ops of ``main``.
    * ``num_bins``: histogram bins for percentile / entropy (2048).
    * ``fold``: run the default graph pipeline first (folds batch norms and constants).
    * ``progress``: called ``progress(done, total_or_None)`` every ``progress_every``
      calibration batches; None prints a line to stderr when there are more than
      ``progress_every`` batches; ``False`` is silent.
    """

    calibrate: str = "minmax"
    percentile: float = 99.99
    activation_dtype: str = "uint8"
    weight_dtype: str = "int8"
    skip: Sequence[Union[str, int]] = ()
    num_bins: int = 2048
    fold: bool = True
    progress: Union[None, bool, Callable[[int, Optional[int]], None]] = None
    progress_every: int = 10

    def __post_init__(self) -> None:
        def bad(field: str, expected: str) -> ValueError:
            return ValueError(f"QuantizeConfig.{field}: expected {expected}, "
                              f"got {getattr(self, field)!r}")

        if self.calibrate not in _METHODS:
            raise bad("calibrate", " / ".join(repr(m) for m in _METHODS))
        p = self.percentile
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 50.0 < p <= 100.0:
            raise bad("percentile", "a number in (50, 100]")
        if self.activation_dtype not in ("uint8", "int8"):
            raise bad("activation_dtype", "'uint8' or 'int8'")
        if self.weight_dtype != "int8":
            raise bad("weight_dtype", "'int8' (symmetric per output channel)")
        if isinstance(self.skip, (str, int)) or not all(
                isinstance(s, (str, int)) and not isinstance(s, bool) for s in self.skip):
            raise bad("skip", "a list of layer names and / or layer indices")
        if isinstance(self.num_bins, bool) or not isinstance(self.num_bins, int) \
                or self.num_bins < 256:
            raise bad("num_bins", "an int >= 256")
        if isinstance(self.progress_every, bool) or not isinstance(self.progress_every, int) \
                or self.progress_every < 1:
            raise bad("progress_every", "a positive int")
        if not (self.progress is None or isinstance(self.progress, bool)
                or callable(self.progress)):
            raise bad("progress", "None, a bool or a callable(done, total)")
        object.__setattr__(self, "skip", tuple(self.skip))
