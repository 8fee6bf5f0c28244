"""``python -m fuzz``: see :mod:`fuzz.runner`."""

import sys

from fuzz.runner import main

sys.exit(main())
