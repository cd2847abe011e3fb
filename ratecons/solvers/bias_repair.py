"""Exact threshold search: the bias that makes a deterministic linear model meet Problem 1.

Algorithm 1 (Goh et al. 2016) meets the constraints of the *ramp* problem (Problem 2, eq. 3).
The deployed model predicts 1(<w, x> - b > 0) and must meet the *indicator* constraints of
Problem 1 (eq. 1), which the ramp solution can miss by a little (the ramp rate of an example
with |z| < 1/2 is fractional). For a fixed direction w every indicator rate is a step function
of b that changes only where b crosses a score <w, x>; with the distinct scores
c_1 < ... < c_U of all datasets D_i, the candidate biases

    b_0 = c_1 - 1,   b_r = (c_r + c_{r+1}) / 2   (r = 1..U-1),   b_U = c_U + 1

cover every distinct prediction vector. At b_r the examples with score rank >= r (0-based) are
positive, so

    s_p(D_i)(b_r) = sum_{x in D_i, rank(x) >= r} weight_x

is a reversed cumulative sum of the per-rank weights of D_i, and every row of Problem 1 at
every candidate is (alpha @ S_p + beta @ (1 - S_p)) with S_p the k x (U + 1) matrix of these
rates: one sort and O(k U + m k U) arithmetic. Among the candidates whose constraint rows all
meet their bounds, :func:`repair_bias` takes the one nearest the given bias (the solver's, a
local optimum of the ramp objective) that also keeps the ramp rows of Problem 2 within their
bounds (so the randomized rule stays feasible too), checking the ``RAMP_SCAN`` nearest, else
the nearest one, and checks it by evaluating the rows at that bias directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..canonical.rate_program import RateProgram

__all__ = ["BiasRepair", "candidate_rows", "repair_bias"]

#: rows are sums of at most ~1e6 weights: a bound counts as met up to this rounding
ROW_TOL = 1e-12
#: feasible biases (nearest first) checked for also meeting the ramp rows (one pass each)
RAMP_SCAN = 32


@dataclass
class BiasRepair:
    """Outcome of :func:`repair_bias`.

    Attributes
    ----------
    b : float
        The chosen bias; when ``feasible`` is False, the one with the smallest total violation
        sum_j max(0, row_j - gamma_j) (the given bias unless another does better).
    feasible : bool
        Whether every indicator constraint row meets its bound at ``b``.
    rows : ndarray, shape (m+1,)
        Indicator row values at ``b`` (canonical form).
    candidates : int
        Number of candidate biases examined.
    feasible_candidates : int
        How many of them meet every constraint.
    """

    b: float
    feasible: bool
    rows: np.ndarray
    candidates: int
    feasible_candidates: int


def candidate_rows(program: RateProgram, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate biases b_0..b_U and the indicator rows at each (module docstring).

    Returns
    -------
    biases : ndarray, shape (U + 1,)
    rows : ndarray, shape (m + 1, U + 1)
    """
    scores = [np.asarray(X @ w).ravel() for X in program.sources]
    block_scores = [scores[blk.source][blk.index] for blk in program.blocks]
    values, ranks = np.unique(np.concatenate(block_scores), return_inverse=True)
    u = values.size
    biases = np.empty(u + 1)
    biases[0] = values[0] - 1.0
    biases[1:u] = 0.5 * (values[:-1] + values[1:])
    biases[u] = values[-1] + 1.0
    rates = np.zeros((program.k, u + 1))
    start = 0
    for i, blk in enumerate(program.blocks):
        r = ranks[start:start + blk.n]
        start += blk.n
        per_rank = np.bincount(r, weights=blk.weights, minlength=u)
        # s_p at b_r = weight of ranks >= r: reversed cumulative sum (s_p at b_U = 0)
        rates[i, :u] = np.cumsum(per_rank[::-1])[::-1]
    rows = program.alpha @ rates + program.beta @ (1.0 - rates)
    return biases, rows


def repair_bias(program: RateProgram, w: np.ndarray, b: float) -> BiasRepair:
    """The bias nearest ``b`` meeting every indicator constraint (and the ramp ones if it can).

    Parameters
    ----------
    program : RateProgram
    w : ndarray, shape (d,)
        The model's weights (kept).
    b : float
        Its current bias (kept when it already meets the constraints, and the tie-breaker).

    Returns
    -------
    BiasRepair
        ``feasible`` False when no bias meets every constraint with this w (``b`` is then the
        least violating one), or the model has no intercept (``b`` unchanged).
    """
    rows_now = program.row_values(w, b, "indicator")
    if np.all(rows_now[1:] <= program.gamma + ROW_TOL):
        return BiasRepair(float(b), True, rows_now, 0, 0)
    if not program.fit_intercept:
        return BiasRepair(float(b), False, rows_now, 0, 0)
    biases, rows = candidate_rows(program, w)
    ok = np.all(rows[1:] <= program.gamma[:, None] + ROW_TOL, axis=0)
    n_ok = int(ok.sum())
    if n_ok:
        idx = np.flatnonzero(ok)
        idx = idx[np.argsort(np.abs(biases[idx] - b), kind="stable")]
        pick = float(biases[idx[0]])
        for c in idx[:RAMP_SCAN]:  # nearest first: one that keeps the ramp rows met too
            if np.all(program.row_values(w, float(biases[c]), "ramp")[1:]
                      <= program.gamma + ROW_TOL):
                pick = float(biases[c])
                break
        rows_pick = program.row_values(w, pick, "indicator")
        if np.all(rows_pick[1:] <= program.gamma + ROW_TOL):
            return BiasRepair(pick, True, rows_pick, biases.size, n_ok)
    # none feasible: the bias with the smallest total violation (nearest to b on ties)
    excess = np.maximum(rows[1:] - program.gamma[:, None], 0.0).sum(axis=0)
    near = np.flatnonzero(excess <= excess.min() + ROW_TOL)
    pick = float(biases[near[np.argmin(np.abs(biases[near] - b))]])
    rows_pick = program.row_values(w, pick, "indicator")
    if np.maximum(rows_pick[1:] - program.gamma, 0.0).sum() < np.maximum(
            rows_now[1:] - program.gamma, 0.0).sum():
        return BiasRepair(pick, False, rows_pick, biases.size, 0)
    return BiasRepair(float(b), False, rows_now, biases.size, n_ok)
