"""Compiled kernels of the DRO solvers (:mod:`ratecons.solvers.dro`)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["kl_inverse_temperature"]


@numba.njit(cache=True)
def _kl_moments(u: np.ndarray, beta: float) -> tuple[float, float, float]:
    """For p = softmax(beta u) (u <= 0): (log sum exp(beta u), E_p u, Var_p u), two passes."""
    s0 = 0.0
    s1 = 0.0
    for i in range(u.size):
        e = np.exp(beta * u[i])
        s0 += e
        s1 += e * u[i]
    mean = s1 / s0
    var = 0.0
    for i in range(u.size):
        dv = u[i] - mean
        var += np.exp(beta * u[i]) * dv * dv
    return np.log(s0), mean, var / s0


@numba.njit(cache=True)
def kl_inverse_temperature(u: np.ndarray, rho: float, tol: float, max_iter: int) -> float:
    """beta = 1/alpha* solving KL(softmax(beta u) || U_M) = rho (step 2(c) of the IM procedure
    for KL, where lambda* is closed form).

    f(beta) = beta E_p u - log sum exp(beta u) + log M increases from 0 (beta = 0) to
    log(M / M') (M' = number of maxima of u), with f'(beta) = beta Var_p u. Newton steps kept
    inside a bisection bracket. ``u`` must satisfy max(u) = 0 and rho < log(M / M').
    """
    m = u.size
    logm = np.log(m)
    lo = 0.0
    hi = np.inf
    mean0 = 0.0
    for i in range(m):
        mean0 += u[i]
    mean0 /= m
    var0 = 0.0
    for i in range(m):
        var0 += (u[i] - mean0) ** 2
    var0 /= m
    beta = np.sqrt(2.0 * rho / var0)  # small-rho expansion f ~ beta^2 Var / 2
    for _ in range(max_iter):
        lse, mean, var = _kl_moments(u, beta)
        f = beta * mean - lse + logm
        if f > rho:
            hi = beta
        else:
            lo = beta
        if abs(f - rho) <= tol * rho:
            return beta
        slope = beta * var
        step_ok = slope > 0.0
        nxt = beta - (f - rho) / slope if step_ok else beta
        if not step_ok or not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * beta
        if np.isfinite(hi) and hi - lo <= 1e-15 * hi:
            return 0.5 * (lo + hi)
        beta = nxt
    return beta
