import io

import pytest
from ir_helpers import Func, OtherFunc
from tvm.ir import IRModule, transform
from tvm.ir.transform import (
    DumpIR,
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    PassTimingInstrument,
    PassVerificationError,
    PrintAfterEachPass,
    PrintIR,
    Sequential,
    function_pass,
    PASS_ENTRY_POINT_GROUP,
    get_pass,
    pass_table,
    list_config_options,
    list_passes,
    module_pass,
    register_config_option,
    register_pass,
    register_verifier,
)


def make_mod():
    return IRModule({"main": Func(1), "helper": Func(10), "other": OtherFunc(0)})


@module_pass(opt_level=1, name="AddFoo")
def add_foo(mod, ctx):
    return mod.with_function("foo", Func(0))


@function_pass(opt_level=0, func_type=Func)
def increment(func, mod, ctx):
    return func.with_fields(body=func.body + 1)


class Recorder(PassInstrument):
    def __init__(self, skip=()):
        self.events = []
        self.skip = set(skip)

    def enter_pass_ctx(self):
        self.events.append("enter")

    def exit_pass_ctx(self):
        self.events.append("exit")

    def should_run(self, mod, info):
        return info.name not in self.skip

    def run_before_pass(self, mod, info):
        self.events.append(("before", info.name))

    def run_after_pass(self, mod, info):
        self.events.append(("after", info.name))


def test_pass_info():
    info = PassInfo(2, "X", ["A", "B"])
    assert info.required == ("A", "B") and not info.traceable
    assert PassInfo(0, "Y", "A").required == ("A",)
    with pytest.raises(ValueError, match="opt_level"):
        PassInfo(-1, "X")
    with pytest.raises(ValueError, match="name"):
        PassInfo(0, "")
    with pytest.raises(TypeError, match="required"):
        PassInfo(0, "X", (1,))


def test_module_and_function_pass():
    mod = make_mod()
    assert isinstance(add_foo, ModulePass) and add_foo.name == "AddFoo"
    assert add_foo.info.opt_level == 1
    out = add_foo(mod)
    assert "foo" in out and "foo" not in mod
    assert isinstance(increment, FunctionPass) and increment.name == "increment"
    out = increment(mod)
    assert out["main"].body == 2 and out["helper"].body == 11
    assert out["other"] is mod["other"]  # filtered by func_type
    assert out.get_global_var("main") is mod.get_global_var("main")


def test_function_pass_unchanged_returns_same_module_and_none_removes():
    mod = make_mod()
    same = function_pass(lambda f, m, c: f, name="Identity")
    assert same(mod) is mod
    drop = function_pass(lambda f: None if f.body == 10 else f, name="DropHelper", func_type=Func)
    assert [g.name_hint for g in drop(mod)] == ["main", "other"]
    bad = function_pass(lambda f: 3, name="Bad")
    with pytest.raises(TypeError, match="function pass 'Bad' returned int"):
        bad(mod)


def test_pass_function_arities():
    mod = make_mod()
    one_arg = module_pass(lambda m: m.with_attr("x", 1), name="OneArg")
    assert one_arg(mod).attrs == {"x": 1}
    two_arg_fn = function_pass(
        lambda f, m: f.with_attr("n", len(list(m))), name="F2", func_type=Func
    )
    assert two_arg_fn(mod)["main"].attrs == {"n": 3}


def test_class_decorators():
    @module_pass(opt_level=2)
    class Tag:
        """Adds a tag attribute."""

        def __init__(self, tag):
            self.tag = tag

        def transform_module(self, mod, ctx):
            return mod.with_attr("tag", self.tag)

    p = Tag("hello")
    assert isinstance(p, ModulePass) and isinstance(p, Pass)
    assert p.name == "Tag" and p.info.opt_level == 2 and p.tag == "hello"
    assert Tag.__doc__ == "Adds a tag attribute."
    assert p(make_mod()).attrs == {"tag": "hello"}

    @function_pass(opt_level=0, name="Scale", func_type=Func)
    class Scale:
        def __init__(self, k):
            self.k = k

        def transform_function(self, func, mod, ctx):
            return func.with_fields(body=func.body * self.k)

    out = Scale(3)(make_mod())
    assert out["main"].body == 3 and out["helper"].body == 30 and out["other"].body == 0

    with pytest.raises(TypeError, match="must define transform_module"):
        module_pass(type("Empty", (), {}))
    with pytest.raises(TypeError, match="decorates a function or class"):
        module_pass(3)


