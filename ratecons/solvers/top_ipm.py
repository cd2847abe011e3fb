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
size N x N. With l1 the split w = w+ - w- doubles p but not the work: the products run on the
rows of (w, t, r) and are lifted (:func:`_gram`). Besides Mehrotra's corrector, up to
GONDZIO_MAX centrality correctors (Gondzio 1996) reuse each factorization; on the degenerate
LP of the l1 penalty they cut the iterations by a third (64 -> 39 on benchmarks.top's l1
instance). This is the space the dual coordinate ascent (Alg 2) cannot use: its m = n_+ + n~
coordinates are coupled through a rank-d kernel matrix.

The row multipliers are the dual variables of (7)/(10) (alpha = mu / lambda); once the
iterate is nearly optimal, :func:`ratecons.solvers.top_primal.dual_bound` projects them onto
the dual feasible set and gives a certified lower bound; the upper bound is (3) at w.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..canonical.top import TopForm
from ..errors import SolverError, parameter_error
from ..scans import Rows
from ..solution import Solution
from .interior import single_blas_thread, step_to_boundary
from .top_primal import dual_bound, primal_objective
from .tracker import Tracker, iteration_cap

__all__ = ["solve_top_ipm"]

#: at most this many centrality correctors per iteration (:func:`_centrality_correctors`)
GONDZIO_MAX = 3
#: step lengthening they aim at, the box [low, high] x mu for the products, and the fraction
#: of the aimed lengthening a corrector must deliver to be kept
GONDZIO_STEP, GONDZIO_LOW, GONDZIO_HIGH, GONDZIO_GAIN = 0.3, 0.1, 10.0, 0.1


def _structure(form: TopForm) -> dict[str, Any]:
    """Rows a_k, b_k, the coupling row (F, E, h) and the objective of the scaled QP; with
    l1 > 0, w = w+ - w- (both >= 0) and the objective gains n_+ l1 sum (w+ + w-)."""
    Xp, Xt = form.X_pos, form.X_tilde
    npos, nt, d = Xp.shape[0], Xt.shape[0], Xp.shape[1]
    split = form.l1 > 0
    dw = 2 * d if split else d
    toppushk = form.family == "toppushk"
    p = dw + (2 if toppushk else 1)
    # the rows in y = (w, t, r) (or (w, t)); with l1, y = (w+, w-, t[, r]) = lift of them
    pu = p - (dw - d)
    th = 1.0 if toppushk else form.theta
    extra = np.zeros((npos + nt, pu - d))
    extra[:npos, 0] = 1.0
    if toppushk:  # a_j = (x~_j, 0, -1), b_j = 0
        extra[npos:, 1] = -1.0
    else:  # a_j = theta (x~_j, -1), b_j = 1
        extra[npos:, 0] = -th
    features = (sp.vstack([-sp.csr_matrix(Xp), th * sp.csr_matrix(Xt)])
                if sp.issparse(Xp) or sp.issparse(Xt)
                else np.vstack([-np.asarray(Xp, float), th * np.asarray(Xt, float)]))
    rows = Rows(sp.hstack([features, extra], format="csr") if sp.issparse(features)
                else np.hstack([features, extra]))
    lift = None
    if split:  # unsplit y = lift @ y: w = w+ - w-, the other entries kept
        lift = np.zeros((pu, p))
        lift[:d, :d] = np.eye(d)
        lift[:d, d:dw] = -np.eye(d)
        lift[d:, dw:] = np.eye(pu - d)
    F = np.zeros(p)
    if toppushk:  # K t - K r - sum u >= 0
        b = np.concatenate([np.ones(npos), np.zeros(nt)])
        F[dw], F[dw + 1] = -float(form.K), float(form.K)
        h = 0.0
    else:  # n~ tau - sum u >= 0
        b = np.ones(npos + nt)
        h = form.n_tilde * float(form.tau)
    E = np.concatenate([np.zeros(npos), np.ones(nt)])
    H0 = np.zeros((p, p))
    H0[:d, :d] = npos * form.lam * np.eye(d)
    c = np.zeros(p)
    if split:
        H0[d:dw, d:dw] = H0[:d, :d]
        H0[:d, d:dw] = H0[d:dw, :d] = -H0[:d, :d]
        c[:dw] = npos * form.l1
    bounded = np.zeros(p, dtype=bool)
    bounded[:dw] = split
    hinge = form.surrogate == "hinge"
    g = np.concatenate([np.full(npos, 1.0 if hinge else 0.0), np.zeros(nt)])
    q = np.concatenate([np.full(npos, 0.0 if hinge else 2.0), np.zeros(nt)])
    return {"rows": rows, "lift": lift, "b": b, "F": F, "E": E, "h": h, "H0": H0, "c": c,
            "bounded": bounded, "g": g, "q": q, "d": d, "p": p, "npos": npos}


