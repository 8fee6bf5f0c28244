"""OpInfo samples (torch's op_db) of the shape/indexing/creation family as exportable
modules, and one check that imports, builds and compares a sample with eager."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

# (op_db name, variant): the entries of the tensor family
FAMILY = [
    ("T", ""), ("__getitem__", ""), ("alias_copy", ""), ("arange", ""), ("argsort", ""),
    ("as_strided", ""), ("atleast_1d", ""), ("atleast_2d", ""), ("atleast_3d", ""),
    ("block_diag", ""), ("broadcast_tensors", ""), ("broadcast_to", ""), ("cat", ""),
    ("chunk", ""), ("clone", ""), ("column_stack", ""), ("constant_pad_nd", ""),
    ("contiguous", ""), ("diag", ""), ("diag_embed", ""), ("diagflat", ""), ("diagonal", ""),
    ("diagonal_copy", ""), ("diagonal_scatter", ""), ("dsplit", ""), ("dstack", ""),
    ("empty", ""), ("empty_like", ""), ("empty_permuted", ""), ("empty_strided", ""),
    ("expand", ""), ("expand_as", ""), ("expand_copy", ""), ("eye", ""), ("fill", ""),
    ("flatten", ""), ("flip", ""), ("fliplr", ""), ("flipud", ""), ("full", ""),
    ("full_like", ""), ("gather", ""), ("hsplit", ""), ("hstack", ""), ("index_add", ""),
    ("index_copy", ""), ("index_fill", ""), ("index_put", ""), ("index_reduce", "amax"),
    ("index_reduce", "amin"), ("index_reduce", "mean"), ("index_reduce", "prod"),
    ("index_select", ""), ("linalg.diagonal", ""), ("linspace", ""), ("logspace", ""),
    ("mT", ""), ("masked_fill", ""), ("masked_scatter", ""), ("masked_select", ""),
    ("meshgrid", "list_of_tensors"), ("meshgrid", "variadic_tensors"), ("movedim", ""),
    ("msort", ""), ("narrow", ""), ("narrow_copy", ""), ("new_empty", ""),
    ("new_empty_strided", ""), ("new_full", ""), ("new_ones", ""), ("new_zeros", ""),
    ("nn.functional.embedding", ""), ("nn.functional.pad", "circular"),
    ("nn.functional.pad", "constant"), ("nn.functional.pad", "reflect"),
    ("nn.functional.pad", "replicate"), ("nn.functional.pad", "replicate_negative"),
    ("nonzero", ""), ("nonzero_static", ""), ("ones", ""), ("ones_like", ""), ("permute", ""),
    ("permute_copy", ""), ("ravel", ""), ("repeat", ""), ("repeat_interleave", ""),
    ("reshape", ""), ("reshape_as", ""), ("roll", ""), ("rot90", ""), ("scatter", ""),
    ("scatter_add", ""), ("scatter_reduce", "amax"), ("scatter_reduce", "amin"),
    ("scatter_reduce", "mean"), ("scatter_reduce", "prod"), ("scatter_reduce", "sum"),
    ("select", ""), ("select_scatter", ""), ("slice", ""), ("slice_scatter", ""), ("sort", ""),
    ("split", ""), ("split", "list_args"), ("split_with_sizes", ""),
    ("split_with_sizes_copy", ""), ("squeeze", ""), ("squeeze", "multiple"),
    ("squeeze_copy", ""), ("stack", ""), ("t", ""), ("take", ""), ("take_along_dim", ""),
    ("tensor_split", ""), ("tile", ""), ("to", ""), ("topk", ""), ("transpose", ""),
    ("transpose_copy", ""), ("tril", ""), ("tril_indices", ""), ("triu", ""),
    ("triu_indices", ""), ("unbind", ""), ("unbind_copy", ""), ("unflatten", ""),
    ("unfold", ""), ("unfold_copy", ""), ("unique", ""), ("unique_consecutive", ""),
    ("unsafe_chunk", ""), ("unsafe_split", ""), ("unsqueeze", ""), ("unsqueeze_copy", ""),
    ("view", ""), ("view_as", ""), ("view_copy", ""), ("vsplit", ""), ("vstack", ""),
    ("where", ""), ("zeros", ""), ("zeros_like", ""),
]

# values are uninitialised in torch: only shapes and dtypes are compared
UNINITIALISED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
                 "new_empty_strided"}


def op_infos() -> dict[tuple[str, str], Any]:
    from torch.testing._internal.common_methods_invocations import op_db

    return {(o.name, o.variant_test_name): o for o in op_db}


class Unexportable(Exception):
    """torch.export cannot export the sample (not counted against the importer)."""


def _split_tensors(obj: Any, tensors: list) -> Any:
    """``obj`` with every tensor replaced by its position in ``tensors``."""
    if isinstance(obj, torch.Tensor):
        tensors.append(obj.detach().clone())
        return _Slot(len(tensors) - 1)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_split_tensors(o, tensors) for o in obj)
    if isinstance(obj, dict):
        return {k: _split_tensors(v, tensors) for k, v in obj.items()}
    return obj


class _Slot:
    def __init__(self, index: int):
        self.index = index


def _fill(obj: Any, tensors: tuple) -> Any:
    if isinstance(obj, _Slot):
        return tensors[obj.index]
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fill(o, tensors) for o in obj)
    if isinstance(obj, dict):
        return {k: _fill(v, tensors) for k, v in obj.items()}
    return obj


def _flat_outputs(out: Any) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat_outputs(o)]
    return []


class SampleModule(torch.nn.Module):
    """``op(sample.input, *sample.args, **sample.kwargs)`` with the tensors as inputs."""

    def __init__(self, op: Any, sample: Any):
        super().__init__()
        self.fn = op.op
        tensors: list = []
        self.structure = _split_tensors((sample.input, sample.args, sample.kwargs), tensors)
        self.tensors = tensors

    def forward(self, *tensors: torch.Tensor) -> tuple:
        inp, args, kwargs = _fill(self.structure, tensors)
        return tuple(_flat_outputs(self.fn(inp, *args, **kwargs)))


def samples(op: Any, limit: Optional[int] = None) -> list:
    out = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))
    return out if limit is None else out[:limit]


def check_sample(op: Any, sample: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Export, import, build and run one sample; compare with eager (Unexportable when
    torch.export fails)."""
    from torch_testing import build, run

    module = SampleModule(op, sample)
    args = module.tensors
    try:
        with torch.no_grad():
            want = [t.detach().numpy() for t in module(*args)]
    except Exception as err:  # noqa: BLE001 - the sample does not run in eager either
        raise Unexportable(f"eager fails: {type(err).__name__}: {err}") from err
    if not want:
        raise Unexportable("no tensor output")
    try:
        ep = torch.export.export(module, tuple(args))
    except Exception as err:  # noqa: BLE001 - whatever torch.export raises
        raise Unexportable(f"{type(err).__name__}: {str(err).splitlines()[0][:200]}") from err
    vm = build(ep)
    got = run(vm, args)
    assert len(got) == len(want), (len(got), len(want))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if op.name not in UNINITIALISED:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
