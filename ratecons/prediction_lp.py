"""Whether any predictions at all meet a problem's rate rows: the proof behind ``infeasible``.

Phase one (:mod:`ratecons.phase_one`) searches for a model whose ramp rows (Problem 2 of the
dataset-constraints paper) meet their bounds; when the search stalls, its failure proves
nothing: a better start may find a model. A proof comes from the rows alone. Every rate of a
linear rate row is a weighted average of predictions over a subset, s_p(D) = sum_{x in D}
w_x p_x / sum_{x in D} w_x, with p_x = 1[<w, x> - b > 0] in Problem 1 and the randomized
prediction p_x = sigma(<w, x> - b) of eq. (2)-(3) in Problem 2 (s_n = 1 - s_p). Let every p_x
take any value in [0, 1], whatever the model: the rows become linear in p, and if no p in the
box meets them, no model (linear, kernel, randomized) does.

Examples that lie in the same subsets act alike, so the LP has one column per cell of the
subsets' overlap (v_c = sum_{x in c} w_x p_x in [0, W_c]), not one per example:

    minimize t  subject to  G v - rhs <= t 1,  0 <= v <= W,

with ``G`` the rows' coefficients of the cells and ``rhs`` their bounds less their constants.
Its optimum t* > 0 is the least violation of the rows' largest any predictions reach. The
certificate is a vector y >= 0 over the rows with sum 1 (HiGHS's row duals) for which

    min_{0 <= v <= W} y^T (G v - rhs) = sum_c W_c min(0, (G^T y)_c) - y^T rhs > 0,

checked here in NumPy (Farkas's lemma for the box): every choice of predictions violates the
y-weighted rows, hence some row, by at least that much. Only rows whose every part is a linear
rate expression take part (a subset of the constraints that no prediction meets already
proves the whole problem infeasible); losses, TPR@K and worst-case rates are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .backends.highs import solve_lp
from .canonical.matrix_lp import MatrixLP
from .dask_types import is_dask
from .expr.analysis import Analysis
from .settings import FEASIBILITY_TOL, OPTIMAL

__all__ = ["Unreachable", "free_predictions_meet", "unreachable_rows"]


@dataclass(frozen=True)
class Unreachable:
    """A proof that no predictions meet some rate rows.

    Attributes
    ----------
    violation : float
        The certified least violation: every choice of predictions in [0, 1] violates one of
        the rows by at least this much (in the rows' own units: rates, or counts for rows in
        counts, which the multipliers mix).
    multipliers : dict of str to float
        y, by row name: the rows whose weighted sum no prediction meets (nonzero entries only).
    """

    violation: float
    multipliers: dict[str, float]

    def message(self) -> str:
        rows = " and ".join(f"'{name}'" for name in self.multipliers)
        return (f"no classifier meets {rows} together: even predictions chosen freely for each "
                "example (randomized ones included) miss one of them by at least "
                f"{self.violation:.4g} (a Farkas certificate over the rates, "
                "details['unreachable']). Relax a target; problem.describe() lists them.")


class _LeastViolation(NamedTuple):
    """The LP over the cells (module docstring) at its optimum: t*, the row multipliers y
    (normalized to sum 1), the rows' names, G, W and rhs."""

    t: float
    y: np.ndarray
    names: list[str]
    G: np.ndarray
    W: np.ndarray
    rhs: np.ndarray


def unreachable_rows(analysis: Analysis) -> Unreachable | None:
    """The proof that no predictions meet the problem's linear rate rows (module docstring),
    or None when some do (or no row is a linear rate row)."""
    lp = _least_violation(analysis)
    if lp is None or lp.t <= FEASIBILITY_TOL:
        return None
    violation = float(lp.W @ np.minimum(lp.G.T @ lp.y, 0.0) - lp.y @ lp.rhs)
    if violation <= FEASIBILITY_TOL:
        return None
    return Unreachable(violation, {n: float(v) for n, v in zip(lp.names, lp.y) if v > 0})


def free_predictions_meet(analysis: Analysis) -> bool:
    """Whether some predictions in [0, 1] meet every linear rate row (False when there is no
    such row, or the LP was not solved)."""
    lp = _least_violation(analysis)
    return lp is not None and lp.t <= FEASIBILITY_TOL


