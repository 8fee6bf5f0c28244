"""TIR passes are found by name: tvm-tir declares each under entry-point group ``tvm.passes``
(``name = "module:attribute"``) and :func:`tvm.ir.transform.get_pass` imports the module
only when the pass is asked for."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from gpu_helpers import gpu_target
from tvm.ir.transform import Pass, get_pass, pass_table

TIR_ENTRIES = sorted(n for n, e in pass_table().items() if e.distribution == "tvm-tir")


def test_tvm_tir_declares_its_passes() -> None:
    assert {"tir.Simplify", "tir.FlattenBuffer", "tir.MakePackedAPI", "tir.lowering_pipeline",
            "tir.default_pipeline", "tir.gpu_pipeline"} <= set(TIR_ENTRIES)
    assert all(n.startswith("tir.") for n in TIR_ENTRIES)


@pytest.mark.parametrize("name", TIR_ENTRIES)
def test_every_entry_loads_to_the_pass_of_its_name(name: str) -> None:
    try:
        built = get_pass(name)
    except ValueError as err:
        # a pipeline that reads the current target (the GPU one) needs a target in scope
        assert "no current target" in str(err)
        with gpu_target():
            built = get_pass(name)
    assert isinstance(built, Pass)
    assert built.info.name in (name, name.split(".", 1)[1])


def test_get_pass_in_a_fresh_process_imports_only_what_it_needs() -> None:
    code = textwrap.dedent(
        """
        import sys
        import tvm.tir
        from tvm.ir.transform import get_pass, list_passes
        names = list_passes()
        assert "tir.UnrollLoop" in names and "tir.VectorizeLoop" in names, names
        p = get_pass("tir.Simplify")
        assert p.name == "tir.Simplify", p.name
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
