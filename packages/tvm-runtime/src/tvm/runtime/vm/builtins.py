"""Functions the VM's ``call`` instruction finds by name (``vm.builtin.*``), and runtime values.

Run-time values of Relax programs: tensors are :class:`~tvm.runtime.Tensor`, tuples are Python
tuples, shape values are :class:`ShapeTuple` (a tuple of ints), scalars are Python numbers
and the null object is ``None``.  :func:`register_builtin` adds a function (e.g. a Python
implementation of a custom packed function that compiled code calls with ``call_packed``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..device import Device
from ..tensor import Tensor

__all__ = ["ShapeTuple", "register_builtin", "get_builtin", "list_builtins"]


class ShapeTuple(tuple):
    """A shape value: a tuple of ints (distinct from a Relax tuple value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ShapeTuple({tuple(self)!r})"


_BUILTINS: dict[str, Callable[..., Any]] = {}


def register_builtin(name: str, func: Callable[..., Any] | None = None,
                     override: bool = False) -> Any:
    """Register ``func`` as VM builtin ``name``; usable as a decorator."""

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        if name in _BUILTINS and not override:
            raise ValueError(f"VM builtin {name!r} is already registered (pass override=True)")
        _BUILTINS[name] = f
        return f

    return wrap(func) if func is not None else wrap


def get_builtin(name: str) -> Callable[..., Any] | None:
    """The builtin called ``name``, or None."""
    return _BUILTINS.get(name)


def list_builtins() -> list[str]:
    return sorted(_BUILTINS)


@register_builtin("vm.builtin.make_tuple")
def _make_tuple(*fields: Any) -> tuple:
    return tuple(fields)


@register_builtin("vm.builtin.tuple_getitem")
def _tuple_getitem(value: Any, index: int) -> Any:
    if not isinstance(value, tuple):
        raise TypeError(f"vm.builtin.tuple_getitem: expected a tuple, got {type(value).__name__}")
    if not -len(value) <= index < len(value):
        raise IndexError(
            f"vm.builtin.tuple_getitem: index {index} out of range for a tuple of {len(value)}"
        )
    return value[index]


@register_builtin("vm.builtin.shape_of")
def _shape_of(value: Any) -> ShapeTuple:
    if not isinstance(value, Tensor):
        raise TypeError(f"vm.builtin.shape_of: expected a tensor, got {type(value).__name__}")
    return ShapeTuple(value.shape)


@register_builtin("vm.builtin.null_value")
def _null_value() -> None:
    return None


@register_builtin("vm.builtin.copy")
def _copy(value: Any) -> Any:
    return value


@register_builtin("vm.builtin.reshape")
def _reshape(value: Tensor, shape: Any) -> Tensor:
    """A view of ``value`` with another shape of the same number of elements."""
    if not isinstance(value, Tensor):
        raise TypeError(f"vm.builtin.reshape: expected a tensor, got {type(value).__name__}")
    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != value.size:
        raise ValueError(
            f"vm.builtin.reshape: cannot view a tensor of shape {value.shape} as {shape}"
        )
    return value.create_view(shape)


_COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}


@register_builtin("vm.builtin.view_as_real")
def _view_as_real(value: Tensor) -> Tensor:
    """A complex tensor's storage viewed (no copy) as its real dtype with a trailing
    dimension of 2 (real part, imaginary part)."""
    part = _COMPLEX_PARTS.get(str(value.dtype)) if isinstance(value, Tensor) else None
    if part is None:
        raise TypeError("vm.builtin.view_as_real: expected a complex64/complex128 tensor, got "
                        f"{getattr(value, 'dtype', type(value).__name__)}")
    return value.create_view((*value.shape, 2), part)


@register_builtin("vm.builtin.view_as_complex")
def _view_as_complex(value: Tensor) -> Tensor:
    """The inverse of ``vm.builtin.view_as_real``: a float32/float64 tensor whose last
    dimension is 2 viewed (no copy) as complex64/complex128 without that dimension."""
    parts = {v: k for k, v in _COMPLEX_PARTS.items()}
    dtype = parts.get(str(value.dtype)) if isinstance(value, Tensor) else None
    if dtype is None or not value.shape or value.shape[-1] != 2:
        raise TypeError("vm.builtin.view_as_complex: expected a float32/float64 tensor whose "
                        "last dimension is 2, got "
                        f"{getattr(value, 'dtype', '?')}{list(getattr(value, 'shape', []))}")
    return value.create_view(tuple(value.shape[:-1]), dtype)


@register_builtin("vm.builtin.to_device")
def _to_device(value: Tensor, device_type: int, device_id: int) -> Tensor:
    return value.copyto(Device(int(device_type), int(device_id)))


@register_builtin("vm.builtin.tensor_to_scalar")
def _tensor_to_scalar(value: Any) -> Any:
    """A 0-d (or one element) tensor's value as a Python number."""
    if isinstance(value, Tensor):
        return value.numpy().reshape(-1)[0].item()
    return value
