"""``tvmc plugins`` and ``tvmc targets``: what is installed and what each part provides."""

from __future__ import annotations

import argparse
import types

from ..progress import Progress
from .common import FORMATTER


def _plugins_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    return sub.add_parser(
        "plugins", help="list the installed tvm plugins and what they provide",
        description="The tvm plugins found through the 'tvm' entry-point group: their "
                    "distribution, version, status and the hooks they implement.",
        epilog="examples:\n  tvmc plugins\n  TVM_DISABLE_PLUGINS=cuda tvmc plugins",
        formatter_class=FORMATTER)


def _plugins_run(args: argparse.Namespace, progress: Progress) -> int:
    from tvm.ffi.plugin import format_plugin_table, list_plugins

    rows = list_plugins()
    print(format_plugin_table(rows))
    failed = [p for p in rows if p.status == "failed"]
    if failed:
        print(f"\n{len(failed)} plugin(s) failed to load; the others work without them.")
    return 0


def _targets_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "targets", help="list the target kinds you can compile for, and the named targets",
        description="Every target kind the installed plugins register (with the distribution "
                    "providing it and its attributes), the named targets (tags), and the "
                    "known target distributions that are not installed.",
        epilog="examples:\n  tvmc targets\n  tvmc targets --attrs",
        formatter_class=FORMATTER)
    p.add_argument("--attrs", action="store_true",
                   help="list each kind's attributes and what each named target stands for")
    return p


def _targets_run(args: argparse.Namespace, progress: Progress) -> int:
    from tvm.ir.target import (
        KNOWN_TARGET_DISTRIBUTIONS,
        get_target_kind,
        host_target,
        list_target_kinds,
        list_target_tags,
    )

    kinds = list_target_kinds()
    host = host_target(allow_none=True)
    print("target kinds:")
    width = max([len(k) for k in kinds] + [4])
    for name in kinds:
        kind = get_target_kind(name)
        doc = (kind.doc or "").strip().splitlines()
        note = " (this machine's JIT)" if host is not None and host.kind.name == name else ""
        print(f"  {name:<{width}}  {kind.package or '-':<18} {doc[0] if doc else ''}{note}")
        if args.attrs:
            for attr, (typ, default) in sorted(kind.attrs.items()):
                tname = getattr(typ, "__name__", str(typ))
                shown = "" if default is None else f" = {default!r}"
                print(f"      -{attr}: {tname}{shown}")
    installed = {d for k, d in KNOWN_TARGET_DISTRIBUTIONS.items() if k in kinds}
    missing = sorted(set(KNOWN_TARGET_DISTRIBUTIONS.values()) - installed)
    if missing:
        print("\nnot installed:")
        for dist in missing:
            provides = [k for k, d in KNOWN_TARGET_DISTRIBUTIONS.items() if d == dist]
            print(f"  {', '.join(provides):<{width + 8}} pip install {dist}")
    tags = list_target_tags()
    if tags:
        print(f"\nnamed targets ({len(tags)}; use the name as --target):")
        tag_width = max(len(n) for n in tags)
        for name, tag in tags.items():
            doc = tag.doc.strip().splitlines()[0] if tag.doc.strip() else ""
            print(f"  {name:<{tag_width}}  {doc}")
            if args.attrs:
                print(f"  {'':<{tag_width}}  = {tag.target}")
    return 0


plugins = types.SimpleNamespace(add_parser=_plugins_parser, run=_plugins_run)
targets = types.SimpleNamespace(add_parser=_targets_parser, run=_targets_run)