def test_opt_level_and_disabled_and_required():
    mod = make_mod()
    with PassContext(opt_level=0):
        assert add_foo(mod) is mod  # opt_level 1 > 0: skipped
    with PassContext(opt_level=0, required_pass=["AddFoo"]):
        assert "foo" in add_foo(mod)
    with PassContext(opt_level=3, disabled_pass=["AddFoo"]):
        assert add_foo(mod) is mod
    assert "foo" in add_foo(mod)  # default context: opt_level 2


def test_pass_context_stack():
    assert PassContext.current().opt_level == 2
    with PassContext(opt_level=3) as outer:
        assert PassContext.current() is outer
        with PassContext(opt_level=1) as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert PassContext.current() is not outer


def test_required_passes_run_first():
    register_pass(
        module_pass(lambda m: m.with_attr("order", (*m.get_attr("order", ()), "A")), name="ReqA")
    )
    register_pass(
        lambda: module_pass(
            lambda m: m.with_attr("order", (*m.get_attr("order", ()), "B")), name="ReqB"
        ),
        name="ReqB",
    )
    main = module_pass(
        lambda m: m.with_attr("order", (*m.get_attr("order", ()), "main")),
        name="NeedsAB",
        required=["ReqA", "ReqB"],
    )
    assert main(make_mod()).attrs["order"] == ("A", "B", "main")
    assert {"ReqA", "ReqB"} <= set(list_passes())
    assert get_pass("ReqA").name == "ReqA"
    # required passes run even above the context's opt level, but not when disabled
    register_pass(module_pass(lambda m: m.with_attr("hi", 1), opt_level=4, name="HighReq"))
    needs_high = module_pass(lambda m: m, name="NeedsHigh", required=["HighReq"])
    assert needs_high(make_mod()).attrs == {"hi": 1}
    with PassContext(disabled_pass=["HighReq"]):
        with pytest.raises(ValueError, match="requires 'HighReq', which the PassContext disables"):
            needs_high(make_mod())
    with pytest.raises(ValueError, match="no pass named 'ReqC'.*did you mean .*ReqA"):
        module_pass(lambda m: m, name="X", required=["ReqC"])(make_mod())
    register_pass(module_pass(lambda m: m, name="Cyc1", required=["Cyc2"]))
    register_pass(module_pass(lambda m: m, name="Cyc2", required=["Cyc1"]))
    with pytest.raises(ValueError, match="cycle"):
        get_pass("Cyc1")(make_mod())
    with pytest.raises(ValueError, match="explicit name"):
        register_pass(lambda: add_foo)
    register_pass(lambda: 3, name="NotAPass")
    with pytest.raises(TypeError, match="not a Pass"):
        get_pass("NotAPass")


def test_pass_loaded_by_reference_on_first_use(tmp_path, monkeypatch):
    """A ``"module:attribute"`` loader imports its module only when the pass is asked for."""
    import sys

    (tmp_path / "lazy_pass_mod.py").write_text(
        "from tvm.ir.transform import module_pass\n"
        "LOADED = True\n"
        "def Tagged():\n"
        "    return module_pass(lambda m: m.with_attr('tagged', 1), name='Tagged')\n"
        "READY = module_pass(lambda m: m, name='Ready')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_pass_mod", raising=False)
    register_pass("lazy_pass_mod:Tagged", name="test.Tagged")
    register_pass("lazy_pass_mod:READY", name="test.Ready")
    assert {"test.Tagged", "test.Ready"} <= set(list_passes())
    assert "lazy_pass_mod" not in sys.modules
    entry = pass_table()["test.Tagged"]
    assert entry.loader == "lazy_pass_mod:Tagged" and entry.distribution is None
    assert get_pass("test.Tagged")(make_mod()).attrs == {"tagged": 1}
    assert "lazy_pass_mod" in sys.modules
    assert get_pass("test.Ready").name == "Ready"
    register_pass("lazy_pass_mod:Missing", name="test.Missing")
    with pytest.raises(ValueError, match="cannot be loaded from 'lazy_pass_mod:Missing'"):
        get_pass("test.Missing")
    with pytest.raises(ValueError, match="not 'module:attribute'"):
        register_pass("lazy_pass_mod", name="test.Bad")


