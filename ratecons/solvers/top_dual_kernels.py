"""The compiled loop of the ranking duals' coordinate ascent (Section 3.4, Algorithm 2).

Each iteration picks a coordinate k, computes for every other coordinate l the optimal step
of the update rule (16a) (two alphas), (16b) (an alpha and a beta) or (16c) (two betas) in
closed form (Props 3.7-3.9 for the hinge, B.1-B.3 for the quadratic hinge, B.4-B.9 for
Pat&Mat), keeps the pair with the largest increase of the dual objective and updates alpha,
beta, the dual scores s = K v (eq. 15) incrementally (two kernel columns) and, for Pat&Mat,
delta by (39) or (42); group moves (:func:`_cap_move`, :func:`_tie_move`) shift a whole group
of betas. Kernel columns come from memory or from the points, by the one kernel formula of
:func:`ratecons.kernels.kernel_from_dot`. Driven by
:func:`ratecons.solvers.top_dual.solve_top_dual`.
"""

from __future__ import annotations

import numba
import numpy as np

from ..kernel_loops import kernel_from_dot_compiled as _kernel_from_dot
from ..numerics.compiled_copy import copy_into

__all__ = ["epochs", "kernel_column"]

_INF = np.inf


@numba.njit(cache=True)
def kernel_column(k, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, out):
    """Entries (idx[k], idx[i]) of the signed kernel matrix K for every i of the working set
    ``idx``, read from memory or computed from the points (eq. 14) by the one kernel formula
    :func:`ratecons.kernels.kernel_from_dot`."""
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
        val = _kernel_from_dot(kcode, dot, sqn[gi], sqn[gk], gamma, degree, coef0)
        out[i] = signs[gi] * signs[gk] * val


