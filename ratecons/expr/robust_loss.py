"""The robust loss R(theta) of eq. (2): the worst expected margin loss over a phi-divergence ball.

Ghosh & Squillante, section 1: R(theta) = max_P sum_n p_n l(theta, xi_n) over the reweightings
P of the data in a :class:`~ratecons.expr.ball.PhiDivergenceBall`. Its exact value is the inner
maximization of :mod:`ratecons.numerics.inner_max` (appendix A.1); as a term it is convex (a
supremum of convex functions of the scores). Users build it with ``rc.robust_loss(U, loss)``
(:mod:`ratecons.phi_divergence`).

As a mean loss, it may carry a score scale t > 0 (``scale``): the losses l(t m_n) of the model
with scores t f, made by the chain's reduction to a model at its loss's scale
(:mod:`ratecons.reductions.score_scale`), never by the user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dask_robust import constant_robust_value, dask_losses, dask_robust_value, on_dask
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
    under_score_scale = "loss"

    def __init__(self, ball: PhiDivergenceBall, loss: str = "logistic",
                 scale: float = 1.0) -> None:
        if not isinstance(ball, PhiDivergenceBall):
            raise parameter_error("U", "robust_loss", "an rc.PhiDivergenceBall",
                                  type(ball).__name__)
        if loss not in MARGIN_LOSSES:
            raise parameter_error("loss", "robust_loss", f"one of {tuple(MARGIN_LOSSES)}", loss)
        ball.data.require_labels("rc.robust_loss (robust classification)", binary=True)
        self.ball = ball
        self.loss = loss
        self.scale = float(scale)

    @property
    def name(self) -> str:
        scale = "" if self.scale == 1.0 else f", scale={self.scale:.6g}"
        return (f"robust_loss({self.ball.support.name}, phi={self.ball.phi.name!r}, "
                f"rho={self.ball.rho:g}, loss={self.loss!r}{scale})")

    def scaled(self, t: float) -> RobustLoss:
        """The same robust loss at t times its score scale (module docstring)."""
        return RobustLoss(self.ball, self.loss, scale=t * self.scale)

    @property
    def range(self) -> tuple[float, float]:
        """A worst-case mean of losses >= 0 is >= 0: a bound below 0 is refused when the
        constraint is built."""
        return 0.0, np.inf

    def margin_factors(self) -> np.ndarray:
        """t y~ on the ball's support rows: the margins are t y~ f(x) (module docstring)."""
        return self.scale * (2.0 * self.ball.support.y.astype(np.float64) - 1.0)

    def _at_scale(self, scorer: Any) -> Any:
        """The scorer whose margins the losses take on Dask data: t f (a fitted scorer's
        ``scaled``; in memory the margins are scaled directly)."""
        return scorer if self.scale == 1.0 else scorer.scaled(self.scale)

    @property
    def datasets(self) -> list[Dataset]:
        return [self.ball.support.data]

    def losses(self, scorer: Any) -> np.ndarray:
        """l(m_n) for every example of the ball, m_n = y~_n f(x_n) (on Dask data a lazy Dask
        array, :func:`ratecons.dask_robust.dask_losses`)."""
        if on_dask(self.ball, scorer):
            return dask_losses(self.ball, self.loss, self._at_scale(scorer))
        support = self.ball.support
        scores = scorer.decision_function(support.data.X)[support.index]
        return MARGIN_LOSSES[self.loss](self.margin_factors() * scores)[0]

    def value(self, scorer: Any) -> float:
        """R(theta) by the exact inner maximization (App. A.1); on Dask data by reductions over
        the partitions (:func:`ratecons.dask_robust.dask_robust_value`)."""
        if on_dask(self.ball, scorer):
            return dask_robust_value(self.ball, self.loss, self._at_scale(scorer))
        return inner_maximize(self.losses(scorer), self.ball.phi, self.ball.rho).value

    surrogate_value = value

    def value_at_constant(self, score: float) -> float:
        """R at the constant score ``score`` (w = 0), from the class shares alone: one
        weight per class, a 1-D root (:func:`ratecons.dask_robust.constant_robust_value`)."""
        return constant_robust_value(self.ball, self.loss, self.scale * score)

    def rebind(self, rebind: Callable[[Subset], Subset]) -> RobustLoss:
        ball = self.ball
        return RobustLoss(PhiDivergenceBall(rebind(ball.support), ball.phi, ball.rho), self.loss,
                          scale=self.scale)

    def __repr__(self) -> str:
        return f"robust_loss({self.ball!r}, loss={self.loss!r})"
