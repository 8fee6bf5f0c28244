"""Quantized integer operators (``relax.qnn.*``): quantize / dequantize / requantize,
conv2d and matmul (dense, batch matmul) accumulating in int32 with zero-point correction,
and add / multiply / concat with rescaling.  Each legalizes to integer TIR; see
``docs/quantization.md`` for the arithmetic and its rounding."""

from .elemwise import QBinaryAttrs, QConcatAttrs, add, concat, multiply
from .linear import QConv2DAttrs, QMatmulAttrs, batch_matmul, conv2d, dense, matmul
from .quantize import QuantizeAttrs, RequantizeAttrs, dequantize, quantize, requantize

__all__ = [
    "quantize", "dequantize", "requantize", "conv2d", "matmul", "dense", "batch_matmul",
    "add", "multiply", "concat", "QuantizeAttrs", "RequantizeAttrs", "QConv2DAttrs",
    "QMatmulAttrs", "QBinaryAttrs", "QConcatAttrs",
]
