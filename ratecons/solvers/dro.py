"""Solvers of the phi-divergence DRO program (Ghosh & Squillante, sections 2-4, appendix A.1).

Inner maximization
    :func:`inner_maximize` solves problem (4) exactly for one subset of size M by the IM
    procedure of appendix A.1: the alpha* = 0 case (uniform on the maximal losses) first; for
    KL, lambda* in closed form and a safeguarded Newton/bisection on alpha*; for chi-square,
    the two one-dimensional equations of steps 2(b)-(c) solved in closed form on each candidate
    support of the sorted losses (one sort and one scan: O(M log M)); for any other phi, nested
    bisection (Brent) on lambda and alpha. It returns P*, the dual variables (alpha*, lambda*),
    the dual value (an upper bound) and, through :func:`subset_gradient`, the gradient (6).

Outer algorithms (iteration (3), theta_{t+1} = theta_t - gamma_t G_t, gamma_t = gamma_0 a/(a+t))
    ``fsg``  full-support gradient (Namkoong & Duchi): G_t = grad R(theta_t) on all N examples;
    ``pssg`` progressively sampled subgradients (Ghosh et al. 2018): subsets of size
             M_t = ceil(m0 nu^t) growing to N;
    ``gssg`` Algorithm 1: the multilevel Monte Carlo estimator (7)-(8), unbiased for grad R;
    ``sgd``  fixed subset size M (the biased baseline of section 4).
    Subset problems use rho_M = rho + eta_M, eta_M = c (1/M - 1/N)^((1-delta)/2) (Theorem 2).

Every method records, at checkpoints spaced geometrically in cumulative samples, the robust
objective evaluated *exactly* on the full data (its cost is excluded from the reported time).
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from ..canonical.dro import DROProgram
from ..errors import ConvergenceWarning, parameter_error
from ..phi_divergence import CHI2, KL, Phi
from ..settings import ITERATION_LIMIT, OPTIMAL, TIME_LIMIT
from ..solution import Certificate, Solution
from .dro_kernels import chi2_inner, gssg_draws, kl_inner

__all__ = [
    "InnerSolution",
    "inner_maximize",
    "subset_gradient",
    "full_objective",
    "eta",
    "gssg_levels",
    "gssg_estimate",
    "solve_dro",
    "METHODS",
    "DEFAULT_R",
]

log = logging.getLogger(__name__)

#: the variance-time optimal r* = 2^(-3/2) of Blanchet & Glynn used in section 4
DEFAULT_R = 2.0 ** -1.5
METHODS = ("fsg", "pssg", "gssg", "sgd")


# ====================================================================== inner maximization
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


def _dual_value(z: np.ndarray, phi: Phi, rho: float, alpha: float, lam: float) -> float:
    with np.errstate(over="ignore"):
        conj = np.asarray(phi.conjugate((z - lam) / alpha), dtype=np.float64)
    return float(alpha * rho + lam + alpha * np.mean(conj))


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
    if phi is KL:
        return _from_kernel(kl_inner(z, float(rho)))
    if phi is CHI2:
        sol = _from_kernel(chi2_inner(z, float(rho), np.argsort(-z)))
        if sol is not None:
            return sol
    top = z >= zmax
    m_top = int(top.sum())
    # case 1: alpha* = 0, P* uniform on the maximal losses, if it lies in the ball
    d0 = (m_top * float(np.asarray(phi.phi(np.array([m / m_top])))[0])
          + (m - m_top) * phi.at_zero) / m
    if d0 <= rho:
        p = top / m_top
        return InnerSolution(p=p.astype(np.float64), alpha=0.0, lam=zmax, value=zmax,
                             dual_value=zmax, divergence=d0, case="alpha=0")
    return _inner_bisection(z, phi, rho)


# ====================================================================== gradients
def subset_gradient(
    form: DROProgram, theta: np.ndarray, index: np.ndarray | None, rho: float
) -> tuple[InnerSolution, np.ndarray]:
    """Solve (4) on the rows ``index`` (all rows if None) and return (P*, gradient (6))."""
    z, slope = form.losses(theta, index)
    sol = inner_maximize(z, form.phi, rho)
    return sol, form.weighted_gradient(sol.p, slope, index)


def full_objective(
    form: DROProgram, theta: np.ndarray
) -> tuple[float, np.ndarray, InnerSolution]:
    """F(theta) = R(theta) + (l2/2)||w||^2 exactly on all N examples, its gradient, and P*."""
    sol, g = subset_gradient(form, theta, None, form.rho)
    return (sol.value + form.regularizer(theta), g + form.regularizer_gradient(theta), sol)


def eta(m: int | np.ndarray, n: int, c: float, delta: float) -> np.ndarray | float:
    """eta_M = c (1/M - 1/N)^((1 - delta)/2), the radius inflation of Theorem 2."""
    return c * np.maximum(1.0 / np.asarray(m, dtype=np.float64) - 1.0 / n, 0.0) ** (
        (1.0 - delta) / 2.0)


def gssg_levels(n: int, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Subset sizes M_0..M_K and level probabilities q_1..q_K of Algorithm 1.

    K = ceil(log2 N) and M_k = ceil(N / 2^(K-k)), so M_0 = 1, M_K = N and M_k = 2^k when N is
    a power of two (the paper's case). q_k = r^(k-1) (1-r) / (1-r^K) (the truncated geometric
    law, normalized as in the proof of Theorem 4).
    """
    k_max = max(1, math.ceil(math.log2(n))) if n > 1 else 1
    sizes = np.array([math.ceil(n / 2 ** (k_max - k)) for k in range(k_max + 1)], dtype=np.int64)
    k = np.arange(1, k_max + 1)
    q = r ** (k - 1) * (1.0 - r) / (1.0 - r ** k_max)
    return sizes, q / q.sum()