def test_declared_passes_come_from_entry_points():
    """Entries of group ``tvm.passes`` are listed with the distribution declaring them."""
    from importlib.metadata import entry_points

    declared = {ep.name: ep.value for ep in entry_points(group=PASS_ENTRY_POINT_GROUP)}
    table = pass_table()
    for name, value in declared.items():
        assert table[name].loader == value and table[name].distribution


def test_sequential():
    seq = Sequential([add_foo, increment], name="Pipeline")
    mod = make_mod()
    out = seq(mod)
    assert out["foo"].body == 1 and out["main"].body == 2
    assert "AddFoo" in repr(seq) and seq.name == "Pipeline"
    with PassContext(opt_level=0):
        out = seq(mod)
        assert "foo" not in out and out["main"].body == 2
    nested = Sequential([Sequential([increment]), increment])
    assert nested(mod)["main"].body == 3
    with pytest.raises(TypeError, match=r"passes\[1\] must be a Pass"):
        Sequential([add_foo, lambda m: m])


def test_pass_type_errors_and_notes():
    with pytest.raises(TypeError, match="expects an IRModule, got int"):
        add_foo(3)
    returns_int = module_pass(lambda m: 3, name="ReturnsInt")
    with pytest.raises(TypeError, match="pass 'ReturnsInt' must return an IRModule, returned int"):
        returns_int(make_mod())

    def boom(mod):
        raise RuntimeError("kaput")

    with pytest.raises(RuntimeError, match="kaput") as info:
        module_pass(boom, name="Boom")(make_mod())
    assert any("Boom" in n for n in getattr(info.value, "__notes__", ["Boom"]))


def test_instruments_called_in_order_and_should_run():
    rec = Recorder(skip=["increment"])
    mod = make_mod()
    with PassContext(instruments=[rec]):
        out = Sequential([add_foo, increment])(mod)
    assert out["main"].body == 1  # skipped by should_run
    assert rec.events == ["enter", ("before", "AddFoo"), ("after", "AddFoo"), "exit"]
    with pytest.raises(TypeError, match=r"instruments\[0\].*lacks"):
        PassContext(instruments=[object()])


def test_instrument_enter_failure_unwinds():
    class Bad(PassInstrument):
        def enter_pass_ctx(self):
            raise RuntimeError("no")

    rec = Recorder()
    ctx = PassContext(instruments=[rec, Bad()])
    with pytest.raises(RuntimeError):
        with ctx:
            pass
    assert rec.events == ["enter", "exit"]
    assert PassContext.current() is not ctx


def test_config_options():
    register_config_option("testing.unroll_max", int, 16, "max unroll steps")
    register_config_option("testing.ratio", float, None, "a ratio")
    opts = list_config_options()
    assert (
        "ir.verify_after_each_pass" in opts and opts["testing.unroll_max"].doc == "max unroll steps"
    )
    ctx = PassContext(config={"testing.unroll_max": 4, "testing.ratio": 1})
    assert ctx.get_config("testing.unroll_max") == 4
    assert ctx.get_config("testing.ratio") == 1.0 and isinstance(
        ctx.get_config("testing.ratio"), float
    )
    assert PassContext().get_config("testing.unroll_max") == 16
    assert PassContext().get_config("testing.ratio", 0.5) == 0.5
    with pytest.raises(
        ValueError,
        match="unknown PassContext config option 'testing.unrol_max'.*did you mean 'testing.unroll_max'",
    ):
        PassContext(config={"testing.unrol_max": 4})
    with pytest.raises(TypeError, match="'testing.unroll_max' expects int, got str 'abc'"):
        PassContext(config={"testing.unroll_max": "abc"})
    with pytest.raises(TypeError, match="expects int, got bool"):
        PassContext(config={"testing.unroll_max": True})
    with pytest.raises(TypeError, match="expects bool"):
        PassContext(config={"ir.verify_after_each_pass": 1})
    with pytest.raises(ValueError, match="unknown"):
        PassContext().get_config("nope.nope")
    with pytest.raises(TypeError):
        register_config_option("testing.bad_default", int, "x")
    with pytest.raises(ValueError, match="opt_level"):
        PassContext(opt_level=-1)
    with pytest.raises(TypeError, match="pass names"):
        PassContext(disabled_pass=[1])


