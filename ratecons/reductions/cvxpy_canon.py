"""The CVXPY lowering's table: term type -> how the term is written into a CVXPY step.

As CVXPY keeps one canonicalization per atom in a table (``CANON_METHODS``),
:data:`LOWERINGS` maps each term type to a :class:`CvxpyLowering`: a function
``lower(builder, coef, part, objective)`` that returns ``coef * part`` as a CVXPY expression
(adding its epigraph constraints to ``builder.constraints``), whether the graph is
LP-representable, and which datasets' scores it reads so often that they enter as score
variables. The builder (:class:`ratecons.reductions.to_cvxpy.CvxpyBuilder`) supplies the shared
pieces: ``builder.cp`` (the cvxpy module: this module imports no cvxpy), the scores of any rows
(``builder.scores``), the bounds of eq. (4) of Goh et al. (``builder.indicator_bound``,
``builder.indicator_losses``), margin-loss graphs (``builder.margin_losses``) and the support
function of a phi-divergence ball (``builder.support_function``). A term type without an entry
is refused by name (:func:`ratecons.reductions.table.entry_for`), never passed over.

The entries:

- rates (:class:`~ratecons.expr.rate.RateExpr`) have no function: the rate parts of every row
  are folded per example first (``CvxpyBuilder.folded_rates``, eqs 13-15 of Goh et al.);
- a worst-case rate aggregates the per-example bounds by the support function of its ball
  (the duals of problem (4) of Ghosh & Squillante); a rate conditional on a strict subset of
  the ball's support, bounded alone by a constant k, is the exact linear condition
  sup_q sum_x q_x l_x <= 0 of ``WorstCaseRate.bound_losses`` (:func:`conditional_bound`);
- a robust loss is the same support function of the margin losses; a plain loss its graph;
- TPR@K and TPR@tau enter through the concave surrogate 1 - (1/n_+) sum l(t - z_i) with the
  threshold epigraph t >= mean of the K largest scores (``cp.sum_largest``; TopPushK, tau-FPL,
  TopMeanK) or the Pat&Mat threshold equation in its convex form
  sum_j l(theta (z_j - t)) <= n~ tau (problems (6) and (9) of Macha et al., scaled to (3)).
  TPR@K and TPR@tau do not change when every score shifts, so b is the classifier's decision
  threshold, set by the rate constraints beside the ranking objective. With no constraint
  nothing else would set it: the objective's threshold is then pinned at t = 0, so that b is
  the ranking threshold and the model predicts positive exactly above it, as the ranking
  pattern's model does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..expr.analysis import Row
from ..expr.mean_loss import MeanLoss
from ..expr.ranking import RankingObjective, TPRAtQuantile, TPRAtTop
from ..expr.rate import RateExpr
from ..expr.robust import WorstCaseRate
from ..expr.robust_loss import RobustLoss
from ..loss_functions import surrogate_graph

__all__ = ["CvxpyLowering", "LOWERINGS", "conditional_bound"]


def _always(part: Any) -> bool:
    return True


def _never(part: Any) -> bool:
    return False


def _no_data(part: Any, kernel: bool) -> list[Any]:
    return []


@dataclass(frozen=True)
class CvxpyLowering:
    """How one term type enters a CVXPY step (module docstring).

    Attributes
    ----------
    lower : callable or None
        ``lower(builder, coef, part, objective) -> expression`` (``objective``: the part is in
        the objective row); None for rates, which are folded per example before the parts.
    linear : callable
        ``linear(part)``: whether its graph is LP-representable (``to_cvxpy.is_lp``).
    score_data : callable
        ``score_data(part, kernel)``: the datasets whose scores it reads as score variables
        (``CvxpyBuilder.variable_datasets``).
    """

    lower: Callable[[Any, float, Any, bool], Any] | None
    linear: Callable[[Any], bool] = _always
    score_data: Callable[[Any, bool], list[Any]] = _no_data


def worst_case(builder: Any, coef: float, part: WorstCaseRate, objective: bool) -> Any:
    """c + sigma sup_q sum_x q_x sigma g_x with the indicators bounded (module docstring);
    a rate over the whole support only (a conditional one: :func:`conditional_bound`)."""
    if part.conditional:
        raise part.conditional_error("minimized, maximized or beside other terms, such a "
                                     "ratio has no exact convex form")
    sigma = 1.0 if coef > 0 else -1.0
    support = part.ball.support
    losses = builder.indicator_losses(support, sigma * part.coefficients)
    sup = builder.support_function(losses, part.ball.phi, part.ball.rho, support.n)
    return coef * part.expr.constant + abs(coef) * sup


def conditional_bound(builder: Any, row: Row, bound: float) -> Any:
    """The row ``row.constant + coef * worst_case(r, U) <= bound`` of a conditional rate r
    (denominator B a strict subset of U's support) as ``bound + |coef| S(l) <= bound``:
    S(l) = sup_{q in U} sum_x q_x l_x over the losses of
    :meth:`~ratecons.expr.robust.WorstCaseRate.bound_losses` at k = (bound - constant)/coef,
    with every indicator replaced by its bound of eq. (4) (``builder.indicator_losses``).

    Validity: S(l) <= 0 holds exactly when the worst-case conditional rate meets k
    (Dinkelbach's parameter fixed at k: ``bound_losses``). The bounds u of eq. (4)
    majorize the ramp of eq. (3) example by example and equal it at the anchor, and the
    support function is convex and nondecreasing in every l_x (q >= 0), so S at the bounds
    is a convex function of (w, b) that is >= S at the ramp everywhere and equal to it at
    the anchor: a step feasible here meets the floor under the randomized rule, and the
    anchor of a feasible step stays feasible (Algorithm 1 of Goh et al. keeps descending).
    The row's value is |coef| q*(B) times the canonical violation at the worst q*, so its
    sign (and zero) is that of the exact condition; its slack is not in rate units.
    """
    (coef, part), = row.parts
    sigma = 1.0 if coef > 0 else -1.0
    const, h = part.bound_losses(sigma, (bound - row.constant) / coef)
    support = part.ball.support
    losses = builder.indicator_losses(support, h) + const
    sup = builder.support_function(losses, part.ball.phi, part.ball.rho, support.n)
    return bound + abs(coef) * sup


def mean_loss(builder: Any, coef: float, part: MeanLoss, objective: bool) -> Any:
    """coef * the weighted mean of the loss's graph over the subset."""
    s = part.subset
    return coef * (s.weights @ builder.margin_losses(part.loss, s.data, s.index, s.y,
                                                     part.scale))


def robust_loss(builder: Any, coef: float, part: RobustLoss, objective: bool) -> Any:
    """coef * the support function of the ball at the margin losses."""
    s = part.ball.support
    losses = builder.margin_losses(part.loss, s.data, s.index, s.y, part.scale)
    return coef * builder.support_function(losses, part.ball.phi, part.ball.rho, s.n)


def ranking(builder: Any, coef: float, part: RankingObjective, objective: bool) -> Any:
    """coef * (1 - L) with L the surrogate loss of problem (3) (module docstring); in the
    objective, with an intercept and no constraint, the threshold is pinned at 0 in score
    space, so that b is the threshold."""
    cp = builder.cp
    data = part.data
    y = data.y
    among = np.arange(data.n) if part.among == "all" else np.flatnonzero(y == 0)
    z_pos = builder.scores(data, np.flatnonzero(y == 1))
    z_among = builder.scores(data, among)
    t: Any = cp.Variable()
    if objective and isinstance(builder.b, cp.Variable) and not builder.analysis.constraints:
        t = 0.0  # the intercept is the threshold (module docstring)

    def surrogate(u: Any) -> Any:
        graph, constraints = surrogate_graph(cp, part.surrogate, u)
        builder.constraints += constraints
        return graph

    if part.family == "toppushk":
        builder.constraints.append(cp.sum_largest(z_among, int(part.k)) / int(part.k) <= t)
    else:
        builder.constraints.append(cp.sum(surrogate(part.theta * (z_among - t)))
                                   <= among.size * float(part.tau))
    loss = cp.sum(surrogate(t - z_pos)) / z_pos.shape[0]
    return coef * (1.0 - loss)


def _ball_data(part: Any, kernel: bool) -> list[Any]:
    return [part.ball.support.data]


def _ranking_linear(part: RankingObjective) -> bool:
    return part.surrogate == "hinge" and part.family == "toppushk"


def _kernel_ranking_data(part: RankingObjective, kernel: bool) -> list[Any]:
    # a kernel ranking keeps score variables: the dense map written into both its threshold
    # and its loss rows was 6.6x slower (CvxpyBuilder.variable_datasets)
    return [part.data] if kernel else []


_RANKING = CvxpyLowering(ranking, _ranking_linear, _kernel_ranking_data)

#: term type -> its :class:`CvxpyLowering` (module docstring)
LOWERINGS: dict[type, CvxpyLowering] = {
    RateExpr: CvxpyLowering(None),
    WorstCaseRate: CvxpyLowering(worst_case, _never, _ball_data),
    RobustLoss: CvxpyLowering(robust_loss, _never, _ball_data),
    MeanLoss: CvxpyLowering(mean_loss, lambda part: part.loss == "hinge",
                            lambda part, kernel: [part.subset.data]),
    TPRAtTop: _RANKING,
    TPRAtQuantile: _RANKING,
}
