"""Every loss in one table: value, derivative, convex conjugate, curvature and CVXPY graph.

Margin losses l(m) of the margin m = y~ f(x), y~ in {-1, +1}:

- logistic  l(m) = log(1 + exp(-m)),   l*(v) = (-v) log(-v) + (1 + v) log(1 + v) on [-1, 0];
- hinge     l(m) = max(0, 1 - m),      l*(v) = v on [-1, 0];
- squared   l(m) = (1 - m)^2,          l*(v) = v + v^2/4 on the whole line.

They serve plain losses (``rc.mean_loss``) and robust losses over phi-divergence balls (eq. 2 of
the DRO paper, whose dual methods use the conjugates). The surrogates of the Iverson function in
the ranking paper (Notation 2.2) are margin losses reflected, l(s) = g(-s): ``"hinge"`` is
max(0, 1 + s) (g the hinge) and ``"quadratic_hinge"`` is max(0, 1 + s)^2 (g the squared hinge
max(0, 1 - m)^2); their conjugates l*(y) = g*(-y) are eqs. (4) and (5) of Macha et al.

This module and :mod:`ratecons.reductions.to_cvxpy` are the only ones that build CVXPY graphs of
losses; cvxpy is imported by the caller and passed in, so importing this module stays cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import xlogy

from .errors import parameter_error

__all__ = [
    "MARGIN_LOSSES", "LOSS_CONJUGATES", "LOSS_CURVATURE", "RANKING_SURROGATES",
    "margin_loss", "loss_graph", "check_surrogate", "surrogate", "surrogate_graph",
]


def _logistic(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    value = np.logaddexp(0.0, -m)
    slope = -0.5 * (1.0 - np.tanh(0.5 * m))  # -sigmoid(-m), overflow-free
    return value, slope


def _hinge(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.maximum(0.0, 1.0 - m), np.where(m < 1.0, -1.0, 0.0)


def _squared(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = 1.0 - m
    return r * r, -2.0 * r


def _squared_hinge(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.maximum(0.0, 1.0 - m)
    return r * r, -2.0 * r


#: margin losses l(m) -> (value, derivative l'(m)); hinge uses the subgradient 0 at m = 1
MARGIN_LOSSES = {"logistic": _logistic, "hinge": _hinge, "squared": _squared}


def _logistic_conjugate(v: np.ndarray) -> np.ndarray:
    s = np.clip(-v, 0.0, 1.0)
    return xlogy(s, s) + xlogy(1.0 - s, 1.0 - s)


def _hinge_conjugate(v: np.ndarray) -> np.ndarray:
    return v.copy()


def _squared_conjugate(v: np.ndarray) -> np.ndarray:
    return v + 0.25 * v * v


#: convex conjugates l*(v) = sup_m (v m - l(m)) of the margin losses and the interval that is
#: their domain (where l* is finite); every slope l'(m) lies in it (module docstring)
LOSS_CONJUGATES = {
    "logistic": (_logistic_conjugate, (-1.0, 0.0)),
    "hinge": (_hinge_conjugate, (-1.0, 0.0)),
    "squared": (_squared_conjugate, (-np.inf, np.inf)),
}
#: smoothness constants of the margin losses (sup |l''|; hinge is not smooth: 1 by convention)
LOSS_CURVATURE = {"logistic": 0.25, "hinge": 1.0, "squared": 2.0}
#: ranking surrogates l(s) = g(-s) by the margin loss g they reflect (module docstring)
RANKING_SURROGATES = {"hinge": _hinge, "quadratic_hinge": _squared_hinge}


def margin_loss(name: str, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value and derivative of a margin loss at margins ``m``."""
    return MARGIN_LOSSES[name](np.asarray(m, dtype=np.float64))


def loss_graph(cp: Any, name: str, margins: Any) -> tuple[Any, list[Any]]:
    """The CVXPY graph of l(margins), elementwise, and the constraints it needs.

    Piecewise-linear losses (hinge) are epigraph variables t >= 0, t >= 1 - m: their LP rows,
    which keep an LP an LP for the solver. ``cp`` is the cvxpy module.
    """
    if name == "logistic":
        return cp.logistic(-margins), []
    if name == "hinge":
        t = cp.Variable(margins.shape, nonneg=True)
        return t, [t >= 1.0 - margins]
    return cp.square(1.0 - margins), []


def check_surrogate(name: str, owner: str) -> str:
    """Validate a ranking surrogate name (``"hinge"`` or ``"quadratic_hinge"``)."""
    if name not in RANKING_SURROGATES:
        raise parameter_error("surrogate", owner, f"one of {tuple(RANKING_SURROGATES)}", name)
    return name


def surrogate(name: str, s: np.ndarray) -> np.ndarray:
    """The ranking surrogate l(s) = g(-s), elementwise (Notation 2.2 of the ranking paper)."""
    return RANKING_SURROGATES[name](-np.asarray(s, dtype=np.float64))[0]


def surrogate_graph(cp: Any, name: str, s: Any) -> tuple[Any, list[Any]]:
    """The CVXPY graph of the ranking surrogate l(s) (see :func:`loss_graph`)."""
    if name == "hinge":
        return loss_graph(cp, "hinge", -s)
    return cp.square(cp.pos(1.0 + s)), []
