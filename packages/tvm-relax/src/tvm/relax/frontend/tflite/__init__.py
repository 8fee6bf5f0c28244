"""TFLite frontend: ``from_tflite(model) -> IRModule``.

:mod:`.model` reads the flatbuffer into plain records, :mod:`.importer` walks subgraph 0,
and converters live in one module per op family (``ops_nn``, ``ops_math``,
``ops_tensor``, ``ops_rnn``, ``ops_detection``).  Needs the ``tflite`` flatbuffer bindings
(``pip install 'tvm-relax[tflite]'``); TensorFlow is not needed.
"""

from .common import OpNotImplemented, TFLiteImportError
from .importer import TFLiteImporter, from_tflite, supported_ops

__all__ = ["from_tflite", "supported_ops", "TFLiteImporter", "TFLiteImportError",
           "OpNotImplemented"]
