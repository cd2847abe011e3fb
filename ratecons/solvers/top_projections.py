"""Feasible starts of the ranking duals: projections onto their feasible sets.

The dual coordinate ascent (:mod:`ratecons.solvers.top_dual`) starts from the projection of a
random point onto the feasible set of (7) or (10): Thm 3.10 with Alg 1 for lambda(mu) and a
bisection on the decreasing h(mu) of (22) (TopPushK family), Thm B.10 (Pat&Mat, hinge) or the
projection onto {sum alpha = sum beta, alpha, beta >= 0} (Pat&Mat, quadratic hinge).
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

__all__ = ["lambda_of_mu", "project_patmat_hinge", "project_simplex_pair", "project_toppushk"]


@numba.njit(cache=True)
def lambda_of_mu(z: np.ndarray, mu: float, K: int) -> float:
    """Algorithm 1: a root lambda(mu) of g(lambda; mu) = sum_j clip_[0,mu](beta0_j + lambda)
    - K mu, with z = sort(-beta0) (non-decreasing)."""
    m = z.size
    i, j, d = 1, 0, 1  # 0-based versions of i = 2, j = 1
    lam = z[0]
    g = -K * mu
    while g < 0.0:
        zi = z[i] if i < m else np.inf
        if j >= m:
            break
        zj = z[j] + mu
        lam_old, g_old, d_old = lam, g, d
        if zi <= zj:
            g += d * (zi - lam)
            lam = zi
            d += 1
            i += 1
        else:
            g += d * (zj - lam)
            lam = zj
            d -= 1
            j += 1
        if g >= 0.0:
            # g is linear with slope d_old between the last two values of lambda
            if d_old > 0:
                return lam_old - g_old / d_old
            return lam
    return lam


@numba.njit(cache=True)
def _h_of_mu(alpha0: np.ndarray, beta0: np.ndarray, z: np.ndarray, mu: float, K: int,
             C: float) -> float:
    """h(mu) of eq. (22)."""
    lam = lambda_of_mu(z, mu, K)
    vbar = 0.0
    for j in range(beta0.size):
        vbar += max(beta0[j] + lam - mu, 0.0)
    vbar /= K
    h = -K * mu
    for i in range(alpha0.size):
        h += min(max(alpha0[i] - lam + vbar, 0.0), C)
    return h


def project_toppushk(alpha0: np.ndarray, beta0: np.ndarray, C: float, K: int,
                     tol: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """Projection (19) onto {sum alpha = sum beta, 0 <= alpha <= C, 0 <= beta <= sum alpha/K}.

    Theorem 3.10: zero if condition (20) holds; otherwise alpha and beta are clips of alpha0,
    beta0 shifted by (lambda, mu), where lambda = lambda(mu) (Algorithm 1) and mu is the root of
    the decreasing function h of (22), found by bisection (Lemma 3.11). ``C = inf`` is the
    quadratic hinge (no upper bound on alpha).
    """
    alpha0 = np.asarray(alpha0, dtype=np.float64)
    beta0 = np.asarray(beta0, dtype=np.float64)
    top = np.sort(beta0)[beta0.size - K:]
    if np.sum(top + alpha0.max()) <= 0.0:
        return np.zeros_like(alpha0), np.zeros_like(beta0)
    z = np.sort(-beta0)
    lo, hi = 0.0, 1.0
    while _h_of_mu(alpha0, beta0, z, hi, K, C) > 0.0:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _h_of_mu(alpha0, beta0, z, mid, K, C) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * max(1.0, hi):
            break
    mu = 0.5 * (lo + hi)
    lam = lambda_of_mu(z, mu, K)
    vbar = np.maximum(beta0 + lam - mu, 0.0).sum() / K
    alpha = np.clip(alpha0 - lam + vbar, 0.0, C)
    beta = np.clip(beta0 + lam, 0.0, mu)
    return _balance(alpha, beta, C, mu)


def _balance(alpha: np.ndarray, beta: np.ndarray, C: float, cap: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """Remove the rounding residue of sum alpha = sum beta left by the root finding, keeping
    every bound (beta's cap ``cap`` is at most sum(alpha)/K or delta theta)."""
    r = alpha.sum() - beta.sum()
    if r > 0:  # shrink alpha proportionally
        alpha = alpha * (beta.sum() / alpha.sum())
    elif r < 0:
        beta = beta * (alpha.sum() / beta.sum())
    return alpha, beta


def project_patmat_hinge(alpha0: np.ndarray, beta0: np.ndarray, delta0: float, C: float,
                         theta: float, tol: float = 1e-13
                         ) -> tuple[np.ndarray, np.ndarray, float]:
    """Projection (43) for Pat&Mat with the hinge (C1 = C, C2 = theta), Theorem B.10.

    lambda(mu) is explicit (45b) and h(mu) of (50) is non-decreasing (Lemma B.11); its root is
    found by bisection.
    """
    c2 = theta
    amax = alpha0.max()
    if delta0 <= -c2 * np.maximum(beta0 + amax, 0.0).sum():
        return np.zeros_like(alpha0), np.zeros_like(beta0), 0.0

    def lam_of(mu: float) -> float:
        return c2 * delta0 + c2 * c2 * np.maximum(beta0 - mu, 0.0).sum() - mu

    def h(mu: float) -> float:
        lam = lam_of(mu)
        cap = max(lam + mu, 0.0)
        return (np.clip(alpha0 - lam, 0.0, C).sum()
                - np.clip(beta0 + lam, 0.0, cap).sum())

    # lambda + mu = c2 delta0 + c2^2 sum (beta0 - mu)_+ is decreasing in mu; keep it positive
    lo, hi = -1.0, 1.0
    while h(lo) > 0.0:
        lo *= 2.0
    while h(hi) < 0.0 and lam_of(hi) + hi > 0.0:
        hi *= 2.0
    mu = _bisect(lambda m: h(m) < 0.0 and lam_of(m) + m > 0.0, lo, hi, tol)
    lam = lam_of(mu)
    cap = max(lam + mu, 0.0)
    alpha = np.clip(alpha0 - lam, 0.0, C)
    beta = np.clip(beta0 + lam, 0.0, cap)
    alpha, beta = _balance(alpha, beta, C, cap)
    return alpha, beta, max(float(beta.max(initial=0.0)) / theta, cap / theta)


def _bisect(below: Callable[[float], bool], lo: float, hi: float, tol: float) -> float:
    """Midpoint of the bracket [lo, hi] after bisecting on the predicate ``below`` (True means
    the root lies above the tested point), to relative width ``tol``."""
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if below(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * max(1.0, abs(hi)):
            break
    return 0.5 * (lo + hi)


def project_simplex_pair(alpha0: np.ndarray, beta0: np.ndarray, tol: float = 1e-13
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Projection onto {sum alpha = sum beta, alpha >= 0, beta >= 0}: alpha = (alpha0 - l)_+,
    beta = (beta0 + l)_+ with l the root of the decreasing sum difference (bisection)."""
    def f(lam: float) -> float:
        return np.maximum(alpha0 - lam, 0.0).sum() - np.maximum(beta0 + lam, 0.0).sum()

    lo = -max(1.0, float(np.abs(beta0).max()) + 1.0)
    hi = max(1.0, float(np.abs(alpha0).max()) + 1.0)
    lam = _bisect(lambda x: f(x) > 0.0, lo, hi, tol)
    alpha, beta = np.maximum(alpha0 - lam, 0.0), np.maximum(beta0 + lam, 0.0)
    return _balance(alpha, beta, np.inf, np.inf)
