"""End-to-end ONNX tests: import -> relax.build(llvm) -> VM, against expected outputs and
onnxruntime.  Skipped without onnx or the llvm target."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

try:
    import onnx  # noqa: F401
    import tvm.target.llvm.plugin  # noqa: F401
    import tvm.relax.frontend.onnx  # noqa: F401
    _MISSING = None
except ImportError as err:  # pragma: no cover - depends on the installed distributions
    _MISSING = str(err)


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if _MISSING is None:
        return
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason=f"ONNX end-to-end tests need onnx and tvm-target-llvm: {_MISSING}")
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(skip)


def pytest_configure(config):  # noqa: ARG001 - pytest hook signature
    if _MISSING is None:
        from node_suite import ensure_llvm

        ensure_llvm()
