"""Relax passes are found by name right after ``import tvm.relax``: tvm-relax declares each
under entry-point group ``tvm.passes``, and the module defining a pass is imported when the
pass is asked for, not before."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from tvm.ir.transform import Pass, get_pass, pass_table

RELAX_ENTRIES = sorted(n for n, e in pass_table().items() if e.distribution == "tvm-relax")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_fresh_process_finds_relax_and_tir_passes_after_import_tvm_relax() -> None:
    out = _run(
        """
        import sys
        import tvm.relax
        from tvm.ir.transform import get_pass, list_passes
        names = list_passes()
        assert "relax.FoldConstant" in names and "relax.LegalizeOps" in names, names
        assert "tir.Simplify" in names, names
        # listing imports nothing: the pass modules are still unloaded
        assert "tvm.relax.transform.fold_constant" not in sys.modules
        assert "tvm.relax.transform" not in sys.modules
        fold = get_pass("relax.FoldConstant")
        assert "tvm.relax.transform.fold_constant" in sys.modules
        print(fold.name, get_pass("tir.Simplify").name, get_pass("relax.FuseOps").name)
        """
    )
    assert out == "FoldConstant tir.Simplify FuseOps"


def test_tvm_relax_declares_its_passes() -> None:
    assert {"relax.FoldConstant", "relax.LegalizeOps", "relax.FuseOps", "relax.FuseTIR",
            "relax.graph_pipeline"} <= set(RELAX_ENTRIES)
    assert all(n.startswith("relax.") for n in RELAX_ENTRIES)


@pytest.mark.parametrize("name", RELAX_ENTRIES)
def test_every_entry_loads_to_the_pass_of_its_name(name: str) -> None:
    built = get_pass(name)
    assert isinstance(built, Pass)
    assert built.info.name in (name, name.split(".", 1)[1])
