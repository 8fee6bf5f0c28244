"""Model importers: ``relax.frontend.onnx.from_onnx`` (extra ``tvm-relax[onnx]``) and
``relax.frontend.tflite.from_tflite`` (extra ``tvm-relax[tflite]``).

Frontend subpackages import their format's library lazily, so ``import tvm.relax.frontend``
works without any of them installed.
"""

from __future__ import annotations

import re
from typing import Any

from tvm.ir.module import IRModule

__all__ = ["detach_params", "sanitize_name"]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list[Any]]]:
    """Split the ``"params"`` attribute off every Relax function of ``mod``.

    Importers called with ``keep_params_in_input=True`` attach the weights (numpy arrays, in
    parameter order after the first ``num_input`` parameters) as the function attribute
    ``"params"``.  Returns the module without that attribute and ``{name: [arrays]}``.
    """
    from ..expr import Function

    params: dict[str, list[Any]] = {}
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and func.get_attr("params") is not None:
            params[gv.name_hint] = list(func.get_attr("params"))
            mod = mod.with_function(gv, func.without_attr("params"))
    return mod, params


def sanitize_name(name: str, default: str = "v") -> str:
    """``name`` as an identifier for a Relax variable (other characters become ``_``; a
    leading digit gets a ``_``; ``default`` for an empty name)."""
    text = re.sub(r"[^0-9A-Za-z_]", "_", name or "")
    if not text:
        return default
    if text[0].isdigit():
        text = "_" + text
    return text