def _A(st: dict[str, Any], y: np.ndarray) -> np.ndarray:
    """The rows a_k^T y of every example (A y)."""
    lift = st["lift"]
    return st["rows"].apply(y if lift is None else lift @ y)


def _AT(st: dict[str, Any], v: np.ndarray) -> np.ndarray:
    """A^T v."""
    out = st["rows"].transpose_apply(v)
    return out if st["lift"] is None else st["lift"].T @ out


def _gram(st: dict[str, Any], M: np.ndarray) -> np.ndarray:
    """A^T diag(M) A, formed on the unsplit rows (a quarter of the work with l1) by
    :meth:`ratecons.scans.Rows.gram` with a single BLAS thread (:func:`solve_top_ipm`: threaded
    BLAS on this shared 2-core machine was 15-25x slower on these thin products): syrk over
    dense rows (3-4x faster than a compiled loop over dense entries, 0.026-0.04 s against
    0.12-0.17 s at p = 110, N = 48,842), a compiled pass over the nonzeros of sparse ones.
    Sparse features stay sparse: on the whole Adult split (one-hot, 108 columns) a Gram
    product took 5 ms against 13 ms for syrk over the dense copy, and TPR@K (K = n/200)
    1.31 -> 0.58 s."""
    G = st["rows"].gram(M)
    lift = st["lift"]
    return G if lift is None else lift.T @ G @ lift


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """a . b as a float."""
    return float(a @ b)


def _direction(st: dict[str, Any], cur: dict[str, Any], rc1: np.ndarray, rc2: np.ndarray,
               rc3: float, rc4: np.ndarray) -> tuple[Any, ...]:
    """Newton direction for the complementarity targets rc1 (z s), rc2 (v xi), rc3
    (lambda sigma), rc4 (zeta y): the (p + 1) system, then xi, the multipliers and slacks."""
    E, F, bnd = st["E"], st["F"], st["bounded"]
    z, s, v, xi, lam, zeta, yb = (cur[k] for k in ("z", "s", "v", "xi", "lam", "zeta", "yb"))
    W, Dinv, r_p1, r_p2 = cur["W"], cur["Dinv"], cur["r_p1"], cur["r_p2"]
    p = st["p"]
    rc1p = rc1 - z * r_p1
    rc3p = rc3 - lam * r_p2
    rho = -cur["r_xi"] - rc1p / s - rc2 / xi
    rhs1 = (-cur["r_y"] - np.where(bnd, rc4 / yb, 0.0)
            + _AT(st, rc1p / s + W * Dinv * rho))
    rhs2 = rc3p / lam - _dot(E, Dinv * rho)
    sol = sla.lu_solve(cur["fac"], np.concatenate([rhs1, [rhs2]]), check_finite=False)
    dy, dl = sol[:p], sol[p]
    Ady = _A(st, dy)
    dxi = Dinv * (rho + W * Ady - E * dl)
    dz = (-rc1p - z * (dxi - Ady)) / s
    dv = (-rc2 - v * dxi) / xi
    ds = dxi - Ady - r_p1
    dsig = -_dot(F, dy) - _dot(E, dxi) - r_p2
    dzeta = np.where(bnd, (-rc4 - zeta * dy) / yb, 0.0)
    return dy, dxi, dz, dv, dl, ds, dsig, dzeta


