"""Step lengths and Gondzio's centrality correctors of the structured interior point
(:mod:`.structured`): which values must stay positive along a direction, how a direction
is corrected so that the step along it gets longer (Gondzio 1996, multiple centrality
correctors, as :mod:`.top_ipm` does for its problem), how far the ball's lam of a
constraint row's support function may move in one step (:func:`halve_at_most`), and the
separate primal and dual step lengths of a step without smooth or robust parts
(:func:`primal_dual_steps`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .interior import step_to_boundary

__all__ = ["CORRECTORS", "CORRECTOR_REACH", "all_pairs", "centrality_correctors",
           "halve_at_most", "boundary_steps", "primal_dual_steps"]

#: Gondzio's centrality correctors per iteration (:func:`centrality_correctors`) and how
#: much longer than the direction's step they aim
CORRECTORS = 2
CORRECTOR_REACH = 1.5


def all_pairs(x: Any, d: Any, positive: np.ndarray
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every (value, direction) pair that must stay positive: slacks, multipliers and the
    theta entries ``positive`` (the robust pieces' lam)."""
    return ([(x.s[g], d.s[g]) for g in x.s] + [(x.lam[g], d.lam[g]) for g in x.lam]
            + [(x.theta[positive], d.theta[positive])])


def centrality_correctors(ipm: Any, x: Any, ev: dict, system: dict, d: Any,
                          r_c: dict[str, np.ndarray], target: dict[str, np.ndarray],
                          refine: bool) -> Any:
    """Gondzio's multiple centrality correctors (up to :data:`CORRECTORS`): at a step
    :data:`CORRECTOR_REACH` longer than the direction's, the complementarity products outside
    [0.1, 10] times their target sigma mu omega (``target``, per group) are pulled into that
    box by one more solve with the same factorization; a corrected direction is kept while it
    lengthens the step by 1%."""
    step = step_to_boundary(*all_pairs(x, d, ipm.positive))
    for _ in range(CORRECTORS):
        if step >= 1.0:
            break
        trial = min(1.0, CORRECTOR_REACH * step + 0.1)
        pulled = {}
        for g in x.s:
            low, high = 0.1 * target[g], 10.0 * target[g]
            v = (x.s[g] + trial * d.s[g]) * (x.lam[g] + trial * d.lam[g])
            pulled[g] = r_c[g] - np.maximum(np.clip(v, low, high) - v, -high)
        corrected = ipm.direction(x, ev, system, pulled, refine)
        longer = step_to_boundary(*all_pairs(x, corrected, ipm.positive))
        if longer < 1.01 * step:
            break
        d, step, r_c = corrected, longer, pulled
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
