"""Compiled kernels of the exact inner maximization (:mod:`ratecons.numerics.inner_max`) for
the KL and chi-square divergences (the IM procedure of appendix A.1 of the DRO paper)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["kl_inverse_temperature", "kl_inner", "chi2_inner"]


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


@numba.njit(cache=True)
def _top_count(z: np.ndarray) -> tuple[float, int]:
    """The largest loss and how many examples attain it (case alpha* = 0 of the IM procedure)."""
    zmax = z.max()
    mtop = 0
    for i in range(z.size):
        if z[i] >= zmax:
            mtop += 1
    return zmax, mtop


@numba.njit(cache=True)
def _uniform_on_top(p: np.ndarray, z: np.ndarray, zmax: float, mtop: int) -> None:
    """Step 1(a) of the IM procedure: P* uniform on the examples with the largest loss."""
    for i in range(z.size):
        if z[i] >= zmax:
            p[i] = 1.0 / mtop


@numba.njit(cache=True)
def kl_inner(z: np.ndarray, rho: float) -> tuple[np.ndarray, float, float, float, float, float,
                                                   int]:
    """Problem (4) for KL (IM procedure): returns (p, alpha, lambda, value, dual value,
    divergence, case) with case 0 for alpha* = 0 and 1 for the closed-form lambda* with Newton
    on alpha*."""
    m = z.size
    zmax, mtop = _top_count(z)
    p = np.zeros(m)
    d0 = np.log(m / mtop)
    if d0 <= rho:
        _uniform_on_top(p, z, zmax, mtop)
        return p, 0.0, zmax, zmax, zmax, d0, 0
    u = z - zmax
    beta = kl_inverse_temperature(u, rho, 1e-13, 500)
    total = 0.0
    for i in range(m):
        p[i] = np.exp(beta * u[i])
        total += p[i]
    value = 0.0
    div = 0.0
    for i in range(m):
        p[i] /= total
        value += p[i] * z[i]
        if p[i] > 0.0:
            div += p[i] * np.log(m * p[i])
    alpha = 1.0 / beta
    lam = zmax + alpha * (np.log(total) - np.log(m))
    return p, alpha, lam, value, alpha * rho + lam, div, 1


@numba.njit(cache=True)
def chi2_inner(z: np.ndarray, rho: float, order: np.ndarray) -> tuple[
        np.ndarray, float, float, float, float, float, int]:
    """Problem (4) for phi(s) = (s-1)^2 (IM procedure): returns (p, alpha, lambda, value, dual
    value, divergence, case) with case 0 for alpha* = 0, 2 for the exact support scan and -1
    when rounding left no consistent support (the caller then bisects).

    On the support T = top-k losses, s_m = M p_m = 1 + c (z_m - lambda) with c = 1/(2 alpha);
    step 2(b) gives c (mean_T - lambda) = (M-k)/k and step 2(c) c^2 SS_T = M rho - M + k -
    (M-k)^2/k (SS_T the sum of squared deviations on T, kept by Welford's update). The first k
    whose s is >= 0 on T and <= 0 on the next loss is the support (eq. 9, phi'(0) = -2).
    """
    m = z.size
    zmax, mtop = _top_count(z)
    p = np.zeros(m)
    d0 = (mtop * (m / mtop - 1.0) ** 2 + (m - mtop)) / m
    if d0 <= rho:
        _uniform_on_top(p, z, zmax, mtop)
        return p, 0.0, zmax, zmax, zmax, d0, 0
    scale = max(1.0, zmax - z.min())
    tol = 1e-9
    mean = 0.0
    ss = 0.0
    found = -1
    for j in range(m):
        k = j + 1
        x = z[order[j]]
        dlt = x - mean
        mean += dlt / k
        ss += dlt * (x - mean)
        rhs = m * rho - m + k - (m - k) ** 2 / k
        if rhs <= 0.0 or ss <= 1e-300:
            continue
        c = np.sqrt(rhs / ss)
        lam = mean - (m - k) / (k * c)
        last = 1.0 + c * (x - lam)
        nxt = -np.inf if k == m else 1.0 + c * (z[order[k]] - lam)
        if last >= -tol and nxt <= tol * scale:
            found = k
            break
    if found < 0:
        return p, np.nan, np.nan, np.nan, np.nan, np.nan, -1
    k = found
    mu = 0.0  # polish: two-pass sums on the support
    for j in range(k):
        mu += z[order[j]]
    mu /= k
    ss = 0.0
    for j in range(k):
        ss += (z[order[j]] - mu) ** 2
    c = np.sqrt((m * rho - m + k - (m - k) ** 2 / k) / ss)
    lam = mu - (m - k) / (k * c)
    total = 0.0
    for i in range(m):
        s = 1.0 + c * (z[i] - lam)
        p[i] = s if s > 0.0 else 0.0
        total += p[i]
    alpha = 1.0 / (2.0 * c)
    value = 0.0
    div = 0.0
    conj = 0.0
    for i in range(m):
        p[i] /= total
        value += p[i] * z[i]
        div += (m * p[i] - 1.0) ** 2
        t = (z[i] - lam) / alpha + 2.0
        conj += -1.0 + 0.25 * (t * t if t > 0.0 else 0.0)
    dual = alpha * rho + lam + alpha * conj / m
    return p, alpha, lam, value, dual, div / m, 2
