"""Warnings that point at the user's line.

A warning raised deep inside a solve (a solver that stopped at its iteration cap, a model that
does no better than a constant) should name the line of the user's code that started the solve,
not the solver's line: ``warnings.warn(..., stacklevel=user_stacklevel())`` walks up the call
stack past every frame of the ratecons package, however deep the warning is raised.
"""

from __future__ import annotations

import os
import sys

__all__ = ["user_stacklevel"]

#: the folder of the ratecons package (every module below it counts as inside)
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by the caller of this function that
    attributes the warning to the first frame outside the ratecons package (the last frame of
    the stack when every frame is inside, as under ``python -m ratecons``)."""
    frame = sys._getframe(1)  # the function that calls warnings.warn: stacklevel 1
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