@numba.njit(cache=True)
def _alpha_column(k, k_is_alpha, n_pos, colk, cola, idx, Kmat, use_matrix, P, sqn, signs,
                  kcode, gamma, degree, coef0):
    """The alpha coordinate of a cap or tie move (k itself when k is an alpha, else a random
    alpha) with its kernel column written into ``cola``; reuses ``colk`` when it is k."""
    ka = k if k_is_alpha else np.random.randint(n_pos)  # noqa: NPY002
    if ka == k:
        copy_into(colk, cola)
    else:
        kernel_column(ka, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0, cola)
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
            kernel_column(n_pos + j, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree,
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
def _best_pair(k, colk, diag, s, alpha, beta, C, K, hinge, patmat, theta, ntau, sum_alpha, dq,
               i1, i2, i3):
    """The coordinate l that rules (16a)-(16c) pair with k for the largest increase of the
    dual, with its step D and that gain (l = -1 when no step gains); i1, i2, i3 are the
    positions of the three largest betas (:func:`_top3`)."""
    n_pos = alpha.size
    m = s.size
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
    return best_l, best_D, best_gain


@numba.njit(cache=True)
def _apply_pair(k, l, D, alpha, beta, s, colk, coll, sumsq, sum_alpha):
    """The update of rule (16b) (an alpha and a beta) or (16a)/(16c) (two alphas or two
    betas) by D, with s = K v kept by the columns k and l; returns sum beta^2 and sum alpha."""
    n_pos = alpha.size
    k_is_alpha, l_is_alpha = k < n_pos, l < n_pos
    if k_is_alpha != l_is_alpha:  # (16b)
        for q in range(s.size):
            s[q] += D * (colk[q] + coll[q])
        i = k if k_is_alpha else l
        j = (l if k_is_alpha else k) - n_pos
        alpha[i] += D
        sumsq += (beta[j] + D) ** 2 - beta[j] ** 2
        beta[j] += D
        sum_alpha += D
    else:  # (16a) or (16c)
        for q in range(s.size):
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
    return sumsq, sum_alpha


@numba.njit(cache=True)
def _apply_cap_move(ka, cl, cD, alpha, beta, s, cola, coll, u, in_cap, n_cap, sum_alpha, K):
    """Apply :func:`_cap_move`'s step cD: alpha_ka and the capped betas (and beta cl, whose
    column is ``coll``) move together; returns sum alpha."""
    n_pos = alpha.size
    c = 1.0 - n_cap / K
    for q in range(s.size):
        s[q] += cD * (cola[q] + u[q] / K + c * coll[q])
    alpha[ka] += cD
    for j in range(beta.size):
        if in_cap[j]:
            beta[j] += cD / K
    if cl >= 0:
        beta[cl - n_pos] += c * cD
    return sum_alpha + cD


@numba.njit(cache=True)
def _apply_tie_move(ka, tp, tD, alpha, beta, s, cola, coll, u, in_cap, n_cap, sum_alpha,
                    theta):
    """Apply :func:`_tie_move`'s step tD: the tied betas move with alpha_ka (tp = ka) or
    against beta tp (whose column is ``coll``); returns sum alpha and delta by (39)."""
    n_pos = alpha.size
    if tp == ka:
        c = float(n_cap)
        copy_into(cola, coll)
        alpha[ka] += c * tD
        sum_alpha += c * tD
    else:
        c = -float(n_cap)
        beta[tp - n_pos] += c * tD
    for q in range(s.size):
        s[q] += tD * (u[q] + c * coll[q])
    for j in range(beta.size):
        if in_cap[j]:
            beta[j] += tD
    return sum_alpha, beta[_top3(beta)[0]] / theta


@numba.njit(cache=True)
def epochs(n_iter, seed, alpha, beta, state, s, diag, C, K, hinge, patmat, theta, ntau,
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
    capped = group_moves and not patmat and K > 1
    tied = group_moves and patmat and hinge
    in_cap = np.zeros(beta.size, dtype=np.bool_)
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
        kernel_column(k, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree, coef0,
                      colk)
        if capped:
            n_cap = _refresh_capped(beta, sum_alpha / K, in_cap, u, n_cap, n_pos, idx, Kmat,
                                    use_matrix, P, sqn, signs, kcode, gamma, degree, coef0,
                                    colx)
        i1, i2, i3 = _top3(beta)
        if tied:
            n_cap = _refresh_capped(beta, beta[i1], in_cap, u, n_cap, n_pos, idx, Kmat,
                                    use_matrix, P, sqn, signs, kcode, gamma, degree, coef0,
                                    colx)
        dq = 1.0 / (2.0 * max(delta, 1e-300) * theta * theta) if patmat and not hinge else 0.0
        best_l, best_D, best_gain = _best_pair(k, colk, diag, s, alpha, beta, C, K, hinge,
                                               patmat, theta, ntau, sum_alpha, dq, i1, i2, i3)
        moved = False
        if capped and 1 <= n_cap <= K:
            ka = _alpha_column(k, k < n_pos, n_pos, colk, cola, idx, Kmat, use_matrix, P, sqn,
                               signs, kcode, gamma, degree, coef0)
            cl, cD, cg = _cap_move(ka, alpha, beta, s, diag, cola, u, in_cap, n_cap,
                                   sum_alpha, C, K, hinge)
            if cg > best_gain:
                if cl >= 0:
                    kernel_column(cl, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma,
                                  degree, coef0, coll)
                else:
                    coll[:] = 0.0
                sum_alpha = _apply_cap_move(ka, cl, cD, alpha, beta, s, cola, coll, u, in_cap,
                                            n_cap, sum_alpha, K)
                moved = True
        if not moved and tied and n_cap >= 2:
            ka = _alpha_column(k, k < n_pos, n_pos, colk, cola, idx, Kmat, use_matrix, P, sqn,
                               signs, kcode, gamma, degree, coef0)
            tp, tD, tg = _tie_move(ka, alpha, beta, s, diag, cola, u, in_cap, n_cap, C,
                                   theta, ntau / theta)
            if tg > best_gain:
                if tp != ka:
                    kernel_column(tp, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma,
                                  degree, coef0, coll)
                sum_alpha, delta = _apply_tie_move(ka, tp, tD, alpha, beta, s, cola, coll, u,
                                                   in_cap, n_cap, sum_alpha, theta)
                moved = True
        if not moved:
            if best_l < 0:
                continue
            kernel_column(best_l, idx, Kmat, use_matrix, P, sqn, signs, kcode, gamma, degree,
                          coef0, coll)
            sumsq, sum_alpha = _apply_pair(k, best_l, best_D, alpha, beta, s, colk, coll,
                                           sumsq, sum_alpha)
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
