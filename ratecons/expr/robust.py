"""Worst-case rates: a rate whose example weights range over an uncertainty set.

A rate expression over subsets T_t of the examples S of a phi-divergence ball U (the ball's
support) is, with the uniform weights 1/|S| of the ball's centre,

    r = c + sum_t c_t sum_{x in T_t} omega_{t,x} 1(f(x) > 0) = c + (1/|S|) sum_{x in S} g_x,
    g_x = |S| a_x 1(f(x) > 0),   a_x = sum_{t : x in T_t} c_t omega_{t,x}.

``rc.worst_case(r, U)`` replaces the centre's weights 1/|S| by any reweighting q in U, and takes
the reweighting that hurts: ``worst_case(r, U) >= k`` must hold for min_{q in U} r_q (a floor
that holds under every shift of the group inside the ball), ``worst_case(r, U) <= k`` for
max_{q in U} r_q; minimized it is max_q r_q, maximized min_q r_q. For the adversary's sign
sigma (+1 for max) the value is c + sigma * max_{q in U} sum_x q_x sigma g_x: the robust loss of
Ghosh & Squillante, problem (4), over the per-example values sigma g_x, computed exactly by
their inner maximization (App. A.1).

Its surrogate replaces each indicator by the convex upper bounds of Goh et al. (eq. 4) --
the hinge relaxation, then majorization-minimization at an anchor -- and aggregates the
per-example bounds by the ball's support function, a convex nondecreasing function of them, so
the surrogate stays convex (a supremum of convex functions). With a chi-square ball and rho ->
its upper limit it tends to a CVaR of the per-example values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data import Dataset, Subset
from ..errors import SpecError, parameter_error
from .atom import Term

__all__ = ["WorstCaseRate", "worst_case"]


class WorstCaseRate(Term):
    """``worst_case(expr, U)`` (module docstring): a rate whose weights range over U.

    Attributes
    ----------
    expr : RateExpr
    ball : PhiDivergenceBall
    coefficients : ndarray, shape (|S|,)
        |S| a_x for every example x of the ball's support (in the support's order).
    """

    curvature = "rate"
    kind = "rate"

    def __init__(self, expr: Any, ball: Any) -> None:
        from ..phi_divergence import PhiDivergenceBall
        from ..rates import RateExpr

        if not isinstance(expr, RateExpr):
            raise parameter_error("expr", "worst_case", "a rate expression (rc.recall(D), "
                                  "rc.positive_rate(D), ...)", type(expr).__name__)
        if not isinstance(ball, PhiDivergenceBall):
            raise parameter_error("U", "worst_case", "an rc.PhiDivergenceBall",
                                  type(ball).__name__)
        if not expr.terms:
            raise SpecError(f"worst_case({expr.name}): the expression is a constant; there is "
                            "nothing to reweight.")
        support: Subset = ball.support
        coefficients = np.zeros(support.n)
        for subset, coef in expr.terms.values():
            if subset.data is not support.data:
                raise SpecError(
                    f"worst_case({expr.name}, U): the rate is over {subset.name} but U "
                    f"reweights {support.name}, another dataset. Build U on the rate's data.")
            pos = np.searchsorted(support.index, subset.index)
            inside = (pos < support.n) & (support.index[np.minimum(pos, support.n - 1)]
                                          == subset.index)
            if not np.all(inside):
                raise SpecError(
                    f"worst_case({expr.name}, U): {subset.name} has examples outside "
                    f"{support.name}, the examples U reweights. Build U over a set that "
                    f"contains the rate's subset, e.g. rc.PhiDivergenceBall({subset.name}, ...).")
            np.add.at(coefficients, pos, coef * subset.weights)
        self.expr = expr
        self.ball = ball
        self.coefficients = coefficients * support.n

    @property
    def name(self) -> str:
        return (f"worst_case({self.expr.name}, {self.ball.phi.name} ball over "
                f"{self.ball.support.name}, rho={self.ball.rho:g})")

    def datasets(self) -> list[Dataset]:
        return [self.ball.support.data]

    def value_for(self, scorer: Any, adversary: float, kind: str = "indicator") -> float:
        """c + sigma max_{q in U} sum_x q_x sigma g_x (module docstring), sigma = adversary.

        ``kind="indicator"`` is the exact value for deterministic predictions; ``"ramp"`` the
        expected value under the randomized rule (eq. 3).
        """
        from ..solvers.dro import inner_maximize

        support = self.ball.support
        z = scorer.decision_function(support.data.X)[support.index]
        v = (z > 0).astype(np.float64) if kind == "indicator" else np.clip(0.5 + z, 0.0, 1.0)
        g = adversary * self.coefficients * v
        inner = inner_maximize(g, self.ball.phi, self.ball.rho)
        return self.expr.constant + adversary * inner.value

    def value(self, scorer: Any) -> float:
        """The worst case for a floor (min over U); constraints use :meth:`value_for`."""
        return self.value_for(scorer, -1.0)

    def surrogate_value(self, scorer: Any) -> float:
        return self.value_for(scorer, -1.0, "ramp")

    def rebind(self, rebind: Callable[[Subset], Subset]) -> WorstCaseRate:
        from ..phi_divergence import PhiDivergenceBall

        ball = self.ball
        return WorstCaseRate(self.expr.rebind(rebind),
                             PhiDivergenceBall(rebind(ball.support), ball.phi, ball.rho))


def worst_case(expr: Any, U: Any) -> WorstCaseRate:
    """A rate that must hold for every reweighting of its examples inside ``U``.

    Parameters
    ----------
    expr : RateExpr
        A rate or linear combination of rates over subsets of ``U``'s examples.
    U : PhiDivergenceBall
        The uncertainty set: reweightings of a Dataset or Subset within a chi-square or KL
        ball (``rc.PhiDivergenceBall(train.positives, phi="chi2", rho=0.1)``).

    Examples
    --------
    >>> floor = rc.worst_case(rc.recall(train),
    ...                       rc.PhiDivergenceBall(train.positives, phi="chi2", rho=0.1)) >= 0.7
    """
    return WorstCaseRate(expr, U)
