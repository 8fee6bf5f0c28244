"""The debug-knob home: declared environment variables with typed getters."""

from __future__ import annotations

from pathlib import Path

import pytest
from tvm.ffi import knobs
from tvm.ffi.knobs import Knob, declare_knob, get_knob, list_knobs


def test_every_knob_is_declared_once_with_its_facts() -> None:
    table = list_knobs()
    assert list(table) == sorted(table)
    for name, knob in table.items():
        assert isinstance(knob, Knob) and knob.name == name
        assert knob.kind in knobs.KINDS and knob.doc and "\n" not in knob.doc
        assert knob.package.startswith("tvm-")
    assert {"TVM_DISABLE_PLUGINS", "TVM_TRACE_PLUGINS", "TVM_NUM_THREADS", "TVM_CACHE_DIR",
            "TVM_C_KEEP_SOURCE", "TVM_NVCC", "TVM_NVRTC",
            "TVM_SCHEDULE_RULES_STRICT"} <= set(table)
    assert get_knob("TVM_NUM_THREADS") is knobs.NUM_THREADS
    with pytest.raises(KeyError, match="no knob 'TVM_NOPE' is declared"):
        get_knob("TVM_NOPE")


@pytest.mark.parametrize("text, value", [
    (None, False), ("", False), ("1", True), ("on", True), ("TRUE", True), (" yes ", True),
    ("0", False), ("off", False), ("no", False),
])
def test_bool_knob(monkeypatch, text, value) -> None:
    if text is None:
        monkeypatch.delenv("TVM_TRACE_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("TVM_TRACE_PLUGINS", text)
    assert knobs.TRACE_PLUGINS.get() is value


def test_unreadable_values_warn_and_read_as_the_default(monkeypatch) -> None:
    monkeypatch.setenv("TVM_TRACE_PLUGINS", "maybe")
    with pytest.warns(RuntimeWarning, match="TVM_TRACE_PLUGINS='maybe' is not valid"):
        assert knobs.TRACE_PLUGINS.get() is False
    monkeypatch.setenv("TVM_NUM_THREADS", "0")
    with pytest.warns(RuntimeWarning, match="positive integer"):
        assert knobs.NUM_THREADS.get() is None
    monkeypatch.setenv("TVM_NUM_THREADS", "4")
    assert knobs.NUM_THREADS.get() == 4


def test_names_path_and_str_knobs(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TVM_DISABLE_PLUGINS", " a, b ,,c")
    assert knobs.DISABLE_PLUGINS.get() == frozenset({"a", "b", "c"})
    monkeypatch.setenv("TVM_CACHE_DIR", "~/somewhere")
    assert knobs.CACHE_DIR.get() == Path("~/somewhere").expanduser()
    monkeypatch.setenv("CC", "gcc -O2")
    assert knobs.CC.get() == "gcc -O2" and knobs.CC.is_set()
    monkeypatch.delenv("CC")
    assert knobs.CC.get() is None and not knobs.CC.is_set()


def test_cache_dir(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TVM_CACHE_DIR", str(tmp_path))
    assert knobs.cache_dir("c") == tmp_path / "c"
    monkeypatch.delenv("TVM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert knobs.cache_dir("cuda") == tmp_path / "xdg" / "tvm" / "cuda"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert knobs.cache_dir("c") == Path("~/.cache/tvm/c").expanduser()


def test_declare_knob_checks_its_arguments() -> None:
    knob = declare_knob("TVM_TEST_KNOB", "int", 3, "a knob of the tests", "tvm-ffi-tests")
    assert declare_knob("TVM_TEST_KNOB", "int", 3, "a knob of the tests", "tvm-ffi-tests") == knob
    with pytest.raises(ValueError, match="already declared differently"):
        declare_knob("TVM_TEST_KNOB", "bool", False, "another", "tvm-ffi-tests")
    with pytest.raises(ValueError, match="kind must be one of"):
        declare_knob("TVM_TEST_OTHER", "float", 1.0, "x", "tvm-ffi-tests")
    with pytest.raises(ValueError, match="one non-empty line"):
        declare_knob("TVM_TEST_OTHER", "int", 1, "two\nlines", "tvm-ffi-tests")
