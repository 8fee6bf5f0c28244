"""Neural-network operators (``relax.nn.*``)."""

from .attention import AttentionAttrs, attention
from .conv import Conv1DAttrs, Conv2DAttrs, Conv2DTransposeAttrs, conv1d, conv2d, conv2d_transpose
from .nn import SoftmaxAttrs, gelu, gelu_tanh, log_softmax, relu, silu, softmax
from .norm import (
    BatchNormAttrs, DropoutAttrs, GroupNormAttrs, LayerNormAttrs, RMSNormAttrs, batch_norm,
    dropout, group_norm, layer_norm, rms_norm,
)
from .pad import PadAttrs, pad
from .pooling import (
    AdaptivePool2DAttrs, Pool2DAttrs, adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d,
    max_pool2d,
)

__all__ = [
    "softmax", "log_softmax", "relu", "silu", "gelu", "gelu_tanh", "SoftmaxAttrs",
    "conv1d", "conv2d", "conv2d_transpose", "Conv1DAttrs", "Conv2DAttrs", "Conv2DTransposeAttrs",
    "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "Pool2DAttrs",
    "AdaptivePool2DAttrs", "layer_norm", "group_norm", "batch_norm", "rms_norm", "dropout",
    "LayerNormAttrs", "GroupNormAttrs", "BatchNormAttrs", "RMSNormAttrs", "DropoutAttrs",
    "attention", "AttentionAttrs", "pad", "PadAttrs",
]
