"""The ramp sigma(z) = clip(1/2 + z, 0, 1) of Goh et al. (eq. 2) and its width.

A fitted score model f predicts positive deterministically where f(x) > 0 and, by the
randomized rule of App. A, with probability sigma(f(x) / t); its ramp rates (eq. 3) are the
means of sigma(f(x) / t) over a subset. The width t is 1, the paper's ramp, unless the scorer
says otherwise (an attribute ``ramp_width``): a model that the chain returned at its loss's
scale (:mod:`ratecons.reductions.score_scale`) keeps the width of the ramp its constraints
were solved with, so that its deterministic predictions, its randomized rule and every ramp
rate are those of the solved problem, whatever the scale of f.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import parameter_error

__all__ = ["checked_width", "ramp", "ramp_scores", "ramp_width"]


def checked_width(t: Any, owner: str) -> float:
    """``t`` as a ramp width: a finite number > 0 (a width of 0 or below, or NaN, would make
    every randomized prediction and ramp rate meaningless), else a clear error naming
    ``owner``."""
    if isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not (
            np.isfinite(t) and t > 0):
        raise parameter_error("ramp_width", owner, "a finite number > 0", t)
    return float(t)


def ramp(z: np.ndarray) -> np.ndarray:
    """sigma(z) = clip(1/2 + z, 0, 1): the ramp of Goh et al., eq. (2)."""
    return np.clip(0.5 + np.asarray(z, dtype=np.float64), 0.0, 1.0)


def ramp_width(scorer: Any) -> float:
    """The width t of ``scorer``'s ramp (module docstring): its ``ramp_width``, else 1."""
    return float(getattr(scorer, "ramp_width", 1.0))


def ramp_scores(scorer: Any, z: Any) -> Any:
    """Scores z = f(x) of ``scorer`` in units of its ramp's width, z / t (the indicator
    1[z > 0] is the same in either unit)."""
    width = ramp_width(scorer)
    return z if width == 1.0 else z / width
