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

**Conditional rates.** Every rate has its own denominator: the subset it averages over (recall
over ``women`` averages over ``women.positives``; an error rate over ``D`` over ``D``). When
the ball's support S is that denominator B, the reweighted rate is the linear functional
above. When B is a strict subset of S (``worst_case(rc.recall(women),
rc.PhiDivergenceBall(women, ...))``), the rate under a reweighting q is the rate under q
restricted to B and renormalized (Bayes' rule):

    r_q = c + sum_{x in B} q_x g_x / sum_{x in B} q_x,     g_x = |B| a_x 1(f(x) > 0),

so recall stays the reweighted share of positives predicted positive, in [0, 1], and the
all-positive model has recall 1 under every q. (Reading the same sum with B's fixed size as
denominator would let the adversary move weight from B to the rest of S and lower the "rate"
of every model: 0.40 for the all-positive model at rho = 0.05 on Adult's women, 5% sample.)
Its extreme over U is a linear-fractional program, solved exactly by
:func:`conditional_extreme` (Dinkelbach's parameter: the root of
F(lam) = max_q sum_B q_x (h_x - lam), each F an inner maximization of App. A.1). A bound on
it against a constant k is, for every q with q(B) > 0, the linear condition
sum_B q_x sigma (c - k + g_x) <= 0, so ``worst_case(r, U) >= k`` is exactly
sup_{q in U} sum_x q_x l_x <= 0 with l_x = k - c - g_x on B and 0 off B (see
:meth:`WorstCaseRate.bound_losses`); it is lowered that way. A worst case whose rates have
several denominators (a sum of ratios), or a conditional one that is minimized, maximized or
compared with other terms, has no such exact convex form and is refused with a
:class:`~ratecons.errors.SpecError` that names the denominator.

Its surrogate replaces each indicator by the convex upper bounds of Goh et al. (eq. 4) --
the hinge relaxation, then majorization-minimization at an anchor -- and aggregates the
per-example bounds by the ball's support function, a convex nondecreasing function of them, so
the surrogate stays convex (a supremum of convex functions). With a chi-square ball and rho ->
its upper limit it tends to a CVaR of the per-example values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data import Dataset, Subset
from ..errors import SpecError, parameter_error
from ..numerics.inner_max import inner_maximize
from ..ramp import ramp, ramp_scores
from .atom import Term
from .ball import PhiDivergenceBall
from .rate import RateExpr, _AtomRecipe

__all__ = ["ConditionalExtreme", "WorstCaseRate", "conditional_extreme", "worst_case"]


class WorstCaseRate(Term):
    """``worst_case(expr, U)`` (module docstring): a rate whose weights range over U.

    Attributes
    ----------
    expr : RateExpr
    ball : PhiDivergenceBall
    coefficients : ndarray, shape (|S|,)
        |B| a_x for every example x of the ball's support (in the support's order; 0 off B).
    denominator : Subset
        B, the subset the rates average over (module docstring).
    inside : ndarray of bool, shape (|S|,)
        Which examples of the support are in B.
    conditional : bool
        B is a strict subset of S: the rate is conditional on B (a ratio over q).
    """

    curvature = "rate"
    kind = "rate"
    under_score_scale = "ramp"

    def __init__(self, expr: Any, ball: Any) -> None:
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
        denominator = _denominator(expr, support, self.name)
        #: the rates' common denominator B (module docstring), a subset of the support
        self.denominator = denominator
        #: which examples of the support are in B
        self.inside = np.isin(support.index, denominator.index)
        #: B is a strict subset of the support: the rate is conditional on B
        self.conditional = denominator.n < support.n
        self.coefficients = coefficients * denominator.n

    @property
    def name(self) -> str:
        return (f"worst_case({self.expr.name}, {self.ball.phi.name} ball over "
                f"{self.ball.support.name}, rho={self.ball.rho:g})")

    @property
    def datasets(self) -> list[Dataset]:
        return [self.ball.support.data]

    @property
    def range(self) -> tuple[float, float]:
        """Every reweighting of the rate expression is a rate expression of the same terms:
        its range (a bound outside it is refused when the constraint is built)."""
        return self.expr.range

    @property
    def reweighted_indicators(self) -> tuple[Subset, np.ndarray]:
        return self.ball.support, self.coefficients

    def evaluate(self, scorer: Any, kind: str, coef: float = 1.0) -> float:
        """The reweighting that hurts the canonical row: max over U for a positive coefficient,
        min for a negative one."""
        return self.value_for(scorer, 1.0 if coef > 0 else -1.0,
                              "indicator" if kind == "exact" else "ramp")

    def value_for(self, scorer: Any, adversary: float, kind: str = "indicator") -> float:
        """c + sigma max_{q in U} sum_x q_x sigma g_x (module docstring), sigma = adversary;
        for a conditional rate c + sigma max_q sum_B q_x sigma g_x / sum_B q_x, computed by
        :func:`conditional_extreme` (to 1e-9).

        ``kind="indicator"`` is the exact value for deterministic predictions; ``"ramp"`` the
        expected value under the randomized rule (eq. 3).
        """
        support = self.ball.support
        z = ramp_scores(scorer, scorer.decision_function(support.data.X)[support.index])
        v = (z > 0).astype(np.float64) if kind == "indicator" else ramp(z)
        g = adversary * self.coefficients * v
        if self.conditional:
            extreme = conditional_extreme(g, self.inside, self.ball.phi, self.ball.rho)
            return self.expr.constant + adversary * extreme.value
        inner = inner_maximize(g, self.ball.phi, self.ball.rho)
        return self.expr.constant + adversary * inner.value

    def conditional_error(self, why: str) -> SpecError:
        """The error for a conditional worst case used where it has no exact convex form."""
        return SpecError(
            f"{self.name}: the rate's denominator {self.denominator.name} is a strict subset of "
            f"{self.ball.support.name}, the examples the ball reweights, so its worst case is a "
            f"ratio (the rate under the reweighting restricted to {self.denominator.name} and "
            f"renormalized); {why}. Bound it alone against a constant "
            "(rc.worst_case(...) >= k or <= k), or build the ball over the rate's own subset: "
            f"rc.PhiDivergenceBall({self.denominator.name}, phi={self.ball.phi.name!r}, "
            f"rho={self.ball.rho:g}).")

    def bound_losses(self, adversary: float, k: float) -> tuple[np.ndarray, np.ndarray]:
        """The constraint ``adversary * (r_q - k) <= 0 for every q in U`` of a conditional rate
        as sup_{q in U} sum_x q_x l_x <= 0 (module docstring), l_x = const_x + h_x 1(f(x) > 0).

        Returns ``(const, h)`` over the support: const_x = adversary (c - k) and
        h_x = adversary |B| a_x (the coefficient of 1(f(x) > 0) in adversary g_x) on B, both 0
        off B. For q with q(B) > 0, multiplying
        adversary (r_q - k) by q(B) > 0 gives sum_{x in B} q_x l_x, so the two conditions
        agree for every such q (for q(B) = 0 the sum is 0); the equivalence is exact, not a
        relaxation (Dinkelbach's parameter fixed at the bound k).
        """
        const = np.where(self.inside, adversary * (self.expr.constant - k), 0.0)
        return const, adversary * self.coefficients

    def value(self, scorer: Any) -> float:
        """The worst case for a floor (min over U); constraints use :meth:`value_for`."""
        return self.value_for(scorer, -1.0)

    def surrogate_value(self, scorer: Any) -> float:
        return self.value_for(scorer, -1.0, "ramp")

    def rebind(self, rebind: Callable[[Subset], Subset]) -> WorstCaseRate:
        ball = self.ball
        return WorstCaseRate(self.expr.rebind(rebind),
                             PhiDivergenceBall(rebind(ball.support), ball.phi, ball.rho))


def _bases(expr: Any) -> list[Subset]:
    """The denominators of the rates in ``expr``: the subset each rate atom averages over."""
    bases: list[Subset] = []
    for atom in expr.atoms:
        recipe = atom._recipe
        if isinstance(recipe, _AtomRecipe):
            bases += list(recipe.subsets)
        else:  # pragma: no cover - every atom is built by rate_atom
            bases += [subset for subset, _ in atom.terms.values()]
    return bases


def _denominator(expr: Any, support: Subset, name: str) -> Subset:
    """The common denominator of the rates of ``expr`` (module docstring), which must lie in
    the ball's support."""
    bases = _bases(expr)
    first = bases[0]
    if not all(b.data is first.data and np.array_equal(b.index, first.index) for b in bases):
        names = ", ".join(dict.fromkeys(b.name for b in bases))
        raise SpecError(
            f"{name}: its rates have different denominators ({names}) inside one ball over "
            f"{support.name}; the worst case of a combination of rates conditional on "
            "different subsets (a sum of ratios) has no exact convex form. Use one worst_case "
            "per rate, each with a ball built over the rate's own subset (e.g. "
            f"rc.PhiDivergenceBall({first.name}, ...)).")
    if first.data is not support.data or not np.all(np.isin(first.index, support.index)):
        raise SpecError(
            f"{name}: the rate averages over {first.name}, which has examples outside "
            f"{support.name}, the examples the ball reweights. Build the ball over the rate's "
            f"own subset: rc.PhiDivergenceBall({first.name}, ...).")
    return first


@dataclass
class ConditionalExtreme:
    """max_{q in U} sum_B q_x h_x / sum_B q_x (:func:`conditional_extreme`).

    Attributes
    ----------
    value : float
        The ratio at ``q`` (attained, so a lower bound of the maximum).
    upper : float
        A certified upper bound of the maximum (``upper - value <= tol``).
    q : ndarray
        The maximizing reweighting of the support (sums to 1).
    evaluations : int
        Inner maximizations (App. A.1 of Ghosh & Squillante) used.
    """

    value: float
    upper: float
    q: np.ndarray
    evaluations: int


def conditional_extreme(h: np.ndarray, inside: np.ndarray, phi: Any, rho: float,
                        tol: float = 1e-9, max_evaluations: int = 200) -> ConditionalExtreme:
    """max over the ball U of the conditional mean sum_B q_x h_x / sum_B q_x (B = ``inside``).

    A linear-fractional program over a convex set, solved by Dinkelbach's parameter:
    F(lam) = max_{q in U} sum_{x in B} q_x (h_x - lam) is convex and nonincreasing, and the
    maximum lam* is the least lam with F(lam) <= 0. Each F is one exact inner maximization
    (problem (4) of Ghosh & Squillante, App. A.1) over the losses h_x - lam on B and 0 off B.
    Starting from the centre's value (attained, so lam* >= it), each step evaluates F at
    lam = lo + tol: a positive F gives a maximizer whose ratio lo' = lam + F / q(B) > lam
    (Dinkelbach's update, a Newton step on F, superlinear), a nonpositive upper bound of F
    (the inner problem's dual value) certifies lam* <= lam. It stops when the certified
    bracket is at most ``tol`` wide (measured on Adult women, 5,000-row sample: 3-6 inner
    maximizations; docs/worst_case.md).

    Parameters
    ----------
    h : ndarray, shape (|S|,)
        Per-example values over the ball's support (only entries in B are read).
    inside : bool ndarray, shape (|S|,)
        The denominator B.
    phi, rho : the ball.
    tol : float
        Width of the certified bracket [value, upper].
    """
    inside = np.asarray(inside, dtype=bool)
    hb = h[inside]
    m = h.size
    q = np.full(m, 1.0 / m)
    lo, hi = float(hb.mean()), float(hb.max())
    evaluations = 0
    while hi - lo > tol and evaluations < max_evaluations:
        lam = lo + tol
        inner = inner_maximize(np.where(inside, h - lam, 0.0), phi, rho)
        evaluations += 1
        mass = float(inner.p[inside].sum())
        if inner.dual_value <= 1e-12 * max(1.0, abs(lam)) or mass <= 0.0:
            hi = min(hi, lam)
            break
        ratio = float(inner.p[inside] @ hb) / mass
        if ratio > lo:
            lo, q = ratio, inner.p
        else:  # F > 0 only by rounding: lam is within rounding of lam*
            hi = min(hi, lam)
            break
    return ConditionalExtreme(lo, max(hi, lo), q, evaluations)


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
    A ball over the rate's own subset: the reweighted recall is a weighted sum.

    >>> floor = rc.worst_case(rc.recall(train),
    ...                       rc.PhiDivergenceBall(train.positives, phi="chi2", rho=0.1)) >= 0.7

    A ball over a larger set: the recall of women under every shift of the women's population
    within the ball, i.e. the reweighted share of positive women predicted positive (the
    reweighting restricted to the positives and renormalized; module docstring). The
    all-positive model meets it for every rho. Bound it alone against a constant.

    >>> women = train.group("sex", "Female")
    >>> floor = rc.worst_case(rc.recall(women),
    ...                       rc.PhiDivergenceBall(women, phi="chi2", rho=0.05)) >= 0.6
    """
    return WorstCaseRate(expr, U)