def gssg_estimate(
    form: DROProgram, theta: np.ndarray, rng: np.random.Generator, sizes: np.ndarray,
    q: np.ndarray, eta_c: float, delta: float,
) -> tuple[np.ndarray, int]:
    """One draw of the estimator G(theta) of eqs. (7)-(8); returns (G, samples used).

    A level k is drawn with probability q_k; a subset of size M_k is drawn without replacement
    and split into a left and a right part of size M_{k-1} each (halves when M_k is even;
    otherwise they share one example, which keeps each part a uniform M_{k-1}-subset, so the
    telescoping sum of Proposition 3 stays exact for any N); an independent uniform singleton
    gives grad R_1. The four gradients (6) share one pass over the drawn rows.
    """
    n = form.n
    level = min(int(np.searchsorted(np.cumsum(q), rng.random() * q.sum(), side="right")),
                q.size - 1) + 1
    m, half = int(sizes[level]), int(sizes[level - 1])
    subset = rng.permutation(n) if m == n else rng.choice(n, size=m, replace=False)
    rows = np.append(subset, rng.integers(n))
    z, slope = form.losses(theta, rows)
    rho_m = form.rho + float(eta(m, n, eta_c, delta))
    rho_h = form.rho + float(eta(half, n, eta_c, delta))
    whole = inner_maximize(z[:m], form.phi, rho_m)
    left = inner_maximize(z[:half], form.phi, rho_h)
    right = inner_maximize(z[m - half:m], form.phi, rho_h)
    weights = np.empty(m + 1)
    weights[:m] = whole.p
    weights[:half] -= 0.5 * left.p
    weights[m - half:m] -= 0.5 * right.p  # eq. (7): Delta_k = grad R_k - (grad R_l + grad R_r)/2
    weights[:m] /= q[level - 1]
    weights[m] = 1.0  # eq. (8): G = grad R_1 + Delta_k / q_k
    return form.weighted_gradient(weights, slope, rows), m + 1


# ====================================================================== outer loop
def _checkpoint_grid(n: int) -> Callable[[int], int]:
    """Next checkpoint (in cumulative samples) after ``s``: 8 per decade, at least every N."""
    def nxt(s: int) -> int:
        return int(min(max(s * 10 ** 0.125, s + 1), s + n))
    return nxt


