"""Dual coordinate ascent for the TopPushK and Pat&Mat families (Section 3.4, Algorithm 2).

Each iteration picks a random coordinate k, computes for every other coordinate l the optimal
step of the update rule (16a) (two alphas), (16b) (an alpha and a beta) or (16c) (two betas) in
closed form (Props 3.7-3.9 for the hinge, B.1-B.3 for the quadratic hinge, B.4-B.9 for
Pat&Mat), keeps the pair with the largest increase of the dual objective and updates
alpha, beta, the dual scores s = K v (eq. 15) incrementally (two kernel columns) and, for
Pat&Mat, delta by (39) or (42). The start is the projection of a random point onto the
feasible set: Thm 3.10 with Alg 1 for lambda(mu) and a bisection on the decreasing h(mu) of
(22) (TopPushK family), Thm B.10 (Pat&Mat, hinge) or the projection onto
{sum alpha = sum beta, alpha, beta >= 0} (Pat&Mat, quadratic hinge).

Kernel models: the kernel matrix is precomputed when it fits in ``max_kernel_bytes`` and
otherwise computed by rows inside the compiled loop. Linear models (``rc.LinearModel``) never
form the m x m matrix: K = Q Q^T with Q = S P (eq. 14), w = Q^T v, s = Q w, so each epoch
picks a working set W (every beta > 0 and the most violating coordinates,
:func:`_decomposition_set`) and optimizes the dual on it with the other coordinates fixed,
then recomputes w and s in O(m d). By default (``block_solver="exact"``) the block's QP is
solved to optimality (:mod:`ratecons.solvers.top_block`, block coordinate ascent from v = 0,
W also holding every free alpha); with ``block_solver="pairs"`` the epoch forms Q_W Q_W^T in
O(|W|^2 d) and runs the compiled pairwise updates on it, from a feasible point with K nonzero
betas (:func:`_sparse_start`) so that W stays small. The pairwise steps converge slowly on
the rank-d kernel of a linear model (docs/ranking.md); the exact blocks do not have that
problem.

After every epoch (kernel models: a/2 iterations on a working set of a coordinates; linear
models: 2a) the scores are recomputed exactly and the primal objective (6)/(9) at w(v) and
the dual objective (7a)/(10a) give a duality gap; the run stops at a relative gap ``tol``.

Hot loops are compiled with numba (``cache=True``) and live in this module.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

from .. import settings
from ..caller import user_stacklevel
from ..canonical.top import TopForm
from ..errors import ConvergenceWarning, parameter_error
from ..solution import Certificate, Solution
from .top_block import restore_feasibility, solve_block

__all__ = [
    "solve_top_dual",
    "project_toppushk",
    "project_patmat_hinge",
    "project_simplex_pair",
    "lambda_of_mu",
]

logger = logging.getLogger(__name__)

_INF = np.inf


# ============================================================================ initialization
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


# ============================================================================ compiled loop
@numba.njit(cache=True)
def _column(k, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, out):
    """Entries (idx[k], idx[i]) of the signed kernel matrix K for every i of the working set
    ``idx``, read from memory or computed from the points (eq. 14)."""
    m = out.size
    gk = idx[k]
    if use_matrix:
        for i in range(m):
            out[i] = Kmat[gk, idx[i]]
        return
    d = P.shape[1]
    for i in range(m):
        gi = idx[i]
        dot = 0.0
        for f in range(d):
            dot += P[gi, f] * P[gk, f]
        if kcode == 0:
            val = dot
        elif kcode == 1:
            val = np.exp(-gamma * max(sqn[gi] + sqn[gk] - 2.0 * dot, 0.0))
        else:
            val = (gamma * dot + coef0) ** degree
        out[i] = signs[gi] * signs[gk] * val


@numba.njit(cache=True)
def _alpha_column(k, k_is_alpha, n_pos, colk, cola, idx, Kmat, use_matrix, P, sqn, signs,
                  kcode, gamma, degree, coef0):
    """The alpha coordinate of a cap or tie move (k itself when k is an alpha, else a random
    alpha) with its kernel column written into ``cola``; reuses ``colk`` when it is k."""
    ka = k if k_is_alpha else np.random.randint(n_pos)  # noqa: NPY002
    if ka == k:
        cola[:] = colk
    else:
        _column(ka, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, cola)
    return ka


@numba.njit(cache=True)
def _top3(beta):
    """Indices of the three largest entries of beta (-1 when absent)."""
    i1, i2, i3 = -1, -1, -1
    for j in range(beta.size):
        b = beta[j]
        if i1 < 0 or b > beta[i1]:
            i3, i2, i1 = i2, i1, j
        elif i2 < 0 or b > beta[i2]:
            i3, i2 = i2, j
        elif i3 < 0 or b > beta[i3]:
            i3 = j
    return i1, i2, i3


@numba.njit(cache=True)
def _max_excluding(beta, i1, i2, i3, e1, e2):
    """Largest beta_j with j not in {e1, e2} (0 when none: beta >= 0)."""
    for idx in (i1, i2, i3):
        if idx >= 0 and idx != e1 and idx != e2:
            return beta[idx]
    return 0.0


@numba.njit(cache=True)
def _quad_step(a, b, lb, ub):
    """Maximize -a D^2/2 - b D on [lb, ub] (eq. 17): returns (D, gain)."""
    if lb > ub:
        return 0.0, -1.0
    if a > 1e-14:
        D = min(max(-b / a, lb), ub)
    elif b > 0.0:
        D = lb
    else:
        D = ub
    if not np.isfinite(D):
        return 0.0, -1.0
    return D, -0.5 * a * D * D - b * D


@numba.njit(cache=True)
def _piecewise_step(a, b, lb, ub, pen, bm, x1, c1, x2, c2):
    """Maximize f(D) = -a D^2/2 - b D - pen (g(D) - g(0)) on [lb, ub], with
    g(D) = max(bm, x1 + c1 D, x2 + c2 D): the Pat&Mat hinge steps with delta = max(beta)/theta
    (Props B.5, B.6). f is concave, so its maximum is at an endpoint, a breakpoint of g or the
    stationary point of one of the pieces; all of them are evaluated."""
    if lb > ub:
        return 0.0, -1.0
    g0 = max(bm, max(x1, x2))
    cand = np.empty(9)
    nc = 0
    cand[nc] = lb
    nc += 1
    cand[nc] = ub
    nc += 1
    if c1 != 0.0:
        cand[nc] = (bm - x1) / c1
        nc += 1
    if c2 != 0.0:
        cand[nc] = (bm - x2) / c2
        nc += 1
    if c1 != c2:
        cand[nc] = (x2 - x1) / (c1 - c2)
        nc += 1
    if a > 1e-14:
        for slope in (0.0, c1, c2):
            cand[nc] = -(b + pen * slope) / a
            nc += 1
    best, bestf = 0.0, -1.0
    for q in range(nc):
        D = min(max(cand[q], lb), ub)
        if not np.isfinite(D):
            continue
        g = max(bm, max(x1 + c1 * D, x2 + c2 * D))
        f = -0.5 * a * D * D - b * D - pen * (g - g0)
        if f > bestf:
            best, bestf = D, f
    return best, bestf


@numba.njit(cache=True)
def _violation(alpha, beta, C, K, patmat, hinge, delta, theta, a_off):
    """Largest violation of the constraints of (7) / (10) at the current iterate (``a_off``:
    the sum of the alphas held fixed outside the working set)."""
    sa = alpha.sum() + a_off
    viol = abs(sa - beta.sum())
    for i in range(alpha.size):
        viol = max(viol, -alpha[i])
        if hinge:
            viol = max(viol, alpha[i] - C)
    for j in range(beta.size):
        viol = max(viol, -beta[j])
        if not patmat and K > 1:
            viol = max(viol, beta[j] - sa / K)
        if patmat and hinge:
            viol = max(viol, beta[j] - delta * theta)
    return viol


@numba.njit(cache=True)
def _refresh_capped(beta, cap, in_cap, u, n_cap, n_pos, idx, Kmat, use_matrix, P, sqn,
                    signs, kcode, gamma, degree, coef0, col):
    """Track J = {j : beta_j = sum(alpha)/K} (relative tolerance 1e-10) and u = K 1_J."""
    thr = cap * (1.0 - 1e-10)
    for j in range(beta.size):
        now = cap > 0.0 and beta[j] >= thr
        if now != in_cap[j]:
            _column(n_pos + j, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree,
                    coef0, col)
            sign = 1.0 if now else -1.0
            for q in range(u.size):
                u[q] += sign * col[q]
            in_cap[j] = now
            n_cap += 1 if now else -1
    return n_cap


@numba.njit(cache=True)
def _cap_move(ka, alpha, beta, s, diag, cola, u, in_cap, n_cap, sum_alpha, C, K, hinge):
    """Best step along d = e_ka + (1/K) 1_J + (1 - |J|/K) e_l (l a beta outside J, or no l
    when |J| = K): alpha_ka and every capped beta move with the cap sum(alpha)/K.

    The pairwise rules (16) cannot raise the cap together with the betas sitting on it (16b
    would push a capped beta over the cap or leave it behind), so Algorithm 2 alone can stall
    short of the optimum of (7) for K >= 2 (observed on linear TopPushK and on Gaussian
    TopPushK with the quadratic hinge); this move removes that stall. Returns
    (l, step, gain); l = -1 for the move without l, gain < 0 when no improving step exists.
    """
    n_pos = alpha.size
    n_t = beta.size
    c = 1.0 - n_cap / K
    sJ = 0.0
    uJ = 0.0
    minJ = np.inf
    for j in range(n_t):
        if in_cap[j]:
            sJ += s[n_pos + j]
            uJ += u[n_pos + j]
            minJ = min(minJ, beta[j])
    # two largest betas outside J (for the cap constraint of the other betas)
    o1, o2 = -1, -1
    for j in range(n_t):
        if not in_cap[j]:
            if o1 < 0 or beta[j] > beta[o1]:
                o2, o1 = o1, j
            elif o2 < 0 or beta[j] > beta[o2]:
                o2 = j
    a0 = diag[ka] + uJ / (K * K) + 2.0 * u[ka] / K
    b0 = s[ka] + sJ / K - 1.0
    lb0 = max(-alpha[ka], -K * minJ)
    ub0 = C - alpha[ka] if hinge else np.inf
    if not hinge:
        a0 += 1.0 / (2.0 * C)
        b0 += alpha[ka] / (2.0 * C)
    best_l, best_D, best_g = -1, 0.0, -1.0
    if n_cap == K:
        lb = max(lb0, -sum_alpha)
        D, g = _quad_step(a0, b0, lb, ub0)
        return -1, D, g
    for j in range(n_t):
        if in_cap[j]:
            continue
        l = n_pos + j
        bm = beta[o1] if o1 != j else (beta[o2] if o2 >= 0 else 0.0)
        a = a0 + c * c * diag[l] + 2.0 * c * cola[l] + 2.0 * c * u[l] / K
        b = b0 + c * s[l]
        lb = max(lb0, -beta[j] / c, K * bm - sum_alpha)
        ub = ub0
        if n_cap < K - 1:
            ub = min(ub, (sum_alpha / K - beta[j]) * K / (K - n_cap - 1.0))
        D, g = _quad_step(a, b, lb, ub)
        if g > best_g and D != 0.0:
            best_l, best_D, best_g = l, D, g
    return best_l, best_D, best_g


@numba.njit(cache=True)
def _tie_move(ka, alpha, beta, s, diag, cola, u, in_set, n_set, C, theta, pen):
    """Pat&Mat (hinge): best step moving all tied largest betas M together, with alpha_ka
    (d = 1_M + |M| e_ka) or with one beta l outside M (d = 1_M - |M| e_l) as partner.

    delta = max(beta)/theta (39) only decreases when every beta of M decreases, which no
    rule (16) does when |M| >= 2: this is where Algorithm 2 stalls on Pat&Mat with the hinge.
    Returns (partner, step, gain) with gain < 0 when no improving step exists.
    """
    n_pos = alpha.size
    nM = float(n_set)
    sM = 0.0
    uM = 0.0
    top = 0.0
    minM = np.inf
    o1, o2 = -1, -1
    for j in range(beta.size):
        if in_set[j]:
            sM += s[n_pos + j]
            uM += u[n_pos + j]
            top = max(top, beta[j])
            minM = min(minM, beta[j])
        elif o1 < 0 or beta[j] > beta[o1]:
            o2, o1 = o1, j
        elif o2 < 0 or beta[j] > beta[o2]:
            o2 = j
    bm1 = beta[o1] if o1 >= 0 else 0.0
    # partner alpha_ka
    a = uM + nM * nM * diag[ka] + 2.0 * nM * u[ka]
    b = sM + nM * s[ka] - nM * (1.0 + 1.0 / theta)
    lb = max(-minM, -alpha[ka] / nM)
    ub = (C - alpha[ka]) / nM
    best_p = ka
    best_D, best_g = _piecewise_step(a, b, lb, ub, pen, bm1, top, 1.0, top, 1.0)
    for j in range(beta.size):
        if in_set[j]:
            continue
        l = n_pos + j
        bm = bm1 if o1 != j else (beta[o2] if o2 >= 0 else 0.0)
        a = uM + nM * nM * diag[l] - 2.0 * nM * u[l]
        b = sM - nM * s[l]
        D, g = _piecewise_step(a, b, -minM, beta[j] / nM, pen, bm, top, 1.0, beta[j], -nM)
        if g > best_g and D != 0.0:
            best_p, best_D, best_g = l, D, g
    return best_p, best_D, best_g


@numba.njit(cache=True)
def _violating(up, alpha, beta, s, sum_alpha, C, K, hinge, patmat, theta, delta):
    """First coordinate of a maximal violating pair (the working-set choice of SMO).

    Every rule (16) moves one coordinate "up" and one "down" in y-space (y = +1 for alpha,
    -1 for beta) with first-order gain h_up - h_down, h_i = y_i dD/dv_i; returns the movable
    coordinate with the largest h (``up``) or the smallest h (not ``up``).
    """
    n_pos = alpha.size
    best, idx = -np.inf, -1
    for i in range(n_pos):
        g = 1.0 - s[i]
        if not hinge:
            g -= alpha[i] / (2.0 * C)
        if up:
            if (not hinge or alpha[i] < C) and g > best:
                best, idx = g, i
        elif alpha[i] > 0.0 and -g > best:
            best, idx = -g, i
    cap = sum_alpha / K if (not patmat and K > 1) else np.inf
    for j in range(beta.size):
        h = s[n_pos + j]  # h = -dD/dbeta_j
        if patmat:
            h -= 1.0 / theta
            if not hinge:
                h += beta[j] / (2.0 * max(delta, 1e-300) * theta * theta)
        if up:
            if beta[j] > 0.0 and h > best:
                best, idx = h, n_pos + j
        elif beta[j] < cap and -h > best:
            best, idx = -h, n_pos + j
    return idx


@numba.njit(cache=True)
def _epochs(n_iter, seed, alpha, beta, state, s, diag, C, K, hinge, patmat, theta, ntau,
            idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, check, greedy,
            group_moves, a_off, stats):
    """Run ``n_iter`` iterations of Algorithm 2 in place (``greedy``: first coordinate by
    :func:`_violating` two iterations in three; ``group_moves``: also :func:`_cap_move` and
    :func:`_tie_move`).

    The arrays may be a working set: ``a_off`` is the sum of the alphas held fixed outside it
    (the betas outside it are 0). state = [delta, sum beta^2]; stats = [max violation seen,
    accepted steps].
    """
    np.random.seed(seed)  # noqa: NPY002 - numba keeps its own seeded legacy RNG state
    n_pos = alpha.size
    m = s.size
    colk = np.empty(m)
    coll = np.empty(m)
    sum_alpha = alpha.sum() + a_off
    delta = state[0]
    sumsq = state[1]
    n_t = beta.size
    capped = group_moves and not patmat and K > 1
    tied = group_moves and patmat and hinge
    in_cap = np.zeros(n_t, dtype=np.bool_)
    u = np.zeros(m)  # u = K 1_J, the sum of the columns of the capped betas J
    colx = np.empty(m)
    cola = np.empty(m)
    n_cap = 0
    for it in range(n_iter):
        k = -1
        if greedy and it % 3 != 2:
            k = _violating(it % 3 == 0, alpha, beta, s, sum_alpha, C, K, hinge, patmat,
                           theta, delta)
        if k < 0:
            k = np.random.randint(m)  # noqa: NPY002
        _column(k, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, colk)
        if capped:
            n_cap = _refresh_capped(beta, sum_alpha / K, in_cap, u, n_cap, n_pos, idx, Kmat,
                                    use_matrix, P, sqn, signs, kcode, gamma, degree, coef0,
                                    colx)
        i1, i2, i3 = _top3(beta)
        if tied:
            n_cap = _refresh_capped(beta, beta[i1], in_cap, u, n_cap, n_pos, idx, Kmat,
                                    use_matrix, P, sqn, signs, kcode, gamma, degree, coef0,
                                    colx)
        if patmat and not hinge:
            dq = 1.0 / (2.0 * max(delta, 1e-300) * theta * theta)
        else:
            dq = 0.0
        best_gain = 1e-300
        best_l = -1
        best_D = 0.0
        k_is_alpha = k < n_pos
        for l in range(m):
            if l == k:
                continue
            l_is_alpha = l < n_pos
            if k_is_alpha and l_is_alpha:  # rule (16a): alpha_k += D, alpha_l -= D
                a = colk[k] + diag[l] - 2.0 * colk[l]
                b = s[k] - s[l]
                ak, al = alpha[k], alpha[l]
                if hinge:
                    lb = max(-ak, al - C)
                    ub = min(C - ak, al)
                else:
                    a += 1.0 / C
                    b += (ak - al) / (2.0 * C)
                    lb, ub = -ak, al
                D, gain = _quad_step(a, b, lb, ub)
            elif k_is_alpha != l_is_alpha:  # rule (16b): alpha_i += D, beta_j += D
                i = k if k_is_alpha else l
                j = (l if k_is_alpha else k) - n_pos
                a = colk[k] + diag[l] + 2.0 * colk[l]
                b = s[k] + s[l] - 1.0
                ai, bj = alpha[i], beta[j]
                lb = max(-ai, -bj)
                ub = C - ai if hinge else _INF
                if not hinge:
                    a += 1.0 / (2.0 * C)
                    b += ai / (2.0 * C)
                if not patmat:
                    if K > 1:
                        bmax = _max_excluding(beta, i1, i2, i3, j, -1)
                        lb = max(lb, K * bmax - sum_alpha)
                        ub = min(ub, (sum_alpha - K * bj) / (K - 1))
                    D, gain = _quad_step(a, b, lb, ub)
                elif hinge:
                    bmax = _max_excluding(beta, i1, i2, i3, j, -1)
                    D, gain = _piecewise_step(a, b - 1.0 / theta, lb, ub, ntau / theta,
                                              bmax, bj, 1.0, bj, 1.0)
                else:
                    a += dq
                    b += -1.0 / theta + bj * dq
                    D, gain = _quad_step(a, b, lb, ub)
            else:  # rule (16c): beta_k += D, beta_l -= D
                jk, jl = k - n_pos, l - n_pos
                a = colk[k] + diag[l] - 2.0 * colk[l]
                b = s[k] - s[l]
                bk, bl = beta[jk], beta[jl]
                lb, ub = -bk, bl
                if not patmat:
                    if K > 1:
                        lb = max(lb, bl - sum_alpha / K)
                        ub = min(ub, sum_alpha / K - bk)
                    D, gain = _quad_step(a, b, lb, ub)
                elif hinge:
                    bmax = _max_excluding(beta, i1, i2, i3, jk, jl)
                    D, gain = _piecewise_step(a, b, lb, ub, ntau / theta, bmax,
                                              bk, 1.0, bl, -1.0)
                else:
                    a += 2.0 * dq
                    b += (bk - bl) * dq
                    D, gain = _quad_step(a, b, lb, ub)
            if gain > best_gain and D != 0.0:
                best_gain, best_l, best_D = gain, l, D
        if capped and 1 <= n_cap <= K:
            ka = _alpha_column(k, k_is_alpha, n_pos, colk, cola, idx, Kmat, use_matrix, P, sqn,
                               signs, kcode, gamma, degree, coef0)
            cl, cD, cg = _cap_move(ka, alpha, beta, s, diag, cola, u, in_cap, n_cap,
                                   sum_alpha, C, K, hinge)
            if cg > best_gain:
                if cl >= 0:
                    _column(cl, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree,
                            coef0, coll)
                else:
                    coll[:] = 0.0
                c = 1.0 - n_cap / K
                for q in range(m):
                    s[q] += cD * (cola[q] + u[q] / K + c * coll[q])
                alpha[ka] += cD
                sum_alpha += cD
                for j in range(n_t):
                    if in_cap[j]:
                        beta[j] += cD / K
                if cl >= 0:
                    beta[cl - n_pos] += c * cD
                stats[1] += 1.0
                if check:
                    stats[0] = max(stats[0], _violation(alpha, beta, C, K, patmat, hinge,
                                                        delta, theta, a_off))
                continue
        if tied and n_cap >= 2:
            ka = _alpha_column(k, k_is_alpha, n_pos, colk, cola, idx, Kmat, use_matrix, P, sqn,
                               signs, kcode, gamma, degree, coef0)
            tp, tD, tg = _tie_move(ka, alpha, beta, s, diag, cola, u, in_cap, n_cap, C,
                                   theta, ntau / theta)
            if tg > best_gain:
                if tp == ka:
                    c = float(n_cap)
                    coll[:] = cola
                    alpha[ka] += c * tD
                    sum_alpha += c * tD
                else:
                    c = -float(n_cap)
                    _column(tp, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree,
                            coef0, coll)
                    beta[tp - n_pos] += c * tD
                for q in range(m):
                    s[q] += tD * (u[q] + c * coll[q])
                for j in range(n_t):
                    if in_cap[j]:
                        beta[j] += tD
                delta = beta[_top3(beta)[0]] / theta
                stats[1] += 1.0
                if check:
                    stats[0] = max(stats[0], _violation(alpha, beta, C, K, patmat, hinge,
                                                        delta, theta, a_off))
                continue
        if best_l < 0:
            continue
        l = best_l
        D = best_D
        _column(l, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, coll)
        l_is_alpha = l < n_pos
        if k_is_alpha != l_is_alpha:  # (16b)
            for q in range(m):
                s[q] += D * (colk[q] + coll[q])
            i = k if k_is_alpha else l
            j = (l if k_is_alpha else k) - n_pos
            alpha[i] += D
            sumsq += (beta[j] + D) ** 2 - beta[j] ** 2
            beta[j] += D
            sum_alpha += D
        else:  # (16a) or (16c)
            for q in range(m):
                s[q] += D * (colk[q] - coll[q])
            if k_is_alpha:
                alpha[k] += D
                alpha[l] -= D
            else:
                jk, jl = k - n_pos, l - n_pos
                sumsq += (beta[jk] + D) ** 2 - beta[jk] ** 2
                sumsq += (beta[jl] - D) ** 2 - beta[jl] ** 2
                beta[jk] += D
                beta[jl] -= D
        if patmat:
            if hinge:  # (39)
                delta = beta[_top3(beta)[0]] / theta
            else:  # (42)
                delta = np.sqrt(max(sumsq, 0.0) / (4.0 * theta * theta * ntau))
        stats[1] += 1.0
        if check:
            stats[0] = max(stats[0], _violation(alpha, beta, C, K, patmat, hinge, delta,
                                                theta, a_off))
    state[0] = delta
    state[1] = sumsq


# ============================================================================ driver
def _exact_scores(form: TopForm, v: np.ndarray, Kmat: np.ndarray | None, P: Any,
                  block_bytes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """s = K v recomputed from scratch (and w for linear models), against drift."""
    sg = form.signs
    if form.linear_model:
        w = np.asarray(P.T @ (sg * v)).ravel()
        return sg * np.asarray(P @ w).ravel(), w
    supp = np.flatnonzero(v)
    if Kmat is not None:
        return Kmat[:, supp] @ v[supp], None
    out = np.empty(form.m)
    rows = max(1, block_bytes // (8 * max(supp.size, 1)))
    for start in range(0, form.m, rows):
        idx = np.arange(start, min(form.m, start + rows))
        out[idx] = form.signed_block(idx, supp) @ v[supp]
    return out, None


def _working_set(form: TopForm, v: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
    """Shrinking (as in LIBSVM): the working set of the next epoch.

    With h_i = y_i dD/dv_i (y = +1 for alpha, -1 for beta), a rule (16) moves one coordinate
    up and one down with first-order gain h_up - h_down. A coordinate at a fixed bound that
    can only move down (beta = 0, alpha = C) is left out when h_i >= max{h : can move up};
    one that can only move up (alpha = 0) when h_i <= min{h : can move down}. Betas above 0
    always stay (their cap sum(alpha)/K moves). The duality gap is always computed on the
    full problem, so a wrong guess only costs an epoch.
    """
    n = form.n_pos
    alpha, beta = v[:n], v[n:]
    h_a, h_b = _gradients(form, v, s, delta)
    hinge = form.surrogate == "hinge"
    up_a = alpha < form.C if hinge else np.ones(n, dtype=bool)
    m_up = max(float(np.max(h_a[up_a], initial=-np.inf)),
               float(np.max(h_b[beta > 0], initial=-np.inf)))
    cap = _beta_cap(form, alpha)
    down_b = beta < cap
    m_down = min(float(np.min(h_a[alpha > 0], initial=np.inf)),
                 float(np.min(h_b[down_b], initial=np.inf)))
    keep_b = (beta > 0) | (h_b < m_up)
    keep_a = ~(((alpha <= 0) & (h_a <= m_down))
               | (hinge & (alpha >= form.C) & (h_a >= m_up)))
    if keep_a.sum() < 1:
        keep_a[np.argmax(h_a)] = True
    if keep_b.sum() < 2:
        keep_b[np.argsort(h_b)[:2]] = True
    return np.concatenate([np.flatnonzero(keep_a), n + np.flatnonzero(keep_b)])


def _gradients(form: TopForm, v: np.ndarray, s: np.ndarray, delta: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """h_i = y_i dD/dv_i for the alphas (y = +1) and the betas (y = -1) of the dual (7)/(10)."""
    n = form.n_pos
    alpha, beta = v[:n], v[n:]
    h_a = 1.0 - s[:n]
    h_b = s[n:].copy()
    if form.surrogate == "quadratic_hinge":
        h_a -= alpha / (2.0 * form.C)
    if form.family == "patmat":
        h_b -= 1.0 / form.theta
        if form.surrogate == "quadratic_hinge" and delta > 0:
            h_b += beta / (2.0 * delta * form.theta**2)
    return h_a, h_b


def _beta_cap(form: TopForm, alpha: np.ndarray) -> float:
    """The cap sum(alpha)/K of the betas in (7c) (inf when there is none)."""
    return alpha.sum() / form.K if (form.family == "toppushk" and form.K > 1) else np.inf


def _decomposition_set(form: TopForm, v: np.ndarray, s: np.ndarray, delta: float,
                       size: int, keep_free: bool = False) -> np.ndarray:
    """Working set of the linear-model path: every beta > 0 (the coordinates outside the set
    keep their values, and only betas at 0 can stay fixed without constraining the cap
    sum(alpha)/K or delta) plus the ``size / 2`` coordinates that can move "up" (y-space)
    with the largest h and the ``size / 2`` that can move "down" with the smallest h (the
    maximal violating pairs of SMO, as in SVMlight's decomposition). ``keep_free`` also keeps
    every alpha strictly inside its bounds (the exact block solver: an optimum with more free
    alphas than the set holds would otherwise be out of reach) and offers betas at 0 even
    when the cap is 0 (the block raises it with its alphas)."""
    n = form.n_pos
    alpha, beta = v[:n], v[n:]
    h_a, h_b = _gradients(form, v, s, delta)
    up = alpha < form.C if form.surrogate == "hinge" else np.ones(n, dtype=bool)
    up_idx = np.flatnonzero(up)
    free_b = np.flatnonzero((beta <= 0.0) & ((beta < _beta_cap(form, alpha)) | keep_free))
    down_a = np.flatnonzero(alpha > 0.0)
    half = max(1, size // 2)
    pick = [n + np.flatnonzero(beta > 0.0)]
    groups = [(up_idx, -h_a[up_idx], half)]
    if keep_free:  # alphas and betas ranked apart: the caps' multipliers shift their h apart
        pick.append(np.flatnonzero((alpha > 0.0) & up))
        # at least twice as many betas as the threshold needs can move: K of them under
        # the cap sum(alpha)/K; more than n~ tau for Pat&Mat, whose dual gains from delta
        # only then (sum beta / theta - delta n~ tau with beta <= delta theta)
        need = (int(form.K) if form.family == "toppushk"
                else int(np.ceil(form.n_tilde * float(form.tau))))
        n_b = max(1, half // 2, 2 * need)
        groups += [(down_a, h_a[down_a], max(1, half // 2)), (n + free_b, h_b[free_b], n_b)]
    else:
        groups.append((np.concatenate([down_a, n + free_b]),
                       np.concatenate([h_a[down_a], h_b[free_b]]), half))
    for idx, key, count in groups:
        if idx.size > count:
            idx = idx[np.argpartition(key, count - 1)[:count]]
        pick.append(idx)
    act = np.unique(np.concatenate(pick))
    if np.count_nonzero(act < n) == 0:
        act = np.union1d(act, [int(np.argmax(h_a))])
    return act


def _scaled_primal(form: TopForm, s: np.ndarray, wnorm2: float) -> tuple[float, float]:
    """The best upper bound on (6)/(9) along the ray of w(v): min over c in [0, 2] of the
    primal at c w(v) (scores c s, threshold t(c s), ||c w||^2), and its c.

    At the optimum c = 1, but before it the primal at w(v) lags the dual (the threshold is a
    nonsmooth function of the scores) while a shorter or longer w is often much better; c = 0
    is w = 0, the candidate of a trivial optimum. Every c gives a valid upper bound, so the
    certificate stays sound whatever c the bounded Brent search returns.
    """
    n = form.n_pos

    def primal(c: float) -> float:
        return form.primal_c(c * s[:n], -c * s[n:], c * c * wnorm2)

    found = minimize_scalar(primal, bounds=(0.0, 2.0), method="bounded",
                            options={"xatol": 1e-10})
    return min([(primal(1.0), 1.0), (primal(0.0), 0.0), (float(found.fun), float(found.x))])


def _sparse_start(form: TopForm, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    """A feasible start of the linear-model path whose betas are few: every alpha = C/2 and
    the mass n_+ C/2 spread evenly over K random betas (TopPushK family: all on the cap
    sum(alpha)/K) or over ceil(tau n~) of them (Pat&Mat family, delta by (39)/(42))."""
    n, nt = form.n_pos, form.n_tilde
    alpha = np.full(n, 0.5 * form.C)
    count = int(form.K) if form.family == "toppushk" else int(np.ceil(form.tau * nt))
    count = min(max(count, 1), nt)
    beta = np.zeros(nt)
    beta[rng.choice(nt, count, replace=False)] = alpha.sum() / count
    delta = form.optimal_delta(beta) if form.family == "patmat" else 0.0
    return alpha, beta, delta


def _initial_point(form: TopForm, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, float]:
    n, nt, C = form.n_pos, form.n_tilde, form.C
    alpha0 = rng.uniform(0.0, C, n)
    beta0 = rng.uniform(0.0, C * n / nt, nt)
    if form.family == "toppushk":
        c1 = C if form.surrogate == "hinge" else np.inf
        alpha, beta = project_toppushk(alpha0, beta0, c1, int(form.K))
        return alpha, beta, 0.0
    if form.surrogate == "hinge":
        delta0 = float(beta0.max()) / form.theta
        alpha, beta, delta = project_patmat_hinge(alpha0, beta0, delta0, C, form.theta)
        return alpha, beta, max(delta, form.optimal_delta(beta))
    alpha, beta = project_simplex_pair(alpha0, beta0)
    return alpha, beta, form.optimal_delta(beta)


def solve_top_dual(
    form: TopForm,
    *,
    tol: float = 1e-6,
    max_epochs: int = 2000,
    time_limit: float = np.inf,
    seed: int | None = 0,
    max_kernel_bytes: int = 2**30,
    check_feasibility: bool = False,
    selection: str = "greedy",
    group_moves: bool = True,
    shrinking: bool = True,
    working_set_size: int | None = None,
    block_solver: str = "exact",
    callback: Callable[[dict[str, Any]], None] | None = None,
) -> Solution:
    """Algorithm 2 on the dual (7) or (10) of ``form``.

    Parameters
    ----------
    tol : float
        Stop when (primal - dual) / primal <= tol (objectives (6)/(9) and (7a)/(10a)).
    max_epochs : int
        Limit on epochs; an epoch is a/2 iterations on a working set of a coordinates (each
        iteration updates two coordinates; fewer when kernel columns are computed by rows, so
        that ``time_limit`` is checked often enough), followed by an exact recomputation of the
        scores and of the duality gap.
    time_limit : float
        Wall-clock limit in seconds.
    seed : int, optional
        Seeds the random start and the random coordinates k.
    max_kernel_bytes : int
        Precompute the m x m kernel matrix when it fits in this many bytes; otherwise kernel
        columns are computed in the compiled loop.
    check_feasibility : bool
        Check every constraint after every update (for tests); the largest violation is
        reported in ``certificate.details["max_violation_any_step"]``.
    selection : {"greedy", "random"}
        How the first coordinate k of an iteration is picked: at random (Algorithm 2 as
        published) or, in turn, the most violating "up" coordinate, the most violating
        "down" coordinate (the first-order working-set rule of SMO) and a random one; the
        second coordinate is always the best l.
    group_moves : bool
        Also try the moves of :func:`_cap_move` (TopPushK family, K >= 2) and
        :func:`_tie_move` (Pat&Mat, hinge) that shift a whole group of betas; without them
        (``False``, Algorithm 2 as published) the ascent can stall with a duality gap.
    shrinking : bool
        Kernel models: run each epoch on a working set without the betas stuck at 0
        (:func:`_working_set`). Linear models always use :func:`_decomposition_set`.
    working_set_size : int, optional
        Linear models: coordinates picked by :func:`_decomposition_set` per epoch (besides
        the betas > 0; default max(400, m / 50)); the epoch runs 2a iterations (a = |W|) on
        the block Q_W Q_W^T of the kernel matrix, so its cost is O(a^2 d + m d) and no m x m
        matrix is formed.
    block_solver : {"exact", "pairs"}
        Linear models: how an epoch optimizes its working set. ``"exact"`` (default) solves
        the block's QP to optimality (:func:`ratecons.solvers.top_block.solve_block`: block
        coordinate ascent, as SVMlight with its inner QP solver); ``"pairs"`` runs 2a of
        Algorithm 2's pairwise updates on it, which stall on low-rank linear kernels (see
        docs/ranking.md).
    callback : callable, optional
        Receives one dict per epoch (epoch, primal, dual, gap, time).
    """
    if selection not in ("greedy", "random"):
        raise parameter_error("selection", "dual_ca", "'greedy' or 'random'", selection)
    if working_set_size is not None and (isinstance(working_set_size, bool)
                                         or not isinstance(working_set_size, (int, np.integer))
                                         or working_set_size < 2):
        raise parameter_error("working_set_size", "dual_ca", "an int >= 2 (or None)",
                              working_set_size)
    if block_solver not in ("exact", "pairs"):
        raise parameter_error("block_solver", "dual_ca", "'exact' or 'pairs'", block_solver)
    if not tol > 0:
        raise parameter_error("tol", "dual_ca", "a float > 0", tol)
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    linear = form.linear_model and form.gram is None
    use_matrix = not linear and form.gram_bytes <= max_kernel_bytes
    Kmat: np.ndarray | None = None
    P: Any = np.zeros((1, 1))
    Q: Any = None
    if linear or not use_matrix:
        if form.gram is not None:
            raise MemoryError(f"the precomputed {form.m} x {form.m} kernel matrix does not fit "
                              f"in max_kernel_bytes={max_kernel_bytes}.")
        P = form.points()
    signs = form.signs
    if linear:  # rows of S P: the working-set blocks of K are Q_W Q_W^T (eq. 14)
        Q = (sp.diags(signs) @ P).tocsr() if sp.issparse(P) else signs[:, None] * P
    if use_matrix:
        Kmat = form.signed_gram()
    P_dense = (np.zeros((1, 1)) if use_matrix or linear
               else (P.toarray() if sp.issparse(P) else np.ascontiguousarray(P)))
    sqn = np.einsum("ij,ij->i", P_dense, P_dense) if P_dense.shape[0] > 1 else np.zeros(1)
    diag = form.diagonal()
    exact_blocks = linear and block_solver == "exact"
    if exact_blocks:  # v = 0 is feasible; the first block moves it
        alpha, beta, delta = np.zeros(form.n_pos), np.zeros(form.n_tilde), 0.0
    else:
        alpha, beta, delta = (_sparse_start if linear else _initial_point)(form, rng)
    v = np.concatenate([alpha, beta])
    s, w = _exact_scores(form, v, Kmat, P, max_kernel_bytes)
    n = form.n_pos
    hinge = form.surrogate == "hinge"
    patmat = form.family == "patmat"
    K = int(form.K) if form.K is not None else 1
    ntau = form.n_tilde * float(form.tau) if patmat else 0.0
    state = np.array([delta, float(beta @ beta)])
    stats = np.zeros(2)
    history: list[dict[str, Any]] = []
    iterations = 0
    status = settings.ITERATION_LIMIT
    primal = dual = np.nan
    scale = 1.0
    epoch = 0
    spec = form.kernel
    n_active = form.m
    ws_size = max(400, form.m // 50) if working_set_size is None else int(working_set_size)
    for epoch in range(1, max_epochs + 1):
        if linear:
            act = _decomposition_set(form, v, s, state[0], ws_size, keep_free=exact_blocks)
        elif shrinking and epoch > 1:
            act = _working_set(form, v, s, state[0])
        else:
            act = np.arange(form.m)
        n_active = act.size
        na = int(np.searchsorted(act, n))
        alpha, beta = v[act[:na]].copy(), v[act[na:]].copy()
        a_off = float(v[:n].sum() - alpha.sum())
        if exact_blocks:
            Qa = Q[act]
            v_act, block_status = solve_block(form, Qa, v[act], na, w, a_off,
                                              float(v[n:].sum() - beta.sum()))
            if block_status in ("Solved", "AlmostSolved") and np.all(np.isfinite(v_act)):
                v[act] = v_act  # otherwise the block keeps its values; W grows below
                v = restore_feasibility(form, v)
            if patmat:
                state[0] = form.optimal_delta(v[n:])
            if check_feasibility:
                stats[0] = max(stats[0], form.dual_violation(v, state[0] if patmat else None))
            s, w = _exact_scores(form, v, Kmat, P, max_kernel_bytes)
            iterations += 1
        else:
            s_act = s[act].copy()
            chunk = max(1, n_active // 2)
            if linear:  # the block of K on the working set, O(a^2 d)
                Qa = Q[act]
                block = Qa @ Qa.T
                block = block.toarray() if sp.issparse(block) else np.asarray(block)
                loop_idx, loop_mat, loop_use = np.arange(n_active), block, True
                chunk = 2 * n_active
            else:
                loop_idx, loop_use = act, use_matrix
                loop_mat = Kmat if Kmat is not None else np.zeros((1, 1))
            if not loop_use:  # columns cost O(a d): keep epochs short enough for time_limit
                chunk = max(1, min(chunk, int(2e8 // max(1, n_active * P_dense.shape[1]))))
            _epochs(chunk, int(rng.integers(2**31 - 1)), alpha, beta, state, s_act, diag[act],
                    form.C, K, hinge, patmat, form.theta, ntau, loop_idx, loop_mat, loop_use,
                    P_dense, sqn, signs, spec.code if spec.code < 3 else 0, spec.gamma,
                    spec.degree, spec.coef0, check_feasibility, selection == "greedy",
                    group_moves, a_off, stats)
            iterations += chunk
            if linear:  # w += Q_W^T (v_W' - v_W), s = Q w: O(a d + m d), one pass over the data
                w = w + np.asarray(Qa.T @ (np.concatenate([alpha, beta]) - v[act])).ravel()
                s = np.asarray(Q @ w).ravel()
            v[act[:na]] = alpha
            v[act[na:]] = beta
            if not linear:
                s, w = _exact_scores(form, v, Kmat, P, max_kernel_bytes)
        primal, scale = (_scaled_primal(form, s, float(v @ s)) if linear
                         else (form.primal_from_dual_scores(v, s), 1.0))
        dual = form.dual_c(v, s, state[0] if patmat else None)
        gap = (primal - dual) / max(abs(primal), 1e-300)
        elapsed = time.perf_counter() - start
        record = {"epoch": epoch, "iterations": iterations, "active": n_active,
                  "primal": form.lam * primal,
                  "dual": form.lam * dual, "relative_gap": gap, "time": elapsed}
        history.append(record)
        if callback is not None:
            callback(record)
        logger.debug("epoch %d: primal %.10g dual %.10g gap %.3g", epoch, primal, dual, gap)
        if gap <= tol:
            status = settings.OPTIMAL
            break
        if exact_blocks and len(history) > 1 and gap > 0.5 * history[-2]["relative_gap"]:
            ws_size = min(2 * ws_size, form.m)  # the gap did not halve: larger blocks
        if elapsed >= time_limit:
            status = settings.TIME_LIMIT
            break
    if linear and not exact_blocks:  # w and the objectives without the updates' rounding
        s, w = _exact_scores(form, v, Kmat, P, max_kernel_bytes)
        primal, scale = _scaled_primal(form, s, float(v @ s))
        dual = form.dual_c(v, s, state[0] if patmat else None)
        gap = (primal - dual) / max(abs(primal), 1e-300)
    if linear:  # the model is c w(v), the upper bound's point
        s, w = scale * s, scale * w
    if status != settings.OPTIMAL:
        warnings.warn(f"dual coordinate ascent stopped ({status}) after {epoch} epochs with "
                      f"relative duality gap {gap:.3g} > tol={tol:g}.", ConvergenceWarning,
                      stacklevel=user_stacklevel())
    alpha, beta = v[:n], v[n:]
    t = form.threshold_from_scores(-s[n:])
    lam = form.lam
    details = {"epochs": epoch, "iterations": iterations, "relative_gap": gap,
               "primal_scale": scale,
               "kernel_matrix": ("working-set blocks (linear)" if linear
                                 else "precomputed" if use_matrix else "computed by rows"),
               "accepted_steps": int(stats[1]), "C": form.C}
    if check_feasibility:
        details["max_violation_any_step"] = float(stats[0])
    cert = Certificate(lower_bound=lam * dual, upper_bound=lam * primal,
                       gap=lam * (primal - dual),
                       max_violation=form.dual_violation(v, state[0] if patmat else None),
                       details=details)
    primal_vars: dict[str, Any] = {"alpha": alpha, "beta": beta, "t": t, "scores": s}
    if patmat:
        primal_vars["delta"] = float(state[0])
    if w is not None:
        primal_vars["w"] = w
    return Solution(status=status, objective=lam * primal, primal=primal_vars,
                    certificate=cert, history=history, solver="dual coordinate ascent (Alg 2)",
                    solve_time=time.perf_counter() - start)
