"""lazy_exports: a package's names imported from their submodules on first use."""

from __future__ import annotations

import sys
import types

import pytest
from tvm.ffi.lazy import lazy_exports


@pytest.fixture
def package(monkeypatch):
    """A package ``lazypkg`` with the submodules ``lazypkg.impl`` and ``lazypkg.sub``."""
    pkg = types.ModuleType("lazypkg")
    pkg.__path__ = []  # a package: relative imports resolve against it
    impl = types.ModuleType("lazypkg.impl")
    impl.answer = 42
    sub = types.ModuleType("lazypkg.sub")
    for name, mod in (("lazypkg", pkg), ("lazypkg.impl", impl), ("lazypkg.sub", sub)):
        monkeypatch.setitem(sys.modules, name, mod)
    pkg.__getattr__, pkg.__dir__ = lazy_exports("lazypkg", {"answer": ".impl"}, submodules=["sub"])
    return pkg


def test_names_import_once_and_are_then_plain_globals(package):
    assert "answer" not in vars(package)
    assert package.answer == 42
    assert vars(package)["answer"] == 42  # stored: __getattr__ is not reached again
    assert package.sub is sys.modules["lazypkg.sub"]
    assert {"answer", "sub"} <= set(dir(package))


def test_unknown_names_raise_attribute_error(package):
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nope'"):
        package.nope  # noqa: B018
    assert not hasattr(package, "other")


def test_a_name_cannot_be_both():
    with pytest.raises(ValueError, match="both"):
        lazy_exports("lazypkg", {"x": ".x"}, submodules=["x"])

