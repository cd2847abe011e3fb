"""Step lengths and Gondzio's centrality correctors of the structured interior point
(:mod:`.structured`): which values must stay positive along a direction, how a direction
is corrected so that the step along it gets longer (Gondzio 1996, multiple centrality
correctors, as :mod:`.top_ipm` does for its problem), how far the ball's lam of a
constraint row's support function may move in one step (:func:`halve_at_most`), and the
separate primal and dual step lengths of a step without smooth or robust parts
(:func:`primal_dual_steps`), and the centring parameter of Mehrotra's corrector from the
predictor past its few blocking pairs (:func:`predictor_sigma`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .interior import step_past_blockers, step_to_boundary
from .structured_centre import weighted_mu
from .structured_kernels import pulled_products

__all__ = ["BLOCKED_BELOW", "BLOCKED_BELOW_SEPARATE", "BLOCKED_BELOW_WARM", "CORRECTORS",
           "CORRECTOR_REACH", "PREDICTOR_BLOCKERS", "WARM_BLOCKERS_PIECES", "CorrectorBudget",
           "all_pairs", "centrality_correctors", "halve_at_most", "boundary_steps",
           "primal_dual_steps", "predictor_blockers", "predictor_sigma",
           "warm_predictor_blockers"]

#: Gondzio's centrality correctors per iteration (:func:`centrality_correctors`) and how
#: much longer than the direction's step they aim
CORRECTORS = 2
CORRECTOR_REACH = 1.5
#: the adaptive budget of a cold retry (:class:`CorrectorBudget`): CORRECTORS_BLOCKED while
#: the last corrected step was below BLOCKED_STEP or mu fell to more than SLOW_MU times what
#: it was, CORRECTORS_FULL after a step of at least FULL_STEP
CORRECTORS_BLOCKED = 10
CORRECTORS_FULL = 1
BLOCKED_STEP = 0.5
SLOW_MU = 0.5
FULL_STEP = 0.9
#: the pairs left out of the predictor's step when sigma is chosen (:func:`predictor_sigma`).
#: Interior-point iterations of cold elastic steps of logistic + churn + 80% rule (Adult;
#: three steps of the whole split / two of 5,000 rows / one rebuilt at a 5,000-row anchor),
#: left out at every step (before :data:`BLOCKED_BELOW`), 0 (the plain step) / 10 / 30 /
#: p + 1 + r + m = 115: 100 (no certificate), 64, 38 / 53,
#: 43, 31 / 55, 44, 28 / 56, 60, 35; 69, 75 / 50, 56 / 52, 49 / 53, 53; 32 / 35 / 45 / 62
PREDICTOR_BLOCKERS = 10
#: ... only when the predictor's true step is below this. Left out at every step, they moved
#: the elastic steps' last digits enough that phase one on 800 Adult rows (logistic + churn +
#: 80% rule) took another MM path than the CVXPY phase one (last step 0.4135 against 0.4055;
#: tests/reductions/test_elastic_step.py); below 0.1 it takes the same path, and the whole
#: split's three cold elastic steps take 61, 50 and 39 iterations, the 5,000-row ones 50, 60
BLOCKED_BELOW = 0.1
#: ... and below BLOCKED_BELOW_SEPARATE on the plain path of a step with separate primal and
#: dual step lengths (linear rows, a quadratic objective: :func:`primal_dual_steps`; the
#: elastic steps above have smooth losses) and hinge pieces in its objective row. There the
#: predictor's steps of 0.1-0.5 are held back by a few pieces' multipliers at their kinks as
#: well, and sigma from the true step (0.3-0.7) let mu fall by 10-30% an iteration. The
#: recorded calls of four whole-split rows (hinge + 80% rule, hinge + FPR parity, TPR@K + 80%
#: rule, part B's error rate + 80% rule), interior-point iterations at 0.1 / 0.3 / 0.5 / 1.0:
#: 602 / 548 / 492 / 486 (0.3 and 1.0 on every path), to the same objectives within the steps'
#: tolerances. 1.0 and 0.3 moved the README's verify example to another MM path (0.15436
#: against the CVXPY chain's 0.15448); on the weighted path 0.5 sent an infeasible diabetes
#: relaxation's doomed weighted run from 25 to 36 iterations
#: (tests/solvers/test_structured_infeasible.py); on phase one's objective-free elastic steps
#: (no pieces in the objective) it took logistic + recall + positive rate on diabetes to
#: another MM path (tests/patterns/test_composed_proved_infeasible.py)
BLOCKED_BELOW_SEPARATE = 0.5
#: ... and below BLOCKED_BELOW_WARM on a warm run of a step with smooth parts and at least
#: WARM_BLOCKERS_PIECES pieces (:func:`warm_predictor_blockers`). In the warm MM steps of
#: logistic + churn <= 0.05 + 80% rule on the whole Adult split the predictor's step was
#: 0.1-0.5 in nearly every iteration, held back by 10-200 of 70,000 piece pairs at their kinks;
#: left out below 1.0, five recorded steps took 109 iterations instead of 196. Whole runs, s /
#: MM steps / interior-point iterations (one run each, blocked warm steps recentred in both:
#: :func:`.structured_warm.recentred`): 20,000 rows 79.9 / 119 / 4,518 -> 45.2 / 135 / 3,796;
#: 25,000 80.8 / 125 / 5,540 -> 74.6 / 148 / 4,979; the whole split 88.0 / 87 / 4,256 -> 60.4 /
#: 102 / 2,821. Without the recentred start it lost at 25,000 rows (101 -> 131 s: more blocked
#: warm starts on its longer path, each then started cold). On every warm smooth step it moved
#: small instances' MM paths (200 rows: a repair ending ``iteration_limit``), on every step
#: phase one's elastic steps as well (:data:`BLOCKED_BELOW`)
BLOCKED_BELOW_WARM = 1.0
WARM_BLOCKERS_PIECES = 20_000


def all_pairs(x: Any, d: Any, positive: np.ndarray
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every (value, direction) pair that must stay positive: slacks, multipliers and the
    theta entries ``positive`` (the robust pieces' lam)."""
    return ([(x.s[g], d.s[g]) for g in x.s] + [(x.lam[g], d.lam[g]) for g in x.lam]
            + [(x.theta[positive], d.theta[positive])])


