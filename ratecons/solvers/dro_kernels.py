"""Compiled kernels of the DRO solvers (:mod:`ratecons.solvers.dro_stochastic`)."""

from __future__ import annotations

import numba
import numpy as np

try:  # numba's internal draw of NumPy's Fisher-Yates step (not a public name of numba's)
    from numba.np.random.random_methods import random_interval
except ImportError:  # a numba that moved it: its own permutation, slower to compile
    random_interval = None

from ..numerics.compiled_copy import copy_into
from ..numerics.phi_kernels import chi2_inner, kl_inner

__all__ = ["gssg_draws"]


def _shuffled_prefix(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """``rng.permutation(n)[:m]``, the same draws: NumPy's Fisher-Yates shuffle of range(n)
    (numba's ``random_interval``, as its ``Generator.shuffle``). numba's own ``permutation``
    compiles its shuffle for arrays of any shape and axis: 7.2 s on an empty cache, against
    1.1 s for this loop."""
    out = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = numba.types.intp(random_interval(rng.bit_generator, i))
        if i != j:
            out[i], out[j] = out[j], out[i]
    return out[:m]


def _permuted_prefix(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """``rng.permutation(n)[:m]`` by numba's own ``permutation``, where numba has no
    ``random_interval`` to import (the same draws, a longer first compile)."""
    return rng.permutation(n)[:m]


_permutation_prefix = numba.njit(cache=True)(
    _permuted_prefix if random_interval is None else _shuffled_prefix)


@numba.njit(cache=True)
def _sample_without_replacement(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """m distinct indices of range(n) in uniformly random order (Floyd's algorithm for small m,
    then a Fisher-Yates shuffle; a permutation prefix for large m)."""
    if m > 2048:
        return _permutation_prefix(rng, n, m)
    out = np.empty(m, dtype=np.int64)
    count = 0
    for j in range(n - m, n):
        t = rng.integers(0, j + 1)
        seen = False
        for i in range(count):
            if out[i] == t:
                seen = True
                break
        out[count] = j if seen else t
        count += 1
    for i in range(m - 1, 0, -1):
        k = rng.integers(0, i + 1)
        out[i], out[k] = out[k], out[i]
    return out


@numba.njit(cache=True)
def _margin_loss(m: float, loss: int) -> tuple[float, float]:
    """(l(m), l'(m)) for loss 0 = logistic, 1 = hinge, 2 = squared (as MARGIN_LOSSES)."""
    if loss == 0:
        if m > 0:
            e = np.exp(-m)
            return np.log1p(e), -e / (1.0 + e)
        e = np.exp(m)
        return -m + np.log1p(e), -1.0 / (1.0 + e)
    if loss == 1:
        return (1.0 - m, -1.0) if m < 1.0 else (0.0, 0.0)
    r = 1.0 - m
    return r * r, -2.0 * r


@numba.njit(cache=True)
def _subset_pmf(z: np.ndarray, rho: float, phi: int) -> np.ndarray:
    if phi == 0:
        return chi2_inner(z, rho, np.argsort(-z))[0]
    return kl_inner(z, rho)[0]


@numba.njit(cache=True)
def gssg_draws(rng: np.random.Generator, X: np.ndarray, indptr: np.ndarray,
               indices: np.ndarray, values: np.ndarray, sparse: bool, y: np.ndarray,
               theta: np.ndarray, fit_intercept: bool, loss: int, phi: int, rho: float,
               eta_c: float, delta: float, sizes: np.ndarray, cdf: np.ndarray, q: np.ndarray,
               draws: int) -> tuple[np.ndarray, int]:
    """The mean of ``draws`` independent estimates G(theta) of eqs. (7)-(8), and the examples
    touched: the compiled form of :func:`ratecons.solvers.dro_stochastic.gssg_estimate` (same
    levels, halves, singleton and rho_M = rho + eta_M; phi 0 = chi2, 1 = KL). Features are the dense
    ``X`` or, when ``sparse``, the CSR arrays (indptr, indices, values) (the other argument is
    an empty placeholder). Subsets whose losses are all equal get the uniform pmf, as in
    ``inner_maximize``."""
    n = y.size
    dim = theta.size
    d = dim - 1 if fit_intercept else dim
    g = np.zeros(dim)
    used = 0
    b = theta[d] if fit_intercept else 0.0
    for _ in range(draws):
        u = rng.random() * cdf[-1]
        level = 1
        while level < cdf.size and cdf[level - 1] <= u:
            level += 1
        m = sizes[level]
        half = sizes[level - 1]
        rows = np.empty(m + 1, dtype=np.int64)
        copy_into(_sample_without_replacement(rng, n, m), rows)
        rows[m] = rng.integers(0, n)
        z = np.empty(m + 1)
        slope = np.empty(m + 1)
        for i in range(m + 1):
            r = rows[i]
            f = -b
            if sparse:
                for k in range(indptr[r], indptr[r + 1]):
                    f += values[k] * theta[indices[k]]
            else:
                for j in range(d):
                    f += X[r, j] * theta[j]
            z[i], slope[i] = _margin_loss(y[r] * f, loss)
        e_m = eta_c * max(1.0 / m - 1.0 / n, 0.0) ** ((1.0 - delta) / 2.0)
        e_h = eta_c * max(1.0 / half - 1.0 / n, 0.0) ** ((1.0 - delta) / 2.0)
        w = np.zeros(m + 1)
        parts = ((0, m, rho + e_m, 1.0), (0, half, rho + e_h, -0.5),
                 (m - half, m, rho + e_h, -0.5))
        for lo, hi, rad, sign in parts:
            zz = z[lo:hi]
            zmax = zz.max()
            zmin = zz.min()
            if zmax - zmin <= 1e-12 * max(1.0, abs(zmax)):
                for i in range(lo, hi):
                    w[i] += sign / (hi - lo)
            else:
                p = _subset_pmf(zz.copy(), rad, phi)
                for i in range(lo, hi):
                    w[i] += sign * p[i - lo]
        for i in range(m):
            w[i] /= q[level - 1]
        w[m] = 1.0
        for i in range(m + 1):
            c = w[i] * slope[i] * y[rows[i]]
            if c != 0.0:
                r = rows[i]
                if sparse:
                    for k in range(indptr[r], indptr[r + 1]):
                        g[indices[k]] += c * values[k]
                else:
                    for j in range(d):
                        g[j] += c * X[r, j]
                if fit_intercept:
                    g[d] -= c
        used += m + 1
    return g / max(draws, 1), used
