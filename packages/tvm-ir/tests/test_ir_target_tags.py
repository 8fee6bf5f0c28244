"""Named targets (TargetTag): in-process and plugin registration, expansion, overrides,
unknown names with close matches."""

import warnings

import pytest
from tvm.ffi import PluginLoadWarning, hookimpl, register_plugin, structural_equal, unregister_plugin
from tvm.ir import Target, TargetError
from tvm.ir.target import (
    TargetTag,
    UnknownTargetKindError,
    get_target_tag,
    list_target_tags,
    register_target_tag,
    unregister_target_tag,
)


@pytest.fixture
def board(cpu_kind):
    tag = register_target_tag(TargetTag(
        "test-board", "testcpu -mcpu=cortex-x -mattr=+neon -num-cores=4", doc="a test board"))
    yield tag
    unregister_target_tag("test-board")


def test_tag_expands_to_its_target(board):
    t = Target("test-board")
    assert t.kind_name == "testcpu"
    assert t.mcpu == "cortex-x" and t.mattr == ("+neon",) and t.num_cores == 4
    assert structural_equal(t, Target("testcpu -mcpu=cortex-x -mattr=+neon -num-cores=4"))
    assert structural_equal(Target(str(t)), t)  # the canonical string is the expansion
    assert structural_equal(Target({"kind": "test-board"}), t)


def test_options_after_the_tag_replace_its_own(board):
    t = Target("test-board -num-cores=2 -fast-math")
    assert t.num_cores == 2 and t.fast_math is True and t.mcpu == "cortex-x"
    assert Target("test-board -num_cores=1").num_cores == 1  # either spelling
    assert Target({"kind": "test-board", "mattr": ["+sve"]}).mattr == ("+sve",)
    with pytest.raises(TargetError, match="has no attribute 'nope'"):
        Target("test-board -nope=1")


def test_list_tags_and_get(board):
    assert list_target_tags()["test-board"] is board
    assert get_target_tag("test-board") is board
    listing = Target.list_tags()
    assert listing["test-board"].startswith("a test board (testcpu ")
    assert "-num-cores=4" in listing["test-board"]


def test_unknown_tag_names_close_matches(board):
    with pytest.raises(TargetError, match=r"unknown target tag 'test-bord'; did you mean "
                                          r"'test-board'"):
        get_target_tag("test-bord")
    with pytest.raises(UnknownTargetKindError) as info:
        Target("test-bord -num-cores=2")
    msg = str(info.value)
    assert "Did you mean 'test-board'" in msg and "Target.list_tags()" in msg


def test_tag_validation(cpu_kind):
    with pytest.raises(ValueError, match="invalid target tag name"):
        TargetTag("bad name", "testcpu")
    with pytest.raises(ValueError, match="needs a kind and no host"):
        TargetTag("hosted", {"kind": "testcpu", "host": "testcpu"})
    register_target_tag(TargetTag("t1", "testcpu -mcpu=a"))
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_target_tag(TargetTag("t1", "testcpu -mcpu=b"))
        register_target_tag(TargetTag("t1", "testcpu -mcpu=b"), override=True)
        assert Target("t1").mcpu == "b"
    finally:
        unregister_target_tag("t1")
    assert "t1" not in list_target_tags()


def test_a_kind_name_wins_over_a_tag(cpu_kind):
    register_target_tag(TargetTag("testcpu", "testcpu -mcpu=shadowed"))
    try:
        assert Target("testcpu").mcpu == "generic"
    finally:
        unregister_target_tag("testcpu")


class TagPlugin:
    @hookimpl
    def tvm_register_target_tags(self, register):
        register(TargetTag("plug-board", {"kind": "testcpu", "mcpu": "x1", "num-cores": 8},
                           doc="from a plugin", package="tvm-testplugin"))


class BrokenTagPlugin:
    @hookimpl
    def tvm_register_target_tags(self, register):
        raise RuntimeError("no boards today")


def test_plugin_tags_and_failure_isolation(cpu_kind):
    register_plugin(TagPlugin(), "zz-tags")
    register_plugin(BrokenTagPlugin(), "zz-broken-tags")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tags = list_target_tags()
        assert tags["plug-board"].package == "tvm-testplugin"
        assert any("'zz-broken-tags' (builtin unknown) failed in hook tvm_register_target_tags" in str(w.message)
                   for w in caught if issubclass(w.category, PluginLoadWarning))
        t = Target("plug-board")
        assert t.mcpu == "x1" and t.num_cores == 8
    finally:
        unregister_plugin("zz-tags")
        unregister_plugin("zz-broken-tags")
    assert "plug-board" not in list_target_tags()
