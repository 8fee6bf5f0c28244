"""Fixtures of the c target tests: the plugin, a private kernel cache, the C compiler."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Compiled kernels go to a per-session cache, not the user's ~/.cache."""
    old = os.environ.get("TVM_CACHE_DIR")
    os.environ["TVM_CACHE_DIR"] = str(tmp_path_factory.mktemp("tvm-cache"))
    yield
    if old is None:
        os.environ.pop("TVM_CACHE_DIR", None)
    else:
        os.environ["TVM_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _c_plugin():
    """The ``c`` target kind, whether or not tvm-target-c is pip-installed."""
    from tvm.target.c.plugin import ensure_registered

    ensure_registered()


def has_cc() -> bool:
    return any(shutil.which(c) for c in ("cc", "gcc", "clang")) or bool(os.environ.get("CC"))


requires_cc = pytest.mark.skipif(not has_cc(), reason="no C compiler (cc/gcc/clang) found")
