"""TFLite frontend tests: models written by model_builder.py, imported, built for llvm and
run on the VM, against LiteRT's interpreter.  Skipped without tflite, ai-edge-litert or
the llvm target."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

try:
    import ai_edge_litert.interpreter  # noqa: F401
    import tflite  # noqa: F401

    import tvm.relax.frontend.tflite  # noqa: F401
    import tvm.target.llvm.plugin  # noqa: F401
    _MISSING = None
except ImportError as err:  # pragma: no cover - depends on the installed distributions
    _MISSING = str(err)


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if _MISSING is None:
        return
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason=f"TFLite tests need tflite, ai-edge-litert and "
                                   f"tvm-target-llvm: {_MISSING}")
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(skip)
