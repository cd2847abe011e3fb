"""phi of the minimax risk classifiers and its subgradient (Beristain Cortés, thesis, ch. 2-3).

Notation (thesis, ch. 2): ``psi`` is the ``(n, p)`` matrix of psi(x_i) (intercept column
included), Phi(x, y) = e_y kron psi(x), so that with ``M = mu.reshape(n_classes, p)`` the score of
label y at x is Phi(x, y)^T mu = M[y] @ psi(x). The objectives are

* (2.5), MRC with fixed marginals: 1 - tau^T mu + lam^T |mu| + (1/n) sum_i phi(mu, x_i);
* (2.2), MRC without fixed marginals: 1 - tau^T mu + lam^T |mu| + max_i phi(mu, x_i);

with phi(mu, x) = max over non-empty label sets C of (sum_{y in C} Phi(x, y)^T mu - 1) / |C|
(2.6). Sorting the scores of x in decreasing order, the best set of each size s is the top-s
labels (section 3.5.2), so phi is the maximum of the ``n_classes`` prefix means
(s_(1) + ... + s_(k) - 1) / k, and a subgradient of phi(mu, x) is h(x) kron psi(x) with
h(x) uniform (1/k*) on the top-k* labels of the maximizing prefix (rule (iii), section 3.2.2).
No label subset is ever enumerated; the sort is a numba kernel shared by every subgradient
method (:mod:`ratecons.solvers.subgradient`) and the dual bounds
(:mod:`ratecons.solvers.mrc_dual_bound`). :func:`check_inputs` validates the data they share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from ..errors import DataError, parameter_error

__all__ = [
    "MRCInputs",
    "as_coef",
    "check_inputs",
    "fixed_marginals_objective",
    "label_scores",
    "minimax_objective",
    "phi",
    "phi_subgradient",
    "prefix_max_row",
    "regularizer",
    "sorted_prefix_max",
]


@numba.njit(cache=True)
def prefix_max_row(scores: np.ndarray, weights: np.ndarray, order: np.ndarray) -> float:
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
        values[i] = prefix_max_row(scores[i], weights[i], order)


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
    return sorted_prefix_max(label_scores(as_coef(mu, n_classes, psi.shape[1]), psi))[0]


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
    values, weights = sorted_prefix_max(label_scores(as_coef(mu, n_classes, psi.shape[1]), psi))
    grads = weights[:, :, None] * np.asarray(psi)[:, None, :]
    return values, grads.reshape(psi.shape[0], -1)


def fixed_marginals_objective(
    mu: np.ndarray, psi: np.ndarray, n_classes: int, tau: np.ndarray, lam: np.ndarray
) -> float:
    """Objective of the fixed-marginals MRC (2.5) at mu."""
    return regularizer(mu, tau, lam) + float(np.mean(phi(mu, psi, n_classes)))


def minimax_objective(
    mu: np.ndarray, psi: np.ndarray, n_classes: int, tau: np.ndarray, lam: np.ndarray
) -> float:
    """Objective of the MRC (2.2) (maximum of phi over the training instances) at mu."""
    return regularizer(mu, tau, lam) + float(np.max(phi(mu, psi, n_classes)))


def regularizer(mu: np.ndarray, tau: np.ndarray, lam: np.ndarray) -> float:
    mu = np.ravel(mu)
    return 1.0 - float(tau @ mu) + float(lam @ np.abs(mu))


def label_scores(coef: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """Label scores ``psi @ M.T`` (n, n_classes) for ``M = mu.reshape(n_classes, p)``."""
    return np.asarray(psi @ coef.T)


def as_coef(mu: np.ndarray, n_classes: int, p: int) -> np.ndarray:
    mu = np.asarray(mu, dtype=np.float64)
    if mu.size != n_classes * p:
        raise DataError(
            f"mu must have n_classes * p = {n_classes} * {p} = {n_classes * p} entries; "
            f"got {mu.size}."
        )
    return mu.reshape(n_classes, p)


@dataclass
class MRCInputs:
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


def check_inputs(psi, n_classes, y, tau, lam, owner: str) -> MRCInputs:
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
    return MRCInputs(psi, n_classes, y, tau, lam)