class CorrectorBudget:
    """The adaptive number of centrality correctors of a cold retry
    (:mod:`.structured_retry`), one per run: :data:`CORRECTORS_BLOCKED` while the run is
    blocked (the last corrected direction's step to the boundary below :data:`BLOCKED_STEP`,
    or mu above :data:`SLOW_MU` times the last iteration's), :data:`CORRECTORS_FULL` after a
    step of at least :data:`FULL_STEP`, else :data:`CORRECTORS`.

    On the stalled hinge step of hinge + 80% rule at 200,000 synthetic rows (305,769 pieces,
    20-1,300 piece multipliers at their kinks blocking the dual step at 0.02-0.23 in every
    iteration; gap 3.4e-4 after 100 iterations with 2 correctors) it certified the step in 99
    iterations (gap 9e-9); on the first MM step of TPR@K + 80% rule there, gap 3.75e-2 ->
    8.2e-7 in 100. Used on every step it moved the whole Adult split's error rate + 80% rule
    to another MM path and slowed logistic + 80% rule by 4-10%: hence a retry only.
    """

    def __init__(self) -> None:
        self.step, self.mu = 1.0, np.inf

    def next(self, mu: float) -> int:
        """The correctors of the iteration at weighted complementarity ``mu``."""
        if self.step < BLOCKED_STEP or mu > SLOW_MU * self.mu:
            return CORRECTORS_BLOCKED
        return CORRECTORS_FULL if self.step >= FULL_STEP else CORRECTORS

    def taken(self, step: float, mu: float) -> None:
        """Record the corrected direction's step to the boundary at ``mu``."""
        self.step, self.mu = step, mu


def centrality_correctors(ipm: Any, x: Any, ev: dict, system: dict,
                          r_c: dict[str, np.ndarray], centring: float, refine: bool,
                          mu: float) -> Any:
    """The Newton direction for the complementarity residuals ``r_c`` with Gondzio's
    multiple centrality correctors (up to :data:`CORRECTORS`, or as many as ``ipm.budget``
    gives when it is a :class:`CorrectorBudget`): at a step :data:`CORRECTOR_REACH` longer
    than the direction's, the complementarity products outside [0.1, 10] times their target
    sigma mu omega (``centring`` sigma mu times the pairs' weights ``ipm.weights``; ``mu``
    the iterate's weighted complementarity) are pulled into that box by one more solve with
    the same factorization; a corrected direction is kept while it lengthens the step by 1%.
    A direction and its residuals are dropped as soon as a longer one replaces them (the
    caller holds neither: each is a few vectors over the pieces)."""
    d = ipm.direction(x, ev, system, r_c, refine)
    step = step_to_boundary(*all_pairs(x, d, ipm.positive))
    budget = ipm.budget
    for _ in range(CORRECTORS if budget is None else budget.next(mu)):
        if step >= 1.0:
            break
        trial = min(1.0, CORRECTOR_REACH * step + 0.1)
        pulled = {g: pulled_products(x.s[g], d.s[g], x.lam[g], d.lam[g], trial, centring,
                                     ipm.weights[g], r_c[g]) for g in x.s}
        corrected = ipm.direction(x, ev, system, pulled, refine)
        longer = step_to_boundary(*all_pairs(x, corrected, ipm.positive))
        if longer < 1.01 * step:
            break
        d, step, r_c = corrected, longer, pulled
        del corrected, pulled
    if budget is not None:
        budget.taken(min(1.0, step), mu)
    return d


