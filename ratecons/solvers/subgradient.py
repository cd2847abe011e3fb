"""Subgradient methods for 0-1 minimax risk classifiers (Beristain Cortés, thesis, ch. 2-3).

Notation (thesis, ch. 2): ``psi`` is the ``(n, p)`` matrix of psi(x_i) (intercept column
included), Phi(x, y) = e_y kron psi(x), so that with ``M = mu.reshape(n_classes, p)`` the score of
label y at x is Phi(x, y)^T mu = M[y] @ psi(x). The problems solved here are

* (2.5), MRC with fixed marginals::

      min_mu  1 - tau^T mu + lam^T |mu| + (1/n) sum_i phi(mu, x_i)

* (2.2), MRC without fixed marginals (phi's maximum also over the training instances)::

      min_mu  1 - tau^T mu + lam^T |mu| + max_i phi(mu, x_i)

with phi(mu, x) = max over non-empty label sets C of (sum_{y in C} Phi(x, y)^T mu - 1) / |C|
(2.6). Sorting the scores of x in decreasing order, the best set of each size s is the top-s
labels (section 3.5.2), so phi is the maximum of the ``n_classes`` prefix means
(s_(1) + ... + s_(k) - 1) / k, and a subgradient of phi(mu, x) is h(x) kron psi(x) with
h(x) uniform (1/k*) on the top-k* labels of the maximizing prefix (rule (iii), section 3.2.2).
No label subset is ever enumerated.

Methods: the classic subgradient method (section 3.3) and the stochastic one (section 3.4) for
(2.5); the constrained subgradient method (section 3.3.5) on the reformulation (3.14)-(3.16) of
(2.2). Step rules (section 3.3.3): ``"constant"`` alpha_k = a, ``"constant_length"``
alpha_k = gamma / ||g_k||, ``"a/(b+k)"`` (square summable, not summable) and ``"a/sqrt(k)"``
(nonsummable diminishing). Iterates (section 3.3.1): best point or running average.

Certificates. Every returned ``mu`` is evaluated exactly, so ``objective`` is a true upper bound
on the optimum. Lower bounds come from weak duality: for any distribution p over (instance,
label) pairs with |E_p Phi - tau| <= lam (and, for (2.5), instance marginal 1/n),

    optimum >= 1 - sum_i max_y p(i, y),

the worst-case 0-1 risk of p. The solvers build such p in two ways: from the step-size-weighted
average of the label weights h(x_i) used in the subgradients (the ergodic dual sequence of the
method), mixed with a feasible distribution just enough to satisfy the moment constraints
exactly; and, on the best point found, by a small LP that re-weights the label sets nearly
active there (:func:`_active_set_bound`). This is Algorithm 6 of the thesis ("stopping
criterion based on the duality gap"). Status is ``"optimal"`` only when the certified gap is
<= ``tol``.

The hot loops (sorting the scores of every instance; the stochastic steps) are numba kernels;
the classic and constrained methods are vectorized over examples with NumPy.
"""

from __future__ import annotations

import logging
import math
import numbers
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from .. import limits
from ..caller import user_stacklevel
from ..errors import ConvergenceWarning, DataError, SolverError, parameter_error
from ..settings import ITERATION_LIMIT, OPTIMAL, TIME_LIMIT
from ..solution import Certificate, Solution

__all__ = [
    "STEP_RULES",
    "DEFAULT_STEP_PARAMS",
    "sorted_prefix_max",
    "phi",
    "phi_subgradient",
    "fixed_marginals_objective",
    "minimax_objective",
    "fixed_marginals_lower_bound",
    "minimax_lower_bound",
    "fixed_marginals_subgradient",
    "constrained_subgradient",
]

logger = logging.getLogger(__name__)

#: the step-size rules of section 3.3.3, with the names of their parameters
STEP_RULES: dict[str, tuple[str, ...]] = {
    "constant": ("a",),
    "constant_length": ("gamma",),
    "a/(b+k)": ("a", "b"),
    "a/sqrt(k)": ("a",),
}
_STEP_CODES = {"constant": 0, "constant_length": 1, "a/(b+k)": 2, "a/sqrt(k)": 3}

#: default step parameters per (solver, rule); the defaults of each solver reach the LP optimum
#: within 1e-2 on haberman, glass, iris and random data (tests/test_mrc_subgradient.py)
DEFAULT_STEP_PARAMS: dict[str, dict[str, dict[str, float]]] = {
    "classic": {
        "constant": {"a": 0.05},
        "constant_length": {"gamma": 0.01},
        "a/(b+k)": {"a": 100.0, "b": 1000.0},
        "a/sqrt(k)": {"a": 2.0},
    },
    "stochastic": {
        "constant": {"a": 0.01},
        "constant_length": {"gamma": 0.01},
        "a/(b+k)": {"a": 300.0, "b": 10000.0},
        "a/sqrt(k)": {"a": 0.5},
    },
    "constrained": {
        "constant": {"a": 0.003},
        "constant_length": {"gamma": 0.003},
        "a/(b+k)": {"a": 20.0, "b": 1000.0},
        "a/sqrt(k)": {"a": 0.2},
    },
}


