"""What LLVM knows about a target, asked without risking the process.

LLVM reports an unknown ``-mcpu`` or ``-mattr`` only by printing to stderr (once per
subtarget it makes) and carries on with a subtarget that may end in ``report_fatal_error``,
which aborts the process ("64-bit code requested on a subtarget that doesn't support it").
So the questions below are answered by LLVM itself in a child process (this module run as
``python .../target_info.py``), once per LLVM build and question (the answers are kept
in the tvm cache folder, ``$TVM_CACHE_DIR/llvm-target-info``):

* :func:`target_table` - the CPU and feature names of a triple's LLVM target (the table LLVM
  prints for ``-mcpu=help``);
* :func:`subtarget_features` - the features a (triple, cpu, features) subtarget enables,
  implied ones included (``-mcpu=haswell`` enables ``avx2`` and ``fma``): each table feature
  gets a probe function whose ``target-features`` are just that feature, called from a
  function of the subtarget; LLVM inlines a callee only when its features are a subset of
  the caller's, so the probes still called after the inliner ran are the ones the subtarget
  lacks.  A subtarget LLVM cannot make kills only the child, and becomes a ``ValueError``.

:func:`check_target_options` validates triple, cpu and ``-mattr`` names with close matches
(difflib); the llvm target kind runs it when a ``Target`` is made.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["TargetTable", "target_table", "subtarget_features", "check_triple",
           "check_target_options", "triple_arch"]

#: Architecture spellings offered as close matches for a misspelled triple (LLVM decides
#: which are valid: only those it accepts are suggested).
_ARCH_WORDS = ("x86_64", "i686", "i386", "aarch64", "aarch64_be", "arm64", "arm", "armv7a",
               "armv7", "thumbv7", "riscv64", "riscv32", "powerpc64le", "powerpc64", "ppc64le",
               "mips", "mipsel", "mips64", "mips64el", "wasm32", "wasm64", "s390x", "sparcv9",
               "loongarch64", "hexagon", "nvptx64", "amdgcn", "bpf")
#: Vendor/OS/environment spellings offered as close matches.
_TRIPLE_WORDS = ("unknown", "pc", "apple", "linux", "gnu", "musl", "android", "darwin", "macos",
                 "macosx", "ios", "windows", "msvc", "mingw32", "freebsd", "netbsd", "openbsd",
                 "none", "elf", "eabi", "eabihf", "gnueabi", "gnueabihf", "wasi", "emscripten",
                 "cuda", "amdhsa")


def triple_arch(triple: str) -> str:
    """The architecture of ``triple`` as tvm-runtime spells it (``arm64`` -> ``aarch64``)."""
    from tvm.runtime.host import normalize_arch  # (not at import: the child runs alone)

    return normalize_arch(triple.split("-")[0])


def _close(word: str, choices: Iterable[str], n: int = 5) -> str:
    found = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    return f"; close matches: {', '.join(found)}" if found else ""


@dataclass(frozen=True)
class TargetTable:
    """CPU and feature names LLVM accepts for one target (e.g. ``x86-64``)."""

    target: str
    cpus: frozenset[str]
    features: frozenset[str]


@functools.lru_cache(maxsize=None)
def _llvm() -> object:
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


@functools.lru_cache(maxsize=256)
def check_triple(triple: str) -> str:
    """``triple`` when LLVM can generate code for it; a ValueError naming the part it does
    not recognise (arch, vendor, OS or environment) with close matches otherwise.  Returns
    the name of LLVM's target (``x86-64``, ``aarch64``, ``riscv64``)."""
    llvm = _llvm()
    if not triple or triple != triple.strip():
        raise ValueError(f"llvm target: -mtriple={triple!r} is not a target triple")
    parts = llvm.get_triple_parts(triple)
    given = triple.split("-")
    if parts.Arch == "unknown":
        valid = [w for w in _ARCH_WORDS if _supported(w)]
        raise ValueError(f"llvm target: -mtriple={triple}: unknown architecture "
                         f"{given[0]!r}{_close(given[0], valid)}")
    known = [p for p in (parts.Vendor, parts.OS, parts.Env) if p and p != "unknown"]
    for word in given[1:]:
        if word != "unknown" and not any(word.startswith(p) for p in known):
            raise ValueError(f"llvm target: -mtriple={triple}: LLVM does not recognise "
                             f"{word!r} (a vendor, OS or environment)"
                             f"{_close(word, _TRIPLE_WORDS)}")
    try:
        return llvm.Target.from_triple(triple).name
    except RuntimeError as err:
        raise ValueError(f"llvm target: LLVM cannot generate code for -mtriple={triple}: "
                         f"{str(err).strip()}") from None