def halve_at_most(values: np.ndarray, direction: np.ndarray, step: float) -> float:
    """``step``, shortened so that no entry of ``values`` (> 0) loses more than half of itself.

    For the ball's lam of a worst-case rate's support function in a constraint row: the Newton
    model of the row is its linearization, which overestimates a concave c_R, and on a 120-row
    80% rule with a chi-square worst-case rate, from an infeasible start, full steps drove lam
    from 1 towards 0, where the row's (l - eta)^2 / (4 lam) grows without bound (primal
    residual 75 -> 6.8e5 in one step, then ``stalled``). Halving at most: 35 iterations to
    1e-8 there, 36 on a 2,000-row Adult sample with the chi-square worst-case 80% rule (a
    backtracking on the row's residual instead crawled there, 3% per iteration, and stalled).
    """
    shrinking = direction < 0
    if not np.any(shrinking):
        return step
    return min(step, float(np.min(-0.5 * values[shrinking] / direction[shrinking])))


def boundary_steps(x: Any, d: Any, positive: np.ndarray, separate: bool
                   ) -> tuple[float, float]:
    """The steps to the boundary along d: (primal, dual), over the slacks and over the
    multipliers when ``separate``, else the common step over every pair twice."""
    if not separate:
        step = step_to_boundary(*all_pairs(x, d, positive))
        return step, step
    return (step_to_boundary(*[(x.s[g], d.s[g]) for g in x.s]),
            step_to_boundary(*[(x.lam[g], d.lam[g]) for g in x.lam]))


def primal_dual_steps(ipm: Any, x: Any, d: Any, ev: dict, fraction: float, allowed: float
                      ) -> tuple[float, float]:
    """Separate primal and dual step lengths (``fraction`` of the way to the boundary) on a
    step whose rows are linear and whose objective is quadratic (no smooth or robust parts),
    as :mod:`.top_ipm` takes them: a slack that blocks the primal step no longer holds back
    the multipliers, and the other way round.

    The primal residual c(x) - s is then (1 - a_p) times what it was and complementarity
    moves as usual; stationarity l2 w + c_0 - J^T lam, linear in both, becomes
    (1 - a_d) r + (a_p - a_d) l2 dw (the Newton equation l2 dw - J^T dlam = -r). When that
    relative dual residual would exceed ``allowed`` (the iterate's merit), both take the
    common step min(a_p, a_d): on the 5,000-row Adult TPR@K step the separate steps drove
    the dual residual from 1e-11 to 1e-2 once the gap was below 1e-8.
    """
    primal, dual = (min(1.0, fraction * a) for a in boundary_steps(x, d, ipm.positive, True))
    if primal == dual:
        return primal, dual
    r_theta = (1.0 - dual) * ev["r_theta"]
    r_theta[:ipm.p] += (primal - dual) * ipm.sc.l2 * d.theta[:ipm.p]
    after = max(float(np.max(np.abs(r_theta), initial=0.0)),
                (1.0 - dual) * float(np.max(np.abs(ev["r_u"]), initial=0.0)),
                (1.0 - dual) * float(np.max(np.abs(ev["r_tau"]), initial=0.0))
                ) / ev["dual_scale"]
    if after > allowed:
        common = min(primal, dual)
        return common, common
    return primal, dual


def predictor_blockers(objective: np.ndarray, separate: bool, robust: list,
                       weighted: np.ndarray | None) -> tuple[int, float]:
    """(blockers, below) of :func:`predictor_sigma` for a run of the structured interior point:
    none on a step with ``robust`` pieces; :data:`PREDICTOR_BLOCKERS` below
    :data:`BLOCKED_BELOW_SEPARATE` on the plain path (``weighted`` None) of a step with
    ``separate`` primal and dual steps and hinge pieces in its objective row (``objective``:
    their coefficients there); else :data:`PREDICTOR_BLOCKERS` below :data:`BLOCKED_BELOW`."""
    if robust:
        return 0, BLOCKED_BELOW
    longer = separate and weighted is None and bool(np.any(objective > 0))
    return PREDICTOR_BLOCKERS, BLOCKED_BELOW_SEPARATE if longer else BLOCKED_BELOW


