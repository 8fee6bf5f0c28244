"""``python -m tvm.driver.tvmc``: the same as the ``tvmc`` command."""

from . import main

raise SystemExit(main())
