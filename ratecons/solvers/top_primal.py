"""Primal active-set method for linear ranking-at-the-top models: screened LP/QP on HiGHS.

For a linear model the problem (3) with the regularizer R(w) = (l2/2)||w||^2 + l1 ||w||_1 is

    minimize  R(w) + (1/n_+) sum_i l(t - <w, x_i^+>)
    TopPushK family (6):  K t >= K r + sum_j u_j,  u_j >= <w, x~_j> - r,  u >= 0
                          (the LP form of t >= mean of the K largest scores, (6c));
    Pat&Mat, hinge (9):   sum_j u_j <= n~ tau,     u_j >= 1 + theta (<w, x~_j> - t),  u >= 0,

with the hinge as slacks xi_i >= 1 + t - <w, x_i^+>, xi >= 0 (objective (1/n_+) sum xi, or
(1/n_+) sum xi^2 for the quadratic hinge): an LP (l2 = 0) or a QP whose Hessian is l2 I on w
(plus 2/n_+ on xi), which HiGHS solves. Its n_+ + n~ rows are dense in w, and at the optimum
most of them are decided: a positive with a large margin contributes 0, one far inside the loss
contributes a linear term, a threshold example far below the K-th score contributes nothing.

The method keeps only the undecided examples as rows (the "band" around the kinks at the
current w), replaces the decided ones by their linear piece (aggregated into one objective
term and one threshold row) or drops them, and solves this reduced problem on HiGHS. Every
replacement is a lower bound of the piecewise-linear term, so the reduced problem is a
relaxation of (3): its solution w gives an upper bound (the exact objective (3) at w) and its
multipliers, extended to every example and projected onto the feasible set of the dual
(7)/(10) (Thm 3.10), a lower bound (:func:`dual_bound`). Examples whose side of the kink the
new w contradicts join the band; the loop stops when the certified relative gap is <= tol.
The first w comes from the full problem on a stratified subsample (or the full problem itself
when it is small).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..canonical.top import TopForm
from ..errors import SolverError, parameter_error
from ..lowering.highs import solve_lp
from ..lowering.to_matrix import MatrixLP
from ..solution import Certificate, Solution
from .top_dual import project_toppushk

__all__ = ["solve_top_primal", "dual_bound", "primal_objective", "primal_supported"]

#: rows of the first (full) problem on a subsample; instances with m <= this solve in one round
SUBSAMPLE_ROWS = 2000
#: smallest band of undecided positives / threshold examples kept as rows
MIN_BAND = 200


def primal_supported(form: TopForm) -> str | None:
    """None when :func:`solve_top_primal` applies to ``form``, else the reason it does not."""
    if not form.linear_model or form.X_pos is None:
        return "the primal method needs an explicit linear model (rc.LinearModel)"
    if form.family == "patmat" and form.surrogate != "hinge":
        return ("the threshold constraint of Pat&Mat with the quadratic hinge is quadratic "
                "(not an LP/QP row)")
    return None


def _dense(X: Any) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def primal_objective(form: TopForm, w: np.ndarray, l1: float = 0.0,
                     l2: float | None = None) -> float:
    """The objective (3) at w with the exact threshold t = G(X~ w) (Table 1)."""
    l2 = form.lam if l2 is None else l2
    s_pos = np.asarray(form.X_pos @ w).ravel()
    s_tilde = np.asarray(form.X_tilde @ w).ravel()
    t = form.threshold_from_scores(s_tilde)
    loss = float(np.mean(np.maximum(0.0, 1.0 + t - s_pos) ** (1 if form.surrogate == "hinge"
                                                                 else 2)))
    return 0.5 * l2 * float(w @ w) + l1 * float(np.abs(w).sum()) + loss


def dual_bound(form: TopForm, mu: np.ndarray, b: np.ndarray, l1: float = 0.0,
               l2: float | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """A certified lower bound on (3) from multipliers of the hinge rows (``mu``) and of the
    threshold rows (``b``: nu for TopPushK, theta nu for Pat&Mat).

    (mu, b) is first projected onto the feasible set of the dual (7) (Thm 3.10, with
    C = 1/n_+; the dual (7) of (3) has alpha = mu / lambda) or of (10) (clip and balance);
    the bound is then the Lagrangian dual of (3),

        sum mu [- n_+ ||mu||^2 / 4] [+ sum b / theta - delta n~ tau] - R*(z),
        z = X+^T mu - X~^T b,  R*(z) = sum_k (|z_k| - l1)_+^2 / (2 l2),

    which equals lambda times (7a)/(10a) when l1 = 0. With l2 = 0, R* is the indicator of
    ||z||_inf <= l1 and (mu, b) is scaled into it first. Returns (bound, mu, b).
    """
    l2 = form.lam if l2 is None else l2
    npos = form.n_pos
    hinge = form.surrogate == "hinge"
    cap = 1.0 / npos if hinge else np.inf
    mu = np.maximum(np.asarray(mu, dtype=np.float64), 0.0)
    b = np.maximum(np.asarray(b, dtype=np.float64), 0.0)
    if form.family == "toppushk":
        mu, b = project_toppushk(mu, b, cap, int(form.K))
    else:
        mu = np.minimum(mu, cap)
        sa, sb = mu.sum(), b.sum()
        if sa > sb:
            mu = mu * (sb / sa)
        elif sb > sa:
            b = b * (sa / sb)
    z = (np.asarray(form.X_pos.T @ mu).ravel() - np.asarray(form.X_tilde.T @ b).ravel())

    def value(scale: float) -> float:
        m, bb = scale * mu, scale * b
        val = float(m.sum())
        if not hinge:
            val -= npos * float(m @ m) / 4.0
        if form.family == "patmat":
            val += float(bb.sum()) / form.theta - form.optimal_delta(bb) * form.n_tilde \
                * float(form.tau)
        return val

    if l2 > 0:
        excess = np.maximum(np.abs(z) - l1, 0.0)
        return value(1.0) - float(excess @ excess) / (2.0 * l2), mu, b
    zmax = float(np.abs(z).max(initial=0.0))
    scale = 1.0 if zmax <= l1 else l1 / zmax
    return value(scale), scale * mu, scale * b


@dataclass
class _Split:
    """Which examples are rows of the reduced problem and how the others enter it.

    ``pos_row`` / ``tilde_row``: kept as rows; ``pos_lin``: positives in the loss region
    (linear piece); ``tilde_lin``: threshold examples above the kink (linear piece); the rest
    contribute nothing."""

    pos_row: np.ndarray
    pos_lin: np.ndarray
    tilde_row: np.ndarray
    tilde_lin: np.ndarray


def _band(key: np.ndarray, size: int) -> np.ndarray:
    """Boolean mask of the ``size`` entries of smallest |key|."""
    mask = np.zeros(key.size, dtype=bool)
    if size >= key.size:
        mask[:] = True
    else:
        mask[np.argpartition(np.abs(key), size - 1)[:size]] = True
    return mask


def _split(form: TopForm, Xp: np.ndarray, Xt: np.ndarray, w: np.ndarray, band_p: int,
           band_t: int) -> _Split:
    """Rows around the kinks at w: the ``band_p`` positives with the smallest |margin| and the
    ``band_t`` threshold examples nearest to the kink of the threshold (the K-th score for
    TopPushK, 1 + theta (s - t) = 0 for Pat&Mat)."""
    s_t = Xt @ w
    t = form.threshold_from_scores(s_t)
    margin = 1.0 + t - Xp @ w
    pos_row = _band(margin, band_p)
    pos_lin = ~pos_row & (margin > 0)
    if form.family == "toppushk":
        K = int(form.K)
        order = np.argsort(-s_t)
        tilde_row = np.zeros(s_t.size, dtype=bool)
        tilde_row[order[:min(s_t.size, K + band_t)]] = True
        tilde_lin = np.zeros(s_t.size, dtype=bool)
    else:
        key = 1.0 + form.theta * (s_t - t)
        tilde_row = _band(key, band_t)
        tilde_lin = ~tilde_row & (key > 0)
    return _Split(pos_row, pos_lin, tilde_row, tilde_lin)


def _reduced_problem(form: TopForm, Xp: np.ndarray, Xt: np.ndarray, sp_: _Split, l1: float,
                     l2: float) -> tuple[MatrixLP, sp.spmatrix | None, dict[str, Any]]:
    """The relaxation of (3) for a split: columns w (d), t, r, xi (rows of positives),
    u (rows of threshold examples) [, a >= |w| (d) when l1 > 0]; rows: hinge rows, threshold
    rows, the aggregated threshold row [, 2d rows a >= +-w]."""
    d = Xp.shape[1]
    npos = form.n_pos
    hinge = form.surrogate == "hinge"
    P = Xp[sp_.pos_row]
    T = Xt[sp_.tilde_row]
    nb, nt = P.shape[0], T.shape[0]
    na = d if l1 > 0 else 0
    ncol = d + 2 + nb + nt + na
    iw, it, ir = slice(0, d), d, d + 1
    ixi = slice(d + 2, d + 2 + nb)
    iu = slice(d + 2 + nb, d + 2 + nb + nt)
    c = np.zeros(ncol)
    offset = 0.0
    hess_diag = np.zeros(ncol)
    hess_diag[iw] = l2
    dense_hess = None
    lin = Xp[sp_.pos_lin]
    if hinge:
        c[ixi] = 1.0 / npos
        # sum over the loss region of (1 + t - <w, x_i>) / n_+
        c[iw] -= lin.sum(axis=0) / npos
        c[it] += lin.shape[0] / npos
        offset += lin.shape[0] / npos
    else:
        hess_diag[ixi] = 2.0 / npos
        if lin.shape[0]:  # (1/n_+) ||1 + t - X_L w||^2 in (w, t): a dense (d+1) block
            A = np.hstack([-lin, np.ones((lin.shape[0], 1))])
            G = A.T @ A
            g = A.sum(axis=0)
            dense_hess = np.zeros((d + 1, d + 1))
            dense_hess[:, :] = 2.0 * G / npos
            c[:d + 1] += 2.0 * g / npos
            offset += lin.shape[0] / npos
    if na:
        c[d + 2 + nb + nt:] = l1
    lo = np.full(ncol, -np.inf)
    lo[d + 2:] = 0.0
    if form.family == "toppushk":
        lo[ir] = -np.inf
    hi = np.full(ncol, np.inf)
    blocks = []
    rl, ru = [], []
    eye_b = sp.identity(nb, format="csr")
    eye_t = sp.identity(nt, format="csr")
    zeros = lambda r, k: sp.csr_matrix((r, k))  # noqa: E731
    # hinge rows: xi_i + <w, x_i> - t >= 1
    blocks.append(sp.hstack([sp.csr_matrix(P), sp.csr_matrix(-np.ones((nb, 1))),
                             zeros(nb, 1), eye_b, zeros(nb, nt + na)]))
    rl.append(np.ones(nb))
    ru.append(np.full(nb, np.inf))
    lin_t = Xt[sp_.tilde_lin]
    n_lin = lin_t.shape[0]
    if form.family == "toppushk":
        K = int(form.K)
        # u_j - <w, x~_j> + r >= 0
        blocks.append(sp.hstack([sp.csr_matrix(-T), zeros(nt, 1), sp.csr_matrix(np.ones((nt, 1))),
                                 zeros(nt, nb), eye_t, zeros(nt, na)]))
        rl.append(np.zeros(nt))
        ru.append(np.full(nt, np.inf))
        # K r + sum_lin (<w, x~_j> - r) + sum u - K t <= 0
        agg = np.zeros(ncol)
        agg[iw] = lin_t.sum(axis=0)
        agg[it] = -K
        agg[ir] = K - n_lin
        agg[iu] = 1.0
        agg_hi = 0.0
    else:
        th = form.theta
        # u_j - theta <w, x~_j> + theta t >= 1
        blocks.append(sp.hstack([sp.csr_matrix(-th * T), sp.csr_matrix(th * np.ones((nt, 1))),
                                 zeros(nt, 1), zeros(nt, nb), eye_t, zeros(nt, na)]))
        rl.append(np.ones(nt))
        ru.append(np.full(nt, np.inf))
        # sum u + sum_lin (1 + theta (<w, x~_j> - t)) <= n~ tau
        agg = np.zeros(ncol)
        agg[iw] = th * lin_t.sum(axis=0)
        agg[it] = -th * n_lin
        agg[iu] = 1.0
        agg_hi = form.n_tilde * float(form.tau) - n_lin
        lo[ir] = hi[ir] = 0.0  # r is unused
    blocks.append(sp.csr_matrix(agg[None, :]))
    rl.append(np.array([-np.inf]))
    ru.append(np.array([agg_hi]))
    if na:  # a_k - w_k >= 0, a_k + w_k >= 0
        I_d = sp.identity(d, format="csr")
        mid = zeros(d, 2 + nb + nt)
        blocks.append(sp.hstack([-I_d, mid, I_d]))
        blocks.append(sp.hstack([I_d, mid, I_d]))
        rl += [np.zeros(d), np.zeros(d)]
        ru += [np.full(d, np.inf), np.full(d, np.inf)]
    lp = MatrixLP(c=c, A=sp.vstack(blocks).tocsr(), row_lower=np.concatenate(rl),
                  row_upper=np.concatenate(ru), col_lower=lo, col_upper=hi, offset=offset)
    hess = None
    if np.any(hess_diag) or dense_hess is not None:
        hess = sp.diags(hess_diag).tocsr()
        if dense_hess is not None:
            pad = sp.csr_matrix(dense_hess)
            pad.resize((ncol, ncol))
            hess = hess + pad
    index = {"w": iw, "t": it, "r": ir, "xi": ixi, "u": iu, "nb": nb, "nt": nt}
    return lp, hess, index


def _multipliers(form: TopForm, sp_: _Split, res: Any, index: dict[str, Any],
                 margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Multipliers of every example's row from the reduced problem's row duals (decided
    examples get the multiplier of their linear piece: 1/n_+, or that of the aggregated row)."""
    nb, nt = index["nb"], index["nt"]
    rd = np.abs(res.row_dual)
    mu = np.zeros(form.n_pos)
    if form.surrogate == "hinge":
        mu[sp_.pos_row] = rd[:nb]
        mu[sp_.pos_lin] = 1.0 / form.n_pos
    else:  # KKT of the squared hinge: mu_i = 2 xi_i / n_+
        mu = 2.0 * np.maximum(margin, 0.0) / form.n_pos
    agg = rd[nb + nt]
    nu = np.zeros(form.n_tilde)
    nu[sp_.tilde_row] = rd[nb:nb + nt]
    nu[sp_.tilde_lin] = agg
    if form.family == "patmat":
        nu *= form.theta
    return mu, nu


