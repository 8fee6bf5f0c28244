import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.ffi import (
    PluginError,
    PluginLoadWarning,
    from_json,
    hookimpl,
    register_plugin,
    reload_plugins,
    structural_equal,
    structural_hash,
    to_json,
    unregister_plugin,
)
from tvm.ir import (
    Target,
    TargetError,
    TargetKind,
    UnknownTargetKindError,
    get_target_kind,
    list_target_kinds,
    register_target_kind,
    unregister_target_kind,
)
from tvm.ir.target import TargetKindSpecs


def test_parse_string(cpu_kind):
    t = Target("testcpu -mcpu=znver3 -num-cores=2 -mattr=+avx2,+fma -fast-math")
    assert t.kind is cpu_kind and t.kind_name == "testcpu"
    assert t.mcpu == "znver3" and t.num_cores == 2 and t.mattr == ("+avx2", "+fma")
    assert t.fast_math is True and t.attrs["fast-math"] is True
    assert t.max_num_threads == 64 and t.opt_scale == 1.0  # defaults filled in
    assert t.keys == ("cpu",) and t.device_type == 1 and t.host is None
    assert t.get_attr("num_cores") == 2 and t.get_attr("nope", 7) == 7
    assert str(t) == "testcpu -fast-math=true -mattr=+avx2,+fma -mcpu=znver3 -num-cores=2"
    assert repr(t) == f"Target({str(t)!r})"
    assert str(Target("testcpu")) == "testcpu"
    assert Target("testcpu").mattr is None  # declared, unset


def test_canonical_string_roundtrip(cpu_kind):
    for text in [
        "testcpu",
        "testcpu -mcpu=skylake",
        "testcpu --num-cores=8 -fast-math=false -opt-scale=2.5",
        "testcpu -keys=arm_cpu -mattr=+neon",
        "testcpu -mcpu='a b'",
    ]:
        t = Target(text)
        again = Target(str(t))
        assert structural_equal(t, again), (text, str(t))
        assert str(again) == str(t)
    assert Target("testcpu -keys=arm_cpu").keys == ("arm_cpu", "cpu")
    assert Target("testcpu -mcpu='a b'").mcpu == "a b"
    # giving a default explicitly yields the same target
    assert structural_equal(Target("testcpu -mcpu=generic"), Target("testcpu"))
    assert structural_hash(Target("testcpu -mcpu=generic")) == structural_hash(Target("testcpu"))


def test_dict_form_and_host(cpu_kind, gpu_kind):
    t = Target({"kind": "testgpu", "arch": "sm_90"}, host="testcpu -mcpu=znver3")
    assert t.arch == "sm_90" and t.keys == ("gpu",) and t.device_type == 2
    assert isinstance(t.host, Target) and t.host.mcpu == "znver3"
    assert str(t) == "testgpu -arch=sm_90"
    exported = t.export()
    assert exported["host"]["mcpu"] == "znver3"
    assert structural_equal(Target(exported), t)
    assert structural_equal(Target(t), t)
    assert Target(t, host=None).host is not None  # host kept unless replaced
    assert t.with_host(None).host is None
    assert t.with_host("testcpu").host.mcpu == "generic"
    d = Target({"kind": "testcpu", "num_cores": "4", "mattr": ["+a", "+b"], "fast-math": True})
    assert d.num_cores == 4 and d.mattr == ("+a", "+b") and d.fast_math is True
    with pytest.raises(TargetError, match="cannot itself have a host"):
        Target("testgpu", host=t)
    with pytest.raises(TargetError, match="lacks 'kind'"):
        Target({"arch": "sm_90"})


def test_with_fields(cpu_kind):
    t = Target("testcpu -mcpu=znver3")
    assert t.with_fields() is t
    t2 = t.with_fields(attrs={**t.attrs, "num-cores": 4})
    assert t2.num_cores == 4 and t2.mcpu == "znver3" and t.num_cores is None
    with pytest.raises(TargetError, match="num-cores"):
        t.with_fields(attrs={"num-cores": "x"})
    with pytest.raises(TypeError, match="no fields"):
        t.with_fields(bogus=1)


def test_json_roundtrip(cpu_kind, gpu_kind):
    t = Target("testgpu -arch=sm_80", host="testcpu -num-cores=3")
    back = from_json(to_json({"target": t}))["target"]
    assert structural_equal(back, t)
    assert back.host.num_cores == 3 and str(back) == str(t)


def test_current_target(cpu_kind, gpu_kind):
    assert Target.current() is None
    with pytest.raises(TargetError, match="no current target"):
        Target.current(allow_none=False)
    a, b = Target("testcpu"), Target("testgpu")
    with a:
        assert Target.current() is a
        with b as entered:
            assert entered is b and Target.current() is b
        assert Target.current() is a
    assert Target.current() is None


