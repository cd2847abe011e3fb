"""Primal-dual interior-point method for linear ranking-at-the-top models (small d).

The primal (3) of a linear model with R(w) = (l2/2)||w||^2 is the QP (lowering of
:mod:`ratecons.solvers.top_primal`, scaled by n_+)

    minimize   (n_+ l2 / 2) ||w||^2 + sum_i g xi_i [+ xi_i^2]          (hinge [quadratic])
    subject to xi_k - a_k^T y - b_k >= 0,  xi >= 0     (one row per example, k = 1..N)
               h - F y - E xi >= 0                     (one coupling row)

with y = (w, t, r) (TopPushK family: a_i = (-x_i^+, 1, 0), b_i = 1 for the hinge rows of
(6b); a_j = (x~_j, 0, -1), b_j = 0 and the coupling row K t - K r - sum u >= 0 for the LP
form of the threshold (6c)) or y = (w, t) (Pat&Mat with the hinge: a_j = theta (x~_j, -1),
b_j = 1 and n~ tau - sum u >= 0 for (9)). Every slack xi_k appears in one row only, so the
Newton system of Mehrotra's predictor-corrector method reduces, after eliminating xi, the
multipliers and the slacks (all diagonal), to a (p + 1) x (p + 1) quasi-definite system
(p = dim y): one iteration costs O(N p^2) (the product A^T M A) and never forms anything of
size N x N. This is the space the dual coordinate ascent (Alg 2) cannot use: its m = n_+ + n~
coordinates are coupled through a rank-d kernel matrix.

The row multipliers are the dual variables of (7)/(10) (alpha = mu / lambda); once the
iterate is nearly optimal, :func:`ratecons.solvers.top_primal.dual_bound` projects them onto
the dual feasible set and gives a certified lower bound; the upper bound is (3) at w.
"""

from __future__ import annotations

import time
from typing import Any

import numba
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .. import settings
from ..canonical.top import TopForm
from ..errors import SolverError, parameter_error
from ..solution import Certificate, Solution
from .top_primal import dual_bound, primal_objective

__all__ = ["solve_top_ipm"]


def _structure(form: TopForm) -> dict[str, Any]:
    """Rows a_k, b_k, the coupling row (F, E, h) and the objective of the scaled QP."""
    Xp = form.X_pos.toarray() if sp.issparse(form.X_pos) else np.asarray(form.X_pos, float)
    Xt = form.X_tilde.toarray() if sp.issparse(form.X_tilde) else np.asarray(form.X_tilde,
                                                                                float)
    npos, nt, d = Xp.shape[0], Xt.shape[0], Xp.shape[1]
    if form.family == "toppushk":
        K = float(form.K)
        p = d + 2
        A = np.empty((npos + nt, p))
        A[:npos, :d] = -Xp
        A[:npos, d] = 1.0
        A[:npos, d + 1] = 0.0
        A[npos:, :d] = Xt
        A[npos:, d] = 0.0
        A[npos:, d + 1] = -1.0
        b = np.concatenate([np.ones(npos), np.zeros(nt)])
        F = np.zeros(p)
        F[d], F[d + 1] = -K, K
        h = 0.0
    else:
        th = form.theta
        p = d + 1
        A = np.empty((npos + nt, p))
        A[:npos, :d] = -Xp
        A[:npos, d] = 1.0
        A[npos:, :d] = th * Xt
        A[npos:, d] = -th
        b = np.ones(npos + nt)
        F = np.zeros(p)
        h = form.n_tilde * float(form.tau)
    E = np.concatenate([np.zeros(npos), np.ones(nt)])
    hdiag = np.zeros(p)
    hdiag[:d] = npos * form.lam
    hinge = form.surrogate == "hinge"
    g = np.concatenate([np.full(npos, 1.0 if hinge else 0.0), np.zeros(nt)])
    q = np.concatenate([np.full(npos, 0.0 if hinge else 2.0), np.zeros(nt)])
    return {"A": A, "b": b, "F": F, "E": E, "h": h, "hdiag": hdiag, "g": g, "q": q,
            "d": d, "p": p, "npos": npos}


@numba.njit(cache=True, fastmath=True)
def _weighted_gram(AT: np.ndarray, M: np.ndarray) -> np.ndarray:
    """A^T diag(M) A from AT = A^T (p x N, C order), single-threaded (multithreaded BLAS on a
    shared machine was 10-100x slower on these thin products)."""
    p, N = AT.shape
    B = np.empty_like(AT)
    for i in range(p):
        for k in range(N):
            B[i, k] = AT[i, k] * M[k]
    out = np.empty((p, p))
    for i in range(p):
        for j in range(i, p):
            acc = 0.0
            for k in range(N):
                acc += B[i, k] * AT[j, k]
            out[i, j] = acc
            out[j, i] = acc
    return out