def solve_dro(
    form: DROProgram,
    method: str,
    *,
    seed: int | None = 0,
    callback: Callable[[dict[str, Any]], None] | None = None,
    step: float | str = "auto",
    a: float = 1000.0,
    max_iter: int | None = None,
    max_samples: float | None = None,
    time_limit: float | None = None,
    tol: float = 1e-6,
    target: float | None = None,
    theta0: np.ndarray | None = None,
    r: float = DEFAULT_R,
    nu: float = 1.001,
    m0: int = 10,
    batch: int = 32,
    draws: int = 1,
    eta_c: float = 0.1,
    delta: float = 0.01,
    warn: bool = True,
) -> Solution:
    """Minimize R(theta) + (l2/2)||w||^2 by iteration (3) with one of the gradient estimators.

    Parameters
    ----------
    form : DROProgram
    method : {"fsg", "pssg", "gssg", "sgd"}
    seed : int, optional
        Seeds every random draw (subsets, levels).
    callback : callable, optional
        Receives each checkpoint record (a dict: the history record plus ``method`` and the
        iterate ``theta``).
    step : float or "auto"
        gamma_0; gamma_t = gamma_0 a / (a + t) (section 4 uses gamma_0 = 1, a = 5000). "auto"
        is 1 / :meth:`DROProgram.smoothness_estimate`.
    a : float
        Decay constant of the step sizes.
    max_iter, max_samples, time_limit : stopping limits (iterations, cumulative examples
        touched, seconds of solver time). ``max_iter`` defaults to 500 for fsg and 20000 for
        the sampled methods.
    tol : float
        Stop with status "optimal" when the exact full gradient norm at a checkpoint is
        <= tol * max(1, its value at theta0).
    target : float, optional
        Stop at the first checkpoint whose exact objective is <= target (no warning then).
    theta0 : ndarray, optional
        Starting point (zeros by default).
    r : float in (1/4, 1/2)
        GSSG level parameter (default 2^(-3/2)).
    nu, m0 : PSSG growth factor and initial subset size.
    batch : SGD subset size.
    draws : GSSG estimates averaged per step (1 = Algorithm 1; more keeps it unbiased with
        1/draws of the variance).
    eta_c, delta : the inflation eta_M = eta_c (1/M - 1/N)^((1-delta)/2) of rho_M.
    warn : bool
        Emit a ConvergenceWarning when a limit stops the run before ``tol`` or ``target``.

    Returns
    -------
    Solution
        primal ``theta`` (the checkpoint with the lowest exact objective), ``weights`` (P* at
        it); dual ``alpha``, ``lambda``; history of checkpoints with ``iteration``,
        ``samples``, ``time``, ``objective``, ``robust_loss``, ``grad_norm``.
    """
    if method not in METHODS:
        raise parameter_error("method", "solve_dro", f"one of {METHODS}", method)
    if not 0.25 < r < 0.5:
        raise parameter_error("r", "gssg", "a float in (1/4, 1/2)", r)
    if nu < 1.0:
        raise parameter_error("nu", "pssg", "a float >= 1", nu)
    for name, value in (("m0", m0), ("batch", batch), ("draws", draws)):
        if int(value) != value or value < 1:
            raise parameter_error(name, method, "an int >= 1", value)
    if a <= 0:
        raise parameter_error("a", method, "a positive float", a)
    if eta_c < 0 or not 0 <= delta < 1:
        raise parameter_error("eta_c/delta", method, "eta_c >= 0 and delta in [0, 1)",
                              (eta_c, delta))
    n, dim = form.n, form.dim
    gamma0 = 1.0 / form.smoothness_estimate() if step == "auto" else float(step)
    if not np.isfinite(gamma0) or gamma0 <= 0:
        raise parameter_error("step", method, "a positive float or 'auto'", step)
    if max_iter is None:
        max_iter = 500 if method == "fsg" else 20000
    rng = np.random.default_rng(seed)
    theta = np.zeros(dim) if theta0 is None else np.array(theta0, dtype=np.float64).ravel()
    if theta.size != dim:
        raise parameter_error("theta0", method, f"an array of length {dim}", theta.shape)
    sizes, q = gssg_levels(n, r)
    compiled = method == "gssg" and (form.phi is CHI2 or form.phi is KL)
    if compiled:
        csr = sp.issparse(form.X)
        if csr:
            X_c = np.empty((0, 0))
            feats = (form.X.indptr.astype(np.int64), form.X.indices.astype(np.int64),
                     form.X.data.astype(np.float64))
        else:
            X_c = np.ascontiguousarray(form.X, dtype=np.float64)
            feats = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
        loss_code = {"logistic": 0, "hinge": 1, "squared": 2}[form.loss]
        phi_code = 0 if form.phi is CHI2 else 1
        cdf = np.cumsum(q)
        # compile (or load from cache) before any timing: zero draws return at once
        gssg_draws(rng, X_c, *feats, csr, form.y, theta, form.fit_intercept, loss_code,
                   phi_code, form.rho, eta_c, delta, sizes, cdf, q, 0)
    next_cp = _checkpoint_grid(n)

    history: list[dict[str, Any]] = []
    best: tuple[float, np.ndarray] = (np.inf, theta.copy())
    solver_time = 0.0
    samples = 0
    stop = "max_iter"
    grad0_scale = None
    cp_at = 0

    def checkpoint(it: int, theta_cp: np.ndarray, value: float | None = None,
                   grad: np.ndarray | None = None, sol: InnerSolution | None = None) -> float:
        nonlocal best, grad0_scale
        if value is None or grad is None or sol is None:
            value, grad, sol = full_objective(form, theta_cp)
        gnorm = float(np.linalg.norm(grad))
        if grad0_scale is None:
            grad0_scale = max(1.0, gnorm)
        rec = {"iteration": it, "samples": samples, "time": solver_time, "objective": value,
               "robust_loss": sol.value, "grad_norm": gnorm}
        history.append(rec)
        if value < best[0]:
            best = (value, theta_cp.copy())
        if callback is not None:
            callback(dict(rec, method=method, theta=theta_cp.copy()))
        return gnorm

    checkpoint(0, theta)
    checked = True  # whether the current theta has a checkpoint
    it = 0
    for it in range(1, max_iter + 1):
        start = time.perf_counter()
        gamma = gamma0 * a / (a + it - 1)
        if method == "fsg":
            value, g, sol = full_objective(form, theta)
            used = n
            if it > 1:  # the exact value at theta_{t} comes free with the full gradient
                solver_time += time.perf_counter() - start
                gnorm = checkpoint(it - 1, theta, value, g, sol)
                checked = True
                start = time.perf_counter()
                if gnorm <= tol * grad0_scale:
                    stop = "tol"
                    break
                if target is not None and value <= target:
                    stop = "target"
                    break
        elif method == "gssg":
            if compiled:
                g, used = gssg_draws(rng, X_c, *feats, csr, form.y, theta, form.fit_intercept,
                                     loss_code, phi_code, form.rho, eta_c, delta, sizes, cdf,
                                     q, draws)
            else:
                g, used = np.zeros(dim), 0
                for _ in range(draws):
                    g_i, used_i = gssg_estimate(form, theta, rng, sizes, q, eta_c, delta)
                    g, used = g + g_i / draws, used + used_i
            g = g + form.regularizer_gradient(theta)
        else:
            if method == "pssg":
                m = min(n, math.ceil(m0 * nu ** (it - 1)))
            else:
                m = min(batch, n)
            idx = rng.permutation(n) if m == n else rng.choice(n, size=m, replace=False)
            _, g = subset_gradient(form, theta, idx, form.rho + float(eta(m, n, eta_c, delta)))
            g = g + form.regularizer_gradient(theta)
            used = m
        theta = theta - gamma * g
        checked = False
        samples += used
        solver_time += time.perf_counter() - start
        if method != "fsg" and samples >= cp_at:
            cp_at = next_cp(samples)
            gnorm = checkpoint(it, theta)
            checked = True
            if gnorm <= tol * grad0_scale:
                stop = "tol"
                break
            if target is not None and history[-1]["objective"] <= target:
                stop = "target"
                break
        if max_samples is not None and samples >= max_samples:
            stop = "max_samples"
            break
        if time_limit is not None and solver_time >= time_limit:
            stop = "time_limit"
            break
    if not checked:
        checkpoint(it, theta)

    theta_best = best[1]
    value, grad, sol = full_objective(form, theta_best)
    gnorm = float(np.linalg.norm(grad))
    if gnorm <= tol * (grad0_scale or 1.0):
        status = OPTIMAL
    elif stop == "time_limit":
        status = TIME_LIMIT
    else:
        status = ITERATION_LIMIT
    if status != OPTIMAL and stop != "target" and warn:
        warnings.warn(
            f"{method}: stopped by {stop} after {it} iterations with gradient norm {gnorm:.3g} "
            f"(tol {tol:g} x {grad0_scale:.3g}); raise max_iter/time_limit or tune step/a.",
            ConvergenceWarning, stacklevel=3,
        )
    lower = None
    if not form.fit_intercept and form.l2 > 0:
        lower = value - gnorm ** 2 / (2.0 * form.l2)  # l2-strong convexity of F
    cert = Certificate(
        lower_bound=lower, upper_bound=value,
        gap=None if lower is None else value - lower, max_violation=0.0,
        details={"grad_norm": gnorm, "stop": stop, "iterations": it, "samples": samples,
                 "step0": gamma0, "a": a, "compiled": compiled,
                 "inner_case": sol.case,
                 "inner_dual_gap": sol.dual_value - sol.value, "divergence": sol.divergence,
                 "rho": form.rho, "target_reached": stop == "target"},
    )
    log.debug("%s: %s after %d iterations, objective %.8g", method, stop, it, value)
    return Solution(
        status=status, objective=value, primal={"theta": theta_best, "weights": sol.p},
        dual={"alpha": np.float64(sol.alpha), "lambda": np.float64(sol.lam)},
        certificate=cert, history=history, solver=f"ratecons.{method}", solve_time=solver_time,
    )