def test_attribute_errors(cpu_kind):
    with pytest.raises(
        TargetError, match="'testcpu': attribute 'num-cores' expects int, got str 'abc'"
    ) as info:
        Target("testcpu -num-cores=abc")
    assert isinstance(info.value, ValueError) and "-num-cores=4" in str(info.value)
    with pytest.raises(ValueError, match="attribute 'fast-math' expects bool.*true"):
        Target("testcpu -fast-math=maybe")
    with pytest.raises(ValueError, match="expects float"):
        Target("testcpu -opt-scale=fast")
    with pytest.raises(ValueError, match="has no attribute 'mcpux'; did you mean 'mcpu'"):
        Target("testcpu -mcpux=znver3")
    with pytest.raises(ValueError, match=r"attributes: fast-math, mattr, max_num_threads, mcpu"):
        Target("testcpu -zzz=1")
    with pytest.raises(ValueError, match="expects str"):
        Target({"kind": "testcpu", "mcpu": 3})
    with pytest.raises(ValueError, match="expects list"):
        Target({"kind": "testcpu", "mattr": 3})
    with pytest.raises(AttributeError, match="did you mean 'mcpu'"):
        _ = Target("testcpu").mcpuu
    assert not hasattr(Target("testcpu"), "zzz")
    with pytest.raises(ValueError, match="twice"):
        Target("testcpu -mcpu=a -mcpu=b")
    with pytest.raises(ValueError, match="expected -key=value"):
        Target("testcpu mcpu=a")
    with pytest.raises(ValueError, match="must start with the kind"):
        Target("-mcpu=a")
    with pytest.raises(ValueError, match="empty target string"):
        Target("   ")
    with pytest.raises(ValueError, match="No closing quotation"):
        Target("testcpu -mcpu='a")
    with pytest.raises(TypeError, match="string, dict or Target"):
        Target(3)


def test_unknown_kind_errors(cpu_kind, monkeypatch):
    # kinds no installed plugin provides, whichever plugins this environment has
    import tvm.ir.target as target_mod

    monkeypatch.setitem(target_mod.KNOWN_TARGET_DISTRIBUTIONS, "vendorgpu", "tvm-target-vendor")
    monkeypatch.setitem(target_mod.KNOWN_TARGET_DISTRIBUTIONS, "vendornpu", "tvm-target-vendor")
    with pytest.raises(UnknownTargetKindError) as info:
        Target("vendorgpu -arch=sm_90")
    msg = str(info.value)
    assert "unknown target kind 'vendorgpu'" in msg and "testcpu" in msg
    assert "pip install tvm-target-vendor" in msg
    assert isinstance(info.value, ValueError) and isinstance(info.value, PluginError)
    with pytest.raises(ValueError, match="pip install tvm-target-vendor"):
        Target("vendornpu")
    with pytest.raises(ValueError, match="Did you mean 'testcpu'"):
        Target("testcpux")
    with pytest.raises(UnknownTargetKindError):
        get_target_kind("nothing")


def test_kind_registry(cpu_kind):
    assert "testcpu" in list_target_kinds() and "testcpu" in Target.list_kinds()
    assert get_target_kind("testcpu") is cpu_kind
    with pytest.raises(ValueError, match="already registered"):
        register_target_kind(TargetKind("testcpu", 1))
    register_target_kind(cpu_kind)  # same object: fine
    replacement = TargetKind("testcpu", 1, {"x": (int, 1)})
    register_target_kind(replacement, override=True)
    assert get_target_kind("testcpu") is replacement
    with pytest.raises(KeyError):
        unregister_target_kind("never-registered")
    with pytest.raises(TypeError):
        register_target_kind("llvm")


def test_target_kind_validation():
    k = TargetKind("k1", 1, {"flags": list, "n": (int, "3"), "plain": str})
    assert k.attrs["flags"] == (list[str], None)
    assert k.attrs["n"] == (int, 3)  # default converted
    assert k.attrs["plain"] == (str, None)
    assert k.default_keys == ("k1",)
    assert k.resolve_attr("plain") == "plain" and k.resolve_attr("nope") is None
    with pytest.raises(TypeError, match="unsupported target attribute type"):
        TargetKind("k2", 1, {"d": (dict, None)})
    with pytest.raises(ValueError, match="invalid attribute name 'kind'"):
        TargetKind("k3", 1, {"kind": (str, None)})
    with pytest.raises(ValueError, match="invalid target kind name"):
        TargetKind("bad name", 1)
    with pytest.raises(TypeError, match="device_type"):
        TargetKind("k4", "cpu")
    with pytest.raises(ValueError, match="expects int"):
        TargetKind("k5", 1, {"n": (int, "x")})
    with pytest.raises(AttributeError):
        k.name = "other"


