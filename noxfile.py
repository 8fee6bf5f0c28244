"""Test sessions: one per distribution (only it and its declared dependencies installed),
the real-plugin session, every test with everything installed, the dependency floors,
lint and the demo.

    nox                 # everything CI runs
    nox -s "tests(tvm-tir)"
    nox -s all          # every test of every package and tests/, everything installed
    nox -s fuzz         # the fuzzing harness for $TVM_FUZZ_BUDGET seconds (default 240)
    nox -s demo         # the main job: compile and run, showing each stage

``tests(<dist>)`` proves a distribution installs and passes alone (tests that need a
package it does not declare skip there).  ``all`` is the run that must not hide anything:
every distribution installed, no skip allowed except tests marked ``gpu`` without a device
(``--forbid-skips``, see the repository's ``conftest.py``), the skip count printed.
``floors`` installs the lowest versions the distributions admit of the dependencies whose
behaviour the tests pin down (numpy, ml_dtypes) and runs the tests that depend on them.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = ROOT / "packages"

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests", "plugins", "all", "floors", "fuzz"]


def _dist_dirs() -> dict[str, Path]:
    return {
        tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"]: d
        for d in sorted(PACKAGES.iterdir())
        if (d / "pyproject.toml").exists()
    }


DISTS = _dist_dirs()


def _local_closure(name: str) -> list[str]:
    """The distribution and every in-repo distribution it depends on, dependencies first."""
    order: list[str] = []

    def visit(dist: str) -> None:
        if dist in order:
            return
        meta = tomllib.loads((DISTS[dist] / "pyproject.toml").read_text())["project"]
        for req in meta.get("dependencies", []):
            dep = req.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip()
            if dep in DISTS:
                visit(dep)
        order.append(dist)

    visit(name)
    return order


@nox.session
@nox.parametrize("package", list(DISTS), ids=list(DISTS))
def tests(session: nox.Session, package: str) -> None:
    """A distribution's own tests with only it and its declared dependencies installed."""
    closure = _local_closure(package)
    paths = [str(DISTS[d]) for d in closure[:-1]] + [f"{DISTS[package]}[test]"]
    session.install(*paths)
    # Local packages change between runs while their version does not: reinstall them.
    session.install("--no-deps", "--reinstall", *[str(DISTS[d]) for d in closure])
    tests_dir = DISTS[package] / "tests"
    session.run("pytest", str(tests_dir), *session.posargs, success_codes=[0, 5])


@nox.session
def plugins(session: nox.Session) -> None:
    """Real pip-installed plugin distributions: discovery, blocking, listing, isolation."""
    plugin_dirs = sorted((ROOT / "tests" / "plugins").glob("tvm-testplugin-*"))
    base = [str(DISTS[d]) for d in _local_closure("tvm-ir")]
    session.install(*base, *map(str, plugin_dirs), "pytest")
    session.install("--no-deps", "--reinstall", *base, *map(str, plugin_dirs))
    session.run("pytest", str(ROOT / "tests" / "plugins"), *session.posargs)


def _all_dists_install(session: nox.Session) -> None:
    every = []
    for dist in DISTS:
        for d in _local_closure(dist):
            if d not in every:
                every.append(d)
    paths = [str(DISTS[d]) for d in every]
    session.install(*paths, "pytest", "hypothesis")
    session.install("--no-deps", "--reinstall", *paths)


#: third-party packages the whole-tree run needs beyond the distributions' own
#: dependencies (test tools, the ONNX reference runtime, the xdist runner, tvm-target-cuda's
#: ``nvrtc`` extra, tvm-meta-schedule's ``xgboost`` and ``ray`` extras)
TEST_TOOLS = ["pytest", "hypothesis", "pytest-xdist", "onnx>=1.14", "onnxruntime",
              # the TFLite frontend's bindings and its reference interpreter (LiteRT)
              "tflite==2.18.0", "ai-edge-litert==2.3.0",
              "nvidia-cuda-nvrtc",  # NVRTC compiles CUDA to PTX without a GPU
              # tvm-meta-schedule's extras: the XGBoost cost model, Ray builders/runners
              "xgboost-cpu==3.2.0", "ray==2.60.0",
              # torch's OpInfo database (the PyTorch frontend's conformance tests) imports it
              "expecttest==0.3.0",
              # scikit-learn's handwritten digits: the int8 accuracy test on real data
              "scikit-learn==1.9.1"]
#: torch for the DLPack interop tests: pinned (an unpinned torch pulls a CUDA build of
#: several GB); a local wheel directory in PIP_FIND_LINKS is searched first
TORCH = "torch==2.13.0"


def _install_test_tools(session: nox.Session) -> None:
    session.install(*TEST_TOOLS)
    links = [a for d in os.environ.get("PIP_FIND_LINKS", "").split() if Path(d).is_dir()
             for a in ("--find-links", d)]
    session.install(*links, TORCH)


def _test_dirs() -> list[Path]:
    """Every package's tests, then the end-to-end tests (the real-plugin tests run in
    their own session, since they install extra distributions)."""
    return [DISTS[d] / "tests" for d in DISTS if (DISTS[d] / "tests").is_dir()] + [
        ROOT / "tests"]


def _xdist_args(session: nox.Session) -> list[str]:
    workers = session.env.get("TVM_TEST_WORKERS") or "auto"
    return ["-n", workers, "--dist", "loadgroup"]


