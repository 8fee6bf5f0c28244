"""Module weights the torch.compile backend bakes into its builds as constants.

Dynamo lifts the parameters and buffers of the modules it traces to graph inputs (with
``inline_inbuilt_nn_modules``, torch's default), so a build that took them as run-time
inputs would miss what the direct ``from_exported_program`` path gets from constant weights:
batch-norm folding, constant folding and the compile-time prepacking of conv/matmul weights.
:func:`weight_positions` finds them; :class:`FrozenWeights` holds one set of their values
(numpy copies, a content digest) and tells cheaply, at each call, whether the live tensors
still are the ones baked.

Which inputs are weights: dynamo marks every tensor it reads from an ``nn.Module``
(parameters, buffers, plain tensor attributes) as a *static input*, recording
``_dynamo_static_input_type`` in the placeholder's ``meta["tensor_dict"]`` (and on the
tensor); AOTAutograd reads the same mark to compute ``static_input_indices`` for inductor
and cudagraphs.  The placeholder's ``meta["grapharg"].source.guard_source`` says where the
tensor came from; only marks on an nn-module source count here, so a tensor the user marked
with ``torch._dynamo.mark_static_address`` (a KV cache, say) stays a run-time input.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any, Sequence

__all__ = ["weight_positions", "FrozenWeights", "weights_digest"]


def weight_positions(gm: Any, example_inputs: Sequence[Any]) -> list[int]:
    """Indices of the placeholders of dynamo graph ``gm`` that are module weights."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [i for i, (node, example) in enumerate(zip(placeholders, example_inputs))
            if _is_module_weight(node, example)]


def _is_module_weight(node: Any, example: Any) -> bool:
    import torch

    if not isinstance(example, torch.Tensor) or type(example).__name__ == "FakeTensor":
        return False
    if type(example) not in (torch.Tensor, torch.nn.Parameter):
        return False  # a tensor subclass (DTensor, a quantized wrapper ...): left alone
    if example.layout != torch.strided or example.is_meta:
        return False
    mark = (node.meta.get("tensor_dict") or {}).get("_dynamo_static_input_type")
    if mark is None:
        mark = getattr(example, "_dynamo_static_input_type", None)
    if mark is None:
        return False
    source = getattr(node.meta.get("grapharg"), "source", None)
    guard = getattr(source, "guard_source", None)
    if guard is None:
        return False
    return bool(guard.is_unspecialized_nn_module() or guard.is_specialized_nn_module())


def weights_digest(tensors: Sequence[Any]) -> str:
    """A content hash of ``tensors`` (dtype, shape and bytes of each, in order)."""
    import torch

    h = hashlib.blake2b(digest_size=20)
    for t in tensors:
        t = t.detach()
        h.update(f"{t.dtype}{tuple(t.shape)};".encode())
        if t.numel():
            t = t.cpu().resolve_conj().resolve_neg().contiguous()
            h.update(t.view(-1).view(torch.uint8).numpy())
    return h.hexdigest()


class FrozenWeights:
    """One set of weight values baked into a build, and the cheap per-call test that the
    graph's weight inputs still hold them.

    ``checked`` is the :func:`~.dynamo.reload_weights` generation at which the values were
    last read.  ``current(args)`` compares, for each weight input, the tensor's identity, its
    version
    counter (bumped by every in-place write through the tensor: an optimizer step,
    ``load_state_dict``, ``p.copy_`` under ``no_grad``) and its data pointer (``p.data =
    other``).  Writes that bypass the version counter -- through ``p.data`` (``p.data
    .copy_(...)``, ``.data`` has a counter of its own), numpy or DLPack views, or in place
    to an inference tensor (made under ``torch.inference_mode``, which has no counter) --
    are not seen; :meth:`content_changed` re-reads the values (what
    :func:`~.dynamo.reload_weights` asks for).
    """

    def __init__(self, positions: Sequence[int], args: Sequence[Any], checked: int = 0) -> None:
        self.positions = list(positions)
        self.checked = checked
        tensors = [args[i] for i in self.positions]
        self._dead = False
        self._refs = [weakref.ref(t, self._on_dead) for t in tensors]
        self._ids = [id(t) for t in tensors]
        # inference tensors (made under torch.inference_mode) have no version counter
        self._inference = [t.is_inference() for t in tensors]
        if not any(self._inference):
            self._inference = None
        self._versions = self._versions_of(tensors)
        self._ptrs = [t.data_ptr() for t in tensors]
        self.digest = weights_digest(tensors)

    def _on_dead(self, _ref: Any) -> None:
        self._dead = True  # a baked tensor was freed: its id may come back on another

    def current(self, args: Sequence[Any]) -> bool:
        """Whether ``args`` (a call's graph inputs) carry the baked weights unchanged."""
        tensors = [args[i] for i in self.positions]
        return (not self._dead
                and [id(t) for t in tensors] == self._ids
                and self._versions_of(tensors) == self._versions
                and [t.data_ptr() for t in tensors] == self._ptrs)

    def _versions_of(self, tensors: list[Any]) -> list[int]:
        if self._inference is None:
            return [t._version for t in tensors]
        return [-1 if inf else t._version for t, inf in zip(tensors, self._inference)]

    @property
    def alive(self) -> bool:
        """Whether every watched tensor still exists."""
        return not self._dead

    def same_tensors(self, other: "FrozenWeights") -> bool:
        """Whether ``other`` watches the same (live) tensors, whatever their values."""
        return not (self._dead or other._dead) and self._ids == other._ids

    def content_changed(self, args: Sequence[Any]) -> bool:
        """Whether the values in ``args`` differ from the baked ones (reads them all)."""
        return weights_digest([args[i] for i in self.positions]) != self.digest

    @staticmethod
    def arrays(args: Sequence[Any], positions: Sequence[int]) -> list[Any]:
        """Numpy copies of the weight inputs, in ``positions`` order."""
        from .importer import tensor_to_numpy

        return [tensor_to_numpy(args[i], f"weight input {i}") for i in positions]
