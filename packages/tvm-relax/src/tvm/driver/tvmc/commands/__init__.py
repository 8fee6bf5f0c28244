"""The ``tvmc`` subcommands, one module each (``add_parser`` and ``run``)."""

from . import compile, explore, info, run, show, tune  # noqa: A004 - modules named after commands

ALL = (compile, run, tune, show, explore, info.plugins, info.targets)
