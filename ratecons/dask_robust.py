"""The robust loss R(theta) of eq. (2) (Ghosh & Squillante) at a fitted model, on Dask data.

After a solve, the report's metrics and the degenerate-model check
(:mod:`ratecons.degenerate`) evaluate the robust loss at the result and at constant scores.
In memory that is the IM procedure (App. A.1) on the examples' losses; on Dask data those
losses stay on the workers: :func:`dask_robust_value` runs the margin pass, the dual search
over the persisted margins and one weighted sum
(:mod:`ratecons.numerics.inner_max_dask`), so that only scalars travel (the signed labels
are scattered to the workers, :func:`ratecons.scans.client_column`, and the evaluation is made
again with them sent again when a lost worker cancelled it). A constant score
s(x) = c needs no pass at all: its losses take two values, and R follows from the class
counts (:func:`constant_robust_value`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import brentq

from .dask_types import is_dask
from .loss_functions import margin_loss
from .scans import client_column, made_again

if TYPE_CHECKING:  # pragma: no cover
    from .expr.ball import PhiDivergenceBall

__all__ = ["constant_robust_value", "dask_losses", "dask_robust_value", "on_dask"]


def on_dask(ball: PhiDivergenceBall, scorer: Any) -> bool:
    """Whether :func:`dask_robust_value` applies: Dask features and a constant or linear score
    (any phi: the dual searches of :mod:`ratecons.numerics.inner_max_dask_rule`)."""
    if not is_dask(ball.support.data.X):
        return False
    return hasattr(scorer, "score") or hasattr(scorer, "w")


#: iterations of the root search of :func:`constant_robust_value` (Brent's method)
CONSTANT_ROOT_ITERATIONS = 200


def _margins(ball: PhiDivergenceBall, scorer: Any) -> Any:
    """The lazy margins y~_n f(x_n) over the ball's examples, f(x) = <w, x> - b or the constant
    score (w = 0, b = -score); the signed labels go to the workers as one byte per row
    (scattered, :func:`ratecons.scans.client_column`)."""
    from .numerics.inner_max_dask import signed_margins

    support = ball.support
    y = (2 * support.y.astype(np.int8) - 1).astype(np.int8)
    labels, _ = client_column(y, support.X.chunks[0], near=support.X)
    if hasattr(scorer, "w"):
        w, b = np.asarray(scorer.w, dtype=np.float64), float(scorer.b)
    else:
        w, b = np.zeros(support.X.shape[1]), -float(scorer.score)
    return signed_margins(support.X, labels, w, b)


def dask_robust_value(ball: PhiDivergenceBall, loss: str, scorer: Any) -> float:
    """R at ``scorer``'s margins over the ball's examples: a linear score by one evaluation of
    the Dask passes (made again, the labels sent again, when a worker lost with a block of
    them cancelled it: :func:`ratecons.scans.made_again`), a constant by
    :func:`constant_robust_value` (module docstring).

    Parameters
    ----------
    ball : PhiDivergenceBall
        On Dask data (:func:`on_dask`).
    loss : str
        A key of :data:`ratecons.loss_functions.MARGIN_LOSSES`.
    scorer : LinearScorer or ConstantScore
        f(x) = <w, x> - b, or the constant ``score``.
    """
    from .numerics.inner_max_dask import robust_value
    from .numerics.inner_max_dask_rule import worst_case_rule

    if not hasattr(scorer, "w"):
        return constant_robust_value(ball, loss, float(scorer.score))

    def value() -> float:
        state, rule, summ = worst_case_rule(_margins(ball, scorer), loss, ball.phi, ball.rho)
        return robust_value(state, loss, rule, summ)

    return made_again(value)


def constant_robust_value(ball: PhiDivergenceBall, loss: str, c: float) -> float:
    """R of eq. (2) at the constant score c, from the class counts alone.

    The margins are c y~_n: the losses take the value l(c) on the fraction pi of the examples
    labelled +1 and l(-c) on the rest. For a convex phi the worst-case pmf is uniform within
    each class (averaging a feasible P over permutations of a class keeps it feasible and its
    value), so R = max { q h + (1 - q) l : D(q) <= rho } with h >= l the two losses, q the
    mass of the class with loss h (fraction pi_h) and
    D(q) = pi_h phi(q / pi_h) + (1 - pi_h) phi((1 - q) / (1 - pi_h)), the divergence from U_N
    (convex, 0 at q = pi_h). The linear objective is largest at the largest feasible q, the
    root of D(q) = rho on [pi_h, 1] where D increases (Brent's method), or 1.
    """
    y = ball.support.y
    pi = float(np.count_nonzero(y)) / y.size
    (pos_loss, neg_loss), _ = margin_loss(loss, np.array([c, -c]))
    high, low, share = ((pos_loss, neg_loss, pi) if pos_loss >= neg_loss
                        else (neg_loss, pos_loss, 1.0 - pi))
    if high == low or share == 0.0 or share == 1.0:
        return float(high if share == 1.0 else low if share == 0.0 else high)
    phi = ball.phi

    def divergence(q: float) -> float:
        parts = np.array([q / share, (1.0 - q) / (1.0 - share)])
        with np.errstate(all="ignore"):
            vals = np.where(parts > 0, np.asarray(phi.phi(np.maximum(parts, 1e-300))),
                            phi.at_zero)
        return float(share * vals[0] + (1.0 - share) * vals[1])

    q = 1.0
    if divergence(q) > ball.rho:  # D(share) = 0 <= rho: the root lies in [share, 1)
        q = brentq(lambda t: divergence(t) - ball.rho, share, 1.0, xtol=1e-15, rtol=1e-15,
                   maxiter=CONSTANT_ROOT_ITERATIONS)
    return float(q * high + (1.0 - q) * low)


def dask_losses(ball: PhiDivergenceBall, loss: str, scorer: Any) -> Any:
    """The lazy losses l(m_n) at ``scorer`` (a Dask array with the features' partitions): their
    mean, say, is a reduction."""
    return _margins(ball, scorer).map_blocks(lambda m: margin_loss(loss, m)[0],
                                             dtype=np.float64)