@nox.session(name="all")
def all_tests(session: nox.Session) -> None:
    """Every test of every package and of tests/, with every distribution installed.

    One pytest run per test folder (test module names repeat between packages), each over
    all cores with pytest-xdist; no skip is allowed but GPU-marked tests without a device.
    """
    _all_dists_install(session)
    _install_test_tools(session)
    for tests_dir in _test_dirs():
        session.run("pytest", str(tests_dir), "--ignore", str(ROOT / "tests" / "plugins"),
                    "--forbid-skips", *_xdist_args(session), *session.posargs)


@nox.session
def e2e(session: nox.Session) -> None:
    """Only the cross-package end-to-end tests of tests/, everything installed."""
    _all_dists_install(session)
    _install_test_tools(session)
    session.run("pytest", str(ROOT / "tests"), "--ignore", str(ROOT / "tests" / "plugins"),
                "--forbid-skips", *_xdist_args(session), *session.posargs)


#: the lowest versions the distributions admit (``numpy>=1.24``, ``ml_dtypes>=0.5.1,<0.8``)
#: of the dependencies whose behaviour tests pin down bit for bit; ``floors`` runs the tests
#: below against exactly these (ml_dtypes 0.5.0 rounds float8_e8m0fnu ties down, 0.5.1 up)
FLOORS = ["numpy==1.24.4", "ml_dtypes==0.5.1"]
FLOOR_TESTS = [
    "packages/tvm-ffi/tests/test_dtype.py",
    "packages/tvm-ir/tests/test_ir_dtype.py",
    "packages/tvm-runtime/tests/test_low_precision_tensor.py",
    "packages/tvm-tir/tests/test_transform_legalize_low_precision.py",
    "packages/tvm-relax/tests/test_low_precision.py",
    "packages/tvm-target-llvm/tests/test_math.py",
]


@nox.session
def floors(session: nox.Session) -> None:
    """The dtype and low-precision tests at the dependency floors (the upper end is what
    every other session resolves)."""
    _all_dists_install(session)
    session.install("pytest", "hypothesis", "onnx>=1.14", "onnxruntime", *FLOORS)
    session.run("python", "-c", "import numpy, ml_dtypes; print('numpy', numpy.__version__, "
                "'ml_dtypes', ml_dtypes.__version__)")
    session.run("pytest", *[str(ROOT / t) for t in FLOOR_TESTS], "--forbid-skips",
                *session.posargs)


#: the fuzz session's default seed (``TVM_FUZZ_SEED`` overrides it, ``random`` draws one)
FUZZ_SEED = "20261203"


@nox.session
def fuzz(session: nox.Session) -> None:
    """The fuzzing harness (fuzz/, docs/guarantees.md) for a bounded time: random Relax
    graphs against numpy and constant folding, mutated ONNX models, TVMScript, tvm-json
    documents and executables, each case in a worker subprocess.  ``TVM_FUZZ_BUDGET``
    seconds in all (default 240), ``TVM_FUZZ_SEED`` the seed (default :data:`FUZZ_SEED`,
    ``random`` for a new one; the seed is printed);
    a new failing case fails the session and is written to fuzz/corpus/ (and printed)."""
    _all_dists_install(session)
    session.install("onnx>=1.14", "onnxruntime")
    args = ["--budget", session.env.get("TVM_FUZZ_BUDGET") or os.environ.get(
        "TVM_FUZZ_BUDGET", "240")]
    # a fixed seed by default, so CI's verdict on a change is reproducible (the same cases
    # in the same order; the budget decides how far it gets); TVM_FUZZ_SEED=random explores
    seed = session.env.get("TVM_FUZZ_SEED") or os.environ.get("TVM_FUZZ_SEED") or FUZZ_SEED
    if seed != "random":
        args += ["--seed", seed]
    session.run("python", "-m", "fuzz", *args, *session.posargs)


@nox.session
def onnx_node_suite(session: nox.Session) -> None:
    """The whole ONNX backend node suite through import -> relax.build(llvm) -> VM; writes
    tests/onnx/results/node_suite.{json,md} (passed / failed / unsupported per op type).
    Not in the default sessions: it takes about 15-20 minutes on 2 cores."""
    _all_dists_install(session)
    session.install("onnx>=1.14", "onnxruntime")
    session.run("python", str(ROOT / "tests" / "onnx" / "node_suite.py"), *session.posargs)


@nox.session
def torch_opinfo(session: nox.Session) -> None:
    """PyTorch's OpInfo entries (float32 samples) through torch.export -> from_exported_program
    -> relax.build(llvm) -> VM, compared with eager; writes tests/torch/results/opinfo.{json,md}
    (per-entry status, pass rate over exportable entries).  Not in the default sessions: it
    takes tens of minutes on 2 cores."""
    _all_dists_install(session)
    links = [a for d in os.environ.get("PIP_FIND_LINKS", "").split() if Path(d).is_dir()
             for a in ("--find-links", d)]
    session.install(*links, TORCH, "expecttest==0.3.0")  # torch.testing._internal imports it
    session.run("python", str(ROOT / "tests" / "torch" / "opinfo.py"), *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: compile and run the bundled example, printing every stage."""
    _all_dists_install(session)
    session.run("python", str(ROOT / "examples" / "demo.py"), *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", str(ROOT))
