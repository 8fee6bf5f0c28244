"""Neural-network operators (``relax.nn.*``)."""

from .nn import SoftmaxAttrs, log_softmax, relu, silu, gelu, softmax

__all__ = ["softmax", "log_softmax", "relu", "silu", "gelu", "SoftmaxAttrs"]
