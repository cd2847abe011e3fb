"""Random and real rate programs (Problem 1) shared by the SDCA / cutting-plane tests."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ratecons.canonical.rate_program import RateBlock, RateProgram


def fairness_program(X, y, group, kappa: float = 0.8, l2: float = 1e-3,
                     extra_recall: float | None = None) -> RateProgram:
    """Error rate subject to s_p(A) <= s_p(B) / kappa (and optionally recall >= extra_recall).

    Blocks: D+ and D- (error = p+ s_n(D+) + p- s_p(D-)), A = group 1, B = group 0.
    The fairness row is s_p(A) - s_p(B)/kappa <= 0, i.e. s_p(A) + s_n(B)/kappa <= 1/kappa.
    """
    n = y.size
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    ga, gb = np.flatnonzero(group == 1), np.flatnonzero(group == 0)
    blocks = [RateBlock(name, 0, idx, np.full(idx.size, 1.0 / idx.size))
              for name, idx in (("pos", pos), ("neg", neg), ("A", ga), ("B", gb))]
    rows = 2 if extra_recall is None else 3
    alpha = np.zeros((rows, 4))
    beta = np.zeros((rows, 4))
    beta[0, 0] = pos.size / n
    alpha[0, 1] = neg.size / n
    alpha[1, 2] = 1.0
    beta[1, 3] = 1.0 / kappa
    gamma = [1.0 / kappa]
    if extra_recall is not None:  # recall >= r  <=>  s_n(D+) <= 1 - r
        beta[2, 0] = 1.0
        gamma.append(1.0 - extra_recall)
    return RateProgram(
        sources=[X], source_names=["train"], blocks=blocks, alpha=alpha, beta=beta,
        gamma=np.array(gamma), constant=np.zeros(rows), row_names=[f"r{j}" for j in range(rows)],
        l2=l2,
    )


def random_problem(seed: int, n: int = 400, d: int = 8, sparse: bool = False, **kw):
    """A random linearly-structured classification problem with a binary group."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    group = (rng.random(n) < 0.4).astype(int)
    X[:, 0] += 1.5 * group
    w = rng.normal(size=d)
    y = (X @ w + 0.5 * rng.normal(size=n) + 1.0 * group > 0).astype(int)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random((n, d)) < 0.5, X, 0.0))
    return fairness_program(X, y, group, **kw)


def solve_weighted_hinge_cvxpy(X, a: np.ndarray, bcoef: np.ndarray, l2: float,
                               bias: float | None = None) -> SimpleNamespace:
    """Reference for SDCA and the b-cutting plane, written here from eq. (16) (App. F):
    min_w (and b unless ``bias`` is given) sum_x a_x max(0, 1/2 + z_x) + b_x max(0, 1/2 - z_x)
    + (l2/2)||w||^2, z = Xw - b. Returns objective, w and b."""
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    b = cp.Variable() if bias is None else float(bias)
    z = X @ w - b
    hinges = a @ cp.pos(0.5 + z) + bcoef @ cp.pos(0.5 - z)
    prob = cp.Problem(cp.Minimize(hinges + 0.5 * l2 * cp.sum_squares(w)))
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal", prob.status
    return SimpleNamespace(objective=float(prob.value), w=np.asarray(w.value),
                           b=float(b.value) if bias is None else float(bias))
