"""Post-training quantization (``relax.quantize.quantize``): calibrate activations by
min-max, percentile or entropy, quantize weights per output channel, and turn the result
into ``relax.qnn`` integer kernels (see ``docs/quantization.md``)."""

from .calibrate import (TensorStats, activation_params, entropy_threshold, minmax_threshold,
                        percentile_threshold, weight_params)
from .config import QuantizeConfig
from .ptq import Layer, find_layers, quantize
from .report import LayerReport, QuantizeReport

__all__ = ["quantize", "QuantizeConfig", "QuantizeReport", "LayerReport", "TensorStats",
           "find_layers", "Layer", "minmax_threshold", "percentile_threshold",
           "entropy_threshold", "activation_params", "weight_params"]