def test_verify_after_each_pass():
    calls = []

    def verifier(mod):
        calls.append(len(list(mod)))
        if "bad" in mod:
            raise AssertionError("function 'bad' is ill-formed")

    register_verifier("testing.no_bad", verifier)
    adds_bad = module_pass(lambda m: m.with_function("bad", Func(0)), name="AddsBad")
    mod = make_mod()
    assert "bad" in adds_bad(mod)  # option off: no verification
    assert calls == []
    with PassContext(config={"ir.verify_after_each_pass": True}):
        increment(mod)
        assert calls == [3]
        with pytest.raises(
            PassVerificationError,
            match="after pass 'AddsBad' \\(verifier 'testing.no_bad'\\).*ill-formed",
        ):
            adds_bad(mod)
    transform._VERIFIERS.pop("testing.no_bad")
    with pytest.raises(TypeError):
        register_verifier("x", 3)


def test_check_immutable_module():
    def mutating(mod):
        mod["main"] = Func(100)
        return mod

    p = module_pass(mutating, name="Mutating")
    assert p(make_mod())["main"].body == 100  # allowed by default
    with PassContext(config={"ir.check_immutable_module": True}):
        with pytest.raises(
            PassVerificationError, match="'Mutating' modified its input IRModule in place"
        ):
            p(make_mod())
        assert add_foo(make_mod())  # functional passes are fine


def test_timing_instrument():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        Sequential([add_foo, increment, increment])(make_mod())
    t = timing.timings
    assert t["increment"][0] == 2 and t["AddFoo"][0] == 1 and "sequential" not in t
    table = timing.render()
    lines = table.splitlines()
    assert lines[0].split() == ["Pass", "Calls", "Total", "(ms)", "Share"]
    assert lines[-1].startswith("Total") and "100.0%" in lines[-1]
    assert any(line.startswith("increment") and " 2 " in line for line in lines)
    timing.reset()
    assert timing.timings == {}


def test_timing_nested_share():
    inner = module_pass(lambda m: m, name="Inner")
    outer = module_pass(lambda m: inner(m), name="Outer")
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        outer(make_mod())
    assert set(timing.timings) == {"Inner", "Outer"}
    shares = {
        line.split()[0]: float(line.split()[-1].rstrip("%"))
        for line in timing.render().splitlines()[1:-1]
    }
    assert shares["Outer"] == pytest.approx(100.0)


def test_dump_ir_writes_numbered_files(tmp_path):
    folder = tmp_path / "dump"
    dump = DumpIR(folder)
    with PassContext(instruments=[dump]):
        Sequential([add_foo, increment, module_pass(lambda m: m, name="ns/weird name")])(make_mod())
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["000_AddFoo.py", "001_increment.py", "002_ns_weird_name.py"]
    text = (folder / "001_increment.py").read_text()
    assert text.startswith("# IR after pass increment")
    assert "@I.ir_module" in text and "return 2" in text
    compile(text, "dump", "exec")
    assert dump.written[0].name == "000_AddFoo.py"


def test_print_after_each_pass_to_stream():
    buf = io.StringIO()
    with PassContext(instruments=[PrintAfterEachPass(stream=buf)]):
        increment(make_mod())
    assert buf.getvalue().startswith(
        "# IR after pass increment (#0, opt_level=0)\n# from tvm.script"
    )


def test_print_ir_pass():
    buf = io.StringIO()
    mod = make_mod()
    assert PrintIR("stage 1", stream=buf)(mod) is mod
    assert buf.getvalue().startswith("# stage 1\n# from tvm.script import ir as I")
