"""Second derivatives of the smooth margin losses of :mod:`ratecons.loss_functions`, which the
structured step's Newton systems need (:mod:`.structured`, :mod:`.structured_robust`)."""

from __future__ import annotations

import numpy as np

__all__ = ["SMOOTH_LOSSES"]

#: the smooth margin losses the step solver takes: name -> second derivative l''(m)
SMOOTH_LOSSES = {
    "logistic": lambda m: 0.25 * (1.0 - np.tanh(0.5 * m) ** 2),
    "squared": lambda m: np.full_like(m, 2.0),
}