def _steps(st: dict[str, Any], cur: dict[str, Any], dy: np.ndarray, dxi: np.ndarray,
           dz: np.ndarray, dv: np.ndarray, dl: float, ds: np.ndarray, dsig: float,
           dzeta: np.ndarray) -> tuple[float, float]:
    """Largest primal and dual steps in (0, 1] keeping every slack and multiplier >= 0."""
    bnd = st["bounded"]
    one = np.ones(1)
    ap = step_to_boundary((cur["s"], ds), (cur["xi"], dxi), (cur["sig"] * one, dsig * one),
                          (cur["yb"][bnd], dy[bnd]))
    ad = step_to_boundary((cur["z"], dz), (cur["v"], dv), (cur["lam"] * one, dl * one),
                          (cur["zeta"][bnd], dzeta[bnd]))
    return ap, ad


def _products(st: dict[str, Any], cur: dict[str, Any], dirs: tuple[Any, ...], ap: float,
              ad: float) -> tuple[Any, ...]:
    """The complementarity products z s, v xi, lambda sigma, zeta y (bounded y only) after
    the steps ``ap`` (primal) and ``ad`` (dual) along ``dirs``."""
    dy, dxi, dz, dv, dl, ds, dsig, dzeta = dirs
    bnd = st["bounded"]
    return ((cur["z"] + ad * dz) * (cur["s"] + ap * ds),
            (cur["v"] + ad * dv) * (cur["xi"] + ap * dxi),
            (cur["lam"] + ad * dl) * (cur["sig"] + ap * dsig),
            np.where(bnd, (cur["zeta"] + ad * dzeta) * (cur["yb"] + ap * dy), 0.0))


def _centrality_correctors(st: dict[str, Any], cur: dict[str, Any], targets: tuple[Any, ...],
                           dirs: tuple[Any, ...], ap: float, ad: float, mu_target: float
                           ) -> tuple[tuple[Any, ...], float, float]:
    """Gondzio's multiple centrality correctors on top of Mehrotra's direction.

    Aim at the longer steps min(1, a + GONDZIO_STEP); the complementarity products of that
    trial point outside [GONDZIO_LOW, GONDZIO_HIGH] x ``mu_target`` are pulled back into the
    box by a further Newton step (same factorization: only back-solves and O(N p) products).
    A corrector is kept while it lengthens the shorter step by GONDZIO_GAIN x GONDZIO_STEP at
    least. On the degenerate LP of an l1 penalty (l2 = 0) this halves the iterations."""
    bnd = st["bounded"]
    for _ in range(GONDZIO_MAX):
        trial = _products(st, cur, dirs, min(1.0, ap + GONDZIO_STEP),
                          min(1.0, ad + GONDZIO_STEP))
        lo, hi = GONDZIO_LOW * mu_target, GONDZIO_HIGH * mu_target
        shift = [np.clip(t, lo, hi) - t for t in trial]
        shift = [np.maximum(t, -hi) for t in shift]
        shift[3] = np.where(bnd, shift[3], 0.0)
        new_targets = tuple(t - c for t, c in zip(targets, shift))
        new_dirs = _direction(st, cur, *new_targets)
        new_ap, new_ad = _steps(st, cur, *new_dirs)
        if min(new_ap, new_ad) < min(ap, ad) + GONDZIO_GAIN * GONDZIO_STEP:
            break
        targets, dirs, ap, ad = new_targets, new_dirs, new_ap, new_ad
        if min(ap, ad) >= 1.0:
            break
    return dirs, ap, ad


