"""The tensor family of the PyTorch importer (views, casts, joining/splitting, slicing,
padding, indexing, scatter, sorting, creation) end to end: op_db samples and models with
symbolic sizes match eager; what cannot be imported fails naming the op and the reason."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

from tensor_op_db import FAMILY, Unexportable, check_sample, op_infos, samples
from torch_testing import check, export
from tvm.relax.frontend.torch import from_exported_program
from tvm.relax.frontend.torch.common import CONVERTERS, OpNotSupported, TorchImportError
from tvm.relax.frontend.torch.importer import supported_ops

# entries whose samples decompose into ops of another family: skipped until it is there
NEEDS = {
    "diag": "aten.where.self", "diag_embed": "aten.where.self", "diagflat": "aten.where.self",
    "where": "aten.where.self", "tril_indices": "aten.where.self",
    "triu_indices": "aten.where.self", "rot90": "aten.where.self",
    "block_diag": "aten.where.self", "index_fill": "aten.where.self",
}

# known failures (see the issue note): nonzero_static has no converter yet; tensor_split with
# tensor indices reads them with .item() (_local_scalar_dense)
KNOWN_FAILING = {"nonzero_static": "no converter for aten.nonzero_static",
                 "tensor_split": "tensor indices read with .item() (data-dependent)"}

# data-dependent output sizes: rejected with an error that says so
DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"}


def _cases(per_op: int = 1) -> list:
    infos = op_infos()
    out = []
    for name, variant in FAMILY:
        op = infos.get((name, variant))
        if op is None or name in DATA_DEPENDENT:
            continue
        for i in range(per_op):
            out.append(pytest.param(name, variant, i, id=f"{name}.{variant}-{i}".replace(".-", "-")))
    return out


@pytest.mark.parametrize("name,variant,index", _cases())
def test_op_db_sample_matches_eager(name: str, variant: str, index: int) -> None:
    supported_ops()  # loads the converters
    if name in KNOWN_FAILING and index == 0:
        pytest.xfail(KNOWN_FAILING[name])
    need = NEEDS.get(name)
    if need and need not in CONVERTERS:
        pytest.xfail(f"needs {need} (another family's converter)")
    op = op_infos()[(name, variant)]
    cases = samples(op, index + 1)
    if len(cases) <= index:
        pytest.xfail("op_db has fewer samples")
    try:
        check_sample(op, cases[index])
    except Unexportable as err:
        pytest.xfail(f"torch.export cannot export the sample: {err}")


class Dynamic(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple:
        b = x.shape[0]
        v = x.view(b, -1, 2)
        e = y.expand(b, 3, 4)
        s = x[1:, :, 1:3]
        t = x[: b - 1]
        c = torch.cat([x, e], 0)
        parts = torch.split(x, [1, b - 1], 0)
        z = torch.zeros(b, 2) + torch.arange(b).unsqueeze(1)
        p = torch.nn.functional.pad(x, (1, 2))
        r = x.flip(0).roll(1, 0)
        g = x.gather(2, torch.zeros(b, 3, 1, dtype=torch.long))
        return (v.sum(-1), e, s, t, c, parts[1] * 2, z, p, r, x[:, None, -1].repeat(1, 2, 1),
                torch.stack([x, x], 1).flatten(0, 1), x.transpose(0, 2).contiguous(), g)


def test_symbolic_batch_one_artifact_two_sizes() -> None:
    """view/expand/slice/cat/split/zeros/arange/pad/flip/roll/stack over a Dim batch: one
    build serves batches 4 and 7."""
    batch = Dim("batch", min=3, max=16)
    check(Dynamic(), [torch.randn(4, 3, 4), torch.randn(1, 3, 4)],
          dynamic_shapes={"x": {0: batch}, "y": None},
          more_args=[[torch.randn(7, 3, 4), torch.randn(1, 3, 4)]])


class Indexing(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> tuple:
        y = x.clone()
        y[i, :, j] = 1.5  # index_put with non-adjacent index tensors
        z = x.clone()
        z[:, i] += torch.ones(3, 2, 5)  # accumulate
        m = x.masked_fill(x > 0, -1.0)
        w = x.clone()
        w[x < 0] = 0.0  # bool-mask put of a single value
        return x[i, :, j], x[:, i], x[:, i, j[0]], y, z, m, w, x[None, ..., 1:-1:2]


def test_advanced_indexing_matches_eager() -> None:
    x = torch.randn(3, 4, 5)
    i = torch.tensor([0, -1])
    j = torch.tensor([[1], [4]])
    check(Indexing(), [x, i, j])


class Scatters(torch.nn.Module):
    def forward(self, x: torch.Tensor, idx: torch.Tensor, src: torch.Tensor) -> tuple:
        return (x.scatter(1, idx, src), x.scatter_add(1, idx, src),
                x.scatter_reduce(1, idx, src, "amax", include_self=False),
                x.scatter_reduce(1, idx, src, "mean"), x.scatter(1, idx, 2.0),
                torch.sort(x, 1, descending=True).values, torch.topk(x, 2, 1).indices)


def test_scatter_and_sort_match_eager() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 5)
    idx = torch.tensor([[0, 1, 0], [4, 4, 2], [3, 1, 1]])
    check(Scatters(), [x, idx, torch.randn(3, 4)])


class Mask(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x > 0]


def test_boolean_mask_selection_is_rejected_naming_the_op() -> None:
    ep = export(Mask(), [torch.randn(4)])
    with pytest.raises(TorchImportError) as err:
        from_exported_program(ep)
    text = str(err.value)
    assert "aten.index.Tensor" in text or "data-dependent" in text


class SymRepeat(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.repeat(x.shape[0], 1)


def test_symbolic_repeat_count_is_rejected() -> None:
    ep = export(SymRepeat(), [torch.randn(3, 2)], dynamic_shapes={"x": {0: Dim("n", max=8)}})
    with pytest.raises(OpNotSupported, match="aten.repeat.default.*repeats must be a constant"):
        from_exported_program(ep)


class Slices(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple:
        n = x.shape[0]
        return x[2:], x[: n - 1], x[-3:-1], x.narrow(0, 1, n - 2)


def test_symbolic_slice_bounds_structure() -> None:
    """Static bounds stay one strided_slice; a symbolic end is a run-time slice whose shape
    is torch's ``n - 1``."""
    ep = export(Slices(), [torch.randn(6, 2)], dynamic_shapes={"x": {0: Dim("n", min=4, max=32)}})
    text = from_exported_program(ep).script()
    assert "R.strided_slice" in text
    assert "R.dynamic_strided_slice" in text
    check(Slices(), [torch.randn(6, 2)], dynamic_shapes={"x": {0: Dim("n", min=4, max=32)}},
          more_args=[[torch.randn(9, 2)]])


class RepeatCounts(torch.nn.Module):
    def forward(self, counts: torch.Tensor) -> torch.Tensor:
        return torch.repeat_interleave(counts)


def test_repeat_interleave_by_tensor_is_rejected_as_data_dependent() -> None:
    ep = export(RepeatCounts(), [torch.tensor([1, 0, 2])])
    with pytest.raises(OpNotSupported, match="aten.repeat_interleave.Tensor.*data-dependent"):
        from_exported_program(ep)