# ------------------------------------------------------------------------------------------------
# phi(mu, x) and its subgradient: the sorted prefix maximum (section 3.5.2)
# ------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _prefix_max_row(scores: np.ndarray, weights: np.ndarray, order: np.ndarray) -> float:
    """phi for one instance from its label scores; writes the maximizing h into ``weights``.

    ``order`` is a work array of n_classes ints. The labels are sorted by decreasing score
    (insertion sort: |Y| is small and no memory is allocated). The prefix means
    v_k = (s_(1) + ... + s_(k) - 1) / k are unimodal in k (v_{k+1} >= v_k iff s_(k+1) >= v_k,
    and then s_(k+2) <= s_(k+1)), so the scan stops at the first decrease.
    """
    n_classes = scores.shape[0]
    for j in range(n_classes):
        label = j
        pos = j
        while pos > 0 and scores[order[pos - 1]] < scores[label]:
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = label
    total = scores[order[0]]
    best = total - 1.0
    kbest = 1
    for k in range(2, n_classes + 1):
        total += scores[order[k - 1]]
        value = (total - 1.0) / k
        if value >= best:
            best = value
            kbest = k
        else:
            break
    weights[:] = 0.0
    for j in range(kbest):
        weights[order[j]] = 1.0 / kbest
    return best


@numba.njit(cache=True)
def _prefix_max_rows(scores: np.ndarray, values: np.ndarray, weights: np.ndarray) -> None:
    order = np.empty(scores.shape[1], dtype=np.int64)
    for i in range(scores.shape[0]):
        values[i] = _prefix_max_row(scores[i], weights[i], order)


