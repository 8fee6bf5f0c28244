"""``tvmc``: the tvm compiler on the command line.

``tvmc compile | run | tune | show | explore | plugins | targets``; ``tvmc --help`` lists
them with examples. The commands are a thin shell over the public Python API, so whatever
they do a script can do too. Installed with tvm-relax as the ``tvmc`` console script (and
``python -m tvm.driver.tvmc``).
"""

from .cli import main

__all__ = ["main"]
