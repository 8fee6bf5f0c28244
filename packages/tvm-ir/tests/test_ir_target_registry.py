"""What the core asks the target registry for: capabilities (host_target) and the lowering
passes a kind declares.  The tests do not depend on which target plugins are installed:
``no_installed_plugins`` blocks every entry-point plugin and in-process plugins add kinds."""

from __future__ import annotations

import pytest
from tvm.ffi import structural_equal
from tvm.ffi.plugin import blocked_plugins, hookimpl, register_plugin, unregister_plugin
from tvm.ir import IRModule
from tvm.ir.target import (
    HOST_JIT,
    Target,
    TargetKind,
    UnknownTargetKindError,
    as_target,
    host_target,
    list_target_kinds,
    register_target_kind,
    unregister_target_kind,
)
from tvm.ir.transform import get_pass, list_passes, module_pass


@pytest.fixture
def no_installed_plugins():
    """The registry with every entry-point plugin blocked (restored afterwards)."""
    with blocked_plugins():
        yield


def _identity_pass():
    return module_pass(lambda mod, ctx: mod, opt_level=0, name="tir.jittest.Identity")


class JitPlugin:
    """A vendor plugin whose kind JIT-compiles for the host and brings one lowering pass."""

    @hookimpl
    def tvm_register_target_kinds(self, register):
        register(TargetKind("jittest", 1, {"opt-level": (int, 3)}, default_keys=("cpu",),
                            package="tvm-testplugin-jit", capabilities=(HOST_JIT,),
                            lowering_passes={"tir.jittest.Identity": _identity_pass}))


def test_host_target_without_a_jit_kind_explains(no_installed_plugins):
    assert host_target(allow_none=True) is None
    assert list_target_kinds(HOST_JIT) == []
    with pytest.raises(UnknownTargetKindError, match="capability 'host-jit'.*pip install"):
        host_target()
    assert Target.current() is None
    with pytest.raises(UnknownTargetKindError, match="host-jit"):
        as_target(None)  # no current target, no host target


def test_host_target_follows_plugin_registration(no_installed_plugins):
    register_plugin(JitPlugin(), "jittest", distribution="tvm-testplugin-jit")
    try:
        target = host_target()
        assert isinstance(target, Target) and target.kind_name == "jittest"
        assert target.attrs["opt-level"] == 3
        assert list_target_kinds(HOST_JIT) == ["jittest"]
        assert "jittest" in list_target_kinds()
        # the default of the compiling functions: the current target first, then the host
        assert as_target(None).kind_name == "jittest"
        other = TargetKind("nojit", 1)
        register_target_kind(other)
        try:
            assert host_target().kind_name == "jittest"  # a kind without the capability
            with Target("nojit") as current:
                assert as_target(None) is current
        finally:
            unregister_target_kind("nojit")
    finally:
        unregister_plugin("jittest")
    assert host_target(allow_none=True) is None


def test_in_process_jit_kind_comes_first(no_installed_plugins):
    register_plugin(JitPlugin(), "jittest", distribution="tvm-testplugin-jit")
    register_target_kind(TargetKind("localjit", 1, capabilities=HOST_JIT))
    try:
        assert host_target().kind_name == "localjit"
        assert list_target_kinds(HOST_JIT) == ["jittest", "localjit"]
    finally:
        unregister_target_kind("localjit")
        unregister_plugin("jittest")


def test_a_kinds_lowering_passes_are_registered_by_name(no_installed_plugins):
    register_plugin(JitPlugin(), "jittest", distribution="tvm-testplugin-jit")
    try:
        kind = Target("jittest").kind
        assert list(kind.lowering_passes) == ["tir.jittest.Identity"]
        assert "tir.jittest.Identity" in list_passes()
        p = get_pass("tir.jittest.Identity")
        assert p.name == "tir.jittest.Identity"
        mod = IRModule({})
        assert p(mod) is mod
    finally:
        unregister_plugin("jittest")


def test_capabilities_and_passes_are_validated():
    kind = TargetKind("capcheck", 1, capabilities=["a", "b"])
    assert kind.capabilities == frozenset({"a", "b"})
    assert dict(TargetKind("nopass", 1).lowering_passes) == {}
    with pytest.raises(TypeError, match="capabilities"):
        TargetKind("badcap", 1, capabilities=(1,))
    with pytest.raises(TypeError, match="lowering_passes"):
        TargetKind("badpass", 1, lowering_passes={"x": "not callable"})


def test_as_target_conversions(cpu_kind):
    t = Target("testcpu -num-cores=2")
    assert as_target(t) is t
    assert structural_equal(as_target("testcpu -num-cores=2"), t)
    assert structural_equal(as_target({"kind": "testcpu", "num-cores": 2}), t)
    with pytest.raises(TypeError, match="target must be a string"):
        as_target(42)
