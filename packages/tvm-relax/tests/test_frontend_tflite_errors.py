"""TFLite importer errors that need no compiler: files that are not models.  The
per-operator, import and end-to-end suites (against LiteRT) are in tests/tflite/.
Skipped without the ``tflite`` package."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
from tvm.relax.frontend.tflite import (  # noqa: E402
    OpNotImplemented, TFLiteImportError, from_tflite, supported_ops,
)


def test_supported_ops_lists_builtins() -> None:
    ops = supported_ops()
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX"} <= set(ops)
    assert ops == sorted(ops)


@pytest.mark.parametrize("data", [b"", b"not a model", b"\x00" * 32, b"\x08\x00\x00\x00TFL3"],
                         ids=["empty", "text", "zeros", "identifier-only"])
def test_bytes_that_are_not_a_model(data: bytes) -> None:
    with pytest.raises(TFLiteImportError):
        from_tflite(data)


def test_error_classes() -> None:
    assert issubclass(OpNotImplemented, TFLiteImportError)
    assert issubclass(OpNotImplemented, NotImplementedError)
    assert issubclass(TFLiteImportError, ValueError)
    with pytest.raises(TypeError, match="expected a path, bytes or a tflite.Model"):
        from_tflite(3.5)
