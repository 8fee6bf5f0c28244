import pytest
from ir_helpers import Func, OtherFunc
from tvm.ffi import (
    assert_structural_equal,
    from_json,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
    to_json,
)
from tvm.ir import FrozenDict, FunctionNotFoundError, GlobalVar, IRModule, register_expr_wrapper


def test_construct_and_lookup():
    main = Func(1)
    mod = IRModule({"main": main, GlobalVar("helper"): Func(2)}, attrs={"name": "demo"})
    assert mod["main"] is main
    gv = mod.get_global_var("helper")
    assert mod[gv].body == 2
    assert [g.name_hint for g in mod.get_global_vars()] == ["helper", "main"]
    assert "main" in mod and gv in mod and "nope" not in mod and 3 not in mod
    assert [g.name_hint for g in mod] == ["helper", "main"]
    assert dict(mod.items())[gv].body == 2
    assert mod.get_attr("name") == "demo" and mod.get_attr("x", 5) == 5
    # a different GlobalVar object with the same name finds the function too
    assert mod[GlobalVar("main")] is main
    assert bool(IRModule())  # an empty module is still truthy


def test_missing_name_error_lists_functions():
    mod = IRModule({"main": Func(1), "helper": Func(2)})
    with pytest.raises(FunctionNotFoundError) as info:
        mod.get_global_var("mian")
    assert isinstance(info.value, KeyError)
    msg = str(info.value)
    assert "'mian'" in msg and "did you mean 'main'" in msg and "functions: helper, main" in msg
    with pytest.raises(KeyError, match="no function named 'zzz'"):
        mod["zzz"]


def test_construction_errors():
    with pytest.raises(TypeError, match="must be a BaseFunc"):
        IRModule({"main": 3})
    with pytest.raises(TypeError, match="keys must be str or GlobalVar"):
        IRModule({1: Func(1)})
    with pytest.raises(ValueError, match="twice"):
        IRModule({"f": Func(1), GlobalVar("f"): Func(2)})
    with pytest.raises(TypeError, match="dict"):
        IRModule([Func(1)])
    with pytest.raises(TypeError, match="keys must be str"):
        IRModule(attrs={1: 2})
    with pytest.raises(ValueError, match="non-empty"):
        GlobalVar("")


def test_read_only_views():
    mod = IRModule({"main": Func(1)})
    assert isinstance(mod.functions, FrozenDict)
    with pytest.raises(TypeError, match="immutable IR object"):
        mod.functions[GlobalVar("x")] = Func(2)
    with pytest.raises(TypeError):
        mod.attrs["k"] = 1
    with pytest.raises(Exception):
        mod.functions = {}  # frozen field


def test_functional_updates_keep_input():
    mod = IRModule({"main": Func(1)})
    gv = mod.get_global_var("main")
    mod2 = mod.with_function("main", Func(9))
    assert mod["main"].body == 1 and mod2["main"].body == 9
    assert mod2.get_global_var("main") is gv  # the GlobalVar is kept
    mod3 = mod2.with_function("extra", Func(3)).with_attr("k", 1)
    assert sorted(g.name_hint for g in mod3) == ["extra", "main"] and mod3.attrs == {"k": 1}
    assert "extra" not in mod3.without_function("extra")
    assert mod3.without_attr("k").attrs == {}
    with pytest.raises(KeyError):
        mod.without_function("nope")
    with pytest.raises(ValueError, match="different GlobalVar"):
        mod.with_function(GlobalVar("main"), Func(0))
    both = mod.with_functions({"a": Func(1), "b": Func(2)})
    assert [g.name_hint for g in both] == ["a", "b", "main"]


def test_with_functions_adds_all_at_once_and_checks_each():
    mod = IRModule({"main": Func(1)})
    gv = mod.get_global_var("main")
    out = mod.with_functions({"main": Func(2), gv: Func(3), "z": Func(4), GlobalVar("a"): Func(5)})
    assert [g.name_hint for g in out] == ["a", "main", "z"]
    assert out["main"].body == 3 and out.get_global_var("main") is gv
    with pytest.raises(TypeError, match="'bad' must be a BaseFunc"):
        mod.with_functions({"ok": Func(1), "bad": 3})
    with pytest.raises(ValueError, match="different GlobalVar"):
        mod.with_functions({GlobalVar("main"): Func(0)})


def test_many_functions_by_name_and_by_global_var():
    """Lookups use the name index; modules built one function at a time stay sorted."""
    mod = IRModule()
    for i in reversed(range(300)):
        mod = mod.with_function(f"f{i:03d}", Func(i))
    names = [g.name_hint for g in mod]
    assert names == sorted(names) and len(names) == 300
    assert all(mod[f"f{i:03d}"].body == i for i in range(0, 300, 7))
    assert mod[GlobalVar("f123")].body == 123 and "f300" not in mod
    # a module whose map was set without the constructor still finds its functions
    raw = mod.with_fields(functions={GlobalVar("only"): Func(1)})
    assert raw["only"].body == 1 and "f001" not in raw


