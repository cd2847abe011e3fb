"""Certified lower bounds on the minimax risk by weak duality (thesis, Algorithm 6).

For any distribution p over (instance, label) pairs with |E_p Phi - tau| <= lam (and, for
(2.5), instance marginal 1/n),

    optimum >= 1 - sum_i max_y p(i, y),

the worst-case 0-1 risk of p. The subgradient methods (:mod:`ratecons.solvers.subgradient`)
build such p in two ways: from the step-size-weighted average of the label weights h(x_i) used
in the subgradients (the ergodic dual sequence of the method, :class:`DualBound`), mixed with a
feasible distribution just enough to satisfy the moment constraints exactly; and, on the best
point found, by a small LP that re-weights the label sets nearly active there
(:func:`active_set_bound`). Notation as in :mod:`ratecons.solvers.mrc_phi`.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import scipy.sparse as sp

from ..errors import SolverError
from ..settings import OPTIMAL
from .mrc_phi import MRCInputs, label_scores

__all__ = [
    "POLISH_EPS",
    "POLISH_MAX_ATOMS",
    "POLISH_TIME_LIMIT",
    "POLISH_TIME_SHARE",
    "DualBound",
    "active_set_bound",
    "fixed_marginals_lower_bound",
    "minimax_lower_bound",
]

logger = logging.getLogger(__name__)


def _feasible_mixture(
    joint: np.ndarray, anchor: np.ndarray, psi: np.ndarray, tau: np.ndarray, lam: np.ndarray
) -> tuple[float, np.ndarray | None]:
    """Best worst-case risk over the feasible mixtures (1 - t) joint + t anchor.

    ``joint`` and ``anchor`` are distributions over (instance, label) pairs (arrays (n, K) that
    sum to 1) and ``anchor`` satisfies the moment constraints |E Phi - tau| <= lam. The feasible
    t in [0, 1] form an interval [t_min, 1]; the risk 1 - sum_i max_y p(i, y) is concave in t and
    is evaluated at a few points of that interval, each a certified lower bound on the MRC
    optimum by weak duality.

    Returns (lower bound, the distribution attaining it); (-inf, None) when the anchor is not
    feasible (a user-given tau far from the sample mean).
    """
    a = np.asarray(psi.T @ joint).T.ravel() - tau  # E_joint Phi - tau
    b = np.asarray(psi.T @ anchor).T.ravel() - tau
    if np.any(np.abs(b) > lam + 1e-12 * (1.0 + np.abs(tau))):
        return -math.inf, None
    t = 0.0
    above = a > lam
    below = a < -lam
    if np.any(above):
        t = max(t, float(np.max((a[above] - lam[above]) / (a[above] - b[above]))))
    if np.any(below):
        t = max(t, float(np.max((-lam[below] - a[below]) / (b[below] - a[below]))))
    if t > 0.0:
        t = min(1.0, t * (1.0 + 1e-9) + 1e-15)
    best, best_p = -math.inf, anchor
    for s in (0.0, 0.1, 0.3, 1.0):
        ts = t + (1.0 - t) * s
        mixed = (1.0 - ts) * joint + ts * anchor
        value = _risk(mixed)
        if value > best:
            best, best_p = value, mixed
    return best, best_p


def _risk(joint: np.ndarray) -> float:
    """Worst-case 0-1 risk 1 - sum_i max_y p(i, y) of a distribution over (instance, label)."""
    return 1.0 - float(np.sum(np.max(joint, axis=1)))


#: tolerances (on the prefix means of (2.6)) defining the nearly active label sets of the
#: active-set bound, tried in turn until its LP is feasible
POLISH_EPS = (0.01, 0.03, 0.1, 0.3)
#: largest number of free atoms (LP columns) the active-set bound accepts; beyond it the LP
#: would approach the full problem and the bound is skipped
POLISH_MAX_ATOMS = 20000
#: HiGHS time limit (s) of one active-set LP, and the largest share of a run's time the
#: active-set LPs may take during the iterations (the final one always runs)
POLISH_TIME_LIMIT = 10.0
POLISH_TIME_SHARE = 0.2


class DualBound:
    """Certified lower bounds from the ergodic dual sequence of a subgradient method.

    Accumulates the step-weighted label weights alpha_k h(x_i) used by the subgradients. With
    ``fixed_marginals`` each instance's weights are averaged separately (a conditional p(y|x_i),
    instance marginal 1/n as in (2.4)); otherwise all are pooled into one joint distribution over
    (instance, label). The running sums restart when the iteration count doubles, so the
    average covers the latest half of the run (the early iterates are far from optimal). Each
    candidate is mixed with a feasible distribution (the empirical one, or the best mixture so
    far moved half-way to it) to satisfy |E Phi - tau| <= lam exactly. :meth:`polish` adds the
    active-set bound of :func:`active_set_bound` at a given point.
    """

    def __init__(self, inputs: MRCInputs, fixed_marginals: bool):
        n, n_classes = inputs.n, inputs.n_classes
        self.inputs = inputs
        self.fixed_marginals = fixed_marginals
        self.sums = np.zeros((n, n_classes))
        self.weight = np.zeros(n) if fixed_marginals else np.zeros(1)
        self.empirical = np.zeros((n, n_classes))
        self.empirical[np.arange(n), inputs.y] = 1.0 / n
        # a feasible distribution with a good risk, strictly inside the moment constraints
        # (half-way between a best mixture and the empirical distribution): mixing the next
        # candidates with it costs less risk than mixing with the empirical one
        self.interior = self.empirical
        self.best = -math.inf
        self.best_joint = self.empirical
        self.window_start = 0
        self.polished_at = 0
        self.eps_index = 0
        self.polish_time = 0.0
        self.polished: np.ndarray | None = None  # the point of the last polish

    def candidate(self) -> np.ndarray | None:
        if self.fixed_marginals:
            seen = self.weight > 0
            if not np.any(seen):
                return None
            joint = self.best_joint.copy()
            joint[seen] = self.sums[seen] / (self.weight[seen, None] * self.inputs.n)
            return joint
        if self.weight[0] <= 0:
            return None
        return self.sums / self.weight[0]

    def bound(self, k: int, coef: np.ndarray | None, elapsed: float) -> float:
        """Best certified lower bound so far (after iteration k, best point ``coef``).

        The active-set LP of :func:`active_set_bound` runs on the best point when k has
        doubled since its last run, as long as these LPs have used at most
        ``POLISH_TIME_SHARE`` of the ``elapsed`` run time.
        """
        if coef is not None and k >= 2 * self.polished_at and \
                self.polish_time <= POLISH_TIME_SHARE * elapsed:
            self.polish(coef)
            self.polished_at = k
        joint = self.candidate()
        if joint is not None:
            inp = self.inputs
            for anchor in (self.empirical, self.interior):
                value, mixed = _feasible_mixture(joint, anchor, inp.psi, inp.tau, inp.lam)
                if value > self.best:
                    self.best, self.best_joint = value, mixed
            inner = 0.5 * (self.best_joint + self.empirical)
            if _risk(inner) > _risk(self.interior):
                self.interior = inner
        if k >= 2 * self.window_start:
            self.sums[:] = 0.0
            self.weight[:] = 0.0
            self.window_start = k
        return self.best

    def polish(self, coef: np.ndarray) -> float:
        """Active-set bound at ``coef``: the first tolerance of POLISH_EPS (from just below the
        last one that worked) whose LP is feasible; the bound so far when ``coef`` is the point
        of the last polish (a run's last checkpoint and its finish offer the same best point:
        under a spent time budget the LPs took 0.2 s each time)."""
        if self.polished is not None and np.array_equal(coef, self.polished):
            return self.best
        self.polished = np.array(coef, copy=True)
        start = time.perf_counter()
        first = max(0, self.eps_index - 1)  # start just below the tolerance that last worked
        for index in range(first, len(POLISH_EPS)):
            value = active_set_bound(self.inputs, coef, self.fixed_marginals, POLISH_EPS[index])
            if math.isfinite(value):
                self.best = max(self.best, value)
                self.eps_index = index
                break
        self.polish_time += time.perf_counter() - start
        return self.best


def active_set_bound(inputs: MRCInputs, coef: np.ndarray, fixed_marginals: bool,
                      eps: float) -> float:
    """Certified lower bound from the label sets (nearly) active at a near-optimal coef.

    At an optimum mu*, an optimal worst-case distribution puts on each instance a mixture of
    its maximizing label sets in (2.6), which are top-k prefixes of the sorted scores (for (2.2)
    only on the instances that attain max_i phi). With atoms a = (instance i, prefix size k)
    whose prefix mean is within ``eps`` of the maximum, the distributions
    p = sum_a beta_a 1_{top-k(i)} / k (beta >= 0; mass 1/n per instance for (2.5), 1 in all for
    (2.2)) have max_y p(i, y) = sum_{a in i} beta_a / k_a, so the best certified bound over them
    is a small LP in beta:

        max 1 - sum_a beta_a / k_a  s.t.  |sum_a beta_a (1_{top-k} / k kron psi_i) - tau| <= lam.

    Instances with a single atom (for (2.5)) are fixed and enter as constants. Any feasible beta
    gives a valid bound whatever ``eps`` is; returns -inf when the LP is infeasible.
    """
    from ..backends.highs import solve_lp
    from ..canonical.matrix_lp import MatrixLP

    psi, n, p, n_classes = inputs.psi, inputs.n, inputs.p, inputs.n_classes
    scores = label_scores(coef, psi)
    order = np.argsort(-scores, axis=1, kind="stable")
    sizes = np.arange(1, n_classes + 1)
    prefix = (np.cumsum(np.take_along_axis(scores, order, axis=1), axis=1) - 1.0) / sizes
    best = prefix.max(axis=1)
    if fixed_marginals:
        near = prefix >= best[:, None] - eps
    else:
        near = prefix >= best.max() - eps
    atom_i, atom_k = np.nonzero(near)
    atom_k = atom_k + 1
    if fixed_marginals:
        counts = np.bincount(atom_i, minlength=n)
        fixed = counts[atom_i] == 1
    else:
        fixed = np.zeros(atom_i.size, dtype=bool)

    def moment_matrix(ai, ak):
        rows, cols, vals = [], [], []
        for j in range(n_classes):  # label positions in the sorted order (not examples)
            sel = np.nonzero(ak > j)[0]
            labels = order[ai[sel], j]
            rows.append((labels[:, None] * p + np.arange(p)[None, :]).ravel())
            cols.append(np.repeat(sel, p))
            vals.append((psi[ai[sel]] / ak[sel, None]).ravel())
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(n_classes * p, ai.size))

    mass = 1.0 / n if fixed_marginals else 1.0
    const_risk, offset = 0.0, np.zeros(n_classes * p)
    if np.any(fixed):
        fi, fk = atom_i[fixed], atom_k[fixed]
        const_risk = mass * float(np.sum(1.0 / fk))
        offset = mass * np.asarray(moment_matrix(fi, fk).sum(axis=1)).ravel()
    vi, vk = atom_i[~fixed], atom_k[~fixed]
    if vi.size > POLISH_MAX_ATOMS:
        return -math.inf
    if vi.size == 0:
        viol = np.abs(offset - inputs.tau) - inputs.lam
        return 1.0 - const_risk if np.all(viol <= 1e-12) else -math.inf
    if fixed_marginals:
        groups, group_of = np.unique(vi, return_inverse=True)
        mass_rows = sp.csr_matrix((np.ones(vi.size), (group_of, np.arange(vi.size))),
                                  shape=(groups.size, vi.size))
    else:
        mass_rows = sp.csr_matrix(np.ones((1, vi.size)))
    A = sp.vstack([moment_matrix(vi, vk), mass_rows]).tocsr()
    m = mass_rows.shape[0]
    lp = MatrixLP(
        c=1.0 / vk,
        A=A,
        row_lower=np.concatenate([inputs.tau - inputs.lam - offset, np.full(m, mass)]),
        row_upper=np.concatenate([inputs.tau + inputs.lam - offset, np.full(m, mass)]),
        col_lower=np.zeros(vi.size),
        col_upper=np.full(vi.size, np.inf),
        name="mrc_subgradient_dual_polish",
    )
    try:
        result = solve_lp(lp, solver="choose", time_limit=POLISH_TIME_LIMIT)
    except SolverError:  # HiGHS gave up on this LP: no bound from it, the run goes on
        logger.debug("active-set bound LP failed (eps=%g)", eps)
        return -math.inf
    if result.status != OPTIMAL:
        return -math.inf
    beta = np.maximum(result.x, 0.0)
    # re-check feasibility of the (clipped) solution before certifying anything
    moments = offset + moment_matrix(vi, vk) @ beta
    masses = mass_rows @ beta
    slack = 1e-9 * (1.0 + np.abs(inputs.tau))
    if np.any(np.abs(moments - inputs.tau) > inputs.lam + slack) or \
            np.any(np.abs(masses - mass) > 1e-9 * mass):
        return -math.inf
    return 1.0 - const_risk - float(np.sum(beta / vk))


def fixed_marginals_lower_bound(
    conditional: np.ndarray, psi: np.ndarray, y: np.ndarray, tau: np.ndarray, lam: np.ndarray
) -> float:
    """Certified lower bound on (2.5) from conditional label distributions p(y | x_i).

    Parameters
    ----------
    conditional : ndarray of shape (n, n_classes)
        Non-negative rows summing to 1 (e.g. averaged subgradient label weights h(x_i)).

    Returns
    -------
    float
        ``1 - (1/n) sum_i max_y p(y|x_i)`` for the mixture of ``conditional`` with the empirical
        labels that satisfies |E Phi - tau| <= lam; ``-inf`` when even the empirical labels do
        not (a user-given tau far from the sample mean).
    """
    n = psi.shape[0]
    anchor = np.zeros_like(conditional)
    anchor[np.arange(n), y] = 1.0 / n
    return _feasible_mixture(conditional / n, anchor, psi, tau, lam)[0]


def minimax_lower_bound(
    joint: np.ndarray, psi: np.ndarray, y: np.ndarray, tau: np.ndarray, lam: np.ndarray
) -> float:
    """Certified lower bound on (2.2) from a distribution over (instance, label) pairs.

    ``joint`` (n, n_classes) is non-negative and sums to 1 (any instance marginal).
    """
    n = psi.shape[0]
    anchor = np.zeros_like(joint)
    anchor[np.arange(n), y] = 1.0 / n
    return _feasible_mixture(joint, anchor, psi, tau, lam)[0]
