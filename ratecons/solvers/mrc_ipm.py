"""Structured primal-dual interior point for the MRC LP (4) over a set of subset rows.

The rows of LP (4) are F_r = w_r kron psi(x_{i_r}) with w_r = sum_{y in C_r} E[y] / |C_r|
(eq. 5; one-hot E = I), so with row weights d the normal-equation block

    F^T diag(d) F = [ Psi^T diag(c^{ab}) Psi ]_{a, b},   c^{ab}_i = sum_{r: i_r = i} d_r w_ra w_rb,

is L(L + 1)/2 weighted Gram matrices of the n x p matrix Psi, whatever the number of subset rows
per instance: for binary one-hot data three p x p products over the instances instead of one
(3n) x (2p) product, and F itself is never formed. Each iteration then solves an
(m + 1) x (m + 1) system by Cholesky (m = L p). On dense feature maps (random Fourier features)
this makes an interior-point solve of the *full* LP cost a few products of Psi, where HiGHS'
simplex pays a dense pivot per active row and its interior point a sparse factorization of
dense columns.

The LP is taken in the inequality form min c^T x s.t. G x <= h over x = (mu, t, nu):

    min  -tau^T mu + lambda^T t + nu
    s.t. F mu - nu 1 <= b        (multipliers alpha: the dual (6))
         mu - t <= 0, -mu - t <= 0   (t = |mu| at the solution),

and solved by Mehrotra's predictor-corrector; t is eliminated from each Newton system
(its block is diagonal). The iterates are infeasible until convergence, so the result is not a
certificate by itself: :class:`ratecons.solvers.ccg.CCG` (``start="ipm"``) checks the solution on
every row by Alg. 2 and bounds R* from below by :func:`dual_lower_bound`, or hands the rows and
a basis guessed from the solution to the simplex.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla

from ..scans import weighted_gram
from .interior import single_blas_thread, step_to_boundary

__all__ = ["IPMResult", "StructuredRows", "dual_lower_bound", "solve_rows_ipm"]

log = logging.getLogger(__name__)

#: once an iterate is within STALL_ACCEPT (max of gap and residuals), the IPM stops after
#: STALL_ITERATIONS iterations without a better one and returns it as "stalled"
STALL_ITERATIONS = 5
STALL_ACCEPT = 1e-6


@dataclass
class StructuredRows:
    """Rows F_r = weights[r] kron psi[source[r]] and right-hand sides b of LP (4).

    Parameters
    ----------
    psi : ndarray, shape (n_src, p)
        Feature vectors the rows draw on (training instances, then any centroids).
    source : ndarray of int, shape (R,)
        Row r uses psi[source[r]].
    weights : ndarray, shape (R, L)
        w_r = sum_{y in C_r} E[y] / |C_r|.
    b : ndarray, shape (R,)
        1/|C_r| - 1.
    """

    psi: np.ndarray
    source: np.ndarray
    weights: np.ndarray
    b: np.ndarray

    def __post_init__(self) -> None:
        used, self._local = np.unique(self.source, return_inverse=True)
        # the products run over the instances that have rows only
        self._psi_used = self.psi if used.size == self.psi.shape[0] else self.psi[used]
        # rows grouped by their weight vector w_r (one group per label subset)
        self._patterns, self._group = np.unique(self.weights, axis=0, return_inverse=True)
        self._group = self._group.ravel()

    @property
    def p(self) -> int:
        return int(self.psi.shape[1])

    def take(self, keep: np.ndarray) -> StructuredRows:
        """The rows ``keep`` (indices) as a new row set over the same psi."""
        return StructuredRows(self.psi, self.source[keep], self.weights[keep], self.b[keep])

    @property
    def n_blocks(self) -> int:
        return int(self.weights.shape[1])

    def times(self, mu: np.ndarray) -> np.ndarray:
        """F mu, shape (R,)."""
        scores = self._psi_used @ mu.reshape(self.n_blocks, self.p).T  # (used, L)
        return np.einsum("rl,rl->r", self.weights, scores[self._local])

    def column(self, j: int) -> np.ndarray:
        """Column j of F (block j // p, feature j % p), shape (R,)."""
        block, k = divmod(int(j), self.p)
        return self.weights[:, block] * self._psi_used[self._local, k]

    def _per_source(self, row_values: np.ndarray) -> np.ndarray:
        """sum of row_values (R,) over the rows of each used source."""
        return np.bincount(self._local, weights=row_values, minlength=self._psi_used.shape[0])

    def transpose_times(self, a: np.ndarray) -> np.ndarray:
        """F^T a, shape (L p,)."""
        A = np.column_stack([self._per_source(a * self.weights[:, k])
                             for k in range(self.n_blocks)])
        return (A.T @ self._psi_used).ravel()

    def gram(self, d: np.ndarray) -> np.ndarray:
        """F^T diag(d) F for d >= 0, shape (L p, L p).

        Rows with the same weight vector w (the same label subset) share the factor
        w w^T, so their part is (w w^T) kron Psi_G^T diag(c) Psi_G with one symmetric
        product (BLAS syrk) over the instances G of that subset: 2^|Y| - 1 products at most
        (three for binary data, one for a restricted set of pair rows). With more subsets
        than label pairs, the L(L + 1)/2 blocks Psi^T diag(c^{ab}) Psi are formed instead,
        c^{ab}_i = sum_{r: i_r = i} d_r w_ra w_rb."""
        L, p = self.n_blocks, self.p
        out = np.zeros((L * p, L * p))
        if self._patterns.shape[0] <= L * L:
            for g, w in enumerate(self._patterns):
                in_group = self._group == g
                c = np.bincount(self._local[in_group], weights=d[in_group],
                                minlength=self._psi_used.shape[0])
                nonzero = np.flatnonzero(c > 0)
                block = weighted_gram(self._psi_used[nonzero], c[nonzero])
                for a in np.flatnonzero(w):
                    for b in np.flatnonzero(w):
                        out[a * p:(a + 1) * p, b * p:(b + 1) * p] += w[a] * w[b] * block
            return out
        for a in range(L):
            for b in range(a, L):
                c = self._per_source(d * self.weights[:, a] * self.weights[:, b])
                if a == b:
                    block = weighted_gram(self._psi_used, c)
                else:
                    block = self._psi_used.T @ (self._psi_used * c[:, None])
                out[a * p:(a + 1) * p, b * p:(b + 1) * p] = block
                if a != b:
                    out[b * p:(b + 1) * p, a * p:(a + 1) * p] = block.T
        return out


@dataclass
class IPMResult:
    """Interior-point solution of LP (4) over a row set.

    Attributes
    ----------
    status : str
        "converged" when residuals and gap are below ``tol``; "stalled" when the best
        iterate (returned) is within ``STALL_ACCEPT`` and ``STALL_ITERATIONS`` iterations
        did not improve on it; else "iteration_limit", "time_limit" or "numerical_error".
    mu, nu : solution; ``slack`` = b - F mu + nu 1 and ``alpha`` (the multipliers, an
        approximately optimal point of the dual (6)) per row.
    objective : float
        -tau^T mu + lambda^T |mu| + nu at the final iterate.
    iterations : int
    gap, primal_residual, dual_residual : float
        Relative duality gap and residual norms at the final iterate.
    live : ndarray of int
        The rows (indices into the given row set) still in the iteration at the end.
    """

    status: str
    mu: np.ndarray
    nu: float
    alpha: np.ndarray
    slack: np.ndarray
    objective: float
    iterations: int
    gap: float
    primal_residual: float
    dual_residual: float
    live: np.ndarray


class _Direction(NamedTuple):
    """A Newton direction: primal (mu, t, nu), slacks of the rows and of |mu| <= t, and
    multipliers of the rows and of the two sides of |mu| <= t."""

    mu: np.ndarray
    t: np.ndarray
    nu: float
    s_a: np.ndarray
    s_p: np.ndarray
    s_m: np.ndarray
    alpha: np.ndarray
    z_p: np.ndarray
    z_m: np.ndarray


def _newton(rows: StructuredRows, factor: tuple, bj: np.ndarray, residuals: tuple,
            point: tuple, weights: tuple, centring: tuple) -> _Direction:
    """One Newton direction of the IPM for the complementarity targets ``centring``
    (rc_a, rc_p, rc_m): reduce to the factored (m + 1) normal system, then recover
    d_t, the slacks and the multipliers."""
    r_mu, r_t, r_nu, r_a, r_p, r_m = residuals
    alpha, z_p, z_m, s_a, s_p, s_m = point
    w_p, w_m, coupling = weights
    rc_a, rc_p, rc_m = centring
    m = r_mu.size
    q_a = (alpha * r_a - rc_a) / s_a
    q_p = (z_p * r_p - rc_p) / s_p
    q_m = (z_m * r_m - rc_m) / s_m
    # right-hand side -r_d - G^T q
    g_mu = -r_mu - rows.transpose_times(q_a)
    g_mu[bj] -= q_p - q_m
    g_t = -r_t + q_p + q_m
    g_nu = -r_nu + q_a.sum()
    rhs_mu = g_mu.copy()
    rhs_mu[bj] -= coupling * g_t
    sol = sla.cho_solve(factor, np.concatenate([rhs_mu, [g_nu]]), check_finite=False)
    d_mu, d_nu = sol[:m], sol[m]
    d_t = (g_t - (w_m - w_p) * d_mu[bj]) / (w_p + w_m)
    ds_a = -r_a - (rows.times(d_mu) - d_nu)
    ds_p = -r_p - (d_mu[bj] - d_t)
    ds_m = -r_m - (-d_mu[bj] - d_t)
    da = (-rc_a - alpha * ds_a) / s_a
    dzp = (-rc_p - z_p * ds_p) / s_p
    dzm = (-rc_m - z_m * ds_m) / s_m
    return _Direction(d_mu, d_t, d_nu, ds_a, ds_p, ds_m, da, dzp, dzm)


def _dual_residual_mu(rows: StructuredRows, tau: np.ndarray, bj: np.ndarray,
                      alpha: np.ndarray, z_p: np.ndarray, z_m: np.ndarray) -> np.ndarray:
    """The dual residual in mu: F^T alpha - tau + (z_p - z_m) on the bounded entries."""
    r = rows.transpose_times(alpha) - tau
    r[bj] += z_p - z_m
    return r


def _residuals(rows: StructuredRows, b: np.ndarray, tau: np.ndarray, lam: np.ndarray,
               bj: np.ndarray, primal: tuple, dual: tuple, slacks: tuple
               ) -> tuple[tuple, float, float, float]:
    """The KKT residuals at (mu, t, nu), (alpha, z_p, z_m), (s_a, s_p, s_m), and the relative
    duality gap, primal and dual residuals whose maximum the iteration drives below ``tol``."""
    mu, t, nu = primal
    alpha, z_p, z_m = dual
    s_a, s_p, s_m = slacks
    lam_b = lam[bj]
    r_mu = _dual_residual_mu(rows, tau, bj, alpha, z_p, z_m)
    r_t = lam_b - z_p - z_m
    r_nu = 1.0 - alpha.sum()
    r_a = rows.times(mu) - nu - b + s_a
    r_p = mu[bj] - t + s_p
    r_m = -mu[bj] - t + s_m
    primal_obj = -tau @ mu + lam_b @ t + nu
    gap = abs(primal_obj + b @ alpha) / (1.0 + abs(primal_obj))
    primal_res = max(np.abs(r_a).max(), np.abs(r_p).max(initial=0.0),
                     np.abs(r_m).max(initial=0.0)) / (1.0 + np.abs(b).max())
    scale_c = 1.0 + max(np.abs(tau).max(), np.abs(lam).max(), 1.0)
    dual_res = max(np.abs(r_mu).max(), np.abs(r_t).max(initial=0.0), abs(r_nu)) / scale_c
    return (r_mu, r_t, r_nu, r_a, r_p, r_m), gap, primal_res, dual_res


def _normal_factor(rows: StructuredRows, w_a: np.ndarray, w_p: np.ndarray, w_m: np.ndarray,
                   bj: np.ndarray, m: int) -> tuple | None:
    """Cholesky factor of the (m + 1) normal system in (mu, nu) after eliminating t, with
    the Newton weights w = multiplier / slack of the rows and of the bounds |mu_j| <= t_j;
    None when it is not positive definite."""
    D = np.zeros(m)
    D[bj] = 4.0 * w_p * w_m / (w_p + w_m)
    K = np.empty((m + 1, m + 1))
    K[:m, :m] = rows.gram(w_a)
    K[np.arange(m), np.arange(m)] += D
    col = -rows.transpose_times(w_a)
    K[:m, m] = col
    K[m, :m] = col
    K[m, m] = w_a.sum()
    diag = np.diag(K).copy()
    # a column of F that is zero on every row with lambda_j = 0 (a dead feature):
    # mu_j does not enter the LP; keep it at 0
    K[np.arange(m + 1), np.arange(m + 1)] += np.where(diag == 0, 1.0, 0.0)
    reg = 1e-13 * max(1.0, float(np.abs(diag).max()))
    try:
        return sla.cho_factor(K + reg * np.eye(m + 1), lower=False, check_finite=False)
    except np.linalg.LinAlgError:
        return None


def _predictor_corrector(system: tuple, n_ineq: int) -> tuple[_Direction, float, float]:
    """Mehrotra's affine predictor and centred corrector on the factored ``system`` (the
    arguments of :func:`_newton`); the corrector direction and its primal and dual steps,
    0.99 of the way to the boundary."""
    alpha, z_p, z_m, s_a, s_p, s_m = system[4]
    mu_c = (s_a @ alpha + s_p @ z_p + s_m @ z_m) / n_ineq
    aff = _newton(*system, (s_a * alpha, s_p * z_p, s_m * z_m))
    ap = step_to_boundary((s_a, aff.s_a), (s_p, aff.s_p), (s_m, aff.s_m))
    ad = step_to_boundary((alpha, aff.alpha), (z_p, aff.z_p), (z_m, aff.z_m))
    mu_aff = ((s_a + ap * aff.s_a) @ (alpha + ad * aff.alpha)
              + (s_p + ap * aff.s_p) @ (z_p + ad * aff.z_p)
              + (s_m + ap * aff.s_m) @ (z_m + ad * aff.z_m)) / n_ineq
    target = (mu_aff / mu_c) ** 3 * mu_c
    cor = _newton(*system, (s_a * alpha + aff.s_a * aff.alpha - target,
                            s_p * z_p + aff.s_p * aff.z_p - target,
                            s_m * z_m + aff.s_m * aff.z_m - target))
    ap = 0.99 * step_to_boundary((s_a, cor.s_a), (s_p, cor.s_p), (s_m, cor.s_m))
    ad = 0.99 * step_to_boundary((alpha, cor.alpha), (z_p, cor.z_p), (z_m, cor.z_m))
    return cor, ap, ad


@single_blas_thread
def solve_rows_ipm(rows: StructuredRows, tau: np.ndarray, lam: np.ndarray, tol: float = 1e-8,
                   max_iterations: int = 80, reduce: float = 1e-8,
                   protected: np.ndarray | None = None,
                   deadline: float | None = None) -> IPMResult:
    """Mehrotra predictor-corrector on LP (4) restricted to ``rows``, with one BLAS thread
    (CCG at 20k instances, 400 random Fourier features, quiet 2-core machine: adult 14.3-15.3 s
    against 18.1-20.4 s with two threads, synthetic 10.6-10.7 s against 13.4-14.2 s).

    Parameters
    ----------
    rows : StructuredRows
    tau, lam : ndarray, shape (m,)
        Mean and confidence vectors (eq. 2).
    tol : float
        Relative tolerance on the primal and dual residuals and the duality gap.
    max_iterations : int
    reduce : float
        Constraint reduction: a row whose Newton weight alpha_r / s_r falls below ``reduce``
        times the largest one leaves the iteration for good (its multiplier is set to 0), so
        the Gram products shrink with the set of rows that can still be active (0 keeps every
        row). Dropped rows are not checked again here: the caller verifies the solution on
        all rows.
    protected : ndarray of bool, shape (R,), optional
        Rows never dropped: rows that keep every subset of the LP bounded (the class
        centroids of eq. (13), whose singleton rows reproduce tau).
    deadline : float, optional
        ``time.perf_counter()`` value at which the iteration stops with status
        "time_limit": the caller's :attr:`ratecons.solvers.tracker.Tracker.deadline`, which
        holds the active :mod:`ratecons.limits` too.

    Returns
    -------
    IPMResult
        ``slack`` and ``alpha`` refer to the rows of ``rows`` (alpha 0 on dropped rows).
    """
    m = tau.size
    all_rows = rows
    index = np.arange(rows.b.size)  # positions in all_rows of the live rows
    R = rows.b.size
    b = rows.b
    # t_j (and |mu_j| <= t_j) only where lambda_j > 0: with lambda_j = 0 a t_j of cost 0
    # would make the optimal face unbounded, and the central path with it
    bj = np.flatnonzero(lam > 0)
    # starting point: mu = 0, |mu| < t = 1, every row strictly satisfied by nu
    mu, t = np.zeros(m), np.ones(bj.size)
    nu = float(1.0 + max(0.0, -b.min()))
    s_a = b - rows.times(mu) + nu
    s_p, s_m = t - mu[bj], t + mu[bj]
    alpha = np.full(R, 1.0 / R)
    z_p = np.maximum(lam[bj] / 2, 1e-2)
    z_m = z_p.copy()
    n_ineq = R + 2 * bj.size
    status = "iteration_limit"
    k = 0
    gap = primal_res = dual_res = np.inf
    best_measure, best_k = np.inf, 0
    best = None  # (mu, nu, alpha, index, gap, primal_res, dual_res) of the best iterate

    for k in range(1, max_iterations + 1):
        if deadline is not None and time.perf_counter() >= deadline:
            status = "time_limit"
            break
        (r_mu, r_t, r_nu, r_a, r_p, r_m), gap, primal_res, dual_res = _residuals(
            rows, b, tau, lam, bj, (mu, t, nu), (alpha, z_p, z_m), (s_a, s_p, s_m))
        log.debug("ipm %d: gap %.1e residuals %.1e %.1e", k, gap, primal_res, dual_res)
        measure = max(gap, primal_res, dual_res)
        if measure < best_measure:
            best_measure, best_k = measure, k
            best = (mu.copy(), nu, alpha.copy(), index, gap, primal_res, dual_res)
        if measure <= tol:
            status = "converged"
            break
        if best_measure <= STALL_ACCEPT and k - best_k >= STALL_ITERATIONS:
            # near the end rounding takes over (Newton weights span 1e16): the best iterate,
            # accurate to STALL_ACCEPT, stands (earlier, dropped rows make the measure jump)
            status = "stalled"
            break
        w_a, w_p, w_m = alpha / s_a, z_p / s_p, z_m / s_m
        live = _live_rows(w_a, reduce, None if protected is None else protected[index], m)
        if live is not None:
            rows, index, b = rows.take(live), index[live], b[live]
            s_a, alpha, w_a = s_a[live], alpha[live], w_a[live]
            r_a, n_ineq = r_a[live], live.size + 2 * bj.size
            r_mu = _dual_residual_mu(rows, tau, bj, alpha, z_p, z_m)  # without the dropped
            r_nu = 1.0 - alpha.sum()
            log.debug("ipm %d: %d live rows", k, live.size)
        factor = _normal_factor(rows, w_a, w_p, w_m, bj, m)
        if factor is None:
            status = "numerical_error"
            break
        system = (rows, factor, bj, (r_mu, r_t, r_nu, r_a, r_p, r_m),
                  (alpha, z_p, z_m, s_a, s_p, s_m), (w_p, w_m, (w_m - w_p) / (w_p + w_m)))
        cor, ap, ad = _predictor_corrector(system, n_ineq)
        mu, t, nu = mu + ap * cor.mu, t + ap * cor.t, nu + ap * cor.nu
        s_a, s_p, s_m = s_a + ap * cor.s_a, s_p + ap * cor.s_p, s_m + ap * cor.s_m
        alpha, z_p, z_m = alpha + ad * cor.alpha, z_p + ad * cor.z_p, z_m + ad * cor.z_m
    # the best iterate (the last one unless the iteration stalled)
    return _result(all_rows, tau, lam, status, k,
                   best or (mu, nu, alpha, index, gap, primal_res, dual_res))


def _live_rows(w_a: np.ndarray, reduce: float, protected: np.ndarray | None,
               m: int) -> np.ndarray | None:
    """Constraint reduction: the rows whose Newton weight is at least ``reduce`` times the
    largest (and the protected ones), when at least 10% of the rows can go; else None."""
    keep = w_a >= reduce * w_a.max()
    if protected is not None:
        keep |= protected
    live = np.flatnonzero(keep)
    return live if live.size <= 0.9 * w_a.size and live.size > m else None


def _result(all_rows: StructuredRows, tau: np.ndarray, lam: np.ndarray, status: str, k: int,
            iterate: tuple) -> IPMResult:
    """The IPMResult of ``iterate`` = (mu, nu, alpha on the live rows, their index, gap,
    primal and dual residuals), with alpha and the slacks on every row."""
    mu, nu, alpha, index, gap, primal_res, dual_res = iterate
    objective = float(-tau @ mu + lam @ np.abs(mu) + nu)
    full_alpha = np.zeros(all_rows.b.size)
    full_alpha[index] = alpha
    return IPMResult(status, mu, float(nu), full_alpha, all_rows.b - all_rows.times(mu) + nu,
                     objective, k, float(gap), float(primal_res), float(dual_res), index)


def dual_lower_bound(rows: StructuredRows, alpha: np.ndarray, tau: np.ndarray, lam: np.ndarray,
                     norm_bound: float) -> float:
    """A lower bound on R* from multipliers that satisfy the dual (6) only approximately.

    For alpha in the simplex, weak duality gives R(mu) >= -b^T alpha + (F^T alpha - tau)^T mu
    + lambda^T |mu| for every mu. If an optimal mu* has lambda^T |mu*| <= ``norm_bound``, the
    minimum of the right side over that set is

        -b^T alpha - norm_bound * max_j (|g_j| / lambda_j - 1)_+,   g = F^T alpha - tau,

    which is 0 when alpha is dual feasible (|g| <= lambda) and a small correction when the
    interior point left residuals of 1e-10. With tau the sample mean of Phi(x_i, y_i),
    1 - tau^T mu + varphi(mu) >= 0 for every mu (varphi(mu) >= max_i Phi(x_i, y_i)^T mu - 1
    by the singletons), so R(mu) >= lambda^T |mu| and any upper bound on R* serves as
    ``norm_bound``. Components with lambda_j = 0 = tau_j whose column of F has one sign are
    met exactly by zeroing alpha on the column's support first; returns -inf when a component
    with lambda_j = 0 is still violated.

    Parameters
    ----------
    rows : StructuredRows
        The rows alpha refers to (a subset of the full LP's rows: the others get 0).
    alpha : ndarray, shape (R,)
        Nonnegative multipliers; they are scaled to sum 1.
    tau, lam : ndarray, shape (m,)
    norm_bound : float
        An upper bound on lambda^T |mu*| for some optimal mu*.
    """
    a = np.maximum(alpha, 0.0)
    # lambda_j = 0 = tau_j makes sum_r alpha_r F_rj = 0 a constraint of (6); where F_j has
    # one sign on the rows (a ReLU unit that is zero on one class), only alpha_r = 0 on its
    # support meets it, which an interior point approaches but does not reach: set them to 0
    for j in np.flatnonzero((lam == 0) & (tau == 0)):
        column = rows.column(j)
        if np.all(column >= 0) or np.all(column <= 0):
            a[column != 0] = 0.0
    if a.sum() <= 0:
        return -np.inf
    a = a / a.sum()
    g = np.abs(rows.transpose_times(a) - tau)
    over = g > lam
    if not over.any():
        return float(-rows.b @ a)
    if np.any(over & (lam <= 0)):
        return -np.inf
    excess = float(np.max(g[over] / lam[over] - 1.0))
    return float(-rows.b @ a - norm_bound * excess)
