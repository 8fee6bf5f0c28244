"""OpInfo samples (torch.testing's op_db) as exportable modules: ``sample_cases(names)`` yields
(op name, variant, sample index, module, tensor inputs) for the float32 CPU samples."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import torch


class SampleModule(torch.nn.Module):
    """``forward(*tensors)`` calls ``fn(input, *args, **kwargs)`` with the sample's tensors
    as inputs and every other argument a constant."""

    def __init__(self, fn: Any, structure: Any):
        super().__init__()
        self.fn, self.structure = fn, structure

    def forward(self, *tensors: torch.Tensor) -> Any:
        it = iter(tensors)

        def fill(value: Any) -> Any:
            if isinstance(value, _Slot):
                return next(it)
            if isinstance(value, (list, tuple)):
                return type(value)(fill(v) for v in value)
            if isinstance(value, dict):
                return {k: fill(v) for k, v in value.items()}
            return value

        args, kwargs = fill(self.structure)
        return self.fn(*args, **kwargs)


class _Slot:
    pass


def _lift(value: Any, tensors: list) -> Any:
    if isinstance(value, torch.Tensor):
        tensors.append(value.detach().clone())
        return _Slot()
    if isinstance(value, (list, tuple)):
        return type(value)(_lift(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: _lift(v, tensors) for k, v in value.items()}
    return value


def sample_cases(names: Sequence[tuple[str, str]], limit: int = 3
                 ) -> Iterator[tuple[str, int, SampleModule, list]]:
    """Up to ``limit`` float32 samples of each (op_db name, variant_test_name)."""
    from torch.testing._internal.common_methods_invocations import op_db

    by_name = {(o.name, o.variant_test_name): o for o in op_db}
    for key in names:
        info = by_name[key]
        label = key[0] + (f".{key[1]}" if key[1] else "")
        for i, sample in enumerate(info.sample_inputs("cpu", torch.float32)):
            if i >= limit:
                break
            tensors: list = []
            structure = _lift(((sample.input, *sample.args), dict(sample.kwargs)), tensors)
            yield label, i, SampleModule(info.op, structure), tensors