def warm_predictor_blockers(blockers: tuple[int, float], pieces: int, smooth: bool
                            ) -> tuple[int, float]:
    """``blockers`` (of :func:`predictor_blockers`) for a warm run: the same pairs left out
    below :data:`BLOCKED_BELOW_WARM` on a step with ``smooth`` parts and at least
    :data:`WARM_BLOCKERS_PIECES` ``pieces`` (none still on a step with robust pieces)."""
    if smooth and pieces >= WARM_BLOCKERS_PIECES:
        return blockers[0], BLOCKED_BELOW_WARM
    return blockers


def predictor_sigma(x: Any, affine: Any, weights: dict[str, np.ndarray], mu: float,
                    steps: tuple[float, float], blockers: int, below: float = BLOCKED_BELOW
                    ) -> tuple[float, float]:
    """Mehrotra's centring sigma = (mu_aff / mu)^3, at least (1 - a)^3 (a blocked predictor
    centres even when its one blocking pair has mu_aff = 0), where the predictor's step a is
    the step to the boundary of every pair but the ``blockers`` that block it first
    (:data:`PREDICTOR_BLOCKERS`, when the true step is below ``below``; at least
    the true step) and mu_aff the
    complementarity there (the products of the pairs past the boundary counted as 0); and that
    step a, which also decides whether the corrector gets the predictor's second-order term
    (:data:`.structured.CORRECT_FROM_STEP`). Gondzio's correctors
    (:func:`centrality_correctors`) then keep those few pairs inside.

    Why past the blockers: near the optimum of a step with smooth parts and hinge rows (the
    elastic steps of logistic loss + churn + 80% rule on the Adult split), 20-100 pieces at
    their kinks (both slacks going to 0, the multipliers' split among them still moving by
    10 times their size) blocked the predictor at 0.02-0.3 in every iteration. With sigma
    from that step (0.5-0.95) the corrected direction took steps of 0.5-0.99 and mu still
    fell 5-20% an iteration: 98 iterations and no certificate on the whole split (gap 1.8e-2),
    where 10 blockers left out give 61 iterations to a gap of 6.9e-10 (with the second-order
    term still cut by the true step: 100 iterations, no certificate). Steps with linear rows
    only (rates, the hinge loss, TPR@K; separate primal and dual steps) show the same blocking:
    the elastic TPR@K step of phase one on 34,189 synthetic rows ended ``numerical_error``
    after 50 iterations (its CLARABEL fallback took 53 s) and is certified in 60 with the
    blockers left out; whole-split chains (hinge + 80% rule, hinge + FPR parity, error rate +
    recall floor with l1, TPR@K + 80% rule) took 8-35% fewer iterations to the same fixed
    points.

    Parameters
    ----------
    x, affine : Iterate
        The iterate and the predictor (affine-scaling) direction.
    weights : dict
        The pairs' weights on the (weighted) central path, by group.
    mu : float
        The iterate's weighted complementarity.
    steps : (float, float)
        The predictor's primal and dual steps to the boundary (equal unless the step takes
        them apart, :func:`boundary_steps`).
    blockers : int
        How many pairs' steps are left out: :data:`PREDICTOR_BLOCKERS` on steps without
        robust parts; 0 (Mehrotra's rule at the true steps) on steps with them, whose robust
        pieces' starts (the second-order term) were tuned with it.
    below : float
        The true step below which they are left out: :data:`BLOCKED_BELOW`,
        :data:`BLOCKED_BELOW_SEPARATE` on the plain path of a step with separate steps, or
        :data:`BLOCKED_BELOW_WARM` on warm runs of large smooth steps
        (:func:`warm_predictor_blockers`).
    """
    blocked = blockers and min(steps) < below
    past = step_past_blockers(blockers, *[p for g in x.s for p in (
        (x.s[g], affine.s[g]), (x.lam[g], affine.lam[g]))]) if blocked else 0.0
    step = max(min(steps), past)
    primal, dual = steps if past <= min(steps) else (past, past)
    if mu <= 0:
        return 0.0, step
    mu_aff = weighted_mu({g: np.maximum(x.s[g] + primal * affine.s[g], 0.0) for g in x.s},
                         {g: np.maximum(x.lam[g] + dual * affine.lam[g], 0.0) for g in x.s},
                         weights)
    return min(1.0, max((mu_aff / mu) ** 3, (1.0 - step) ** 3)), step
