"""PyTorch OpInfo samples as import tests: wrap one sample as a Module, export, import,
build for llvm, compare with eager.

``op_db`` needs ``expecttest`` (a test-only dependency of torch's internal test helpers);
when it is missing a stand-in with ``expecttest.TestCase = unittest.TestCase`` is enough,
since only the sample generators are used here.
"""

from __future__ import annotations

import sys
import types
import unittest
from typing import Any, Optional

import numpy as np
import torch
from torch.utils import _pytree as pytree


def load_op_db() -> list[Any]:
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        stub.ACCEPT = False
        sys.modules["expecttest"] = stub
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def full_name(info: Any) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


def find(name: str) -> Any:
    for info in load_op_db():
        if full_name(info) == name:
            return info
    raise KeyError(name)


class SampleModule(torch.nn.Module):
    """``info.op(sample.input, *sample.args, **sample.kwargs)`` with every tensor leaf of
    the sample a module input and everything else a constant."""

    def __init__(self, info: Any, sample: Any):
        super().__init__()
        leaves, self.spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
        self.is_tensor = [isinstance(v, torch.Tensor) for v in leaves]
        self.consts = [None if t else v for v, t in zip(leaves, self.is_tensor)]
        self.fn = info.op
        self.inputs = [v for v, t in zip(leaves, self.is_tensor) if t]

    def forward(self, *tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        leaves = [next(it) if t else c for t, c in zip(self.is_tensor, self.consts)]
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(inp, *args, **kwargs)


def sample_dtype(info: Any) -> torch.dtype:
    """float32 where the OpInfo supports it on CPU, else its first integer/bool dtype."""
    dtypes = info.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.int64, torch.int32, torch.bool):
        if dtype in dtypes:
            return dtype
    raise ValueError(f"{full_name(info)} has no float32, integer or bool samples on CPU")


def samples(name: str, count: int = 2, dtype: Optional[torch.dtype] = None) -> list[Any]:
    """The first ``count`` samples of the OpInfo ``name`` (seeded, so they are stable), in
    ``dtype`` (default: :func:`sample_dtype`)."""
    torch.manual_seed(0)
    info = find(name)
    dtype = sample_dtype(info) if dtype is None else dtype
    out = []
    for sample in info.sample_inputs("cpu", dtype):
        out.append(sample)
        if len(out) == count:
            break
    return out


def _flat_outputs(value: Any) -> list[Any]:
    leaves = pytree.tree_leaves(value)
    return [v.detach().numpy() if isinstance(v, torch.Tensor) else np.asarray(v) for v in leaves]


def run_sample(name: str, sample: Any, rtol: float = 1e-4, atol: float = 1e-5) -> Optional[str]:
    """Export/import/build/compare one sample.  Returns None on success, ``"export"`` if
    torch.export itself rejects the sample (not the importer's concern); raises on an
    import/build failure or a mismatch."""
    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    info = find(name)
    module = SampleModule(info, sample).eval()
    args = tuple(module.inputs)
    try:
        ep = torch.export.export(module, args)
    except Exception:  # noqa: BLE001 - torch's own limitation
        return "export"
    with torch.no_grad():
        want = _flat_outputs(module(*[a.clone() for a in args]))
    mod = from_exported_program(ep)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    got = vm["main"](*[tvm.runtime.tensor(a.detach().contiguous().numpy()) for a in args])
    got = [g.numpy() if hasattr(g, "numpy") else np.asarray(g)
           for g in (got if isinstance(got, (list, tuple)) else [got])]
    assert len(got) == len(want), (len(got), len(want))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype == np.bool_ or np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return None
