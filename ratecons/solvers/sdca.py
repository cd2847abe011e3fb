"""SDCA for the per-example two-sided hinge SVM at fixed bias (Goh et al. 2016, App. F.1).

For fixed b and multipliers v, minimizing Psi over w is the SVM

    P(w) = sum_x l_x(<w, x> - b) + (lambda/2) ||w||^2,
    l_x(z) = a_x max(0, 1/2 + z) + b_x max(0, 1/2 - z)          (eq. 16, a_x, b_x >= 0)

(eq. 17 without the n-rescaling: we minimise the sum, not the average). Its dual (eq. 19) is

    D(xi) = -sum_x l*_x(xi_x) - b sum_x xi_x - (1 / (2 lambda)) ||sum_x xi_x x||^2,
    l*_x(s) = max(-s/2 - b_x, s/2 - a_x)   on the box  -b_x <= xi_x <= a_x,

with primal w = -(1/lambda) sum_x xi_x x. Stochastic dual coordinate ascent (Shalev-Shwartz and
Zhang, 2013) maximizes D one coordinate at a time exactly (the coordinate problem is a concave
piecewise quadratic with one kink at a_x - b_x); the run stops when the duality gap
P(w(xi)) - D(xi) falls below the target. D is linear in b with slope -sum_x xi_x, which gives
the cuts of the b-cutting plane (Alg 3).

The coordinate loop is compiled with numba (``cache=True``), once per row layout (dense or
CSR, dispatched on the argument's type), and allocates nothing: the caller owns xi (warm
start), u = sum_x xi_x x and the visiting order. Shrinking skips examples settled at their
plateau between full passes; every full pass computes the gap over all examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..canonical.rate_fold import ExampleDesign
from ..canonical.rate_program import weighted_sum
from ..errors import SolverError
from ..numerics.compiled_copy import copy_into

__all__ = ["SDCAResult", "hinge_primal_dual", "require_l2", "sdca", "sdca_work"]


# ---------------------------------------------------------------------------- kernels
#: examples visited consecutively: SDCA visits chunks of the (randomly permuted, see
#: :func:`~ratecons.canonical.rate_fold.example_design`) examples in a fresh random order every
#: epoch, which keeps the memory access local (a fully random order is ~10x slower on CSR data)
CHUNK = 64


def _row_dot(rows, i, u):
    """<x_i, u> for row i of ``rows``: a dense C-contiguous matrix or CSR arrays
    (indptr, indices, data). Compiled per layout through :func:`_row_dot_impl`."""
    raise NotImplementedError("_row_dot is compiled by numba only")


def _row_axpy(rows, i, alpha, u):
    """u += alpha x_i for row i of ``rows`` (dense matrix or CSR arrays)."""
    raise NotImplementedError("_row_axpy is compiled by numba only")


# The layout is a *type* (2-D array or tuple of CSR arrays), so numba compiles one branch-free
# kernel per layout; a runtime flag selecting between both loops kept the dense dot product
# from vectorizing (about 3x slower per row).
@overload(_row_dot, inline="always")
def _row_dot_impl(rows, i, u):
    if isinstance(rows, types.Array):
        def dense(rows, i, u):
            acc = 0.0
            for k in range(rows.shape[1]):
                acc += rows[i, k] * u[k]
            return acc
        return dense

    def csr(rows, i, u):
        indptr, indices, data = rows
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * u[indices[p]]
        return acc
    return csr


@overload(_row_axpy, inline="always")
def _row_axpy_impl(rows, i, alpha, u):
    if isinstance(rows, types.Array):
        def dense(rows, i, alpha, u):
            for k in range(rows.shape[1]):
                u[k] += alpha * rows[i, k]
        return dense

    def csr(rows, i, alpha, u):
        indptr, indices, data = rows
        for p in range(indptr[i], indptr[i + 1]):
            u[indices[p]] += alpha * data[p]
    return csr


@numba.njit(cache=True, inline="always")
def _best_coordinate(xi, z, q, a, bb, lam):
    """Exact maximizer over s in [-bb, a] of the coordinate dual objective.

    phi(s) = min(s/2 + bb, a - s/2) + (s - xi) z - (s - xi)^2 q / (2 lam), kink at a - bb.
    """
    kink = a - bb
    if q <= 0.0:  # zero feature vector: phi is linear on each side of the kink
        if z < -0.5:
            return -bb
        if z > 0.5:
            return a
        return kink
    s = xi + lam * (z + 0.5) / q
    if s <= kink:
        return s if s > -bb else -bb
    s = xi + lam * (z - 0.5) / q
    if s >= kink:
        return s if s < a else a
    return kink


#: floating-point reassociation (vectorized dot products and sums) and contraction (FMA) in
#: the kernels; no assumptions about inf/NaN (the dual target may be +inf)
FASTMATH = {"reassoc", "contract"}


@numba.njit(cache=True, fastmath=FASTMATH)
def _full_pass(rows, a, bb, xi, u, lam, bias, shrink, order, recompute, z):
    """(P, D, active count) at ``bias``, after recomputing u = sum xi_x x if ``recompute``;
    ``z`` (shape (N,)) receives the scores -<x, u>/lambda - bias (0 for examples with
    a_x = b_x = 0, which count nowhere).

    Without ``recompute``, u is the caller's (kept equal to sum xi_x x by the coordinate
    updates, up to rounding): the pass then reads every row once instead of twice.

    The active set (written to the front of ``order``) holds the examples SDCA keeps visiting:
    all of them, or with shrinking those whose xi_x is not already the derivative of l_x at
    z_x (one of -b_x, a_x - b_x, a_x) or whose z_x lies within ``shrink`` of a kink +-1/2.
    """
    n = a.size
    if recompute:
        u[:] = 0.0
        for i in range(n):
            if xi[i] != 0.0:
                _row_axpy(rows, i, xi[i], u)
    # the scores first (one tight loop over the rows), then the sums and the active set
    # without data-dependent branches (they mispredicted on about every row)
    for i in range(n):
        z[i] = -_row_dot(rows, i, u) / lam - bias if a[i] != 0.0 or bb[i] != 0.0 else 0.0
    uu = 0.0
    for k in range(u.size):
        uu += u[k] * u[k]
    loss = 0.0
    conj = 0.0
    sxi = 0.0
    count = 0
    for i in range(n):
        ai = a[i]
        bi = bb[i]
        x = xi[i]
        zi = z[i]
        loss += ai * max(0.5 + zi, 0.0) + bi * max(0.5 - zi, 0.0)
        conj += max(-0.5 * x - bi, 0.5 * x - ai)
        sxi += x
        plateau = -bi if zi < -0.5 else (ai if zi > 0.5 else ai - bi)
        keep = (abs(abs(zi) - 0.5) <= shrink or x != plateau) and (ai != 0.0 or bi != 0.0)
        order[count] = i
        count += keep
    primal = loss + 0.5 * uu / lam
    dual = -conj - bias * sxi - 0.5 * uu / lam
    return primal, dual, count


@numba.njit(cache=True, inline="always")
def _coordinate_gain(xi, s, z, q, a, bb, lam):
    """D(xi + (s - xi) e_x) - D(xi) for the coordinate step of :func:`_best_coordinate`."""
    d = s - xi
    new = min(0.5 * s + bb, a - 0.5 * s)
    old = min(0.5 * xi + bb, a - 0.5 * xi)
    return new - old + d * z - 0.5 * d * d * q / lam


@numba.njit(cache=True, fastmath=FASTMATH)
def _sdca_kernel(rows, sq, a, bb, xi, u, ubest, order, chunks, lam,
                 bias, tol, dual_target, shrink, max_epochs, check_every, balance, seed,
                 u_exact, out):
    """SDCA epochs until the duality gap <= tol or the dual value >= dual_target.

    Between two full passes (exact u, P, D, active set) it runs max(check_every,
    balance * N / active) epochs over the active set (so the full passes cost at most about
    2 / balance of the work), fewer if D, tracked through the coordinate gains, reaches the
    target or P_best - D <= tol (the full pass then confirms). u is recomputed from xi at the
    first full pass unless ``u_exact`` (the caller's u is sum xi_x x), and then maintained by
    the coordinate updates. Writes
    (epochs, best primal value, dual value, active count, full passes) to ``out`` and the u
    of the best primal point to ``ubest``.
    """
    np.random.seed(seed)  # noqa: NPY002 (numba's own generator, seeded explicitly)
    scores = np.empty(a.size)
    best, dual, count = _full_pass(rows, a, bb, xi, u, lam, bias,
                                   shrink, order, not u_exact, scores)
    copy_into(u, ubest)
    epochs = 0
    passes = 1
    while best - dual > tol and dual < dual_target and epochs < max_epochs:
        nchunks = (count + CHUNK - 1) // CHUNK
        for c in range(nchunks):
            chunks[c] = c
        running = dual
        rounds = max(check_every, int(balance * a.size / max(count, 1)))
        for _ in range(rounds):
            np.random.shuffle(chunks[:nchunks])  # noqa: NPY002
            gain = 0.0
            for c in range(nchunks):
                t0 = chunks[c] * CHUNK
                t1 = min(t0 + CHUNK, count)
                for t in range(t0, t1):
                    i = order[t]
                    z = -_row_dot(rows, i, u) / lam - bias
                    s = _best_coordinate(xi[i], z, sq[i], a[i], bb[i], lam)
                    if s != xi[i]:
                        gain += _coordinate_gain(xi[i], s, z, sq[i], a[i], bb[i], lam)
                        _row_axpy(rows, i, s - xi[i], u)
                        xi[i] = s
            epochs += 1
            running += gain
            left = best - running
            if epochs >= max_epochs or left <= tol or running >= dual_target:
                break
        primal, dual, count = _full_pass(rows, a, bb, xi, u, lam,
                                         bias, shrink, order, False, scores)
        passes += 1
        if primal < best:  # keep the best primal point seen (P(w(xi)) is not monotone)
            best = primal
            copy_into(u, ubest)
    out[0] = epochs
    out[1] = best
    out[2] = dual
    out[3] = count
    out[4] = passes


# ---------------------------------------------------------------------------- driver
@dataclass
class SDCAResult:
    """Outcome of one SDCA run at fixed (b, v).

    Attributes
    ----------
    w : ndarray
        Primal weights -(1/lambda) sum_x xi'_x x at the best primal value met at a gap check
        (P(w(xi)) is not monotone along SDCA's path; D(xi) is).
    xi : ndarray
        Dual variables (the array passed in, updated in place).
    primal, dual : float
        P(w) and D(xi) of the module docstring (the constant terms of Psi excluded).
    slope : float
        dD/db = -sum_x xi_x: the slope of the dual cut in b.
    epochs : int
    converged : bool
        Whether primal - dual <= tol.
    active : int
        Size of the active (unshrunk) set at the last full pass.
    """

    w: np.ndarray
    xi: np.ndarray
    primal: float
    dual: float
    slope: float
    epochs: int
    converged: bool
    active: int = 0

    @property
    def gap(self) -> float:
        return self.primal - self.dual


def require_l2(l2: float) -> None:
    """SDCA needs strong convexity in w: raise a clear error when lambda = 0."""
    if not l2 > 0.0:
        raise SolverError(
            "SDCA needs an l2 regularizer > 0 (its dual is defined through 1/lambda); this "
            "problem has l2 = 0, so its convex subproblems are LPs: use method='cvxpy' (HiGHS) "
            "or set LinearModel(l2=...) > 0."
        )


def sdca(design: ExampleDesign, a: np.ndarray, bcoef: np.ndarray, l2: float, bias: float,
         xi: np.ndarray | None = None, *, tol: float = 1e-6, dual_target: float = np.inf,
         shrink: float = 0.005, max_epochs: int = 1000, check_every: int = 3,
         balance: float = 2.0, seed: int = 0,
         work: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
         u_exact: bool = False) -> SDCAResult:
    """Minimize the weighted two-sided hinge SVM (eq. 16) over w at fixed bias by SDCA (eq. 19).

    Parameters
    ----------
    design : ExampleDesign
        Features of the distinct examples (dense or CSR).
    a, bcoef : ndarray, shape (N,)
        Nonnegative coefficients of max(0, 1/2 + z) and max(0, 1/2 - z) per example.
    l2 : float
        lambda > 0.
    bias : float
        The fixed b of z = <w, x> - b.
    xi : ndarray, optional
        Warm start of the dual variables; clipped into the box [-bcoef, a] in place. Zero
        when omitted.
    tol : float
        Target duality gap (absolute, in the units of P).
    dual_target : float
        Also stop once D(xi) >= dual_target (a deep enough cut for the b-cutting plane).
    shrink : float
        Shrinking: between full passes, skip examples whose xi_x already equals l_x'(z_x) and
        whose z_x is farther than ``shrink`` from the kinks +-1/2 (np.inf disables it). Every
        full pass recomputes the exact gap over all examples, so this changes speed only.
    max_epochs : int
        Epochs (over the active set) before giving up (``converged`` is then False).
    check_every, balance : int, float
        Between two full passes (exact u, duality gap over all examples, new active set) run
        max(check_every, balance * N / active) epochs over the active set, so the full passes
        (about two epochs over all N examples each) stay a bounded share of the work; fewer
        when the dual value, tracked through the exact coordinate gains, reaches
        ``dual_target`` or comes within ``tol`` of the best primal value.
    seed : int
        Seed of the visiting order.
    work : tuple of ndarray, optional
        Work arrays (u: float64 (d,), order: int64 (N,), chunks: int64 (N/CHUNK + 1,)) reused
        across calls; ``u`` holds sum_x xi_x x on return.
    u_exact : bool
        Whether ``work``'s u already equals sum_x xi_x x for the ``xi`` passed (e.g. the
        previous call's, on the same xi): the clip into the new box then updates u by the
        clipped coordinates only, instead of a pass over every example.

    Returns
    -------
    SDCAResult
    """
    require_l2(l2)
    a = np.ascontiguousarray(a, dtype=np.float64)
    bcoef = np.ascontiguousarray(bcoef, dtype=np.float64)
    if a.shape != (design.n,) or bcoef.shape != (design.n,):
        raise ValueError(f"coefficients must have shape ({design.n},); got {a.shape}, "
                         f"{bcoef.shape}.")
    if np.any(a < 0) or np.any(bcoef < 0):
        raise ValueError("hinge coefficients must be >= 0 (eq. 16).")
    if xi is None:
        xi = np.zeros(design.n)
    u, order, chunks = work if work is not None else sdca_work(design)
    u_exact = bool(u_exact and work is not None)
    if u_exact:
        moved = np.flatnonzero((xi < -bcoef) | (xi > a))
        if moved.size:
            step = np.clip(xi[moved], -bcoef[moved], a[moved]) - xi[moved]
            xi[moved] += step
            u += np.asarray(design.X[moved].T @ step).ravel()
    else:
        np.clip(xi, -bcoef, a, out=xi)
    ubest = np.empty_like(u)
    out = np.zeros(5)
    X = design.X
    rows = (X.indptr, X.indices, X.data) if design.is_sparse else np.ascontiguousarray(X)
    _sdca_kernel(rows, design.sq_norms, a, bcoef, xi, u, ubest,
                 order, chunks, float(l2), float(bias), float(tol), float(dual_target),
                 float(shrink), int(max_epochs), int(check_every), float(balance), int(seed),
                 u_exact, out)
    primal, dual = float(out[1]), float(out[2])
    if not (np.isfinite(primal) and np.isfinite(dual)):
        raise SolverError("SDCA produced a non-finite objective; check the features' scale.")
    return SDCAResult(w=-ubest / l2, xi=xi, primal=primal, dual=dual, slope=-float(xi.sum()),
                      epochs=int(out[0]), converged=primal - dual <= tol, active=int(out[3]))


def sdca_work(design: ExampleDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Work arrays for :func:`sdca` (allocate once, reuse across calls)."""
    n, d = design.X.shape
    return (np.zeros(d), np.zeros(n, dtype=np.int64),
            np.zeros(n // CHUNK + 1, dtype=np.int64))


def hinge_primal_dual(design: ExampleDesign, a: np.ndarray, bcoef: np.ndarray, l2: float,
                      w: np.ndarray, bias: float, xi: np.ndarray) -> tuple[float, float]:
    """P(w) at ``w`` and D(xi) at ``xi`` (NumPy, for checks): the two sides of the gap."""
    z = design.scores(w, bias)
    primal = (weighted_sum(a, np.maximum(0.0, 0.5 + z))
              + weighted_sum(bcoef, np.maximum(0.0, 0.5 - z)) + 0.5 * l2 * float(w @ w))
    s = np.asarray(design.X.T @ xi).ravel()
    conj = np.maximum(-0.5 * xi - bcoef, 0.5 * xi - a).sum()
    dual = float(-conj - bias * xi.sum() - 0.5 * (s @ s) / l2)
    return primal, dual
