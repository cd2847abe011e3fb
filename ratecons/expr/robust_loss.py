"""The robust loss R(theta) of eq. (2): the worst expected margin loss over a phi-divergence ball.

Ghosh & Squillante, section 1: R(theta) = max_P sum_n p_n l(theta, xi_n) over the reweightings
P of the data in a :class:`~ratecons.expr.ball.PhiDivergenceBall`. Its exact value is the inner
maximization of :mod:`ratecons.numerics.inner_max` (appendix A.1); as a term it is convex (a
supremum of convex functions of the scores). Users build it with ``rc.robust_loss(U, loss)``
(:mod:`ratecons.phi_divergence`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
from scipy.optimize import brentq

from ..dask_robust import dask_losses, dask_robust_value, on_dask
from ..data import Dataset, Subset
from ..errors import parameter_error
from ..loss_functions import MARGIN_LOSSES
from ..numerics.inner_max import inner_maximize
from .atom import Term
from .ball import PhiDivergenceBall

__all__ = ["RobustLoss"]


class RobustLoss(Term):
    """The objective R(theta) of eq. (2): the worst expected loss over a phi-divergence ball.

    Built by :func:`ratecons.phi_divergence.robust_loss`; a convex term (a supremum of convex
    functions): minimize it, bound it above, or add it to other terms.
    """

    curvature = "convex"
    kind = "loss"

    def __init__(self, ball: PhiDivergenceBall, loss: str = "logistic") -> None:
        if not isinstance(ball, PhiDivergenceBall):
            raise parameter_error("U", "robust_loss", "an rc.PhiDivergenceBall",
                                  type(ball).__name__)
        if loss not in MARGIN_LOSSES:
            raise parameter_error("loss", "robust_loss", f"one of {tuple(MARGIN_LOSSES)}", loss)
        ball.data.require_labels("rc.robust_loss (robust classification)", binary=True)
        self.ball = ball
        self.loss = loss

    @property
    def name(self) -> str:
        return (f"robust_loss({self.ball.support.name}, phi={self.ball.phi.name!r}, "
                f"rho={self.ball.rho:g}, loss={self.loss!r})")

    @property
    def datasets(self) -> list[Dataset]:
        return [self.ball.support.data]

    def losses(self, scorer: Any) -> np.ndarray:
        """l(m_n) for every example of the ball, m_n = y~_n f(x_n) (on Dask data a lazy Dask
        array, :func:`ratecons.dask_robust.dask_losses`)."""
        if on_dask(self.ball, scorer):
            return dask_losses(self.ball, self.loss, scorer)
        support = self.ball.support
        scores = scorer.decision_function(support.data.X)[support.index]
        margins = (2.0 * support.y - 1.0) * scores
        return MARGIN_LOSSES[self.loss](margins)[0]

    def value(self, scorer: Any) -> float:
        """R(theta) by the exact inner maximization (App. A.1); on Dask data by reductions over
        the partitions (:func:`ratecons.dask_robust.dask_robust_value`)."""
        if on_dask(self.ball, scorer):
            return dask_robust_value(self.ball, self.loss, scorer)
        return inner_maximize(self.losses(scorer), self.ball.phi, self.ball.rho).value

    surrogate_value = value

    def value_at_constant(self, score: float) -> float:
        """R at the constant score ``score`` (w = 0).

        The losses take two values, a = l(score) on the positives and b = l(-score) on the
        negatives. Averaging a reweighting q within each class keeps its expected loss and,
        phi being convex, keeps it in the ball, so the worst case puts one weight on each
        class: with p the share of the examples in the class of the larger loss h (the other
        loss g), R = s h + (1 - s) g for the largest s in [p, 1] with
        p phi(s / p) + (1 - p) phi((1 - s) / (1 - p)) <= rho, a root of a convex function
        increasing on [p, 1].
        """
        (on_positives, on_negatives), _ = MARGIN_LOSSES[self.loss](np.array([score, -score]))
        share = self.positive_share
        high, low, p = ((on_positives, on_negatives, share) if on_positives >= on_negatives
                        else (on_negatives, on_positives, 1.0 - share))
        if p <= 0.0 or p >= 1.0 or high == low:
            return float(high if p > 0.0 else low)
        phi, rho = self.ball.phi, self.ball.rho

        def excess(s: float) -> float:
            rest = (1.0 - s) / (1.0 - p)
            at_rest = float(phi.phi(np.array([rest]))[0]) if rest > 0.0 else phi.at_zero
            return p * float(phi.phi(np.array([s / p]))[0]) + (1.0 - p) * at_rest - rho

        s = 1.0 if excess(1.0) <= 0.0 else brentq(excess, p, 1.0, xtol=1e-15, rtol=1e-15)
        return float(s * high + (1.0 - s) * low)

    @cached_property
    def positive_share(self) -> float:
        """The share of positives among the ball's examples (the ball takes no weights)."""
        return float(np.mean(self.ball.support.y))

    def rebind(self, rebind: Callable[[Subset], Subset]) -> RobustLoss:
        ball = self.ball
        return RobustLoss(PhiDivergenceBall(rebind(ball.support), ball.phi, ball.rho), self.loss)

    def __repr__(self) -> str:
        return f"robust_loss({self.ball!r}, loss={self.loss!r})"