def test_canonicalize_hook():
    def fill_cpu(attrs):
        attrs.setdefault("mcpu", "host-cpu")
        return attrs

    register_target_kind(TargetKind("canon", 1, {"mcpu": (str, None)}, canonicalize=fill_cpu))
    try:
        assert Target("canon").mcpu == "host-cpu"
        assert Target("canon -mcpu=x").mcpu == "x"
    finally:
        unregister_target_kind("canon")


# --- kinds provided through the plugin hook (in-process plugins, no pip needed) ---------------


class GoodPlugin:
    @hookimpl
    def tvm_register_target_kinds(self, register):
        register(TargetKind("plugkind", 12, {"level": (int, 1)}, package="tvm-testplugin-inproc"))


class BrokenPlugin:
    @hookimpl
    def tvm_register_target_kinds(self, register):
        raise RuntimeError("cannot probe hardware")


class DuplicatePlugin:
    @hookimpl
    def tvm_register_target_kinds(self, register):
        register(TargetKind("plugkind", 3))


def test_plugin_kinds_and_failure_isolation():
    register_plugin(GoodPlugin(), "zz-good")
    register_plugin(BrokenPlugin(), "zz-broken")
    register_plugin(DuplicatePlugin(), "zz-dup")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kinds = list_target_kinds()
        messages = [str(w.message) for w in caught if issubclass(w.category, PluginLoadWarning)]
        assert "plugkind" in kinds
        assert any(
            "'zz-broken' (builtin unknown) failed in hook tvm_register_target_kinds" in m and "cannot probe" in m
            for m in messages
        )
        assert any("registers target kind 'plugkind', which plugin" in m for m in messages)
        t = Target("plugkind -level=3")
        assert t.level == 3 and t.device_type in (12, 3)
    finally:
        for name in ("zz-good", "zz-broken", "zz-dup"):
            unregister_plugin(name)
    assert "plugkind" not in list_target_kinds()


def test_blocked_plugin_explains(monkeypatch):
    register_plugin(GoodPlugin(), "plugkind", distribution="tvm-testplugin-inproc")
    try:
        monkeypatch.setenv("TVM_DISABLE_PLUGINS", "plugkind")
        reload_plugins()
        with pytest.raises(
            UnknownTargetKindError, match="'plugkind'.*disabled by TVM_DISABLE_PLUGINS"
        ):
            Target("plugkind")
        monkeypatch.delenv("TVM_DISABLE_PLUGINS")
        reload_plugins()
        assert Target("plugkind").level == 1
    finally:
        unregister_plugin("plugkind")
        reload_plugins()


def test_hookspec_declared():
    assert hasattr(TargetKindSpecs, "tvm_register_target_kinds")


_tokens = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789+_.", min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    mcpu=st.text(max_size=12).filter(lambda s: "\x00" not in s),
    cores=st.one_of(st.none(), st.integers(-(2**40), 2**40)),
    mattr=st.one_of(st.none(), st.lists(_tokens, min_size=1, max_size=4)),
    fast=st.booleans(),
    scale=st.floats(allow_nan=False, allow_infinity=False, width=32),
)
def test_string_roundtrip_property(mcpu, cores, mattr, fast, scale):
    kind = TargetKind(
        "propcpu",
        1,
        {
            "mcpu": (str, "generic"),
            "num-cores": (int, None),
            "mattr": (list[str], None),
            "fast-math": (bool, False),
            "scale": (float, 1.0),
        },
    )
    register_target_kind(kind, override=True)
    spec = {"kind": "propcpu", "mcpu": mcpu, "fast-math": fast, "scale": scale}
    if cores is not None:
        spec["num-cores"] = cores
    if mattr is not None:
        spec["mattr"] = mattr
    t = Target(spec)
    again = Target(str(t))
    assert structural_equal(again, t), (str(t), t.attrs, again.attrs)
    assert str(again) == str(t)
    assert structural_equal(from_json(to_json(t)), t)


def test_target_of_missing_kind_still_prints():
    register_target_kind(TargetKind("gone", 1, {"x": (int, 1)}))
    t = Target("gone -x=2")
    text = to_json(t)
    unregister_target_kind("gone")
    back = from_json(text)  # loads without the kind installed
    assert str(back) == "gone -x=2 -keys=gone"
    assert not hasattr(back, "x")
    with pytest.raises(UnknownTargetKindError):
        _ = back.kind
