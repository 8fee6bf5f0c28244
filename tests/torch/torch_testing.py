"""Helpers for the PyTorch frontend's end-to-end tests: export, import, build, run, compare."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import torch

import tvm.runtime
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


def export(model: torch.nn.Module, args: Sequence[torch.Tensor],
           dynamic_shapes: Optional[Any] = None) -> Any:
    return torch.export.export(model.eval(), tuple(args), dynamic_shapes=dynamic_shapes)


def build(ep: Any, target: str = "llvm") -> relax.VirtualMachine:
    ex = relax.build(from_exported_program(ep), target=target)
    return relax.VirtualMachine(ex, tvm.runtime.cpu())


def run(vm: relax.VirtualMachine, args: Sequence[torch.Tensor]) -> list[np.ndarray]:
    out = vm["main"](*[tvm.runtime.tensor(a.detach().numpy()) for a in args])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def eager(model: torch.nn.Module, args: Sequence[torch.Tensor]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model.eval()(*args)
    out = out if isinstance(out, (list, tuple)) else [out]
    return [o.detach().numpy() if isinstance(o, torch.Tensor) else np.asarray(o) for o in out]


def check(model: torch.nn.Module, args: Sequence[torch.Tensor], *, rtol: float = 1e-5,
          atol: float = 1e-5, dynamic_shapes: Optional[Any] = None,
          more_args: Sequence[Sequence[torch.Tensor]] = ()) -> relax.VirtualMachine:
    """Export ``model``, build it for llvm and compare with eager on ``args`` (and on each
    argument list of ``more_args``, for dynamic shapes)."""
    vm = build(export(model, args, dynamic_shapes))
    for case in [args, *more_args]:
        got, want = run(vm, case), eager(model, case)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return vm