def solve_top_primal(form: TopForm, *, l1: float = 0.0, tol: float = 1e-6,
                     max_rounds: int = 30, time_limit: float = np.inf,
                     qp_iteration_limit: int | None = None, seed: int | None = 0) -> Solution:
    """Screened primal LP/QP of (3) on HiGHS with a certified duality gap.

    Parameters
    ----------
    form : TopForm
        A linear-model TopPushK-family problem, or Pat&Mat with the hinge.
    l1 : float
        Weight of l1 ||w||_1 (with ``form.lam`` = l2 >= 0 and l1 + l2 > 0).
    tol : float
        Stop when (upper - lower) / |upper| <= tol (upper: (3) at w; lower: :func:`dual_bound`).
    max_rounds : int
        Limit on reduced problems solved; reaching it gives ``iteration_limit``.
    time_limit : float
        Wall-clock limit in seconds (also passed to HiGHS); reaching it gives ``time_limit``.
    qp_iteration_limit : int, optional
        HiGHS' limit on simplex/QP iterations per reduced problem (for tests of the status).
    seed : int, optional
        Seeds the subsample of the first round.
    """
    reason = primal_supported(form)
    if reason is not None:
        raise SolverError(reason + ".")
    l2 = float(form.lam)
    if not (l1 >= 0 and l2 >= 0 and l1 + l2 > 0):
        raise parameter_error("l1/l2", "primal_highs", "l1 >= 0, l2 >= 0, l1 + l2 > 0",
                              (l1, l2))
    if not tol > 0:
        raise parameter_error("tol", "primal_highs", "a float > 0", tol)
    start = time.perf_counter()
    Xp, Xt = _dense(form.X_pos), _dense(form.X_tilde)
    d = Xp.shape[1]
    rng = np.random.default_rng(seed)
    band_p = band_t = max(MIN_BAND, 4 * d)
    history: list[dict[str, Any]] = []
    status = settings.ITERATION_LIMIT
    best_w, best_ub, best_lb = np.zeros(d), primal_objective(form, np.zeros(d), l1, l2), -np.inf
    mu_best = nu_best = None
    if form.m <= SUBSAMPLE_ROWS:
        split = _Split(np.ones(form.n_pos, bool), np.zeros(form.n_pos, bool),
                       np.ones(form.n_tilde, bool), np.zeros(form.n_tilde, bool))
    else:
        w0 = _subsample_start(form, Xp, Xt, l1, l2, rng, time_limit)
        split = _split(form, Xp, Xt, w0, band_p, band_t)
    hs_limit = None if qp_iteration_limit is None else {"qp_iteration_limit":
                                                        int(qp_iteration_limit),
                                                        "simplex_iteration_limit":
                                                        int(qp_iteration_limit)}
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        remaining = time_limit - (time.perf_counter() - start)
        if remaining <= 0:
            status = settings.TIME_LIMIT
            break
        lp, hess, index = _reduced_problem(form, Xp, Xt, split, l1, l2)
        res = _solve(lp, hess, remaining, hs_limit)
        if res.status in (settings.TIME_LIMIT, settings.ITERATION_LIMIT):
            status = res.status
            break
        if res.status != settings.OPTIMAL:
            status = settings.NUMERICAL_ERROR
            break
        w = res.x[index["w"]]
        ub = primal_objective(form, w, l1, l2)
        s_t = Xt @ w
        t = form.threshold_from_scores(s_t)
        margin = 1.0 + t - Xp @ w
        mu, nu = _multipliers(form, split, res, index, margin)
        lb, mu, nu = dual_bound(form, mu, nu, l1, l2)
        if ub < best_ub:
            best_w, best_ub = w, ub
        if lb > best_lb:
            best_lb, mu_best, nu_best = lb, mu, nu
        gap = (best_ub - best_lb) / max(abs(best_ub), 1e-300)
        history.append({"round": rounds, "rows": index["nb"] + index["nt"], "upper": ub,
                        "lower": lb, "relative_gap": gap, "hiGHS_iterations": res.iterations,
                        "time": time.perf_counter() - start})
        if gap <= tol:
            status = settings.OPTIMAL
            break
        # examples whose side of the kink w contradicts join the rows; bands grow
        band_p, band_t = 2 * band_p, 2 * band_t
        new = _split(form, Xp, Xt, w, band_p, band_t)
        wrong_p = (split.pos_lin & (margin < 0)) | (~split.pos_row & ~split.pos_lin
                                                   & (margin > 0))
        r = res.x[index["r"]]
        if form.family == "toppushk":
            wrong_t = ~split.tilde_row & (s_t > r)
        else:
            key = 1.0 + form.theta * (s_t - t)
            wrong_t = (split.tilde_lin & (key < 0)) | (~split.tilde_row & ~split.tilde_lin
                                                       & (key > 0))
        pos_row = split.pos_row | new.pos_row | wrong_p
        tilde_row = split.tilde_row | new.tilde_row | wrong_t
        split = _Split(pos_row, new.pos_lin & ~pos_row, tilde_row, new.tilde_lin & ~tilde_row)
    gap = (best_ub - best_lb) / max(abs(best_ub), 1e-300)
    t = form.threshold_from_scores(Xt @ best_w)
    details = {"rounds": rounds, "relative_gap": gap, "l1": l1, "l2": l2,
               "rows_last_round": history[-1]["rows"] if history else 0}
    cert = Certificate(lower_bound=best_lb if np.isfinite(best_lb) else None,
                       upper_bound=best_ub, gap=best_ub - best_lb, max_violation=0.0,
                       details=details)
    primal: dict[str, Any] = {"w": best_w, "t": t}
    dual: dict[str, Any] = {}
    if mu_best is not None:
        dual = {"mu": mu_best, "nu": nu_best}
    return Solution(status=status, objective=best_ub, primal=primal, dual=dual,
                    certificate=cert, history=history,
                    solver="screened primal LP/QP (HiGHS)",
                    solve_time=time.perf_counter() - start)


