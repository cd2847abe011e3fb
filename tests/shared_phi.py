"""Custom phi-divergence generators shared by the tests (the built-ins are chi2 and kl)."""

from __future__ import annotations

import numpy as np

import ratecons as rc


def _hellinger_inverse(t):
    t = np.asarray(t, dtype=np.float64)
    inside = t < 1.0
    return np.where(inside, 1.0 / np.where(inside, 1.0 - t, 1.0) ** 2, np.inf)


def _hellinger_conjugate(t):
    t = np.asarray(t, dtype=np.float64)
    inside = t < 1.0
    return np.where(inside, t / np.where(inside, 1.0 - t, 1.0), np.inf)


#: the squared Hellinger distance phi(s) = (sqrt(s) - 1)^2: phi*(t) = t / (1 - t) for t < 1
HELLINGER = rc.Phi(lambda s: (np.sqrt(s) - 1.0) ** 2, lambda s: 1.0 - 1.0 / np.sqrt(s),
                   _hellinger_conjugate, _hellinger_inverse, name="hellinger")
#: the chi-square generator written as a custom phi (no inverse: (phi')^{-1} by bisection)
CHI2_CUSTOM = rc.Phi(lambda s: (s - 1.0) ** 2, lambda s: 2.0 * (s - 1.0),
                     lambda t: -1.0 + 0.25 * np.maximum(t + 2.0, 0.0) ** 2, name="chi2 custom")
