"""The exact inner maximization of the robust loss (Ghosh & Squillante, problem (4), App. A.1).

For losses z_1..z_M on a subset, problem (4) is

    max_P  sum_m p_m z_m   s.t.  D_phi(P, U_M) <= rho,  sum_m p_m = 1,  p >= 0,

solved exactly by the IM procedure of appendix A.1: the alpha* = 0 case (uniform on the maximal
losses) first; for KL, lambda* in closed form and a safeguarded Newton/bisection on alpha*; for
chi-square, the two one-dimensional equations of steps 2(b)-(c) solved in closed form on each
candidate support of the sorted losses (one sort and one scan: O(M log M)); for any other phi,
nested bisection (Brent) on lambda and alpha. It returns P*, the dual variables
(alpha*, lambda*), the dual value (an upper bound) and the divergence.

Spec objects (the robust loss's value, worst-case rates), the canonical forms and the DRO
solvers all call it; it imports none of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from ..errors import parameter_error
from .phi import CHI2, KL, Phi

__all__ = ["InnerSolution", "alpha_zero_divergence", "conjugate_sum", "conjugate_total",
           "dual_objective", "inner_maximize"]


@dataclass
class InnerSolution:
    """The solution of problem (4) on one subset.

    Attributes
    ----------
    p : ndarray
        The worst-case pmf P* (sums to 1).
    alpha, lam : float
        Dual variables of the divergence and normalization constraints in (5) (alpha = 0 in
        case 1 of the IM procedure).
    value : float
        sum_m p_m z_m, the robust loss on the subset (a lower bound: P* is feasible).
    dual_value : float
        alpha rho + lambda + (alpha/M) sum_m phi*((z_m - lambda)/alpha) (max z when
        alpha = 0), an upper bound by weak duality.
    divergence : float
        D_phi(P*, U_M).
    case : str
        "alpha=0", "chi2", "kl" or "bisection".
    """

    p: np.ndarray
    alpha: float
    lam: float
    value: float
    dual_value: float
    divergence: float
    case: str


def dual_objective(alpha: float, lam: float, rho: float, conjugate_mean: float) -> float:
    """The dual (5) of problem (4), g(alpha, lambda) = alpha rho + lambda + alpha (1/M)
    sum_m phi*((z_m - lambda) / alpha), from the conjugate's mean ``conjugate_mean`` (an upper
    bound of the inner maximum at any alpha > 0, by weak duality)."""
    return float(alpha * rho + lam + alpha * conjugate_mean)


def conjugate_sum(phi: Phi, z: np.ndarray, alpha: float, lam: float) -> float:
    """sum_m phi*((z_m - lambda) / alpha), the conjugate term of :func:`dual_objective` (over
    one partition of the values, on Dask data)."""
    return conjugate_total(phi, (z - lam) / alpha)


def conjugate_total(phi: Phi, t: np.ndarray) -> float:
    """sum_m phi*(t_m), for a caller that already holds t = (z - lambda) / alpha."""
    with np.errstate(over="ignore"):
        return float(np.sum(np.asarray(phi.conjugate(t), dtype=np.float64)))


def _dual_value(z: np.ndarray, phi: Phi, rho: float, alpha: float, lam: float) -> float:
    return dual_objective(alpha, lam, rho, conjugate_sum(phi, z, alpha, lam) / z.size)


def _finish(z: np.ndarray, phi: Phi, rho: float, s: np.ndarray, alpha: float, lam: float,
            case: str) -> InnerSolution:
    p = s / s.sum()
    return InnerSolution(
        p=p, alpha=alpha, lam=lam, value=float(p @ z),
        dual_value=_dual_value(z, phi, rho, alpha, lam), divergence=phi.divergence(p), case=case,
    )


_CASES = {0: "alpha=0", 1: "kl", 2: "chi2"}


def _from_kernel(out: tuple) -> InnerSolution | None:
    p, alpha, lam, value, dual, div, case = out
    if case < 0:
        return None
    return InnerSolution(p=p, alpha=float(alpha), lam=float(lam), value=float(value),
                         dual_value=float(dual), divergence=float(div), case=_CASES[case])


def _inner_bisection(z: np.ndarray, phi: Phi, rho: float) -> InnerSolution:
    """Steps 2(a)-(d) for a general phi: lambda*(alpha) by bisection (Brent) on the
    normalization, alpha* by bisection on the divergence equation, in log alpha."""
    zmin, zmax = float(np.min(z)), float(np.max(z))
    spread = zmax - zmin
    xtol = 1e-15 * max(1.0, abs(zmax), abs(zmin))

    def weights(alpha: float) -> tuple[np.ndarray, float]:
        def excess(lam: float) -> float:
            return float(np.mean(phi.weights_from_dual((z - lam) / alpha))) - 1.0

        lo, hi = zmin - 1e-12 * spread, zmax
        if excess(hi) >= 0:
            lam = hi
        else:
            lam = brentq(excess, lo, hi, xtol=xtol, rtol=1e-15, maxiter=500)
        return phi.weights_from_dual((z - lam) / alpha), lam

    def gap(log_alpha: float) -> float:
        s, _ = weights(math.exp(log_alpha))
        return phi.divergence(s / s.sum()) - rho

    a_hi = math.log(spread)
    while gap(a_hi) > 0:
        a_hi += math.log(4.0)
    a_lo = a_hi - math.log(4.0)
    while gap(a_lo) < 0:
        a_lo -= math.log(4.0)
        if a_lo < a_hi - 200:
            break
    log_alpha = brentq(gap, a_lo, a_hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    alpha = math.exp(log_alpha)
    s, lam = weights(alpha)
    return _finish(z, phi, rho, s, alpha, lam, "bisection")


def alpha_zero_divergence(phi: Phi, m: int, m_top: int) -> float:
    """D_phi(P, U_M) of P uniform on the m_top maximal losses of M (case alpha* = 0 of the IM
    procedure): (m_top phi(M / m_top) + (M - m_top) phi(0)) / M; for KL log(M / m_top) and
    for chi-square (m_top (M / m_top - 1)^2 + M - m_top) / M, the compiled kernels' forms
    (:mod:`ratecons.numerics.phi_kernels`), so that every path takes the same case."""
    if phi is KL:
        return math.log(m / m_top)
    if phi is CHI2:
        return (m_top * (m / m_top - 1.0) ** 2 + (m - m_top)) / m
    return (m_top * float(np.asarray(phi.phi(np.array([m / m_top])))[0])
            + (m - m_top) * phi.at_zero) / m


def inner_maximize(z: np.ndarray, phi: Phi, rho: float) -> InnerSolution:
    """Exact solution of problem (4) for losses ``z`` (the IM procedure, appendix A.1).

    Parameters
    ----------
    z : ndarray, shape (M,)
        Losses l(theta, xi_m) on the subset.
    phi : Phi
    rho : float
        The divergence radius of the subset problem (rho_M).

    Returns
    -------
    InnerSolution
    """
    z = np.asarray(z, dtype=np.float64).ravel()
    m = z.size
    if m == 0:
        raise parameter_error("z", "inner_maximize", "a nonempty array of losses", z)
    if not np.all(np.isfinite(z)):
        raise parameter_error("z", "inner_maximize", "finite losses", "non-finite values")
    zmax, zmin = float(np.max(z)), float(np.min(z))
    if zmax - zmin <= 1e-12 * max(1.0, abs(zmax)):
        # losses equal up to rounding: U_M is optimal (D = 0, alpha* = 0)
        return InnerSolution(p=np.full(m, 1.0 / m), alpha=0.0, lam=zmax, value=float(z.mean()),
                             dual_value=zmax, divergence=0.0, case="alpha=0")
    # the compiled kernels load numba: imported on first use, so that `import ratecons` stays
    # light (tests/house/test_import_time.py)
    from .phi_kernels import chi2_inner, kl_inner

    if phi is KL:
        return _from_kernel(kl_inner(z, float(rho)))
    if phi is CHI2:
        sol = _from_kernel(chi2_inner(z, float(rho), np.argsort(-z)))
        if sol is not None:
            return sol
    top = z >= zmax
    m_top = int(top.sum())
    # case 1: alpha* = 0, P* uniform on the maximal losses, if it lies in the ball
    d0 = alpha_zero_divergence(phi, m, m_top)
    if d0 <= rho:
        p = top / m_top
        return InnerSolution(p=p.astype(np.float64), alpha=0.0, lam=zmax, value=zmax,
                             dual_value=zmax, divergence=d0, case="alpha=0")
    return _inner_bisection(z, phi, rho)
