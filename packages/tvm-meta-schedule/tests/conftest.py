"""The tuner's tests build, measure or target llvm kernels: where tvm-target-llvm is not
installed (``nox -s "tests(tvm-meta-schedule)"`` installs only the declared dependencies),
they are skipped, with the reason."""

from __future__ import annotations

import importlib.util

import pytest

def _has(module: str) -> bool:
    try:  # find_spec raises when a parent package (tvm.target) is missing too
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


_LLVM = _has("tvm.target.llvm")


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if _LLVM:
        return
    skip = pytest.mark.skip(reason="needs tvm-target-llvm (the tuner's tests tune llvm "
                                   "kernels); installed in nox -s all")
    for item in items:
        item.add_marker(skip)


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt during the test, as in an interactive shell: a
    process started in the background by a non-interactive shell inherits SIGINT ignored,
    and Python then installs no handler of its own."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
