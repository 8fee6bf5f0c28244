"""The ``tvmc`` subcommands, one module each (``add_parser`` and ``run``)."""

from . import compile, info, run, show, tune  # noqa: A004 - modules named after commands

ALL = (compile, run, tune, show, info.plugins, info.targets)