def _least_violation(analysis: Analysis) -> _LeastViolation | None:
    """The LP over the cells at its optimum; None without linear rate rows or an optimal
    LP."""
    names, coefficients, rhs = [], [], []
    for row, (terms, constant, bound) in zip(analysis.constraints, analysis.rate_rows()[1:]):
        if not terms or not all(part.mergeable for _, part in row.parts):
            continue
        names.append(row.name)
        coefficients.append(terms)
        rhs.append(bound - row.constant - constant)
    if not names:
        return None
    G, W = _cell_columns(coefficients)
    m, cells = G.shape
    lp = MatrixLP(c=np.r_[np.zeros(cells), 1.0],
                  A=sp.hstack([sp.csr_matrix(G), -np.ones((m, 1))]),
                  row_lower=np.full(m, -np.inf), row_upper=np.asarray(rhs),
                  col_lower=np.r_[np.zeros(cells), -np.inf], col_upper=np.r_[W, np.inf])
    answer = solve_lp(lp, budgeted=False)
    y = np.maximum(-answer.row_dual, 0.0)
    if answer.status != OPTIMAL or not y.sum() > 0:
        return None
    return _LeastViolation(answer.objective, y / y.sum(), names, G, W, np.asarray(rhs))


def _cell_columns(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(G, W): each cell's coefficients in the rows (rows x cells) and its total weight. A
    cell is a set of examples of one dataset in the same subsets of the rows' rates; datasets
    of the same rows (equal features and weights: ``D`` and ``D.with_baseline(...)``) are one,
    since a model predicts the same on the same features."""
    subsets: dict = {}
    for terms in rows:
        for key, (subset, _) in terms.items():
            subsets.setdefault(key, subset)
    same: list = []  # one dataset of each set of the same rows
    by_rows: dict[int, list] = {}
    for key, subset in subsets.items():
        data = next((d for d in same if _same_rows(d, subset.data)), None)
        if data is None:
            same.append(data := subset.data)
        by_rows.setdefault(id(data), []).append(key)
    columns, totals = [], []
    for keys in by_rows.values():
        data = subsets[keys[0]].data
        weights = np.ones(data.n) if data.weights is None else np.asarray(data.weights, float)
        cells, cell_of = _cells([subsets[key].index for key in keys], data.n)
        W = np.bincount(cell_of, weights=weights, minlength=len(cells))
        # per unit of cell weight, row r gains sum over the cell's subsets of coef / |subset|
        per_weight = np.array([[terms[key][1] / subsets[key].size if key in terms else 0.0
                                for key in keys] for terms in rows])
        inside = cells.any(axis=1) & (W > 0)
        columns.append((per_weight @ cells.T.astype(float))[:, inside])
        totals.append(W[inside])
    return np.hstack(columns), np.concatenate(totals)


def _cells(indices: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(cells x subsets membership, each example's cell) of ``n`` examples in the subsets
    of rows ``indices``: the examples' membership bits packed in integers (62 subsets a word),
    whose distinct values are the cells (np.unique over a bool matrix took 0.8 s on 400,000
    rows and 11 subsets)."""
    codes = np.zeros((n, (len(indices) + 61) // 62), dtype=np.int64)
    for j, index in enumerate(indices):
        codes[index, j // 62] |= np.int64(1) << (j % 62)
    if codes.shape[1] == 1:  # one word: a plain unique, faster than over rows
        distinct, cell_of = np.unique(codes[:, 0], return_inverse=True)
    else:
        distinct, cell_of = np.unique(codes, axis=0, return_inverse=True)
    distinct = distinct.reshape(len(distinct), -1)
    j = np.arange(len(indices))
    member = (distinct[:, j // 62] >> (j % 62)) & 1
    return member.astype(bool), cell_of.ravel()


def _same_rows(a: Any, b: Any) -> bool:
    """Whether two datasets hold the same examples in the same order: equal features (in
    memory) and equal weights."""
    if a is b:
        return True
    if a.n != b.n or (a.weights is None) != (b.weights is None) or (
            a.weights is not None and not np.array_equal(a.weights, b.weights)):
        return False
    X, Z = a.X, b.X
    if X is Z:
        return True
    if is_dask(X) or is_dask(Z) or X.shape != Z.shape or sp.issparse(X) != sp.issparse(Z):
        return False
    return (X != Z).nnz == 0 if sp.issparse(X) else bool(np.array_equal(X, Z))