@single_blas_thread
def solve_top_ipm(form: TopForm, *, tol: float = 1e-6, max_iterations: int | None = None,
                  max_iter: int | None = None, time_limit: float | None = None,
                  callback: Callable[[dict[str, Any]], None] | None = None) -> Solution:
    """Mehrotra predictor-corrector on the QP above, stopped by a certified duality gap.

    Parameters
    ----------
    form : TopForm
        A linear-model TopPushK-family problem or Pat&Mat with the hinge; l2 = ``form.lam``
        >= 0 and l1 = ``form.l1`` >= 0 with l1 + l2 > 0 (l2 = 0: a linear program).
    tol : float
        Stop when (upper - lower) / |upper| <= tol, upper = (3) at w, lower =
        :func:`~ratecons.solvers.top_primal.dual_bound` at the iterate's multipliers.
    max_iterations, max_iter : int, optional
        Interior-point iterations (default 100; ``max_iter`` is this method's own name for
        the cap, give one of them); reaching it gives ``iteration_limit``.
    time_limit : float, optional
        Wall-clock limit in seconds (the active :mod:`ratecons.limits` apply too); reaching
        it gives ``time_limit``.
    callback : callable, optional
        Receives every iteration's event (:data:`ratecons.solvers.tracker.EVENT_KEYS`).
    """
    if not form.linear_model or form.X_pos is None:
        raise SolverError("the interior-point method needs an explicit linear model.")
    if form.family == "patmat" and form.surrogate != "hinge":
        raise SolverError("the interior-point method covers Pat&Mat with the hinge only (the "
                          "quadratic-hinge threshold constraint is not a QP row).")
    if not (form.lam >= 0 and form.l1 >= 0 and form.lam + form.l1 > 0):
        raise parameter_error("l2/l1", "ipm", "l2 >= 0, l1 >= 0 and l1 + l2 > 0",
                              (form.lam, form.l1))
    if not tol > 0:
        raise parameter_error("tol", "ipm", "a float > 0", tol)
    cap, cap_name = iteration_cap("ipm", 100, max_iterations, max_iter=max_iter)
    tracker = Tracker("primal-dual interior point (Mehrotra), structured Schur complement",
                      max_iterations=cap, cap_name=cap_name, time_limit=time_limit, tol=tol,
                      relative=True, callback=callback)
    st = _structure(form)
    npos, d = st["npos"], st["d"]
    x = _start(st)
    # w = 0 is a candidate: it is the optimum when no direction beats a constant score
    tracker.offer(primal_objective(form, np.zeros(d)), w=np.zeros(d))
    dual_best = None
    n_comp = 2 * st["b"].size + 1 + int(st["bounded"].sum())
    for it in range(1, cap + 1):
        cur, mu = _newton_system(st, x, n_comp)
        if cur is None:
            tracker.stop("numerical_error", "the KKT system is singular")
            break
        x = _mehrotra_step(st, cur, mu, n_comp)
        y, z = x["y"], x["z"]
        if not (np.all(np.isfinite(y)) and np.isfinite(mu)):
            tracker.stop("numerical_error", "the iterate is not finite")
            break
        # certificate once the interior-point measure is small
        w = y[:d] - y[d:2 * d] if form.l1 > 0 else y[:d].copy()
        ub = primal_objective(form, w)
        tracker.offer(ub, w=w)
        event: dict[str, Any] = {"objective": ub, "mu": mu}
        if n_comp * mu <= 10 * tol * max(1.0, npos * abs(ub)):
            scale = form.theta if form.family == "patmat" else 1.0
            lb, mu_d, nu_d = dual_bound(form, z[:npos] / npos, scale * z[npos:] / npos)
            if lb > tracker.lower:
                dual_best = {"mu": mu_d, "nu": nu_d}
            tracker.bound(lower=lb)
            event["lower"] = lb
        stop = tracker.check(it)
        tracker.record(it, upper=tracker.upper, gap=tracker.gap,
                       relative_gap=tracker.relative_gap(), **event)
        if stop:
            break
    w_best = tracker.best_point["w"]
    t = form.threshold_from_scores(np.asarray(form.X_tilde @ w_best).ravel())
    return tracker.solution({"w": w_best, "t": t}, dual=dual_best, max_violation=0.0,
                            details={"relative_gap": tracker.relative_gap()},
                            advice="Raise max_iter or time_limit.")


def _start(st: dict[str, Any]) -> dict[str, Any]:
    """The starting point: w = 0 (w+ = w- = 1 with l1), xi and every slack and multiplier
    positive; with lambda = 1 the xi-stationarity of the hinge holds at the start."""
    b, F, E, h, bnd = st["b"], st["F"], st["E"], st["h"], st["bounded"]
    N = b.size
    y = np.where(bnd, 1.0, 0.0)
    xi = np.maximum(b, 0.0) + 1.0
    return {"y": y, "xi": xi, "s": np.maximum(xi - _A(st, y) - b, 1.0),
            "sig": max(1.0, abs(h - _dot(F, y) - _dot(E, xi))), "z": np.full(N, 0.5),
            "v": np.full(N, 0.5), "lam": 1.0, "zeta": np.where(bnd, 1.0, 0.0)}


