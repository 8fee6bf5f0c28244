"""Test sessions: one per distribution (only it and its declared dependencies installed),
the real-plugin session, end-to-end tests, lint and the demo.

    nox                 # everything CI runs
    nox -s "tests(tvm-tir)"
    nox -s demo         # the main job: compile and run, showing each stage
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = ROOT / "packages"

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests", "plugins", "e2e"]


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


@nox.session
def e2e(session: nox.Session) -> None:
    """Cross-package end-to-end tests with every distribution installed."""
    _all_dists_install(session)
    session.install("onnx>=1.14", "onnxruntime")  # tests/onnx (frontend end to end)
    session.run("pytest", str(ROOT / "tests"), "--ignore", str(ROOT / "tests" / "plugins"),
                *session.posargs, success_codes=[0, 5])


@nox.session
def onnx_node_suite(session: nox.Session) -> None:
    """The whole ONNX backend node suite through import -> relax.build(llvm) -> VM; writes
    tests/onnx/results/node_suite.{json,md} (passed / failed / unsupported per op type).
    Not in the default sessions: it takes about 15-20 minutes on 2 cores."""
    _all_dists_install(session)
    session.install("onnx>=1.14", "onnxruntime")
    session.run("python", str(ROOT / "tests" / "onnx" / "node_suite.py"), *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: compile and run the bundled example, printing every stage."""
    _all_dists_install(session)
    session.run("python", str(ROOT / "examples" / "demo.py"), *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", str(ROOT))
