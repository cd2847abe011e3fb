"""Phi-divergence balls and the robust loss (spec layer of distributionally robust learning).

Ghosh & Squillante, "Unbiased Gradient Estimation for Distributionally Robust Learning"
(the DRO paper), section 1: the robust loss of a model theta on training data xi_1..xi_N is

    R(theta) = max_P  sum_n p_n l(theta, xi_n)
               s.t.   D_phi(P, U_N) = (1/N) sum_n phi(N p_n) <= rho,  sum_n p_n = 1,  p >= 0,

the worst expected loss over all reweightings P of the data within a phi-divergence ball of
radius rho around the uniform distribution U_N. ``rc.PhiDivergenceBall(data, phi, rho)`` describes
the ball; ``rc.robust_loss(ball, loss)`` is the objective R(theta) to minimize over a
``rc.LinearModel`` (its ``l2`` adds (l2/2)||w||^2)::

    U = rc.PhiDivergenceBall(train, phi="chi2", rho=0.1)
    result = rc.Problem(minimize=rc.robust_loss(U, loss="logistic"),
                        model=rc.LinearModel(l2=1e-3)).solve()

``phi`` is ``"chi2"``, ``"kl"`` or an ``rc.Phi`` (:mod:`ratecons.numerics.phi`, which also
holds the generators' conjugates and derivatives); the robust loss's value is the exact inner
maximization of :mod:`ratecons.numerics.inner_max`.
"""

from __future__ import annotations

from .expr.ball import PhiDivergenceBall
from .expr.robust_loss import RobustLoss
from .numerics.phi import assumption1_bound

__all__ = [
    "PhiDivergenceBall",
    "RobustLoss",
    "assumption1_bound",
    "robust_loss",
]


def robust_loss(U: PhiDivergenceBall, loss: str = "logistic") -> RobustLoss:
    """R(theta) = max_{P in U} E_P[l(theta, xi)] (eq. 2), an objective to minimize.

    Parameters
    ----------
    U : PhiDivergenceBall
    loss : {"logistic", "hinge", "squared"}
        A loss of the margin m = y~ f(x) with y~ = 2y - 1 in {-1, +1} (labels 1 -> +1,
        0 -> -1) and f(x) = <w, x> - b: logistic log(1 + exp(-m)), hinge max(0, 1 - m),
        squared (1 - m)^2 = (y~ - f(x))^2 (least squares on the +-1 targets).
    """
    return RobustLoss(U, loss)
