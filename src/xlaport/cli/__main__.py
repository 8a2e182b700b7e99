"""``python -m xlaport.cli``: the same as the ``xlaport`` console script."""

import sys

from . import main

sys.exit(main())
