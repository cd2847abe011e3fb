"""Test-only oracle for the subgradient tests: MRC instances and CVXPY formulations.

The ``mrc`` branch owns the library's canonical form and its CVXPY lowering
(``ratecons/lowering/mrc_cvxpy.py``); to stay independent of it, these tests build the
canonical data of the contract themselves (psi = [1, z-scored x], tau = sample mean of
Phi(x_i, y_i), lam_j = lambda0 * sqrt(sum_i (Phi_j(x_i, y_i) - tau_j)^2) / n) and solve (2.5) and
(2.2) of the thesis with CVXPY, enumerating every non-empty label subset (fine for |Y| <= 6).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import cvxpy as cp
import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@dataclass
class Instance:
    psi: np.ndarray
    n_classes: int
    y: np.ndarray
    tau: np.ndarray
    lam: np.ndarray

    def args(self):
        return self.psi, self.n_classes, self.y, self.tau, self.lam


def make_instance(X: np.ndarray, y: np.ndarray, lambda0: float = 0.3) -> Instance:
    """Canonical MRC data of the contract with psi = [1, z-scored x]."""
    X = np.asarray(X, dtype=float)
    std = X.std(axis=0)
    std[std == 0] = 1.0
    psi = np.hstack([np.ones((X.shape[0], 1)), (X - X.mean(axis=0)) / std])
    classes, codes = np.unique(y, return_inverse=True)
    n_classes = max(2, classes.size)
    n, p = psi.shape
    phi_true = np.zeros((n, n_classes, p))
    phi_true[np.arange(n), codes] = psi
    phi_true = phi_true.reshape(n, -1)
    tau = phi_true.mean(axis=0)
    lam = lambda0 * np.sqrt(((phi_true - tau) ** 2).sum(axis=0)) / n
    return Instance(psi, n_classes, codes.astype(np.int64), tau, lam)


def load(name: str, lambda0: float = 0.3) -> Instance:
    table = np.loadtxt(DATA / f"{name}.csv", delimiter=",", skiprows=1)
    return make_instance(table[:, :-1], table[:, -1].astype(int), lambda0)


def random_instance(n: int, d: int, n_classes: int, seed: int, lambda0: float = 0.3) -> Instance:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_classes, d))
    y = rng.integers(0, n_classes, size=n)
    y[:n_classes] = np.arange(n_classes)
    X = centers[y] + 1.5 * rng.normal(size=(n, d))
    return make_instance(X, y, lambda0)


def _subsets(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns 1_C / |C| for every non-empty C, and the offsets 1 / |C|."""
    cols, offs = [], []
    for size in range(1, n_classes + 1):
        for C in itertools.combinations(range(n_classes), size):
            v = np.zeros(n_classes)
            v[list(C)] = 1.0 / size
            cols.append(v)
            offs.append(1.0 / size)
    return np.array(cols).T, np.array(offs)


def phi_brute_force(mu: np.ndarray, psi: np.ndarray, n_classes: int) -> np.ndarray:
    """phi(mu, x_i) of (2.6) by enumerating all 2^|Y| - 1 label subsets."""
    scores = psi @ mu.reshape(n_classes, -1).T
    A, off = _subsets(n_classes)
    return np.max(scores @ A - off, axis=1)


def _solve(inst: Instance, fixed_marginals: bool) -> float:
    n, p = inst.psi.shape
    M = cp.Variable((inst.n_classes, p))
    mu = cp.vec(M.T, order="F")  # row-major flattening of M: mu.reshape(K, p) == M
    A, off = _subsets(inst.n_classes)
    scores = inst.psi @ M.T
    reg = 1 - inst.tau @ mu + inst.lam @ cp.abs(mu)
    if fixed_marginals:
        t = cp.Variable(n)
        cons = [scores @ A - np.ones((n, 1)) @ off[None, :] <= cp.reshape(t, (n, 1), order="C") @
                np.ones((1, off.size))]
        obj = reg + cp.sum(t) / n
    else:
        nu = cp.Variable()
        cons = [scores @ A - np.ones((n, 1)) @ off[None, :] <= nu]
        obj = reg + nu
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="HIGHS")
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def _solve_compact(inst: Instance, fixed_marginals: bool) -> float:
    """(2.5) / (2.2) with phi(mu, x_i) = min { t : sum_y (s_iy - t)_+ <= 1 } (LP duality).

    phi(s) = max_{p in simplex} p^T s - max_y p_y (the 0-1 worst case over label
    distributions); its LP dual is min t s.t. w_y >= s_y - t, w >= 0, sum_y w_y <= 1. This
    needs n (|Y| + 1) variables instead of n (2^|Y| - 1) rows, for the larger benchmark data.
    """
    n, p = inst.psi.shape
    M = cp.Variable((inst.n_classes, p))
    mu = cp.vec(M.T, order="F")
    t = cp.Variable(n)
    W = cp.Variable((n, inst.n_classes), nonneg=True)
    scores = inst.psi @ M.T
    cons = [W >= scores - cp.reshape(t, (n, 1), order="C") @ np.ones((1, inst.n_classes)),
            cp.sum(W, axis=1) <= 1]
    reg = 1 - inst.tau @ mu + inst.lam @ cp.abs(mu)
    if fixed_marginals:
        obj = reg + cp.sum(t) / n
    else:
        nu = cp.Variable()
        cons.append(t <= nu)
        obj = reg + nu
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="HIGHS")
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def cvxpy_fixed_marginals(inst: Instance, compact: bool = False) -> float:
    """Optimal value of (2.5) by CVXPY + HiGHS (all label subsets, or the compact LP)."""
    return _solve_compact(inst, True) if compact else _solve(inst, True)


def cvxpy_minimax(inst: Instance, compact: bool = False) -> float:
    """Optimal value of (2.2) by CVXPY + HiGHS (all label subsets, or the compact LP)."""
    return _solve_compact(inst, False) if compact else _solve(inst, False)