def sorted_prefix_max(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """phi and its label weights from the label scores of each instance (eq. 2.6, sec. 3.5.2).

    Parameters
    ----------
    scores : ndarray of shape (n, n_classes)
        ``scores[i, y] = Phi(x_i, y)^T mu``.

    Returns
    -------
    values : ndarray of shape (n,)
        ``phi(mu, x_i) = max_C (sum_{y in C} scores[i, y] - 1) / |C|`` over non-empty C.
    weights : ndarray of shape (n, n_classes)
        ``h(x_i)``: 1/k on the k labels of a maximizing set C (the top-k scores), 0 elsewhere;
        ``h(x_i) kron psi(x_i)`` is a subgradient of ``phi(., x_i)`` at mu.
    """
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[1] < 1:
        raise DataError(f"scores must have shape (n, n_classes); got {scores.shape}.")
    values = np.empty(scores.shape[0])
    weights = np.empty_like(scores)
    _prefix_max_rows(scores, values, weights)
    return values, weights


def phi(mu: np.ndarray, psi: np.ndarray, n_classes: int) -> np.ndarray:
    """phi(mu, x_i) of eq. (2.6) for every row psi(x_i) of ``psi``; shape (n,)."""
    return sorted_prefix_max(_scores(_as_coef(mu, n_classes, psi.shape[1]), psi))[0]


def phi_subgradient(
    mu: np.ndarray, psi: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """phi(mu, x_i) and one subgradient of phi(., x_i) at mu for every instance.

    Returns
    -------
    values : ndarray of shape (n,)
    subgradients : ndarray of shape (n, n_classes * p)
        Row i is ``h(x_i) kron psi(x_i)`` (rule (iii) of section 3.2.2 applied to (2.6)).
    """
    values, weights = sorted_prefix_max(_scores(_as_coef(mu, n_classes, psi.shape[1]), psi))
    grads = weights[:, :, None] * np.asarray(psi)[:, None, :]
    return values, grads.reshape(psi.shape[0], -1)


def fixed_marginals_objective(
    mu: np.ndarray, psi: np.ndarray, n_classes: int, tau: np.ndarray, lam: np.ndarray
) -> float:
    """Objective of the fixed-marginals MRC (2.5) at mu."""
    return _regularizer(mu, tau, lam) + float(np.mean(phi(mu, psi, n_classes)))


def minimax_objective(
    mu: np.ndarray, psi: np.ndarray, n_classes: int, tau: np.ndarray, lam: np.ndarray
) -> float:
    """Objective of the MRC (2.2) (maximum of phi over the training instances) at mu."""
    return _regularizer(mu, tau, lam) + float(np.max(phi(mu, psi, n_classes)))


def _regularizer(mu: np.ndarray, tau: np.ndarray, lam: np.ndarray) -> float:
    mu = np.ravel(mu)
    return 1.0 - float(tau @ mu) + float(lam @ np.abs(mu))


def _scores(coef: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """Label scores ``psi @ M.T`` (n, n_classes) for ``M = mu.reshape(n_classes, p)``."""
    return np.asarray(psi @ coef.T)


def _as_coef(mu: np.ndarray, n_classes: int, p: int) -> np.ndarray:
    mu = np.asarray(mu, dtype=np.float64)
    if mu.size != n_classes * p:
        raise DataError(
            f"mu must have n_classes * p = {n_classes} * {p} = {n_classes * p} entries; "
            f"got {mu.size}."
        )
    return mu.reshape(n_classes, p)


# ------------------------------------------------------------------------------------------------
# certified lower bounds by weak duality
# ------------------------------------------------------------------------------------------------
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


class _DualBound:
    """Certified lower bounds from the ergodic dual sequence of a subgradient method.

    Accumulates the step-weighted label weights alpha_k h(x_i) used by the subgradients. With
    ``fixed_marginals`` each instance's weights are averaged separately (a conditional p(y|x_i),
    instance marginal 1/n as in (2.4)); otherwise all are pooled into one joint distribution over
    (instance, label). The running sums restart when the iteration count doubles, so the
    average covers the latest half of the run (the early iterates are far from optimal). Each
    candidate is mixed with a feasible distribution (the empirical one, or the best mixture so
    far moved half-way to it) to satisfy |E Phi - tau| <= lam exactly. :meth:`polish` adds the
    active-set bound of :func:`_active_set_bound` at a given point.
    """

    def __init__(self, inputs: _Inputs, fixed_marginals: bool):
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

        The active-set LP of :func:`_active_set_bound` runs on the best point when k has
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
        last one that worked) whose LP is feasible."""
        start = time.perf_counter()
        first = max(0, self.eps_index - 1)  # start just below the tolerance that last worked
        for index in range(first, len(POLISH_EPS)):
            value = _active_set_bound(self.inputs, coef, self.fixed_marginals, POLISH_EPS[index])
            if math.isfinite(value):
                self.best = max(self.best, value)
                self.eps_index = index
                break
        self.polish_time += time.perf_counter() - start
        return self.best


def _active_set_bound(inputs: _Inputs, coef: np.ndarray, fixed_marginals: bool,
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
    scores = _scores(coef, psi)
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


# ------------------------------------------------------------------------------------------------
# input checks and options
# ------------------------------------------------------------------------------------------------
@dataclass
class _Inputs:
    psi: np.ndarray
    n_classes: int
    y: np.ndarray
    tau: np.ndarray
    lam: np.ndarray

    @property
    def n(self) -> int:
        return self.psi.shape[0]

    @property
    def p(self) -> int:
        return self.psi.shape[1]


def _check_inputs(psi, n_classes, y, tau, lam, owner: str) -> _Inputs:
    if sp.issparse(psi):
        psi = psi.toarray()
    psi = np.ascontiguousarray(psi, dtype=np.float64)
    if psi.ndim != 2 or psi.shape[0] == 0 or psi.shape[1] == 0:
        raise DataError(f"{owner}: psi must be a non-empty (n, p) matrix; got shape {psi.shape}.")
    if not np.all(np.isfinite(psi)):
        raise DataError(f"{owner}: psi has NaN or infinite entries; fix the feature map.")
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) \
            or n_classes < 2:
        raise parameter_error("n_classes", owner, "an int >= 2", n_classes)
    n_classes = int(n_classes)
    y = np.asarray(y)
    if y.shape != (psi.shape[0],):
        raise DataError(f"{owner}: y must have shape ({psi.shape[0]},) like psi's rows; "
                        f"got {y.shape}.")
    if not np.issubdtype(y.dtype, np.integer) and not np.all(np.mod(y, 1) == 0):
        raise DataError(f"{owner}: y must hold integer class codes 0..{n_classes - 1}.")
    y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= n_classes:
        raise DataError(f"{owner}: y must hold class codes in 0..{n_classes - 1}; got values "
                        f"in {int(y.min())}..{int(y.max())}.")
    m = n_classes * psi.shape[1]
    out = []
    for name, vec in (("tau", tau), ("lam", lam)):
        vec = np.asarray(vec, dtype=np.float64).ravel()
        if vec.shape != (m,):
            raise DataError(f"{owner}: {name} must have n_classes * p = {m} entries; "
                            f"got {vec.size}.")
        if not np.all(np.isfinite(vec)):
            raise DataError(f"{owner}: {name} has NaN or infinite entries.")
        out.append(vec)
    tau, lam = out
    if np.any(lam < 0):
        raise DataError(f"{owner}: lam must be >= 0 componentwise (it is a confidence vector); "
                        f"{int(np.sum(lam < 0))} entries are negative.")
    return _Inputs(psi, n_classes, y, tau, lam)


def _step_params(solver: str, step: str, step_params: dict | None, owner: str) -> dict:
    if step not in STEP_RULES:
        raise parameter_error("step", owner, f"one of {sorted(STEP_RULES)}", step)
    params = dict(DEFAULT_STEP_PARAMS[solver][step])
    params.setdefault("b", 0.0)
    if step_params:
        unknown = set(step_params) - set(STEP_RULES[step])
        if unknown:
            raise parameter_error("step_params", owner,
                                  f"a dict with keys among {STEP_RULES[step]} for step={step!r}",
                                  step_params)
        params.update({k: float(v) for k, v in step_params.items()})
    for key in STEP_RULES[step]:
        value = params[key]
        if not (math.isfinite(value) and (value > 0 or (key == "b" and value >= 0))):
            raise parameter_error(f"step_params[{key!r}]", owner,
                                  "a finite number > 0" + (" (>= 0 for b)" if key == "b" else ""),
                                  value)
    return params


def _step_size(code: int, a: float, b: float, k: int, gnorm: float) -> float:
    """alpha_k of the rules of section 3.3.3 (k counts from 1)."""
    if code == 0:
        return a
    if code == 1:
        return a / gnorm if gnorm > 0 else 0.0
    if code == 2:
        return a / (b + k)
    return a / math.sqrt(k)


def _positive_int(value, name: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise parameter_error(name, owner, "an int >= 1", value)
    return int(value)


def _check_common(iterate, tol, improvement_tol, owner):
    if iterate not in ("best", "average"):
        raise parameter_error("iterate", owner, "'best' or 'average'", iterate)
    if isinstance(tol, bool) or not (isinstance(tol, numbers.Real) and tol >= 0):
        raise parameter_error("tol", owner, "a number >= 0", tol)
    if improvement_tol is not None and not (
        isinstance(improvement_tol, numbers.Real) and improvement_tol > 0
    ):
        raise parameter_error("improvement_tol", owner, "None or a number > 0", improvement_tol)


def _initial_mu(mu0, inputs: _Inputs, owner: str) -> np.ndarray:
    if mu0 is None:
        return np.zeros((inputs.n_classes, inputs.p))
    mu0 = np.array(mu0, dtype=np.float64)
    if mu0.size != inputs.n_classes * inputs.p or not np.all(np.isfinite(mu0)):
        raise DataError(f"{owner}: mu0 must be a finite vector of n_classes * p = "
                        f"{inputs.n_classes * inputs.p} entries; got shape {mu0.shape}.")
    return mu0.reshape(inputs.n_classes, inputs.p)


class _Tracker:
    """Best evaluated candidate, certified lower bound, history and the stopping rules."""

    def __init__(self, tol, improvement_tol, callback, start):
        self.tol = tol
        self.improvement_tol = improvement_tol
        self.callback = callback
        self.start = start
        self.best_value = math.inf
        self.best_mu: np.ndarray | None = None
        self.lower = -math.inf
        self.history: list[dict[str, Any]] = []
        self.stopped_by = "max_iterations"
        self._last_check_best = math.inf

    @property
    def gap(self) -> float:
        return self.best_value - self.lower

    def offer(self, value: float, mu: np.ndarray) -> None:
        if value < self.best_value:
            self.best_value = value
            self.best_mu = mu.copy()

    def record(self, entry: dict[str, Any]) -> None:
        entry["best_objective"] = self.best_value
        entry["time"] = time.perf_counter() - self.start
        self.history.append(entry)
        if self.callback is not None:
            self.callback(dict(entry))

    def check(self, lower: float) -> bool:
        """Update the lower bound; True when a stopping rule fires."""
        self.lower = max(self.lower, lower)
        if self.gap <= self.tol:
            self.stopped_by = "gap"
            return True
        if self.improvement_tol is not None:
            improved = self._last_check_best - self.best_value
            self._last_check_best = self.best_value
            if improved < self.improvement_tol:
                self.stopped_by = "improvement"
                return True
        if limits.active().expired():
            self.stopped_by = "time_limit"
            return True
        return False

    def solution(self, solver: str, k: int, extra: dict[str, Any], dual: _DualBound) -> Solution:
        if self.stopped_by != "gap":  # last chance: the active-set bound at the best point
            self.lower = max(self.lower, dual.polish(self.best_mu))
            if self.gap <= self.tol:
                self.stopped_by = "gap"
        certified = self.stopped_by == "gap"
        status = OPTIMAL if certified else ITERATION_LIMIT
        if self.stopped_by == "time_limit":
            status = TIME_LIMIT
        if not certified:
            why = {
                "max_iterations": f"reached max_iterations={k}",
                "time_limit": f"reached time_limit={limits.active().time_limit}",
                "improvement": "the best objective improved by less than improvement_tol",
            }[self.stopped_by]
            warnings.warn(
                f"{solver}: {why} with certified duality gap {self.gap:.3g} > tol={self.tol:g}; "
                "the returned mu is the best point found, not a certified optimum. Increase "
                "max_iterations or use the LP / CCG methods for an exact solution.",
                ConvergenceWarning,
                stacklevel=user_stacklevel(),
            )
        lower = self.lower if math.isfinite(self.lower) else None
        details = {"iterations": k, "stopped_by": self.stopped_by, "tol": self.tol, **extra}
        return Solution(
            status=status,
            objective=self.best_value,
            primal={"mu": self.best_mu.ravel().copy()},
            certificate=Certificate(
                lower_bound=lower,
                upper_bound=self.best_value,
                gap=self.gap if lower is not None else None,
                max_violation=0.0,
                details=details,
            ),
            history=self.history,
            solver=solver,
            solve_time=time.perf_counter() - self.start,
        )


class _SuffixMean:
    """Running mean of the iterates (Algorithm 3), restarted when the iteration count doubles.

    The plain mean of Algorithm 3 keeps the weight of the first iterates, far from the optimum,
    for ever; restarting at k = 1, 2, 4, ... (times ``check_every``) keeps the mean over the
    latest half of the run (suffix averaging), which converges at the same rate and forgets
    the start.
    """

    def __init__(self, coef: np.ndarray):
        self.mean = coef.copy()
        self.count = 1
        self.start = 0

    def add(self, coef: np.ndarray) -> None:
        self.count += 1
        self.mean += (coef - self.mean) / self.count

    def maybe_restart(self, k: int, coef: np.ndarray) -> None:
        if k >= 2 * self.start:
            self.mean = coef.copy()
            self.count = 1
            self.start = k


# ------------------------------------------------------------------------------------------------
# the stochastic inner loop (numba): one chunk of iterations between two checks
# ------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _stochastic_chunk(psi, coef, avg, tau, lam, order, batch, k0, n_avg0, code, a, b,
                      dual_sum, dual_weight, steps):
    """Run ``order.size // batch`` stochastic subgradient steps (section 3.4) in place.

    Step j uses the instances ``order[j*batch:(j+1)*batch]``: the stochastic subgradient is
    -tau + lam * sign(mu) + (1/batch) sum_b h(x_b) kron psi(x_b). ``avg`` is the running mean
    of the iterates (Algorithm 3), ``dual_sum`` / ``dual_weight`` accumulate the step-weighted
    label weights of every visited instance (the ergodic dual sequence).
    """
    n_classes, p = coef.shape
    n_steps = order.size // batch
    weights = np.empty(n_classes)
    scores = np.empty(n_classes)
    grad = np.empty((n_classes, p))
    hs = np.empty((batch, n_classes))
    work = np.empty(n_classes, dtype=np.int64)
    for j in range(n_steps):
        k = k0 + j + 1
        for c in range(n_classes):
            for f in range(p):
                grad[c, f] = -tau[c, f] + lam[c, f] * np.sign(coef[c, f])
        for bi in range(batch):
            i = order[j * batch + bi]
            for c in range(n_classes):
                s = 0.0
                for f in range(p):
                    s += coef[c, f] * psi[i, f]
                scores[c] = s
            _prefix_max_row(scores, weights, work)
            for c in range(n_classes):
                hs[bi, c] = weights[c]
                w = weights[c] / batch
                if w != 0.0:
                    for f in range(p):
                        grad[c, f] += w * psi[i, f]
        gnorm = 0.0
        if code == 1:
            for c in range(n_classes):
                for f in range(p):
                    gnorm += grad[c, f] * grad[c, f]
            gnorm = np.sqrt(gnorm)
        if code == 0:
            alpha = a
        elif code == 1:
            alpha = a / gnorm if gnorm > 0 else 0.0
        elif code == 2:
            alpha = a / (b + k)
        else:
            alpha = a / np.sqrt(k)
        steps[j] = alpha
        for bi in range(batch):
            i = order[j * batch + bi]
            dual_weight[i] += alpha
            for c in range(n_classes):
                dual_sum[i, c] += alpha * hs[bi, c]
        t = n_avg0 + j + 1
        for c in range(n_classes):
            for f in range(p):
                coef[c, f] -= alpha * grad[c, f]
                avg[c, f] += (coef[c, f] - avg[c, f]) / t


# ------------------------------------------------------------------------------------------------
# (2.5): classic and stochastic subgradient methods
# ------------------------------------------------------------------------------------------------
def fixed_marginals_subgradient(
    psi: np.ndarray,
    n_classes: int,
    y: np.ndarray,
    tau: np.ndarray,
    lam: np.ndarray,
    *,
    method: str = "classic",
    step: str | None = None,
    step_params: dict[str, float] | None = None,
    iterate: str | None = None,
    max_iterations: int | None = None,
    tol: float = 1e-3,
    improvement_tol: float | None = None,
    check_every: int | None = None,
    batch_size: int = 1,
    sampling: str = "shuffle",
    mu0: np.ndarray | None = None,
    seed: int | None = None,
    callback: Callable[[dict], Any] | None = None,
) -> Solution:
    """Subgradient methods for the fixed-marginals MRC (2.5).

    Parameters
    ----------
    psi : ndarray of shape (n, p)
        psi(x_i) of every training instance (intercept column included).
    n_classes : int
        |Y| >= 2.
    y : ndarray of shape (n,)
        Class codes 0..n_classes-1 (used for the dual certificate).
    tau, lam : ndarray of shape (n_classes * p,)
        Expectation estimates and confidence vector of the uncertainty set (2.4).
    method : {"classic", "stochastic"}
        Classic subgradient method (section 3.3: exact subgradient, a pass over all instances
        per iteration) or stochastic subgradient method (section 3.4: ``batch_size`` instances
        per iteration).
    step : {"constant", "constant_length", "a/(b+k)", "a/sqrt(k)"}, optional
        Step-size rule of section 3.3.3. Default ``"constant_length"`` for classic,
        ``"a/sqrt(k)"`` for stochastic.
    step_params : dict, optional
        Parameters of the rule (``a``; ``gamma``; ``a`` and ``b``; ``a``), defaulting to
        :data:`DEFAULT_STEP_PARAMS` ``[method][step]``.
    iterate : {"best", "average"}, optional
        Candidates evaluated: the iterates themselves (best point, Algorithm 2) or their
        running mean (averaging, Algorithm 3); the best evaluated candidate is returned. Default
        ``"best"`` for classic (its objective comes free with the subgradient) and ``"average"``
        for stochastic.
    max_iterations : int, optional
        Default 5,000 (classic) / 200 * ceil(n / batch_size) (stochastic, 200 epochs).
    tol : float
        Stop with status ``"optimal"`` when best objective - certified lower bound <= tol
        (Algorithm 6).
    improvement_tol : float, optional
        Also stop when the best objective improved by less than this between two checks
        (Algorithm 5 on the best values); the status is then ``"iteration_limit"``.
    check_every : int, optional
        Iterations between checks (candidate evaluation for stochastic / averaged runs,
        lower bound, stopping rules, history entry). Default 10 (classic) / one epoch
        ceil(n / batch_size) (stochastic).
    batch_size : int
        Instances per stochastic step (1 is the thesis's method).
    sampling : {"shuffle", "random", "cyclic"}
        Stochastic index rule: a fresh permutation per epoch, uniform with replacement
        (randomized rule), or 1, 2, ..., n, 1, ... (cyclic rule, section 3.4).
    mu0 : ndarray, optional
        Starting point (default 0).
    seed : int, optional
        Seed of the stochastic sampling.
    callback : callable, optional
        Called with a copy of every history entry.

    Returns
    -------
    Solution
        ``primal={"mu": mu}`` (length n_classes * p), ``objective`` the exact value of (2.5) at
        mu, certificate with the certified lower bound and gap, ``history`` with
        ``objective`` / ``best_objective`` per iteration (classic) or per check (stochastic).
    """
    owner = "fixed_marginals_subgradient"
    inputs = _check_inputs(psi, n_classes, y, tau, lam, owner)
    if method not in ("classic", "stochastic"):
        raise parameter_error("method", owner, "'classic' or 'stochastic'", method)
    step = step or ("constant_length" if method == "classic" else "a/sqrt(k)")
    params = _step_params(method, step, step_params, owner)
    iterate = iterate or ("best" if method == "classic" else "average")
    _check_common(iterate, tol, improvement_tol, owner)
    batch_size = _positive_int(batch_size, "batch_size", owner)
    if method == "stochastic" and batch_size > inputs.n:
        raise parameter_error("batch_size", owner, f"an int in 1..n = {inputs.n}", batch_size)
    if sampling not in ("shuffle", "random", "cyclic"):
        raise parameter_error("sampling", owner, "'shuffle', 'random' or 'cyclic'", sampling)
    epoch = -(-inputs.n // batch_size)
    if max_iterations is None:
        max_iterations = 5000 if method == "classic" else 200 * epoch
    max_iterations = _positive_int(max_iterations, "max_iterations", owner)
    if check_every is None:
        check_every = 10 if method == "classic" else epoch
    check_every = _positive_int(check_every, "check_every", owner)
    coef = _initial_mu(mu0, inputs, owner)
    tracker = _Tracker(float(tol), improvement_tol, callback, time.perf_counter())
    dual = _DualBound(inputs, fixed_marginals=True)
    run = _classic if method == "classic" else _stochastic
    k = run(inputs, coef, _STEP_CODES[step], params, iterate, max_iterations, check_every,
            batch_size, sampling, seed, tracker, dual)
    logger.info("%s (%s, %s): %d iterations, objective %.6g, gap %.3g", owner, method, step, k,
                tracker.best_value, tracker.gap)
    return tracker.solution(
        f"subgradient-{method}", k,
        {"method": method, "step": step, "step_params": params, "iterate": iterate,
         "batch_size": batch_size if method == "stochastic" else inputs.n},
        dual,
    )


def _fm_value(inputs: _Inputs, coef: np.ndarray) -> tuple[float, np.ndarray]:
    """(2.5) at coef and the label weights h(x_i) of every instance."""
    values, weights = sorted_prefix_max(_scores(coef, inputs.psi))
    return _regularizer(coef, inputs.tau, inputs.lam) + float(values.mean()), weights


def _checkpoint(k, max_iterations, check_every, iterate, entry, coef, avg, tracker, dual,
                objective) -> bool:
    """Record iteration ``k``; every ``check_every`` iterations (and at the last) also offer the
    averaged iterate, refresh the certified lower bound and gap, and say whether to stop."""
    if k % check_every and k != max_iterations:
        tracker.record(entry)
        return False
    if iterate == "average":
        entry["candidate_objective"] = objective(avg.mean)
        tracker.offer(entry["candidate_objective"], avg.mean)
        avg.maybe_restart(k, coef)
    lower = dual.bound(k, tracker.best_mu, time.perf_counter() - tracker.start)
    entry["lower_bound"] = lower
    stop = tracker.check(lower)
    entry["gap"] = tracker.gap
    tracker.record(entry)
    return stop


def _classic(inputs, coef, code, params, iterate, max_iterations, check_every, batch_size,
             sampling, seed, tracker, dual) -> int:
    """Classic subgradient method (Algorithms 2/3) on (2.5); returns the iteration count."""
    del batch_size, sampling, seed
    psi, n = inputs.psi, inputs.n
    tau = inputs.tau.reshape(coef.shape)
    lam = inputs.lam.reshape(coef.shape)
    avg = _SuffixMean(coef)
    k = 0
    for k in range(1, max_iterations + 1):
        value, weights = _fm_value(inputs, coef)
        grad = -tau + lam * np.sign(coef) + (weights.T @ psi) / n
        gnorm = float(np.linalg.norm(grad))
        alpha = _step_size(code, params[_first(params)], params["b"], k, gnorm)
        entry = {"iteration": k, "objective": value, "step": alpha}
        if iterate == "best":
            tracker.offer(value, coef)
        dual.sums += alpha * weights
        dual.weight += alpha
        coef = coef - alpha * grad
        avg.add(coef)
        if _checkpoint(k, max_iterations, check_every, iterate, entry, coef, avg, tracker, dual,
                       lambda mu: _fm_value(inputs, mu)[0]):
            break
    if iterate == "best":
        tracker.offer(_fm_value(inputs, coef)[0], coef)
    return k


def _stochastic(inputs, coef, code, params, iterate, max_iterations, check_every, batch_size,
                sampling, seed, tracker, dual) -> int:
    """Stochastic subgradient method (section 3.4) on (2.5); returns the iteration count."""
    psi, n = inputs.psi, inputs.n
    rng = np.random.default_rng(seed)
    tau = inputs.tau.reshape(coef.shape)
    lam = inputs.lam.reshape(coef.shape)
    coef = coef.copy()
    avg = _SuffixMean(coef)
    a = params[_first(params)]
    queue = np.empty(0, dtype=np.int64)
    k = 0
    while k < max_iterations:
        n_steps = min(check_every, max_iterations - k)
        need = n_steps * batch_size
        while queue.size < need:
            if sampling == "shuffle":
                fresh = rng.permutation(n)
            elif sampling == "random":
                fresh = rng.integers(0, n, size=n)
            else:
                fresh = np.arange(n)
            queue = np.concatenate([queue, fresh])
        order, queue = queue[:need], queue[need:]
        steps = np.empty(n_steps)
        _stochastic_chunk(psi, coef, avg.mean, tau, lam, order, batch_size, k, avg.count, code,
                          a, params["b"], dual.sums, dual.weight, steps)
        avg.count += n_steps
        k += n_steps
        candidate = avg.mean if iterate == "average" else coef
        value = _fm_value(inputs, candidate)[0]
        tracker.offer(value, candidate)
        avg.maybe_restart(k, coef)
        lower = dual.bound(k, tracker.best_mu, time.perf_counter() - tracker.start)
        stop = tracker.check(lower)
        tracker.record({"iteration": k, "objective": value, "step": float(steps[-1]),
                        "lower_bound": lower, "gap": tracker.gap})
        if stop:
            break
    return k


def _first(params: dict) -> str:
    return "gamma" if "gamma" in params else "a"


# ------------------------------------------------------------------------------------------------
# (2.2): constrained subgradient method on (3.14)-(3.16)
# ------------------------------------------------------------------------------------------------
def constrained_subgradient(
    psi: np.ndarray,
    n_classes: int,
    y: np.ndarray,
    tau: np.ndarray,
    lam: np.ndarray,
    *,
    step: str = "a/sqrt(k)",
    step_params: dict[str, float] | None = None,
    iterate: str = "best",
    max_iterations: int = 20000,
    tol: float = 1e-3,
    improvement_tol: float | None = None,
    check_every: int = 100,
    mu0: np.ndarray | None = None,
    callback: Callable[[dict], Any] | None = None,
) -> Solution:
    """Constrained subgradient method (section 3.3.5) for the MRC (2.2) via (3.14)-(3.16).

    The variables are (mu, nu); the constraints f_j(mu, nu) = phi(mu, x_i; C) - nu <= 0 of
    (3.16) are all checked at once through max_i phi(mu, x_i) (section 3.5.3). A feasible
    iterate steps along a subgradient of the objective (3.15), (-tau + lam sign(mu), 1); an
    infeasible one along the subgradient (h(x_i*) kron psi(x_i*), -1) of the most violated
    constraint, i* = argmax_i phi(mu, x_i).

    Every iterate mu is also a point of (2.2) with objective
    1 - tau^T mu + lam^T |mu| + max_i phi(mu, x_i) (nu eliminated), which is what ``objective``,
    the best-point rule and the history report.

    Parameters
    ----------
    psi, n_classes, y, tau, lam
        As in :func:`fixed_marginals_subgradient`.
    step, step_params
        Step rule and parameters (section 3.3.3); defaults
        :data:`DEFAULT_STEP_PARAMS` ``["constrained"][step]``.
    iterate : {"best", "average"}
        Best point over the iterates (default; free, every iteration evaluates (2.2)) or best
        over the running means evaluated every ``check_every`` iterations.
    max_iterations, tol, improvement_tol, check_every, mu0, callback
        As in :func:`fixed_marginals_subgradient`; the lower bound comes from the step-weighted
        mean of the instance/label weights of the constraint steps (a distribution over
        (x_i, y), made feasible for |E Phi - tau| <= lam by mixing with the empirical one).

    Returns
    -------
    Solution
        ``primal={"mu": mu, "nu": [max_i phi(mu, x_i)]}``; ``objective`` the exact value of
        (2.2) at mu.
    """
    owner = "constrained_subgradient"
    inputs = _check_inputs(psi, n_classes, y, tau, lam, owner)
    params = _step_params("constrained", step, step_params, owner)
    _check_common(iterate, tol, improvement_tol, owner)
    max_iterations = _positive_int(max_iterations, "max_iterations", owner)
    check_every = _positive_int(check_every, "check_every", owner)
    coef = _initial_mu(mu0, inputs, owner).copy()
    tracker = _Tracker(float(tol), improvement_tol, callback, time.perf_counter())
    psi = inputs.psi
    tau = inputs.tau.reshape(coef.shape)
    lam = inputs.lam.reshape(coef.shape)
    code = _STEP_CODES[step]
    a = params[_first(params)]
    values = sorted_prefix_max(_scores(coef, psi))[0]
    nu = float(values.max())  # feasible start of (3.14)
    avg = _SuffixMean(coef)
    dual = _DualBound(inputs, fixed_marginals=False)
    n_feasible = 0
    k = 0
    for k in range(1, max_iterations + 1):
        values, weights = sorted_prefix_max(_scores(coef, psi))
        worst = int(np.argmax(values))
        value = _regularizer(coef, inputs.tau, inputs.lam) + float(values[worst])
        if iterate == "best":
            tracker.offer(value, coef)
        feasible = values[worst] <= nu
        if feasible:  # objective step on (3.15)
            grad = -tau + lam * np.sign(coef)
            gnu = 1.0
            n_feasible += 1
        else:  # step on the most violated constraint (3.16)
            grad = weights[worst][:, None] * psi[worst][None, :]
            gnu = -1.0
        gnorm = math.sqrt(float(np.sum(grad * grad)) + gnu * gnu)
        alpha = _step_size(code, a, params["b"], k, gnorm)
        if not feasible:
            dual.sums[worst] += alpha * weights[worst]
            dual.weight += alpha
        coef = coef - alpha * grad
        nu -= alpha * gnu
        avg.add(coef)
        entry = {"iteration": k, "objective": value, "step": alpha, "feasible": bool(feasible)}
        if _checkpoint(k, max_iterations, check_every, iterate, entry, coef, avg, tracker, dual,
                       lambda mu: minimax_objective(mu, psi, inputs.n_classes, inputs.tau,
                                                    inputs.lam)):
            break
    if iterate == "best":
        tracker.offer(minimax_objective(coef, psi, inputs.n_classes, inputs.tau, inputs.lam),
                      coef)
    solution = tracker.solution(
        "subgradient-constrained", k,
        {"step": step, "step_params": params, "iterate": iterate,
         "feasible_steps": n_feasible},
        dual,
    )
    best_values = phi(solution.primal["mu"], psi, inputs.n_classes)
    solution.primal["nu"] = np.array([float(best_values.max())])
    return solution
