"""``python -m ratecons``: the command line (:mod:`ratecons.cli`)."""

from .cli import run

run()