def _solve(lp: MatrixLP, hess: sp.spmatrix | None, time_limit: float,
           limits: dict[str, int] | None) -> Any:
    from ..lowering.highs import HighsLP

    model = HighsLP(lp, solver="choose", time_limit=time_limit if np.isfinite(time_limit)
                    else None, options=limits, hessian=hess)
    return model.solve()


def _subsample_start(form: TopForm, Xp: np.ndarray, Xt: np.ndarray, l1: float, l2: float,
                     rng: np.random.Generator, time_limit: float) -> np.ndarray:
    """w of the full problem (3) on a stratified subsample of about SUBSAMPLE_ROWS examples
    (K scaled with the threshold examples kept, at least 1)."""
    frac = SUBSAMPLE_ROWS / form.m
    ip = np.sort(rng.choice(form.n_pos, max(1, int(round(frac * form.n_pos))), replace=False))
    nt = max(2, int(round(frac * form.n_tilde)))
    it = np.sort(rng.choice(form.n_tilde, min(nt, form.n_tilde), replace=False))
    sub = TopForm(formulation=form.formulation, family=form.family, surrogate=form.surrogate,
                  K=None if form.K is None else max(1, int(round(form.K * it.size
                                                                  / form.n_tilde))),
                  tau=form.tau, theta=form.theta, lam=form.lam, kernel=form.kernel,
                  X_pos=Xp[ip], X_tilde=Xt[it], gram=None, pos_index=form.pos_index[ip],
                  tilde_index=form.tilde_index[it], linear_model=True)
    full = _Split(np.ones(ip.size, bool), np.zeros(ip.size, bool), np.ones(it.size, bool),
                  np.zeros(it.size, bool))
    lp, hess, index = _reduced_problem(sub, sub.X_pos, sub.X_tilde, full, l1, l2)
    res = _solve(lp, hess, time_limit, None)
    if res.status != settings.OPTIMAL:
        return np.zeros(Xp.shape[1])
    return res.x[index["w"]]