def _newton_system(st: dict[str, Any], x: dict[str, Any], n_comp: int
                   ) -> tuple[dict[str, Any] | None, float]:
    """The residuals of the KKT system at ``x`` (see the module docstring for the signs), the
    interior-point measure mu and the LU factors of the reduced (p + 1) x (p + 1) system;
    None when it is singular."""
    b, F, E, h = st["b"], st["F"], st["E"], st["h"]
    H0, c, bnd, g, q, p = st["H0"], st["c"], st["bounded"], st["g"], st["q"], st["p"]
    y, xi, s, sig = x["y"], x["xi"], x["s"], x["sig"]
    z, v, lam, zeta = x["z"], x["v"], x["lam"], x["zeta"]
    yb = np.where(bnd, y, 1.0)  # bounded entries of y (1 elsewhere, unused)
    r_y = H0 @ y + c + _AT(st, z) + F * lam - zeta
    r_xi = g + q * xi - z - v + E * lam
    r_p1 = s - xi + _A(st, y) + b
    r_p2 = sig - h + _dot(F, y) + _dot(E, xi)
    mu = (_dot(z, s) + _dot(v, xi) + lam * sig + _dot(zeta, np.where(bnd, y, 0.0))) / n_comp
    W = z / s
    Dinv = 1.0 / (q + W + v / xi)
    H = _gram(st, W - W * W * Dinv) + H0
    H[np.diag_indices(p)] += np.where(bnd, zeta / yb, 0.0)
    B = F + _AT(st, E * Dinv * W)
    KKT = np.empty((p + 1, p + 1))
    KKT[:p, :p] = H
    KKT[:p, p] = B
    KKT[p, :p] = B
    KKT[p, p] = -(sig / lam + _dot(E, Dinv * E))
    try:
        fac = sla.lu_factor(KKT, check_finite=False)
    except (ValueError, np.linalg.LinAlgError):
        return None, mu
    return {**x, "yb": yb, "r_y": r_y, "r_xi": r_xi, "r_p1": r_p1, "r_p2": r_p2, "W": W,
            "Dinv": Dinv, "fac": fac}, mu


def _mehrotra_step(st: dict[str, Any], cur: dict[str, Any], mu: float, n_comp: int
                   ) -> dict[str, Any]:
    """One predictor-corrector step (with Gondzio's centrality correctors) from ``cur``,
    0.99 of the way to the boundary; the new point."""
    bnd = st["bounded"]
    y, xi, s, sig = cur["y"], cur["xi"], cur["s"], cur["sig"]
    z, v, lam, zeta, yb = cur["z"], cur["v"], cur["lam"], cur["zeta"], cur["yb"]
    # predictor
    yz = np.where(bnd, zeta * yb, 0.0)
    dy, dxi, dz, dv, dl, ds, dsig, dzeta = _direction(st, cur, z * s, v * xi, lam * sig, yz)
    ap, ad = _steps(st, cur, dy, dxi, dz, dv, dl, ds, dsig, dzeta)
    mu_aff = (_dot(z + ad * dz, s + ap * ds) + _dot(v + ad * dv, xi + ap * dxi)
              + (lam + ad * dl) * (sig + ap * dsig)
              + np.where(bnd, (zeta + ad * dzeta) * (yb + ap * dy), 0.0).sum()) / n_comp
    cen = (mu_aff / mu) ** 3
    # corrector
    targets = (z * s + ds * dz - cen * mu, v * xi + dv * dxi - cen * mu,
               lam * sig + dsig * dl - cen * mu,
               np.where(bnd, yz + dy * dzeta - cen * mu, 0.0))
    dirs = _direction(st, cur, *targets)
    ap, ad = _steps(st, cur, *dirs)
    dirs, ap, ad = _centrality_correctors(st, cur, targets, dirs, ap, ad, cen * mu)
    dy, dxi, dz, dv, dl, ds, dsig, dzeta = dirs
    ap, ad = 0.99 * ap, 0.99 * ad
    return {"y": y + ap * dy, "xi": xi + ap * dxi, "s": s + ap * ds, "sig": sig + ap * dsig,
            "z": z + ad * dz, "v": v + ad * dv, "lam": lam + ad * dl,
            "zeta": zeta + ad * dzeta}

