"""Run-time seeds of compiled random operators: the builtin ``vm.builtin.random_seed``.

Compiled random ops (``relax.random.*``) are pure functions of an int64 seed; a program gets a
fresh seed from this builtin on every call, so two runs of a compiled function draw different
numbers.  The seeds are a SplitMix64 sequence from a global state that :func:`manual_seed`
resets (for reproducible runs) and :func:`initial_seed` reports.
"""

from __future__ import annotations

import threading

from .builtins import register_builtin

__all__ = ["manual_seed", "initial_seed", "next_seed"]

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_DEFAULT_SEED = 0x5EED_0F_7B4D

_lock = threading.Lock()
_state = {"seed": _DEFAULT_SEED, "counter": 0}


def manual_seed(seed: int) -> None:
    """Restart the sequence of run-time seeds from ``seed`` (any int)."""
    with _lock:
        _state["seed"] = int(seed) & _MASK64
        _state["counter"] = 0


def initial_seed() -> int:
    """The seed the current sequence started from."""
    return _state["seed"]


def _splitmix64(x: int) -> int:
    z = x & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def next_seed() -> int:
    """The next seed of the sequence, as a signed int64."""
    with _lock:
        _state["counter"] += 1
        value = _splitmix64(_state["seed"] + _state["counter"] * _GOLDEN)
    return value - (1 << 64) if value >= 1 << 63 else value


@register_builtin("vm.builtin.random_seed")
def _random_seed(stream: int = 0) -> int:
    """A new int64 seed on every call (``stream`` names the call site; it keeps passes from
    merging two sites and does not change the sequence)."""
    return next_seed()
