"""Neural-network operators (``relax.nn.*``)."""

from .attention import AttentionAttrs, attention
from .col2im import Col2ImAttrs, col2im
from .conv import (
    Conv1DAttrs, Conv1DTransposeAttrs, Conv2DAttrs, Conv2DTransposeAttrs, Conv3DAttrs,
    Conv3DTransposeAttrs, conv1d, conv1d_transpose, conv2d, conv2d_transpose, conv3d,
    conv3d_transpose,
)
from .nn import SoftmaxAttrs, gelu, gelu_tanh, log_softmax, relu, silu, softmax
from .norm import (
    BatchNormAttrs, DropoutAttrs, GroupNormAttrs, LayerNormAttrs, RMSNormAttrs, batch_norm,
    dropout, group_norm, layer_norm, rms_norm,
)
from .pad import PadAttrs, pad
from .recurrence import RecurrenceAttrs, recurrence
from .pooling import (
    AdaptivePool1DAttrs, AdaptivePool2DAttrs, AdaptivePool3DAttrs, MaxPoolWithIndicesAttrs,
    Pool1DAttrs, Pool2DAttrs, Pool3DAttrs, adaptive_avg_pool1d, adaptive_avg_pool2d,
    adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d,
    avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d,
    max_pool_with_indices,
)

__all__ = [
    "softmax", "log_softmax", "relu", "silu", "gelu", "gelu_tanh", "SoftmaxAttrs",
    "conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose",
    "Conv1DAttrs", "Conv2DAttrs", "Conv3DAttrs", "Conv1DTransposeAttrs", "Conv2DTransposeAttrs",
    "Conv3DTransposeAttrs",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "max_pool_with_indices", "MaxPoolWithIndicesAttrs",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "Pool1DAttrs", "Pool2DAttrs", "Pool3DAttrs",
    "AdaptivePool1DAttrs", "AdaptivePool2DAttrs", "AdaptivePool3DAttrs",
    "layer_norm", "group_norm", "batch_norm", "rms_norm", "dropout",
    "LayerNormAttrs", "GroupNormAttrs", "BatchNormAttrs", "RMSNormAttrs", "DropoutAttrs",
    "attention", "AttentionAttrs", "recurrence", "RecurrenceAttrs", "pad", "PadAttrs", "col2im", "Col2ImAttrs",
]
