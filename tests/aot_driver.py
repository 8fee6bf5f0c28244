"""A C test program for an AOT package (``relax.build(..., exec_mode="aot")``), shared by the
AOT tests: it includes ``<name>.h``, reads the inputs (raw bytes, in order) from a file,
calls ``<name>_run`` a given number of times and writes the outputs (raw bytes, in order)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from tvm.relax.aot.csource import c_type
from tvm.relax.aot.plan import c_identifier


def _fields(pairs):
    taken: set[str] = set()
    return [(c_identifier(n, taken), ref) for n, ref in pairs]


def driver_source(pkg, name: str) -> str:
    """``main.c``: ``prog inputs.bin outputs.bin [runs]``; exit 3 with ``rc=<code>: <message>``
    on stderr when a run fails."""
    ins, outs = _fields(pkg.plan.inputs), _fields(pkg.plan.outputs)
    up = name.upper()
    lines = ["#include <stdio.h>", "#include <stdlib.h>", f'#include "{name}.h"', "",
             "int main(int argc, char** argv) {",
             "  if (argc < 3) { fprintf(stderr, \"usage: prog in out [runs]\\n\"); return 2; }",
             "  int runs = argc > 3 ? atoi(argv[3]) : 1;",
             '  FILE* f = fopen(argv[1], "rb");',
             "  if (!f) return 2;",
             f"  {name}_inputs in; {name}_outputs out;"]
    for field, ref in ins:
        macro = f"{up}_INPUT_{field.upper()}_BYTES"
        lines += [f"  {c_type(ref.dtype)}* {field}_in = malloc({macro});",
                  f"  if (fread({field}_in, 1, {macro}, f) != {macro}) return 2;",
                  f"  in.{field} = {field}_in;"]
    lines.append("  fclose(f);")
    for field, _ in outs:
        lines += [f"  out.{field} = malloc({up}_OUTPUT_{field.upper()}_BYTES);"]
    lines += ["  for (int i = 0; i < runs; ++i) {",
              f"    int rc = {name}_run(&in, &out);",
              f'    if (rc != {up}_OK) {{ fprintf(stderr, "rc=%d: %s\\n", rc, {name}_last_error()); '
              "return 3; }",
              "  }",
              '  f = fopen(argv[2], "wb");',
              "  if (!f) return 2;"]
    for field, _ in outs:
        lines.append(f"  fwrite(out.{field}, 1, {up}_OUTPUT_{field.upper()}_BYTES, f);")
    lines.append("  fclose(f);")
    for field, _ in ins:
        lines.append(f"  free({field}_in);")
    for field, _ in outs:
        lines.append(f"  free(out.{field});")
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def compile_driver(folder: Path, name: str, pkg, link: str = "static", cc: str = "cc",
                   cflags: Sequence[str] = (), libs: Sequence[str] = ("-lgomp", "-lm")) -> Path:
    """The driver of ``pkg`` (exported as ``name`` into ``folder``) linked with
    ``lib<name>.a`` (``link="static"``) or ``lib<name>.so`` (``"shared"``)."""
    src = folder / f"{name}_main.c"
    src.write_text(driver_source(pkg, name))
    prog = folder / f"{name}_{link}"
    lib = [str(folder / f"lib{name}.a")] if link == "static" else [
        f"-L{folder}", f"-l{name}", f"-Wl,-rpath,{folder}"]
    cmd = [cc, "-O1", *cflags, "-I", str(folder), str(src), *lib, *libs, "-o", str(prog)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return prog


def run_driver(prog: Path, inputs: Sequence[np.ndarray], pkg, runs: int = 1,
               prefix: Sequence[str] = (), env: Optional[dict] = None,
               timeout: float = 300) -> tuple[subprocess.CompletedProcess, list[np.ndarray]]:
    """Run ``prog`` (under ``prefix``, e.g. valgrind or qemu) on ``inputs``; returns the
    process and the outputs it wrote (empty when it failed)."""
    folder = prog.parent
    inp, outp = folder / f"{prog.name}.in", folder / f"{prog.name}.out"
    inp.write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))
    if outp.exists():
        outp.unlink()
    proc = subprocess.run([*prefix, str(prog), str(inp), str(outp), str(runs)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    outputs: list[np.ndarray] = []
    if proc.returncode == 0:
        raw = outp.read_bytes()
        at = 0
        for _, ref in pkg.plan.outputs:
            dtype = np.dtype(ref.dtype)
            outputs.append(np.frombuffer(raw, dtype, count=int(np.prod(ref.shape)),
                                         offset=at).reshape(ref.shape))
            at += ref.nbytes
    return proc, outputs
