"""docs/architecture.md names what exists: every distribution under packages/ (and only
those), every plugin hook spec declared in the code (and only those), and repository paths
that exist.  The hook list is derived from the code (``@hookspec`` functions), so a new hook
fails this test until the page describes it."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
TEXT = DOC.read_text()


def distributions() -> set[str]:
    return {tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"]
            for d in (ROOT / "packages").iterdir() if (d / "pyproject.toml").exists()}


def _is_hookspec(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name == "hookspec"


def hookspecs() -> dict[str, str]:
    """Hook name -> the source file declaring it, for every ``@hookspec`` in packages/*/src."""
    found = {}
    for path in sorted((ROOT / "packages").glob("*/src/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and any(map(_is_hookspec, node.decorator_list)):
                found[node.name] = str(path.relative_to(ROOT))
    return found


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", TEXT, re.S | re.M)
    assert match, f"architecture.md has no '## {title}' section"
    return match.group(1)


def test_distribution_table_names_every_distribution() -> None:
    rows = [line for line in _section("Distributions").splitlines() if line.startswith("| tvm")]
    named = [row.split("|")[1].strip() for row in rows]
    assert len(named) == len(set(named)), f"a distribution is listed twice: {named}"
    assert set(named) == distributions(), (
        f"missing from the table: {sorted(distributions() - set(named))}; "
        f"not under packages/: {sorted(set(named) - distributions())}")


def test_every_distribution_mentioned_exists() -> None:
    plugins = {d.name for d in (ROOT / "tests" / "plugins").iterdir() if d.is_dir()}
    mentioned = set(re.findall(r"(?<![\w/.-])(tvm-[a-z0-9]+(?:-[a-z0-9]+)*)", TEXT))
    unknown = mentioned - distributions() - plugins
    assert not unknown, f"architecture.md names distributions that do not exist: {unknown}"


def test_hooks_named_are_the_declared_hookspecs() -> None:
    specs = hookspecs()
    assert specs, "no @hookspec found under packages/*/src"
    named = set(re.findall(r"`(tvm_[a-z0-9_]+)\(", TEXT))
    assert named - set(specs) == set(), f"not declared hookspecs: {sorted(named - set(specs))}"
    missing = {n: specs[n] for n in set(specs) - named}
    assert not missing, f"hookspecs architecture.md does not describe: {missing}"


def test_linked_and_quoted_repository_paths_exist() -> None:
    prose = "\n".join(line for line in TEXT.splitlines() if not line.startswith("    "))
    prose = re.sub(r"`[^`]*`", "code", prose)  # code blocks and spans hold no links
    links = [link for link in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose)
             if not re.match(r"[a-z]+://", link)]
    assert links, "architecture.md links no repository files"
    broken = []
    for link in links:
        target = (DOC.parent / link.split("#", 1)[0]).resolve()
        if not target.is_relative_to(ROOT) or not target.exists():
            broken.append(link)
    quoted = re.findall(r"`((?:packages|tests|docs|examples|benchmarks)/[^`\s<>*]+)`", TEXT)
    broken += [q for q in quoted if not (ROOT / q).exists()]
    assert not broken, f"architecture.md refers to paths outside the repo or missing: {broken}"
