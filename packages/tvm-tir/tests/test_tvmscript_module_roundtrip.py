"""IRModules of PrimFuncs print as ``@I.ir_module`` TVMScript and parse back, with tvm-ffi,
tvm-ir and tvm-tir alone: the module-level script machinery (``tvm.script.ir``) lives in
tvm-ir, and nothing of it needs tvm-relax."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tvm.ffi import assert_structural_equal
from tvm.ir import IRModule
from tvm.script import ir as I  # noqa: E741
from tvm.script import tir as T
from tvm.tir import IntImm


@I.ir_module
class Module:
    I.module_attrs({"name": "pair", "version": 2, "tags": ["a", "b"]})

    @T.prim_func
    def add_one(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
        T.func_attr({"tir.noalias": True})
        for i in range(8):
            with T.block("b"):
                vi = T.axis.spatial(8, i)
                b[vi] = a[vi] + T.float32(1)

    @T.prim_func(private=True)
    def scale(n: T.int32, a: T.handle, b: T.handle):
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in T.parallel(n):
            B[i] = A[i] * T.float32(2)


def test_decorated_module_holds_the_prim_funcs() -> None:
    assert isinstance(Module, IRModule)
    assert sorted(gv.name_hint for gv in Module.functions) == ["add_one", "scale"]
    assert Module.attrs["name"] == "pair"


def test_module_of_prim_funcs_round_trips() -> None:
    text = Module.script()
    assert text.startswith("# from tvm.script import ir as I\n# from tvm.script import tir as T\n")
    assert "@I.ir_module\nclass Module:\n" in text
    assert '    I.module_attrs({"name": "pair", "version": 2, "tags": ["a", "b"]})' in text
    parsed = I.parse(text)
    assert_structural_equal(parsed, Module)
    assert parsed.script() == text


def test_module_built_in_python_round_trips() -> None:
    mod = IRModule({"first": Module["add_one"], "second": Module["scale"]})
    text = mod.script(name="Built")
    assert "class Built:" in text
    assert_structural_equal(I.parse(text), mod)


def test_ir_values_in_module_attrs_go_to_the_metadata_section() -> None:
    mod = IRModule({"add_one": Module["add_one"]}, {"bound": IntImm("int32", 3), "n": [1, 2]})
    text = mod.script()
    assert '    I.module_attrs({"bound": metadata["tir.IntImm"][0], "n": [1, 2]})' in text
    assert "# <metadata:" in text
    assert_structural_equal(I.parse(text), mod)


def test_round_trip_does_not_need_tvm_relax() -> None:
    """In a fresh interpreter where ``import tvm.relax`` fails (whether or not tvm-relax is
    installed), a module prints and parses back."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["tvm.relax"] = None          # any import of tvm.relax now fails
        sys.modules["tvm.script.relax"] = None
        from tvm.ffi import assert_structural_equal
        from tvm.ir import IRModule
        from tvm.script import ir as I, tir as T

        func = T.parse('''
        @T.prim_func
        def copy(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                b[i] = a[i]
        ''')
        mod = IRModule({"copy": func}, {"name": "solo"})
        text = mod.script()
        assert "@I.ir_module" in text, text
        back = I.parse(text)
        assert_structural_equal(back, mod)
        assert back.script() == text
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
