"""Surrogates of the Iverson function and their convex conjugates (ranking paper, Notation 2.2).

``l_hinge(s) = max(0, 1 + s)`` and ``l_quadratic(s) = max(0, 1 + s)^2``; both are convex,
nonnegative, nondecreasing with l(0) = 1. Their conjugates, eqs. (4) and (5) of Macha, Adam and
Smidl, enter the dual problems (7) and (10):

    l_hinge^*(y) = -y on [0, 1] (+inf elsewhere),
    l_quadratic^*(y) = y^2 / 4 - y on [0, inf) (+inf elsewhere).
"""

from __future__ import annotations

import numpy as np

from .errors import parameter_error

__all__ = ["SURROGATES", "check_surrogate", "surrogate", "conjugate"]

SURROGATES = ("hinge", "quadratic_hinge")


def check_surrogate(name: str, owner: str) -> str:
    """Validate a surrogate name (``"hinge"`` or ``"quadratic_hinge"``)."""
    if name not in SURROGATES:
        raise parameter_error("surrogate", owner, f"one of {SURROGATES}", name)
    return name


def surrogate(name: str, z: np.ndarray) -> np.ndarray:
    """l(z) for the named surrogate (elementwise)."""
    h = np.maximum(0.0, 1.0 + np.asarray(z, dtype=np.float64))
    return h if name == "hinge" else h * h


def conjugate(name: str, y: np.ndarray) -> np.ndarray:
    """l^*(y), eqs. (4)-(5); ``inf`` outside the domain."""
    y = np.asarray(y, dtype=np.float64)
    if name == "hinge":
        return np.where((y >= 0) & (y <= 1), -y, np.inf)
    return np.where(y >= 0, 0.25 * y * y - y, np.inf)