@functools.lru_cache(maxsize=None)
def _supported(arch: str) -> bool:
    try:
        _llvm().Target.from_triple(f"{arch}-unknown-unknown")
    except RuntimeError:
        return False
    return True


def _run_child(*args: str) -> subprocess.CompletedProcess[str]:
    # the file itself, not ``-m``: the child needs llvmlite only, not this process's sys.path
    return subprocess.run([sys.executable, os.path.abspath(__file__), *args],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def _disk_cached(key: tuple[str, ...], compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered in the tvm cache folder for this LLVM build (JSON)."""
    llvm = _llvm()
    import llvmlite

    text = json.dumps([llvmlite.__version__, list(llvm.llvm_version_info), *key])
    path = None
    try:
        from tvm.ffi.knobs import cache_dir

        path = cache_dir("llvm-target-info") / (hashlib.sha1(text.encode()).hexdigest() + ".json")
        return json.loads(path.read_text())
    except (ImportError, OSError, ValueError):
        pass
    value = compute()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(value))
            os.replace(tmp, path)
        except OSError:
            pass
    return value


def _read_table(triple: str) -> dict[str, list[str]]:
    proc = _run_child("table", triple)
    cpus, features = _parse_help(proc.stderr)
    if not cpus or not features:
        raise RuntimeError(f"llvm target: could not read LLVM's CPU table for {triple} "
                           f"(exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return {"cpus": cpus, "features": features}


@functools.lru_cache(maxsize=None)
def _table_of(target_name: str, triple: str) -> TargetTable:
    data = _disk_cached(("table", target_name), lambda: _read_table(triple))
    return TargetTable(target_name, frozenset(data["cpus"]), frozenset(data["features"]))


def target_table(triple: str) -> TargetTable:
    """The CPUs and features LLVM accepts for ``triple`` (cached per LLVM target)."""
    return _table_of(check_triple(triple), triple)


def _parse_help(text: str) -> tuple[list[str], list[str]]:
    cpus: list[str] = []
    features: list[str] = []
    section = None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            section = cpus
        elif line.startswith("Available features"):
            section = features
        elif section is not None and line.startswith("  "):
            name = line.split(" - ", 1)[0].strip()
            if name:
                section.append(name)
        elif line.strip() and section is not None and not line.startswith(" "):
            section = None
    return cpus, features


@functools.lru_cache(maxsize=None)
def _host_triple() -> str:
    return _llvm().get_process_triple()


def check_target_options(triple: str, cpu: str | None, mattr: Iterable[str]) -> None:
    """Raise a ValueError for an unknown triple part, ``-mcpu`` or ``-mattr`` feature (each
    with close matches); ``cpu`` None, ``""`` or ``native`` is not checked here.  Where no
    child process can run to read LLVM's table, the names are not checked (with a warning)."""
    try:
        table = target_table(triple)
    except (RuntimeError, OSError, subprocess.SubprocessError) as err:
        warnings.warn(f"llvm target: cannot check -mcpu/-mattr names: {err}", RuntimeWarning,
                      stacklevel=2)
        return
    host = _host_triple()
    if cpu == "native" and triple_arch(triple) != triple_arch(host):
        raise ValueError(f"llvm target: -mcpu=native means this machine's CPU ({host}), not one "
                         f"for -mtriple={triple}; name a CPU for it (e.g. -mcpu=generic)")
    if cpu not in (None, "", "native", "generic") and cpu not in table.cpus:
        raise ValueError(f"llvm target: -mcpu={cpu} is not a CPU LLVM knows for {triple} "
                         f"(target {table.target}){_close(cpu, table.cpus)}")
    for entry in mattr:
        entry = entry.strip()
        if not entry:
            continue
        if entry[0] not in "+-":
            raise ValueError(f"llvm target: -mattr entries look like +avx2 or -fma, got {entry!r}")
        if entry[1:] not in table.features:
            raise ValueError(f"llvm target: -mattr={entry}: {entry[1:]!r} is not a feature LLVM "
                             f"knows for {triple} (target {table.target})"
                             f"{_close(entry[1:], table.features)}")


@functools.lru_cache(maxsize=256)
def subtarget_features(triple: str, cpu: str, features: str = "") -> frozenset[str]:
    """The features LLVM enables for ``cpu`` plus ``features`` (``+f``/``-f``, in order) on
    ``triple``, implied ones included; ValueError when LLVM cannot make that subtarget."""
    table = target_table(triple)

    def probe() -> list[str]:
        names = ",".join(sorted(table.features))
        proc = _run_child("features", triple, cpu, features, names, "0")
        if proc.returncode != 0 and proc.stdout.startswith("ready"):
            # some probe feature is fatal with this subtarget: screen them out first
            proc = _run_child("features", triple, cpu, features, names, "1")
        if proc.returncode == 0:
            return json.loads(proc.stdout.splitlines()[-1])
        fatal = [ln for ln in proc.stderr.splitlines() if "LLVM ERROR" in ln]
        return [f"!{fatal[-1].strip() if fatal else proc.stderr.strip()[-500:]}"]

    found = _disk_cached(("subtarget", table.target, triple, cpu, features), probe)
    if found and found[0].startswith("!"):
        raise ValueError(f"llvm target: LLVM cannot generate code for -mtriple={triple} "
                         f"-mcpu={cpu} -mattr={features or '(none)'}: {found[0][1:]}")
    return frozenset(found)


# ------------------------------------------------------------------ the child process


def _probe_module(triple: str, cpu: str, features: str, probe: list[str]) -> str:
    """IR of ``caller`` calling one probe function per feature; a probe's features are the
    subtarget's ``-f`` entries plus its own feature, on the subtarget's CPU."""
    negative = ",".join(f for f in features.split(",") if f.startswith("-"))
    lines = [f'target triple = "{triple}"', "declare void @tvm_probe_sink(i32)"]
    for i, feat in enumerate(probe):
        own = f"{negative},+{feat}" if negative else f"+{feat}"
        lines += [f"define internal void @p{i}() #{i + 1} {{",
                  f"  call void @tvm_probe_sink(i32 {i})", "  ret void", "}",
                  f'attributes #{i + 1} = {{ "target-cpu"="{cpu}" "target-features"="{own}" }}']
    calls = [f"  call void @p{i}()" for i in range(len(probe))]
    return "\n".join([*lines, "define void @caller() {", *calls, "  ret void", "}"])


def _fatal_features(check: Callable[[str], None], names: list[str]) -> set[str]:
    """The names for which ``check`` ends the process (each tried in a forked child: LLVM's
    fatal errors end only that one, which reports how far it got through a pipe)."""
    bad: set[str] = set()
    rest = list(names) if hasattr(os, "fork") else []  # without fork: not screened
    while rest:
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forked checker
            os.close(read_end)
            for name in rest:
                check(name)
                os.write(write_end, b".")
            os._exit(0)
        os.close(write_end)
        done = 0
        with os.fdopen(read_end, "rb") as pipe:
            while chunk := pipe.read(4096):
                done += len(chunk)
        os.waitpid(pid, 0)
        if done >= len(rest):
            break
        bad.add(rest[done])
        rest = rest[done + 1:]
    return bad


def _child_features(triple: str, cpu: str, features: str, probe: list[str],
                    screen: bool) -> list[str]:
    llvm = _llvm()
    target = llvm.Target.from_triple(triple)
    empty = f'target triple = "{triple}"\ndefine void @f() {{\n  ret void\n}}'
    target.create_target_machine(cpu=cpu, features=features).emit_object(
        llvm.parse_assembly(empty))  # a fatal error here means the subtarget itself is bad
    print("ready", flush=True)
    if screen:
        negative = ",".join(f for f in features.split(",") if f.startswith("-"))

        def check(feat: str) -> None:
            own = f"{negative},+{feat}".lstrip(",")
            target.create_target_machine(cpu=cpu, features=own).emit_object(
                llvm.parse_assembly(empty))

        # LLVM cannot add these to this subtarget, so they are not among its features
        bad = _fatal_features(check, probe)
        probe = [f for f in probe if f not in bad]
    mod = llvm.parse_assembly(_probe_module(triple, cpu, features, probe))
    tm = target.create_target_machine(cpu=cpu, features=features)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    left = {int(i) for i in re.findall(r"@p(\d+)\(", str(mod.get_function("caller")))}
    return [f for i, f in enumerate(probe) if i not in left]


def _child_main(argv: list[str]) -> int:
    llvm = _llvm()
    if argv[0] == "table":
        llvm.Target.from_triple(argv[1]).create_target_machine(cpu="help")
        return 0
    if argv[0] == "features":
        triple, cpu, features, probe, screen = argv[1:6]
        found = _child_features(triple, cpu, features, probe.split(","), screen == "1")
        print(json.dumps(found))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