@numba.njit(cache=True, fastmath=True)
def _matvec(AT: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A @ x from AT = A^T (single-threaded, as :func:`_weighted_gram`)."""
    p, N = AT.shape
    out = np.zeros(N)
    for i in range(p):
        xi = x[i]
        for k in range(N):
            out[k] += AT[i, k] * xi
    return out


@numba.njit(cache=True, fastmath=True)
def _rmatvec(AT: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A^T @ v from AT = A^T."""
    p, N = AT.shape
    out = np.empty(p)
    for i in range(p):
        acc = 0.0
        for k in range(N):
            acc += AT[i, k] * v[k]
        out[i] = acc
    return out


def _step(x: np.ndarray, dx: np.ndarray) -> float:
    """Largest a in (0, 1] with x + a dx >= 0."""
    neg = dx < 0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, np.min(-x[neg] / dx[neg])))


def solve_top_ipm(form: TopForm, *, tol: float = 1e-6, max_iter: int = 100,
                  time_limit: float = np.inf) -> Solution:
    """Mehrotra predictor-corrector on the QP above, stopped by a certified duality gap.

    Parameters
    ----------
    form : TopForm
        A linear-model TopPushK-family problem or Pat&Mat with the hinge, l2 > 0.
    tol : float
        Stop when (upper - lower) / |upper| <= tol, upper = (3) at w, lower =
        :func:`~ratecons.solvers.top_primal.dual_bound` at the iterate's multipliers.
    max_iter : int
        Interior-point iterations; reaching it gives ``iteration_limit``.
    time_limit : float
        Wall-clock limit in seconds; reaching it gives ``time_limit``.
    """
    if not form.linear_model or form.X_pos is None:
        raise SolverError("the interior-point method needs an explicit linear model.")
    if form.family == "patmat" and form.surrogate != "hinge":
        raise SolverError("the interior-point method covers Pat&Mat with the hinge only (the "
                          "quadratic-hinge threshold constraint is not a QP row).")
    if not form.lam > 0:
        raise parameter_error("l2", "ipm", "a float > 0", form.lam)
    if not tol > 0:
        raise parameter_error("tol", "ipm", "a float > 0", tol)
    start = time.perf_counter()
    st = _structure(form)
    b, F, E, h = st["b"], st["F"], st["E"], st["h"]
    AT = np.ascontiguousarray(st["A"].T)
    hd, g, q, p, npos = st["hdiag"], st["g"], st["q"], st["p"], st["npos"]
    N = b.size
    # start: y = 0, xi and every slack and multiplier positive
    y = np.zeros(p)
    xi = np.maximum(b, 0.0) + 1.0
    s = xi - _matvec(AT, y) - b
    sig = max(1.0, abs(h - F @ y - E @ xi))
    z = np.ones(N)
    v = np.ones(N)
    lam = 1.0
    status = settings.ITERATION_LIMIT
    history: list[dict[str, Any]] = []
    best = (np.inf, -np.inf, np.zeros(st["d"]), None, None)
    it = 0
    n_comp = 2 * N + 1
    for it in range(1, max_iter + 1):
        # residuals of the KKT system (see the module docstring for the signs)
        r_y = hd * y + _rmatvec(AT, z) + F * lam
        r_xi = g + q * xi - z - v + E * lam
        r_p1 = s - xi + _matvec(AT, y) + b
        r_p2 = sig - h + F @ y + E @ xi
        mu = (z @ s + v @ xi + lam * sig) / n_comp
        W = z / s
        D = q + W + v / xi
        Dinv = 1.0 / D
        M = W - W * W * Dinv
        H = _weighted_gram(AT, M)
        H[np.diag_indices(p)] += hd
        B = F + _rmatvec(AT, E * Dinv * W)
        c22 = sig / lam + float(E @ (Dinv * E))
        KKT = np.empty((p + 1, p + 1))
        KKT[:p, :p] = H
        KKT[:p, p] = B
        KKT[p, :p] = B
        KKT[p, p] = -c22
        try:
            fac = sla.lu_factor(KKT, check_finite=False)
        except (ValueError, np.linalg.LinAlgError):
            status = settings.NUMERICAL_ERROR
            break

        def direction(rc1: np.ndarray, rc2: np.ndarray, rc3: float
                      ) -> tuple[np.ndarray, ...]:
            rc1p = rc1 - z * r_p1
            rc3p = rc3 - lam * r_p2
            rho = -r_xi - rc1p / s - rc2 / xi
            rhs1 = -r_y + _rmatvec(AT, rc1p / s + W * Dinv * rho)
            rhs2 = rc3p / lam - float(E @ (Dinv * rho))
            sol = sla.lu_solve(fac, np.concatenate([rhs1, [rhs2]]), check_finite=False)
            dy, dl = sol[:p], sol[p]
            Ady = _matvec(AT, dy)
            dxi = Dinv * (rho + W * Ady - E * dl)
            dz = (-rc1p - z * (dxi - Ady)) / s
            dv = (-rc2 - v * dxi) / xi
            ds = dxi - Ady - r_p1
            dsig = -F @ dy - E @ dxi - r_p2
            return dy, dxi, dz, dv, dl, ds, dsig

        # predictor
        dy, dxi, dz, dv, dl, ds, dsig = direction(z * s, v * xi, lam * sig)
        ap = min(_step(s, ds), _step(xi, dxi), _step(np.array([sig]), np.array([dsig])))
        ad = min(_step(z, dz), _step(v, dv), _step(np.array([lam]), np.array([dl])))
        mu_aff = ((z + ad * dz) @ (s + ap * ds) + (v + ad * dv) @ (xi + ap * dxi)
                  + (lam + ad * dl) * (sig + ap * dsig)) / n_comp
        cen = (mu_aff / mu) ** 3
        # corrector
        dy, dxi, dz, dv, dl, ds, dsig = direction(
            z * s + ds * dz - cen * mu, v * xi + dv * dxi - cen * mu,
            lam * sig + dsig * dl - cen * mu)
        ap = 0.99 * min(_step(s, ds), _step(xi, dxi), _step(np.array([sig]),
                                                              np.array([dsig])))
        ad = 0.99 * min(_step(z, dz), _step(v, dv), _step(np.array([lam]), np.array([dl])))
        y, xi, s, sig = y + ap * dy, xi + ap * dxi, s + ap * ds, sig + ap * dsig
        z, v, lam = z + ad * dz, v + ad * dv, lam + ad * dl
        # certificate once the interior-point measure is small
        w = y[:st["d"]]
        ub = primal_objective(form, w)
        pobj = ub * npos
        rel_mu = n_comp * mu / max(1.0, abs(pobj))
        record = {"iteration": it, "mu": mu, "upper": ub, "time": time.perf_counter() - start}
        if rel_mu <= 10 * tol:
            lb, mu_d, nu_d = dual_bound(form, z[:npos] / npos, z[npos:] / npos
                                        * (form.theta if form.family == "patmat" else 1.0))
            if ub < best[0]:
                best = (ub, best[1], w.copy(), best[3], best[4])
            if lb > best[1]:
                best = (best[0], lb, best[2], mu_d, nu_d)
            gap = (best[0] - best[1]) / max(abs(best[0]), 1e-300)
            record.update({"lower": lb, "relative_gap": gap})
            history.append(record)
            if gap <= tol:
                status = settings.OPTIMAL
                break
        else:
            history.append(record)
            if ub < best[0]:
                best = (ub, best[1], w.copy(), best[3], best[4])
        if not (np.all(np.isfinite(y)) and np.isfinite(mu)):
            status = settings.NUMERICAL_ERROR
            break
        if time.perf_counter() - start >= time_limit:
            status = settings.TIME_LIMIT
            break
    ub, lb, w, mu_d, nu_d = best
    gap = (ub - lb) / max(abs(ub), 1e-300) if np.isfinite(lb) else np.inf
    t = form.threshold_from_scores(np.asarray(form.X_tilde @ w).ravel())
    cert = Certificate(lower_bound=lb if np.isfinite(lb) else None, upper_bound=ub,
                       gap=ub - lb if np.isfinite(lb) else None, max_violation=0.0,
                       details={"iterations": it, "relative_gap": gap})
    dual = {} if mu_d is None else {"mu": mu_d, "nu": nu_d}
    return Solution(status=status, objective=ub, primal={"w": w, "t": t}, dual=dual,
                    certificate=cert, history=history,
                    solver="primal-dual interior point (Mehrotra), structured Schur complement",
                    solve_time=time.perf_counter() - start)
