"""``python -m ratecons``: the command line (:mod:`ratecons.cli`)."""

import sys

from .cli import main

sys.exit(main())
