"""ONNX frontend: ``from_onnx(model) -> IRModule``.

Converters live in one module per op family (``ops_math``, ``ops_nn``, ``ops_tensor``,
``ops_reduce``, ``ops_quant``); :mod:`.importer` walks the graph.  Needs ``onnx``
(``pip install 'tvm-relax[onnx]'``).
"""

from .common import OnnxImportError, OpNotImplemented
from .importer import GraphImporter, from_onnx, supported_ops

__all__ = ["from_onnx", "supported_ops", "GraphImporter", "OnnxImportError", "OpNotImplemented"]