def test_copy_on_write_setitem():
    mod = IRModule({"main": Func(1)})
    snapshot = mod.functions
    derived = mod.with_attr("k", 1)
    mod["main"] = Func(2)
    mod["other"] = Func(3)
    assert mod["main"].body == 2 and mod["other"].body == 3
    assert len(snapshot) == 1 and list(snapshot.values())[0].body == 1
    assert derived["main"].body == 1 and "other" not in derived
    gv = mod.add("added", Func(4))
    assert gv.name_hint == "added" and mod[gv].body == 4
    with pytest.raises(ValueError, match="already defines 'added'"):
        mod.add("added", Func(5))
    assert mod.add("added", Func(5), update=True) is gv and mod["added"].body == 5
    mod.update_func(gv, Func(6))
    assert mod["added"].body == 6
    with pytest.raises(KeyError):
        mod.update_func("missing", Func(0))
    mod.remove("added")
    del mod["other"]
    assert [g.name_hint for g in mod] == ["main"]
    with pytest.raises(KeyError):
        mod.remove("added")
    mod.update(IRModule({"main": Func(7), "new": Func(8)}))
    assert mod["main"].body == 7 and mod["new"].body == 8


def test_function_attrs():
    f = Func(1, attrs={"global_symbol": "main"})
    assert f.get_attr("global_symbol") == "main" and f.get_attr("x") is None
    g = f.with_attr("noalias", True)
    assert f.attrs == {"global_symbol": "main"} and g.attrs == {
        "global_symbol": "main",
        "noalias": True,
    }
    assert g.without_attr("noalias").attrs == f.attrs and f.without_attr("zzz") is f
    assert f.with_attrs({"a": 1, "b": 2}).attrs == {"global_symbol": "main", "a": 1, "b": 2}
    with pytest.raises(TypeError, match="str"):
        Func(1, attrs={1: 2})
    with pytest.raises(TypeError):
        f.attrs["x"] = 1


def test_structural_equality_maps_global_vars_by_name():
    # functions call each other through GlobalVars; different objects, same names
    a = IRModule({"main": Func(("call", GlobalVar("helper"))), "helper": Func(1)})
    b = IRModule({"helper": Func(1), "main": Func(("call", GlobalVar("helper")))})
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)
    c = IRModule({"main": Func(("call", GlobalVar("helper2"))), "helper": Func(1)})
    assert not structural_equal(a, c)
    assert "name_hint" in get_first_structural_mismatch(a, c)
    assert not structural_equal(a, a.with_attr("k", 1))
    assert not structural_equal(a, a.with_function("helper", Func(2)))
    assert not structural_equal(a, a.with_function("helper", OtherFunc(1)))


def test_json_roundtrip():
    mod = IRModule({"main": Func((1, 2)), "f": Func("x", attrs={"a": 1})}, attrs={"n": 1})
    back = from_json(to_json(mod))
    assert isinstance(back, IRModule)
    assert structural_equal(back, mod)
    assert back["f"].attrs == {"a": 1}


def test_from_expr():
    f = Func(1)
    mod = IRModule.from_expr(f, functions={"g": Func(2)}, attrs={"k": 1})
    assert mod["main"] is f and mod["g"].body == 2 and mod.attrs == {"k": 1}
    assert IRModule.from_expr(f, name="entry")["entry"] is f
    with pytest.raises(TypeError, match="cannot make a function of int"):
        IRModule.from_expr(3)

    class Expr:
        pass

    register_expr_wrapper(Expr, lambda e: Func(("wrapped", type(e).__name__)))
    assert IRModule.from_expr(Expr())["main"].body == ("wrapped", "Expr")


def test_script_uses_registered_printer_and_fallback(capsys):
    mod = IRModule({"main": Func(1), "other": OtherFunc(2)}, attrs={"name": "demo"})
    text = mod.script()
    assert text.startswith(
        "# from tvm.script import ir as I\n# from tvm.script import toy as F\n\n@I.ir_module\nclass Module:\n"
    )
    assert '    I.module_attrs({"name": "demo"})' in text
    assert "    @F.func\n    def main():\n        return 1" in text
    assert "    # testing.ir.OtherFunc: no TVMScript printer is registered for OtherFunc" in text
    assert "    other = testing.ir.OtherFunc(" in text
    compile(text, "<script>", "exec")  # the output is valid Python
    mod.show()
    assert capsys.readouterr().out == text
    assert repr(mod) == text and str(mod) == text
    assert "class Module:\n    pass" in IRModule().script()
    assert "class Named:" in mod.script(name="Named")
