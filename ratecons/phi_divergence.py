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

from collections.abc import Callable
from typing import Any

import numpy as np

from .data import Dataset, Subset
from .errors import DataError, SpecError, parameter_error
from .expr.atom import Term
from .loss_functions import MARGIN_LOSSES
from .numerics.inner_max import inner_maximize
from .numerics.phi import Phi, as_phi, assumption1_bound, degenerate_bound

__all__ = [
    "PhiDivergenceBall",
    "RobustLoss",
    "robust_loss",
]


class PhiDivergenceBall:
    """The set of reweightings P of ``data`` with D_phi(P, U_N) <= rho (eq. 1 with P_b = U_N).

    Parameters
    ----------
    data : Dataset
        Training examples with binary labels (0/1, -1/+1 or bool). Example weights are not
        supported: the base distribution is the uniform U_N.
    phi : {"chi2", "kl"} or Phi, default "chi2"
    rho : float, default 0.1
        Radius of the ball, rho > 0.
    strict : bool, default False
        With ``strict=True``, enforce the paper's Assumption 1 (Proposition 1):
        rho < rho_1(N, phi) (see :func:`assumption1_bound`; 1/(N-1) for chi2), which guarantees
        that the worst-case pmf P* puts positive mass on every example. The bound shrinks like
        1/N, so the radii of the paper's own experiments (rho = 0.1 with N ~ 10^4..10^6,
        section 4) violate it, and the default accepts them: P* may then put zero mass on
        low-loss examples; it is still unique whenever the losses are not all equal (phi
        strictly convex). Whether the assumption holds is recorded in ``assumption1_holds`` and
        shown by ``describe()``. In every case rho must stay below the degenerate limit
        (phi(N) + (N-1) phi(0)) / N at which the ball holds every pmf (an error).

    Attributes
    ----------
    n : int
    rho_bound : float
        rho_1(N, phi) of Assumption 1.
    """

    def __init__(
        self, data: Dataset | Subset, phi: str | Phi = "chi2", rho: float = 0.1,
        strict: bool = False
    ) -> None:
        if isinstance(data, Subset):
            #: the examples the ball reweights, as rows of the user's dataset
            self.support = data.require_nonempty("PhiDivergenceBall")
            data = data.data.take(data.index, name=data.name)
        elif isinstance(data, Dataset):
            self.support = data.all
        else:
            raise parameter_error("data", "PhiDivergenceBall", "an rc.Dataset or rc.Subset",
                                  type(data).__name__)
        if data.y is not None:  # unlabelled data are fine for worst-case coverage rates
            data.require_labels("PhiDivergenceBall (robust classification)", binary=True)
        if data.weights is not None:
            raise DataError(
                f"dataset {data.name!r} has example weights, but the phi-divergence ball is "
                "centred at the uniform distribution U_N (section 1); drop the weights or "
                "replicate examples instead."
            )
        self.data = data
        self.phi = as_phi(phi)
        try:
            rho_f = float(rho)
        except (TypeError, ValueError):
            raise parameter_error("rho", "PhiDivergenceBall", "a positive float", rho) from None
        if not np.isfinite(rho_f) or rho_f <= 0:
            raise parameter_error("rho", "PhiDivergenceBall", "a positive float", rho)
        if not isinstance(strict, (bool, np.bool_)):
            raise parameter_error("strict", "PhiDivergenceBall", "a bool", strict)
        self.rho = rho_f
        self.strict = bool(strict)
        self.rho_bound = assumption1_bound(data.n, self.phi)
        self.rho_degenerate = degenerate_bound(data.n, self.phi)
        self.assumption1_holds = rho_f < self.rho_bound
        if self.strict and not rho_f < self.rho_bound:
            raise SpecError(
                f"The 'rho' parameter of PhiDivergenceBall must be < {self.rho_bound:.6g}, the "
                f"bound rho_1 = (1 - 1/N) phi(N/(N-1)) + phi(0)/N of Assumption 1 "
                f"(Proposition 1) for N={data.n} and phi={self.phi.name!r}. Got {rho!r} "
                "instead. Use a smaller rho, or strict=False (the default) to allow worst-case "
                "weights of zero (as the paper's experiments with rho=0.1 do)."
            )
        if not rho_f < self.rho_degenerate:
            raise SpecError(
                f"The 'rho' parameter of PhiDivergenceBall must be < {self.rho_degenerate:.6g} "
                f"(for N={data.n}, phi={self.phi.name!r}): at or above it the ball contains "
                "every pmf on the data, the robust loss is the maximum loss and the problem is "
                f"degenerate. Got {rho!r} instead."
            )

    @property
    def n(self) -> int:
        return self.data.n

    def __repr__(self) -> str:
        return (f"PhiDivergenceBall({self.data.name!r}, phi={self.phi.name!r}, rho={self.rho:g}, "
                f"N={self.n})")


class RobustLoss(Term):
    """The objective R(theta) of eq. (2): the worst expected loss over a phi-divergence ball.

    Built by :func:`robust_loss`; a convex term (a supremum of convex functions): minimize it,
    bound it above, or add it to other terms.
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
        """l(m_n) for every example of the ball, m_n = y~_n f(x_n)."""
        support = self.ball.support
        scores = scorer.decision_function(support.data.X)[support.index]
        margins = (2.0 * support.y - 1.0) * scores
        return MARGIN_LOSSES[self.loss](margins)[0]

    def value(self, scorer: Any) -> float:
        """R(theta) by the exact inner maximization (App. A.1)."""
        return inner_maximize(self.losses(scorer), self.ball.phi, self.ball.rho).value

    surrogate_value = value

    def rebind(self, rebind: Callable[[Subset], Subset]) -> RobustLoss:
        ball = self.ball
        return RobustLoss(PhiDivergenceBall(rebind(ball.support), ball.phi, ball.rho), self.loss)

    def __repr__(self) -> str:
        return f"robust_loss({self.ball!r}, loss={self.loss!r})"


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
