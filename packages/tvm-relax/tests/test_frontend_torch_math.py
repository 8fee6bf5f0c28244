"""PyTorch importer, math converters, structure only (no build): ops torch would
decompose stay whole, dtypes follow torch's promotion, and bad arguments name the op."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tvm.relax.frontend.torch import from_exported_program  # noqa: E402
from tvm.relax.frontend.torch.common import OpNotSupported, TorchImportError  # noqa: E402
from tvm.relax.frontend.torch.importer import decomposition_table  # noqa: E402


def _calls(mod: object) -> list[str]:
    """The Relax operator names called in main, in binding order."""
    names = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            op = getattr(binding.value, "op", None)
            if op is not None and hasattr(op, "name"):
                names.append(op.name)
    return names


def _import(fn, *args: object) -> object:
    class M(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    return from_exported_program(torch.export.export(M(), tuple(args)))


def test_linear_stays_one_matmul():
    table = decomposition_table()
    assert torch.ops.aten.linear.default not in table
    lin = torch.nn.Linear(8, 4)
    calls = _calls(_import(lin, torch.randn(3, 8)))
    assert calls.count("relax.matmul") == 1
    assert calls.count("relax.permute_dims") == 1, calls  # the weight's transpose, once
    assert calls.count("relax.add") == 1


@pytest.mark.parametrize("fn, op", [
    (torch.nn.functional.gelu, "relax.nn.gelu"),
    (lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relax.nn.gelu_tanh"),
    (torch.nn.functional.silu, "relax.nn.silu"),
    (lambda x: torch.softmax(x, -1), "relax.nn.softmax"),
    (lambda x: torch.log_softmax(x, 0), "relax.nn.log_softmax"),
    (lambda x: torch.einsum("ij,kj->ik", x, x), "relax.einsum"),
    (lambda x: torch.matmul(x, x.T), "relax.matmul"),
])
def test_kept_whole(fn, op):
    assert op in _calls(_import(fn, torch.randn(3, 4)))


def _out_dtype(mod: object) -> str:
    return mod["main"].ret_struct_info.dtype


@pytest.mark.parametrize("fn, args, dtype", [
    (lambda x: x + 1.5, (torch.arange(4),), "float32"),
    (lambda x: x * 2, (torch.arange(4, dtype=torch.int32),), "int32"),
    (lambda x, y: x + y, (torch.arange(4, dtype=torch.int32), torch.tensor(3)), "int32"),
    (lambda x, y: x + y, (torch.ones(4, dtype=torch.uint8), torch.ones(4, dtype=torch.int8)),
     "int16"),
    (lambda x: x / 2, (torch.arange(4),), "float32"),
    (lambda x: torch.div(x, 2, rounding_mode="floor"), (torch.arange(4),), "int64"),
    (lambda x: x.sum(), (torch.ones(4, dtype=torch.bool),), "int64"),
    (lambda x: x.exp(), (torch.arange(4),), "float32"),
    (lambda x, y: x & y, (torch.ones(4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool)),
     "bool"),
    (lambda x: x > 1.5, (torch.arange(4),), "bool"),
])
def test_promotion(fn, args, dtype):
    assert _out_dtype(_import(fn, *args)) == dtype


def test_integer_to_negative_power_is_rejected():
    with pytest.raises(OpNotSupported, match=r"aten\.pow\.Tensor_Scalar.*negative power"):
        _import(lambda x: torch.pow(x, -2), torch.arange(1, 4))


@torch.library.custom_op("tvm_relax_test::scaled", mutates_args=())
def _scaled(x: torch.Tensor, k: float) -> torch.Tensor:
    """An operator no converter knows: defined by this test alone."""
    return x * k


@_scaled.register_fake
def _(x, k):
    return torch.empty_like(x)


def test_unsupported_op_names_overload_and_hint():
    with pytest.raises(TorchImportError,
                       match=r"tvm_relax_test\.scaled\.default.*custom_convert_map"):
        _import(lambda x: _scaled(x, 2.0), torch.randn(4))
