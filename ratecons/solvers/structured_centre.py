"""The weighted central path of the structured interior point (:mod:`.structured`).

A hinge piece k of the step enters through its epigraph variable u_k >= max(0, a z + c) with
the two inequalities (A) and (B). A piece that enters the objective row has multipliers with
lam_A + lam_B = C[0, k] + ... > 0 at every optimum; a piece that enters only constraint rows
(a rate's bound of eq. 4 of Goh et al. in the 80% rule, a worst-case rate's losses) has
lam_A + lam_B = sum_j C[j, k] lam_R,j, which is 0 when its rows are inactive. There u_k is
free on the optimal face {u >= max(0, piece), C_j u <= bound_j}, and the central path
s lam = mu (one log barrier per pair) goes to that face's analytic centre, where the n_j
pieces of row j share its slack: each piece keeps about slack_j / n_j. So the optimal
partition (which of s, lam goes to 0) only shows once mu is far below (slack_j / n_j)^2: on
the 200,000-row hinge + 80% rule step (n_j = 108,952) the predictor was blocked at 0.02-0.05
from a relative gap of 1e-2 on, and the step stalled at 1.2e-3 with residuals of 1e-12. On
the central path, too, the row's n_j barriers push u_k up by about mu / lam_k each: the row's
own barrier is outweighed n_j to 1, and the row looks active (lam_R of order one) until mu is
below slack_j / n_j.

The weighted central path s_i lam_i = omega_i mu (a target-following path; Jansen, Roos,
Terlaky and Vial 1996) with omega_k = 1 / n_j on those pieces gives the row's pieces one
barrier's weight together: the row's slack stays of order one on the path, its multiplier
goes to 0 with mu, and the same step was ``optimal`` at 1e-8 in 34 iterations from the warm
start. The duality gap is still sum_i s_i lam_i (the certificate does not change); the weights
only move the path the iterates follow.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PIECE_WEIGHT", "INACTIVE_DUAL", "WEIGHTED_START_FROM", "expected_inactive",
           "piece_weights", "group_weights", "weighted_mu", "weighted_start"]

#: the weight of all pieces of one constraint row together: omega_k = PIECE_WEIGHT / n_j on a
#: piece that enters only constraint rows (n_j such pieces in its row); on the 200,000-row
#: hinge + 80% rule step, 0.1, 1 and 10 took 34, 34 and 36 iterations from the warm start
PIECE_WEIGHT = 1.0
#: a warm start's row multiplier (in the solver's scaled rows) at most this marks the row as
#: inactive: the steps of an MM run after the first inactive one start on the weighted path
INACTIVE_DUAL = 1e-6
#: ... when every row is inactive and a row has at least this many pieces of its own: cold on
#: the weighted path against warm on the plain one, the last two MM steps took 10 and 13
#: against 7 and 10 iterations on 2,000 Adult rows (hinge + FPR parity, 1,100 pieces in the
#: row), 17 and 19 against 12 and 15 on the whole split (12,700 pieces), 12 against 30-53 on
#: a 6,000-row synthetic step (2,400 pieces) and 16-22 against a stall (then 68) on the
#: 200,000-row hinge + 80% rule (109,000 pieces); a step with smooth or robust parts starts
#: warm on the plain path instead, and cold here only when that fails (there the plain warm
#: start was the faster: :func:`ratecons.solvers.structured._attempts`)
WEIGHTED_START_FROM = 50_000


def weighted_start(C: np.ndarray, robust: list, rows: np.ndarray | None) -> bool:
    """Whether a step whose warm start says ``rows`` are inactive starts cold on the
    weighted path (:data:`WEIGHTED_START_FROM`)."""
    if rows is None or not rows.all():
        return False
    omega = piece_weights(C, robust, C.shape[1], rows)
    return bool(omega.size) and float(omega.min()) <= PIECE_WEIGHT / WEIGHTED_START_FROM


def expected_inactive(duals: np.ndarray | None, kappa: np.ndarray) -> np.ndarray | None:
    """The constraint rows whose warm-start multiplier ``duals`` (in the form's units, the
    user's rows first) is at most :data:`INACTIVE_DUAL` in the solver's scaled rows (row j
    scaled by ``kappa[j]``: lam_j kappa[0] / kappa[j]), or None (no warm start, or no such
    row)."""
    m = kappa.size - 1
    if duals is None or m == 0 or duals.size == 0:
        return None
    scaled = np.full(m, np.inf)
    scaled[:duals.size] = duals * kappa[0] / kappa[1:1 + duals.size]
    rows = scaled <= INACTIVE_DUAL
    return rows if np.any(rows) else None


def piece_weights(C: np.ndarray, robust: list, K: int, rows: np.ndarray) -> np.ndarray:
    """omega (K,): PIECE_WEIGHT / n_j on a piece that enters only constraint rows, one of
    them a row j of ``rows`` (n_j such pieces in row j; the smallest over those rows), and 1
    on every other piece (one that enters the objective row, linearly, ``C[0] > 0``, or
    through a robust loss's support function).

    Parameters
    ----------
    C : ndarray, shape (m + 1, K)
        The hinge pieces' coefficients in the rows (row 0: the objective).
    robust : list of RobustPieces
        The support functions of the form; their hinge-loss pieces count in their row.
    K : int
        The number of hinge pieces.
    rows : ndarray of bool, shape (m,)
        The constraint rows whose pieces are weighted (rows expected inactive).
    """
    omega = np.ones(K)
    if K == 0 or C.shape[0] < 2:
        return omega
    inside = C[1:] > 0  # (m, K)
    in_objective = C[0] > 0
    extra = np.zeros_like(inside)
    for piece in robust:
        if not piece.on_pieces:
            continue
        if piece.row == 0:
            in_objective[piece.index] = True
        else:
            extra[piece.row - 1, piece.index] = True
    only = (inside | extra) & ~in_objective[None, :]
    counts = only.sum(axis=1)
    for j in np.flatnonzero(counts * rows):
        omega[only[j]] = np.minimum(omega[only[j]], PIECE_WEIGHT / counts[j])
    return omega


def group_weights(omega: np.ndarray, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """The weight of every pair by group: omega on the pieces' (A) and (B), 1 elsewhere."""
    return {g: omega if g in ("A", "B") else np.ones(n) for g, n in sizes.items()}


def weighted_mu(s: dict[str, np.ndarray], lam: dict[str, np.ndarray],
                weights: dict[str, np.ndarray]) -> float:
    """mu = sum_i s_i lam_i / sum_i omega_i (the weighted path's parameter)."""
    total = sum(float(np.sum(weights[g])) for g in s)
    return sum(float(s[g] @ lam[g]) for g in s) / max(total, 1e-300)
