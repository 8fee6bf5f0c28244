"""PyTorch frontend: ``from_exported_program(ep) -> IRModule`` (extra ``tvm-relax[torch]``).

Converters live in one module per op family (``ops_math``, ``ops_tensor``, ``ops_nn``);
:mod:`.importer` walks the ``torch.export`` graph.
"""

from .common import NodeContext, OpNotSupported, TorchImportError
from .importer import (
    ExportedProgramImporter, decomposition_table, from_exported_program, supported_ops,
)

__all__ = ["from_exported_program", "supported_ops", "decomposition_table",
           "ExportedProgramImporter", "NodeContext", "TorchImportError", "OpNotSupported"]
