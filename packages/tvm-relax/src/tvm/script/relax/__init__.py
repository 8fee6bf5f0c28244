"""TVMScript for Relax: ``from tvm.script import relax as R``.

``@R.function`` parses a Python function into a :class:`tvm.relax.Function`; inside an
``@I.ir_module`` class (``from tvm.script import ir as I``) it sits next to
``@T.prim_func`` functions.  ``R.parse(text)`` parses script text; ``func.script()`` /
``func.show()`` and ``mod.show()`` print it back.

The namespace: StructInfo (``R.Tensor``, ``R.Tuple``, ``R.Shape``, ``R.Object``,
``R.Prim``, ``R.Callable``), blocks (``R.dataflow``, ``R.output``), bindings
(``R.match_cast``, ``R.func_attr``), values (``R.const``, ``R.shape``, ``R.prim_value``,
``R.str``, ``R.dtype``, ``R.tuple``, ``R.ExternFunc``), calls (``R.call_tir``,
``R.call_dps_packed``, ``R.call_pure_packed``, ``R.call_packed``, ``R.call_op``) and every
registered Relax operator: ``R.add``, ``R.nn.softmax`` ... (``relax.<name>`` as
``R.<name>``, found in the operator registry on first use).
"""

from __future__ import annotations

from typing import Any as _Any

import tvm.relax as _relax  # noqa: F401 - registers the operators

from .entry import function, parse
from .ir import (
    ExternFunc, attrs, call_dps_packed, call_op, call_packed, call_pure_packed, call_tir, const,
    dataflow, dtype, func_attr, match_cast, output, prim_value, shape, str, tuple,
)
from .ops import ROOT as _ROOT
from .printer import script
from .sinfo import Callable, Object, Prim, Shape, Tensor, Tuple

__all__ = [
    "function", "parse", "script",
    # StructInfo
    "Tensor", "Tuple", "Shape", "Object", "Prim", "Callable",
    # statements
    "dataflow", "output", "match_cast", "func_attr",
    # values and calls
    "const", "shape", "prim_value", "str", "dtype", "tuple", "ExternFunc", "call_tir",
    "call_dps_packed", "call_pure_packed", "call_packed", "call_op", "attrs",
]


def __getattr__(name: str) -> _Any:
    """``R.<op>`` and ``R.<namespace>``: Relax operators from the registry."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_ROOT, name)


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(_ROOT.children()))
