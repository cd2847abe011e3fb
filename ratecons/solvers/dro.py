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
objective evaluated *exactly* on the full data and a certified lower bound (:func:`lower_bound`:
weak duality at the worst-case weights), neither counted in the reported time; ``optimal``
means the certified gap meets the tolerance.

Deterministic default
    ``lbfgs`` (:func:`solve_dro_lbfgs`): L-BFGS on the exact objective F (IM procedure on all N
    examples, O(N log N) per evaluation), stopped by the same certified gap.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.optimize import lsq_linear

from ..caller import user_stacklevel
from ..canonical.dro import DROProgram
from ..errors import ConvergenceWarning, parameter_error
from ..loss_functions import LOSS_CONJUGATES, margin_loss
from ..numerics.inner_max import InnerSolution, inner_maximize
from ..numerics.phi import CHI2, KL
from ..scans import Rows, persisted
from ..settings import ITERATION_LIMIT, OPTIMAL, TIME_LIMIT
from ..solution import Certificate, Solution
from .dro_kernels import gssg_draws

__all__ = [
    "subset_gradient",
    "full_objective",
    "eta",
    "gssg_levels",
    "gssg_estimate",
    "solve_dro",
    "solve_dro_lbfgs",
    "evaluate",
    "lower_bound",
    "Evaluation",
    "METHODS",
    "DEFAULT_R",
]

log = logging.getLogger(__name__)

#: the variance-time optimal r* = 2^(-3/2) of Blanchet & Glynn used in section 4
DEFAULT_R = 2.0 ** -1.5
METHODS = ("fsg", "pssg", "gssg", "sgd")


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
    ev = evaluate(form, theta)
    return ev.value, ev.grad, ev.inner


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



# ====================================================================== exact evaluation and bound
@dataclass
class Evaluation:
    """F(theta), its gradient and what the lower bound of :func:`lower_bound` reuses.

    Attributes
    ----------
    theta : ndarray
    value : float
        F(theta) = R(theta) + (l2/2)||w||^2 on all N examples.
    grad : ndarray
        grad F(theta): the gradient (6) with the full-data P*, plus l2 w.
    inner : InnerSolution
        P*(theta) and the dual variables of (5).
    margins, slope : ndarray
        m_n(theta) and l'(m_n(theta)) of every example.
    parts : ndarray, shape (d, 2)
        sum_n p_n l'(m_n) y~_n x_n over the examples labelled +1 (column 0) and -1 (column 1).
    """

    theta: np.ndarray
    value: float
    grad: np.ndarray
    inner: InnerSolution
    margins: np.ndarray
    slope: np.ndarray
    parts: np.ndarray


def evaluate(form: DROProgram, theta: np.ndarray) -> Evaluation:
    """Evaluate F exactly at theta: one pass for the margins, the IM procedure for P* (App.
    A.1), one pass (two columns, split by label) for the gradient (6)."""
    theta = np.asarray(theta, dtype=np.float64)
    margins = form.margins(theta)
    z, slope = margin_loss(form.loss, margins)
    inner = inner_maximize(z, form.phi, form.rho)
    parts = _class_parts(form, inner.p * slope * form.y)
    grad_w = parts.sum(axis=1)
    w, _ = form.split(theta)
    grad = np.empty(form.dim)
    grad[: form.d] = grad_w + form.l2 * w
    if form.fit_intercept:
        grad[form.d] = -float(np.dot(inner.p * slope, form.y))
    return Evaluation(theta=theta.copy(), value=inner.value + form.regularizer(theta), grad=grad,
                      inner=inner, margins=margins, slope=slope, parts=parts)


def _class_parts(form: DROProgram, c: np.ndarray) -> np.ndarray:
    """X^T [c * 1{y~ = +1}, c * 1{y~ = -1}] in one pass over X."""
    pos = form.y > 0
    cols = np.zeros((form.n, 2))
    cols[pos, 0] = c[pos]
    cols[~pos, 1] = c[~pos]
    return np.asarray(form.X.T @ cols)


def lower_bound(form: DROProgram, ev: Evaluation, balance: bool = False,
                refit: bool = True) -> float:
    """A certified lower bound on F* = min_theta F(theta) from the worst-case weights at theta.

    With L(theta, P) = sum_n p_n l(m_n(theta)) + (l2/2)||w||^2, F(theta) = max_{P in U} L
    (eq. 2), so for any pmf P in the ball U, F* >= min_theta L(theta, P) (weak duality of the
    min-max problem; equality at the saddle point (theta*, P*(theta*)) by Proposition 1 and the
    minimax theorem). The inner minimum is a weighted, l2-regularized ERM; writing
    l(m) = sup_v (v m - l*(v)) and minimizing over w and b in closed form gives its Fenchel dual:
    for any v with l*(v_n) finite and, with an intercept, sum_n p_n v_n y~_n = 0,

        min_theta L(theta, P) >= -sum_n p_n l*(v_n) - (1/(2 l2)) ||sum_n p_n v_n y~_n x_n||^2.

    We take P = P*(theta) (mixed with U_N when rounding left D_phi(P, U_N) above rho; the ball is
    convex) and v_n = l'(m_n(theta)), which is the optimal dual at theta = theta*, so the bound
    tends to F* as theta -> theta*. The intercept condition is restored by scaling v down on the
    class with the larger |sum p v| (logistic, hinge: v stays in [-1, 0]) or by shifting
    v <- v - (sum p v y~) y~ (squared).

    Without l2 (l2 = 0) the dual of the weighted ERM is the same with the quadratic term
    replaced by a constraint: min_theta L(theta, P) >= -sum_n p_n l*(v_n) for every v in the
    domain of l* with sum_n p_n v_n a_n = 0 (a_n = y~_n (x_n, -1), the -1 only with an
    intercept), since then sum_n p_n l(a_n . theta) >= sum_n p_n (v_n a_n . theta - l*(v_n))
    = -sum_n p_n l*(v_n) for every theta (Fenchel-Young). v = l'(m(theta)) violates the
    constraint by the gradient r = sum_n p_n v_n a_n; :func:`_newton_dual_value` restores it
    exactly by the first-order change of v along one Newton step of the weighted ERM (smooth
    losses; the hinge loss without l2 has no bound here and returns -inf).

    For the hinge loss (``refit=True``) v is refitted at the kink (:func:`_hinge_refit`).
    With ``balance=True`` and all margins equal (theta = 0), P*(theta) is not unique and the
    pmfs of :func:`_balancing_pmfs` are tried as well: they certify a constant predictor when
    it is optimal (a large ball); they cost a few passes over the data.

    Returns
    -------
    float
        The lower bound (-inf when no bound is available: l2 = 0 with the hinge loss, a Newton
        correction that leaves the domain of l*, or a non-finite value).
    """
    if form.l2 <= 0 and form.loss not in LOSS_HESSIANS:
        return -np.inf
    p, v, parts = ev.inner.p, ev.slope, ev.parts
    excess = ev.inner.divergence - form.rho
    if excess > 0:  # rounding: move P into the ball along the segment to U_N
        p = (1.0 - excess / ev.inner.divergence) * p + (excess / ev.inner.divergence) / form.n
        parts = _class_parts(form, p * v * form.y)
    best = _erm_dual_value(form, p, v, parts)
    if balance and _equal_margins(ev):
        # equal margins (theta = 0): P*(theta) is not unique; use the pmf in the ball that
        # balances the examples, which certifies a constant predictor when one is optimal
        for q in _balancing_pmfs(form):
            best = max(best, _erm_dual_value(form, q, v, _class_parts(form, q * v * form.y)))
    if form.loss == "hinge" and refit:
        best = max(best, _hinge_kink_bound(form, ev, p, parts))
    return best if np.isfinite(best) else -np.inf


def _minimize_small(fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
                    x0: np.ndarray) -> np.ndarray:
    """argmin of a smooth convex ``fun`` (value, gradient) by :func:`_lbfgs`, to a gradient
    norm of 1e-9 or 100 steps (for :func:`_balancing_pmfs`, where a residual r weakens the
    bound by O(|r|^2 / l2) only)."""
    best = [x0]

    def on_step(x: np.ndarray, grad: np.ndarray) -> None:
        best[0] = x
        if float(np.linalg.norm(grad)) <= 1e-9:
            raise StopIteration

    try:
        _lbfgs(fun, x0, 20, 100, on_step)
    except StopIteration:
        pass
    return best[0]


def _equal_margins(ev: Evaluation) -> bool:
    return float(np.ptp(ev.margins)) <= 1e-12 * max(1.0, float(np.max(np.abs(ev.margins))))


def _balancing_pmfs(form: DROProgram) -> list[np.ndarray]:
    """Pmfs P in the ball with sum_n p_n a_n ~ 0, a_n = y~_n (x_n, -1) (the -1 only with an
    intercept), if the two candidates below are in it (a residual only weakens the bound).

    If all margins are equal (theta = 0), every P in the ball is worst-case, and theta = 0
    minimizes L(., P) exactly when P balances the examples: then sum_n p_n l(m_n(theta)) >=
    l(sum_n p_n m_n(theta)) = l(0) by Jensen, so the bound of :func:`lower_bound` equals F(0).
    Candidates: the chi-square projection of U_N onto the balancing pmfs (p >= 0 kept; by its
    dual, a smooth concave problem in d + 2 multipliers) and the exponential tilting
    p ~ exp(a_n . lam) that minimizes KL(P, U_N) over them (the I-projection; lam minimizes the
    convex log mean exp(a . lam)).
    """
    X, y, n, d = form.X, form.y, form.n, form.d

    def a_dot(lam: np.ndarray) -> np.ndarray:  # (a_n . lam)_n
        out = np.asarray(X @ lam[:d]).ravel()
        return y * (out - lam[d] if form.fit_intercept else out)

    def a_sum(q: np.ndarray) -> np.ndarray:  # sum_n q_n a_n
        head = np.asarray(X.T @ (q * y)).ravel()
        return np.append(head, -float(q @ y)) if form.fit_intercept else head

    def projection(c: np.ndarray) -> tuple[float, np.ndarray]:
        # minus the dual function of min (N/2)||p - 1/N||^2 s.t. sum p a = 0, sum p = 1,
        # p >= 0, at multipliers c (last: the sum); p(c) = max(0, 1/N + (a . c + c0)/N)
        q = np.maximum(0.0, 1.0 / n + (a_dot(c[:-1]) + c[-1]) / n)
        lagr = (0.5 * n * float(np.sum((q - 1.0 / n) ** 2)) - float(c[:-1] @ a_sum(q))
                - c[-1] * (q.sum() - 1.0))
        return -lagr, np.append(a_sum(q), q.sum() - 1.0)

    c = _minimize_small(projection, np.zeros(form.dim + 1))
    q = np.maximum(0.0, 1.0 / n + (a_dot(c[:-1]) + c[-1]) / n)
    out = [q / q.sum()]

    def tilt(lam: np.ndarray) -> tuple[float, np.ndarray]:
        t = a_dot(lam)
        top = float(np.max(t))
        e = np.exp(t - top)
        return top + math.log(float(e.mean())), a_sum(e) / e.sum()

    t = a_dot(_minimize_small(tilt, np.zeros(form.dim)))
    e = np.exp(t - np.max(t))
    out.append(e / e.sum())
    return [q for q in out if np.all(q >= 0) and form.phi.divergence(q) <= form.rho]


#: margin widths |m - 1| <= width within which :func:`lower_bound` refits the hinge dual
HINGE_REFIT_WIDTHS = (1e-2, 1e-3, 1e-4, 1e-5)


def _erm_dual_value(form: DROProgram, p: np.ndarray, v: np.ndarray, parts: np.ndarray) -> float:
    """The Fenchel dual of min_theta L(theta, P) at v (see :func:`lower_bound`), after making v
    satisfy the intercept condition (l2 > 0) or the stationarity condition (l2 = 0,
    :func:`_newton_dual_value`); ``parts`` is :func:`_class_parts` of p v y~."""
    conj, _ = LOSS_CONJUGATES[form.loss]
    if form.l2 <= 0:
        return _newton_dual_value(form, p, v, parts)
    if form.fit_intercept and form.loss == "squared":
        shift = float(np.dot(p * v, form.y))
        v = v - shift * form.y
        u = parts.sum(axis=1) - shift * np.asarray(form.X.T @ p).ravel()
    elif form.fit_intercept:
        pos = form.y > 0
        a, b = float(np.dot(p[pos], v[pos])), float(np.dot(p[~pos], v[~pos]))
        scale_pos = b / a if abs(a) > abs(b) else 1.0
        scale_neg = a / b if abs(b) > abs(a) else 1.0
        v = np.where(pos, scale_pos * v, scale_neg * v)
        u = scale_pos * parts[:, 0] + scale_neg * parts[:, 1]
    else:
        u = parts.sum(axis=1)
    return -float(np.dot(p, conj(v))) - float(u @ u) / (2.0 * form.l2)


def _logistic_hessian(v: np.ndarray) -> np.ndarray:
    return (-v) * (1.0 + v)  # l''(m) = sigma(m) sigma(-m) with v = l'(m) = -sigma(-m)


def _squared_hessian(v: np.ndarray) -> np.ndarray:
    return np.full_like(v, 2.0)


#: the residual of sum_n p_n v'_n a_n = 0 accepted by :func:`_newton_dual_value`, relative to
#: sum_n p_n |v'_n| |a_n| (rounding of the sum)
CONSTRAINT_RTOL = 1e-12
#: l''(m) of the smooth margin losses as a function of v = l'(m) (the hinge has none)
LOSS_HESSIANS = {"logistic": _logistic_hessian, "squared": _squared_hessian}


def _newton_dual_value(form: DROProgram, p: np.ndarray, v: np.ndarray, parts: np.ndarray
                       ) -> float:
    """The l2-free Fenchel dual -sum_n p_n l*(v'_n) of min_theta L(theta, P) (see
    :func:`lower_bound`) at a v' that satisfies sum_n p_n v'_n a_n = 0 exactly.

    Derivation. Let a_n = y~_n (x_n, -1) (y~_n x_n without an intercept), so that
    m_n(theta) = a_n . theta, and let L_P(theta) = sum_n p_n l(a_n . theta), the weighted ERM
    at the pmf P of the ball. For v in the domain of l* (logistic: [-1, 0]; squared: R)
    Fenchel-Young gives l(a_n . theta) >= v_n a_n . theta - l*(v_n), hence

        L_P(theta) >= theta . (sum_n p_n v_n a_n) - sum_n p_n l*(v_n)   for every theta,

    and with r(v) = sum_n p_n v_n a_n = 0 the right side is the constant
    D(v) = -sum_n p_n l*(v_n) <= min_theta L_P(theta) <= F* (weak duality of the min-max problem,
    eq. 2; the entropy form of the logistic dual: alpha_n = -p_n v_n in [0, p_n],
    D = -sum_n [alpha_n log(alpha_n / p_n) + (p_n - alpha_n) log(1 - alpha_n / p_n)] subject to
    sum_n alpha_n a_n = 0). At the saddle point, v = l'(m(theta*)) with P = P*(theta*) gives
    r = grad F(theta*) = 0 and D = F*; near it r = grad L_P(theta) is small but not zero.

    Correction. With h_n = l''(m_n) and H = sum_n p_n h_n a_n a_n^T (the Hessian of L_P), the
    Newton step of L_P is s = -H^+ r, and v' = v + h * (A s) is the first-order change of
    l'(m) along it. Since r lies in the range of H (both are spanned by the a_n with p_n > 0,
    h_n > 0), sum_n p_n v'_n a_n = r + H s = 0: v' is feasible exactly, up to the rounding of
    a Cholesky solve (a least-squares solve when H is singular); the constraint is recomputed
    and the bound refused (-inf) unless |sum_n p_n v'_n a_n| <= 1e-12 sum_n p_n |v'_n| |a_n|
    (:data:`CONSTRAINT_RTOL`: rounding of the sum itself). Its value is
    D(v') = min L_P - O(|r|^2): the gap closes quadratically in the gradient, so a gradient of
    1e-4 already certifies about 1e-8. The logistic v' must stay in [-1, 0]; it does whenever
    |a_n . s| <= 1 (v'_n = v_n + (-v_n)(1 + v_n)(a_n . s)), and -inf is returned otherwise
    (far from theta*). Cost: one weighted Gram product over the examples with p_n > 0
    (O(N d^2)) and a (d+1) x (d+1) solve.
    """
    conj, (lo, hi) = LOSS_CONJUGATES[form.loss]
    live = np.flatnonzero(p > 0)
    everyone = live.size == form.n
    rows = Rows(form.X if everyone else form.X[live])  # in memory or Dask partitions
    y, p_live = (form.y, p) if everyone else (form.y[live], p[live])
    c = p_live * LOSS_HESSIANS[form.loss](v if everyone else v[live])
    r = parts.sum(axis=1)
    H = rows.gram(c)
    if form.fit_intercept:  # the Gram matrix of (x_n, -1)
        xc = -rows.transpose_apply(c).ravel()
        H = np.block([[H, xc[:, None]], [xc[None, :], np.full((1, 1), c.sum())]])
        r = np.append(r, -float(np.dot(p * v, form.y)))
    try:
        step = -cho_solve(cho_factor(H), r)
    except LinAlgError:  # singular (collinear features): r is in the range of H
        step = -np.linalg.lstsq(H, r, rcond=1e-13)[0]
    scores = rows.scores(step[: form.d], step[form.d] if form.fit_intercept else 0.0)
    v_new = v.copy()
    dv = c / p_live * (y * scores)
    if everyone:
        v_new += dv
    else:
        v_new[live] += dv
    if np.any(v_new < lo) or np.any(v_new > hi):
        return -np.inf
    # the constraint as computed: an ill-conditioned H (nearly collinear features) may leave
    # more than rounding, and then the dual value would not be a bound
    u = p_live * (v_new if everyone else v_new[live]) * y
    left = rows.transpose_apply(u).ravel()
    if form.fit_intercept:
        left = np.append(left, -float(u.sum()))
    sq = rows.squared_norms()
    scale = float(np.abs(u) @ np.sqrt(sq + form.fit_intercept))
    if not float(np.linalg.norm(left)) <= CONSTRAINT_RTOL * max(scale, 1e-300):
        return -np.inf
    return -float(np.dot(p, conj(v_new)))


def _hinge_kink_bound(form: DROProgram, ev: Evaluation, p: np.ndarray,
                      parts: np.ndarray) -> float:
    """The best refitted hinge bound over :data:`HINGE_REFIT_WIDTHS`."""
    return max(_hinge_refit(form, ev, p, parts, width) for width in HINGE_REFIT_WIDTHS)


def _kink_set(form: DROProgram, ev: Evaluation, choice: int) -> np.ndarray:
    """A guess of the examples at the hinge kink at theta*: the k examples (p_n > 0) with the
    smallest |m_n - 1|, k < d + 1 cut where consecutive sorted values jump the most (``choice``
    0 takes the largest jump, 1 the second largest, ...)."""
    dist = np.abs(ev.margins - 1.0)
    dist[ev.inner.p <= 0] = np.inf
    order = np.argsort(dist)[: form.dim]
    ranked = np.maximum(dist[order], 1e-300)
    if ranked.size < 2 or not np.isfinite(ranked[1]):
        return order[:1]
    jumps = ranked[1:] / ranked[:-1]  # jump after k = 1, 2, ... examples
    cuts = np.argsort(-np.where(np.isfinite(jumps), jumps, 0.0)) + 1
    return order[: cuts[min(choice, cuts.size - 1)]]


def _hinge_refit(form: DROProgram, ev: Evaluation, p: np.ndarray, parts: np.ndarray,
                 width: float) -> float:
    """The hinge dual with v refitted on the examples at the kink (|m_n - 1| <= width, p_n > 0).

    There l'(m) jumps between -1 and 0, so v = l'(m(theta)) is not the optimal dual even near
    theta*. The optimal v satisfies the stationarity of the weighted ERM: sum_n p_n v_n y~_n x_n
    = -l2 w and sum_n p_n v_n y~_n = 0. Keeping v off the kink, the kink values are fitted to
    these d + 1 equations by bounded least squares (v in [-1, 0]); any such v gives a valid
    bound, and at theta* it attains it.
    """
    kink = np.flatnonzero((np.abs(ev.margins - 1.0) <= width) & (p > 0))
    if kink.size == 0:
        return -np.inf
    w, _ = form.split(ev.theta)
    X_k = form.X[kink]
    X_k = X_k.toarray() if sp.issparse(X_k) else np.asarray(X_k)
    cols = (p[kink] * form.y[kink])[:, None] * X_k  # d(sum p v y x)/dv_k
    v_old = ev.slope[kink]
    rest = parts.sum(axis=1) - cols.T @ v_old  # the examples off the kink
    lhs, rhs = cols.T, -form.l2 * w - rest
    if form.fit_intercept:
        c_b = p[kink] * form.y[kink]
        rest_b = float(np.dot(p * ev.slope, form.y)) - float(c_b @ v_old)
        lhs = np.vstack([lhs, c_b[None, :]])
        rhs = np.append(rhs, -rest_b)
    fit = lsq_linear(lhs, rhs, bounds=(-1.0, 0.0), method="bvls", lsmr_tol="auto")
    v = ev.slope.copy()
    v[kink] = fit.x
    pos = form.y[kink] > 0
    delta = cols * (fit.x - v_old)[:, None]
    parts = parts + np.column_stack([delta[pos].sum(axis=0), delta[~pos].sum(axis=0)])
    return _erm_dual_value(form, p, v, parts)


# ====================================================================== quasi-Newton default
def solve_dro_lbfgs(
    form: DROProgram,
    *,
    callback: Callable[[dict[str, Any]], None] | None = None,
    max_iter: int = 1000,
    time_limit: float | None = None,
    tol: float = 1e-6,
    memory: int = 20,
    theta0: np.ndarray | None = None,
    warn: bool = True,
) -> Solution:
    """Minimize F(theta) = R(theta) + (l2/2)||w||^2 by L-BFGS-B on the exact objective, with a
    certified duality gap.

    F is convex (eq. 2 with convex losses) and, for a strictly convex phi and a differentiable
    loss, differentiable with the gradient (6) at the full-data P*(theta) (Proposition 1 with
    M = N); the IM procedure (appendix A.1) gives F and grad F exactly in O(N log N). After
    every iteration the bound of :func:`lower_bound` at the worst-case weights P*(theta) is
    computed; the run stops with ``optimal`` as soon as
    min_k F(theta_k) - max_k bound_k <= tol * max(1, |F|).

    The hinge loss makes F nonsmooth where margins equal 1. Once L-BFGS stops making progress,
    the examples at the kink are guessed (:func:`_kink_set`: the margins nearest 1, cut at the
    largest jump) and F is minimized on the affine set where their margins stay 1, where it is
    smooth near theta*: L-BFGS in a basis of that set (a few rounds, the next guess from the
    best point). Every point is evaluated exactly and the
    bound is global, so a wrong set costs time, never correctness.

    Parameters
    ----------
    form : DROProgram
    callback : callable, optional
        Receives a record per iteration (``iteration, time, objective, lower, gap``,
        ``method``, ``theta``).
    max_iter : int
        L-BFGS iterations (all phases together).
    time_limit : float, optional
        Seconds; checked after every iteration.
    tol : float
        Relative certified gap that proves optimality.
    memory : int
        L-BFGS memory (pairs kept).
    theta0 : ndarray, optional
        Starting point (zeros by default).
    warn : bool
        Emit a ConvergenceWarning when a limit or a stalled line search stops the run before
        the gap is proved.

    Returns
    -------
    Solution
        primal ``theta`` (the best evaluated point), ``weights`` (P* there); certificate with
        the lower bound, the best objective and their gap, and ``constant_predictor`` (w = 0:
        the ball is so large that no feature helps; a smaller rho or more data changes it);
        history per iteration.
    """
    if int(max_iter) != max_iter or max_iter < 0:
        raise parameter_error("max_iter", "lbfgs", "an int >= 0", max_iter)
    if not tol > 0:
        raise parameter_error("tol", "lbfgs", "a positive float", tol)
    if time_limit is not None and not time_limit > 0:
        raise parameter_error("time_limit", "lbfgs", "a positive float or None", time_limit)
    theta = np.zeros(form.dim) if theta0 is None else np.array(theta0, dtype=np.float64).ravel()
    if theta.size != form.dim:
        raise parameter_error("theta0", "lbfgs", f"an array of length {form.dim}", theta.shape)
    if hasattr(form.X, "__dask_graph__"):  # read once, then every pass from worker memory
        form = replace(form, X=persisted(form.X))
    run = _LBFGSRun(form, tol, int(max_iter), time_limit, memory, callback)
    run.fun(theta)
    first = run.last
    run.check(theta)
    if run.proved():
        run.stop = "tol"
    elif max_iter > 0:
        if _equal_margins(first):
            # all losses tie (theta = 0): F has a kink there (every P in the ball is
            # worst-case), so start one gradient step away, where P* is unique; if after
            # BALANCE_AFTER iterations nothing beats theta = 0, try to prove it optimal
            run.tied_start = first
            theta = theta - first.grad / form.smoothness_estimate()
        run.minimize(theta, plateau=form.loss == "hinge")
        for choice in range(KINK_ROUNDS if form.loss == "hinge" else 0):
            if run.stop not in ("plateau", "stalled") or run.proved():
                break
            run.minimize_on_kink(_kink_set(form, run.best, choice))
    best = run.best
    if not run.proved() and not np.array_equal(run.last.theta, best.theta):
        run.lower = max(run.lower, lower_bound(form, best))
    if not run.proved() and _equal_margins(first):
        run.lower = max(run.lower, lower_bound(form, first, balance=True))
    if run.proved():
        run.stop = "tol"
    elapsed = time.perf_counter() - run.start
    status = _certified_status(run.proved(), run.stop)
    if status != OPTIMAL and warn:
        warnings.warn(
            f"lbfgs: stopped by {run.stop} after {run.it} iterations with certified "
            f"gap {run.gap():.3g} (tol {tol:g} relative); raise max_iter/time_limit.",
            ConvergenceWarning, stacklevel=user_stacklevel())
    w_max = float(np.max(np.abs(best.theta[: form.d]), initial=0.0))
    return _dro_solution(form, "lbfgs", status, best, run.lower, run.history, elapsed,
                         {"stop": run.stop, "iterations": run.it, "tol": tol,
                          "constant_predictor": w_max <= 1e-8})


#: rounds of kink identification and L-BFGS on the kink set (hinge loss)
KINK_ROUNDS = 3
#: L-BFGS on the hinge loss moves to the kink set after this many iterations with a relative
#: decrease of F below PLATEAU_RTOL
PLATEAU_ITERS, PLATEAU_RTOL = 5, 1e-9
#: iterations after which a start at tied losses (theta = 0) that nothing has beaten is tried
#: as the optimum (the balancing pmfs of :func:`lower_bound`)
BALANCE_AFTER = 3
#: phase 1 on the hinge loss refits the kink dual (a few small least-squares fits) every this
#: many iterations only; the plain bound every iteration
REFIT_EVERY = 10


#: without l2, :meth:`_LBFGSRun.check` computes the Newton-corrected bound only once |grad F|
#: is at most this fraction of its value at the last bound (O(log) bounds per run)
NEWTON_BOUND_GATE = 0.5


#: trials of the backtracking line search before L-BFGS declares that F cannot be decreased
LINE_SEARCH_TRIALS = 20


def _lbfgs(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
           memory: int, max_steps: int,
           on_step: Callable[[np.ndarray, np.ndarray], None]) -> None:
    """Limited-memory BFGS (two-loop recursion, initial scaling s.y / y.y) with an Armijo
    backtracking line search (safeguarded quadratic interpolation); calls ``on_step(x, grad)``
    after every accepted step (it may raise StopIteration) and returns when no step decreases
    ``fun``.

    A NumPy loop on vectors of length d + 1: SciPy's L-BFGS-B spends milliseconds per step in
    multithreaded BLAS calls on such tiny vectors when the cores are busy, more than one exact
    evaluation of F costs at N = 4096.
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
    for _ in range(max_steps):
        d = -g
        if pairs:  # two-loop recursion: d = -H g
            q = g.copy()
            alphas = []
            for s_k, y_k, r_k in reversed(pairs):
                a_k = r_k * float(s_k @ q)
                alphas.append(a_k)
                q -= a_k * y_k
            s_k, y_k, _ = pairs[-1]
            q *= float(s_k @ y_k) / float(y_k @ y_k)
            for (s_k, y_k, r_k), a_k in zip(pairs, reversed(alphas), strict=True):
                q += (a_k - r_k * float(y_k @ q)) * s_k
            d = -q
        slope = float(g @ d)
        if not slope < 0:  # not a descent direction: restart from the gradient
            pairs.clear()
            d, slope = -g, -float(g @ g)
            if not slope < 0:
                return
        step = 1.0 if pairs else min(1.0, 1.0 / math.sqrt(-slope))
        for _ in range(LINE_SEARCH_TRIALS):
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * step * slope:
                break
            # minimizer of the quadratic through f, slope and f_new, kept in [0.1, 0.5] step
            curv = f_new - f - slope * step
            step *= min(0.5, max(0.1, -slope * step / (2.0 * curv))) if curv > 0 else 0.1
        else:
            return
        s_vec, y_vec = x_new - x, g_new - g
        sy = float(s_vec @ y_vec)
        if sy > 1e-12 * float(np.linalg.norm(s_vec) * np.linalg.norm(y_vec)):
            pairs.append((s_vec, y_vec, 1.0 / sy))
            del pairs[:-memory]
        x, f, g = x_new, f_new, g_new
        on_step(x, g)


class _LBFGSRun:
    """The state of one :func:`solve_dro_lbfgs` run: best point, best bound, budget, history."""

    def __init__(self, form: DROProgram, tol: float, max_iter: int, time_limit: float | None,
                 memory: int, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.form, self.tol, self.max_iter, self.time_limit = form, tol, max_iter, time_limit
        self.memory, self.callback = memory, callback
        self.start = time.perf_counter()
        self.best: Evaluation | None = None
        self.last: Evaluation | None = None
        self.lower = -np.inf
        self.it = 0
        self.stop = "max_iter"
        self.history: list[dict[str, Any]] = []
        self.values: list[float] = []
        self.tied_start: Evaluation | None = None  # theta0 when its losses tie (see below)
        self.bound_grad_norm = np.inf  # |grad F| where the l2-free bound was last computed

    def fun(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        ev = evaluate(self.form, theta)
        self.last = ev
        if self.best is None or ev.value < self.best.value:
            self.best = ev
        return ev.value, ev.grad

    def gap(self) -> float:
        return self.best.value - self.lower

    def proved(self) -> bool:
        return self.gap() <= self.tol * max(1.0, abs(self.best.value))

    def check(self, theta: np.ndarray, refit: bool = True) -> None:
        """The bound at theta (evaluated already, usually) and one history record."""
        if self.last is None or not np.array_equal(self.last.theta, theta):
            self.fun(theta)
        grad_norm = float(np.linalg.norm(self.last.grad))
        if self.form.l2 > 0 or grad_norm <= NEWTON_BOUND_GATE * self.bound_grad_norm:
            # without l2 the bound costs a weighted Gram product (O(N d^2), about one
            # evaluation of F at d = 20): only where the gradient has shrunk enough to
            # tighten it (its gap is O(|grad|^2), :func:`_newton_dual_value`)
            self.bound_grad_norm = grad_norm
            self.lower = max(self.lower, lower_bound(self.form, self.last, refit=refit))
        rec = {"iteration": self.it, "time": time.perf_counter() - self.start,
               "objective": self.best.value, "lower": self.lower, "gap": self.gap()}
        self.history.append(rec)
        if self.callback is not None:
            self.callback(dict(rec, method="lbfgs", theta=self.last.theta.copy()))

    def _iteration(self, theta: np.ndarray, plateau: bool, refit: bool) -> None:
        """After each L-BFGS iteration: certify, or raise StopIteration at a limit."""
        self.it += 1
        self.check(theta, refit=refit or self.it % REFIT_EVERY == 0)
        self.values.append(self.last.value)
        tied = self.tied_start
        if (tied is not None and self.it >= BALANCE_AFTER
                and self.best.value >= tied.value - 1e-12 * max(1.0, abs(tied.value))):
            self.lower = max(self.lower, lower_bound(self.form, tied, balance=True))
            self.tied_start = None  # once
        if self.proved():
            self.stop = "tol"
        elif self.time_limit is not None and time.perf_counter() - self.start >= self.time_limit:
            self.stop = "time_limit"
        elif self.it >= self.max_iter:
            self.stop = "max_iter"
        elif (plateau and len(self.values) > PLATEAU_ITERS
              and self.values[-PLATEAU_ITERS - 1] - self.values[-1]
              <= PLATEAU_RTOL * max(1.0, abs(self.values[-1]))):
            self.stop = "plateau"
        else:
            return
        raise StopIteration

    def minimize(self, theta0: np.ndarray, origin: np.ndarray | None = None,
                 basis: np.ndarray | None = None, plateau: bool = False) -> None:
        """L-BFGS-B on F(theta0) (basis None) or on u -> F(origin + basis u) from u = 0."""
        self.values = []
        if basis is None:
            x0, to_theta = theta0, (lambda x: x)
            fun = self.fun
        else:
            x0 = np.zeros(basis.shape[1])

            def to_theta(x: np.ndarray) -> np.ndarray:
                return origin + basis @ x

            def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
                value, grad = self.fun(to_theta(x))
                return value, basis.T @ grad

        self.stop = "stalled"  # unless a limit or the tolerance stops it first
        try:
            _lbfgs(fun, x0, self.memory, self.max_iter + 1,
                   lambda x, _: self._iteration(to_theta(x), plateau, refit=basis is not None))
        except StopIteration:
            pass

    def minimize_on_kink(self, active: np.ndarray) -> None:
        """L-BFGS on {theta : m_n(theta) = 1 for n in ``active``} from the projection of the
        best point (the least-squares correction of its margins)."""
        form, theta = self.form, self.best.theta
        rows = form.X[active]
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        C = form.y[active, None] * rows
        if form.fit_intercept:
            C = np.column_stack([C, -form.y[active]])
        if C.shape[0] == 0:
            return
        u, sing, vt = np.linalg.svd(C, full_matrices=True)
        rank = int(np.sum(sing > 1e-10 * sing[0]))
        origin = theta + vt[:rank].T @ ((u[:, :rank].T @ (1.0 - C @ theta)) / sing[:rank])
        basis = vt[rank:].T
        if basis.shape[1] == 0:
            self.fun(origin)
            self.check(origin)
            self.stop = "stalled"
            return
        self.fun(origin)
        self.check(origin)
        if not self.proved():
            self.minimize(origin, origin=origin, basis=basis, plateau=True)


def _certified_status(proved: bool, stop: str) -> str:
    """optimal only when the certificate proves the tolerance; else the limit that stopped."""
    if proved:
        return OPTIMAL
    return TIME_LIMIT if stop == "time_limit" else ITERATION_LIMIT


def _dro_solution(form: DROProgram, method: str, status: str, ev: Evaluation, lower: float,
                  history: list[dict[str, Any]], elapsed: float,
                  details: dict[str, Any]) -> Solution:
    """The Solution of any DRO method at the evaluated point ``ev`` with the bound ``lower``."""
    sol = ev.inner
    value = ev.value
    finite = bool(np.isfinite(lower))
    cert = Certificate(
        lower_bound=lower if finite else None, upper_bound=value,
        gap=max(value - lower, 0.0) if finite else None, max_violation=0.0,
        details=dict(details, relative_gap=(max(value - lower, 0.0) / max(1.0, abs(value))
                                            if finite else None),
                     grad_norm=float(np.linalg.norm(ev.grad)), inner_case=sol.case,
                     inner_dual_gap=sol.dual_value - sol.value, divergence=sol.divergence,
                     rho=form.rho),
    )
    return Solution(
        status=status, objective=value, primal={"theta": ev.theta, "weights": sol.p},
        dual={"alpha": np.float64(sol.alpha), "lambda": np.float64(sol.lam)},
        certificate=cert, history=history, solver=f"ratecons.{method}", solve_time=elapsed,
    )


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
    tol: float = 1e-3,
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
        Stop with status "optimal" when the certified gap at a checkpoint, min F over the
        checkpoints minus the best :func:`lower_bound`, is <= tol * max(1, |F|).
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
    best: list[Evaluation] = []
    first: list[Evaluation] = []
    lower = -np.inf
    solver_time = 0.0
    samples = 0
    stop = "max_iter"
    cp_at = 0

    def proved() -> bool:
        return best[0].value - lower <= tol * max(1.0, abs(best[0].value))

    def checkpoint(it: int, theta_cp: np.ndarray, ev: Evaluation | None = None) -> bool:
        """Exact F and the lower bound at theta_cp (untimed); True when the gap is proved."""
        nonlocal lower
        if ev is None:
            ev = evaluate(form, theta_cp)
        lower = max(lower, lower_bound(form, ev))
        if not best or ev.value < best[0].value:
            best[:] = [ev]
        if not first:
            first.append(ev)
        rec = {"iteration": it, "samples": samples, "time": solver_time, "objective": ev.value,
               "robust_loss": ev.inner.value, "grad_norm": float(np.linalg.norm(ev.grad)),
               "lower": lower, "gap": best[0].value - lower}
        history.append(rec)
        if callback is not None:
            callback(dict(rec, method=method, theta=theta_cp.copy()))
        return proved()

    checkpoint(0, theta)
    checked = True  # whether the current theta has a checkpoint
    it = 0
    for it in range(1, max_iter + 1):
        start = time.perf_counter()
        gamma = gamma0 * a / (a + it - 1)
        if method == "fsg":
            ev = evaluate(form, theta)
            g, used = ev.grad, n
            if it > 1:  # the exact value at theta_{t} comes free with the full gradient
                solver_time += time.perf_counter() - start
                done = checkpoint(it - 1, theta, ev)
                checked = True
                start = time.perf_counter()
                if done:
                    stop = "tol"
                    break
                if target is not None and ev.value <= target:
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
            checked = True
            if checkpoint(it, theta):
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

    if not proved() and _equal_margins(first[0]):
        lower = max(lower, lower_bound(form, first[0], balance=True))
    status = _certified_status(proved(), stop)
    gap = best[0].value - lower
    if status != OPTIMAL and stop != "target" and warn:
        warnings.warn(
            f"{method}: stopped by {stop} after {it} iterations with certified gap {gap:.3g} "
            f"(tol {tol:g} relative); raise max_iter/time_limit or tune step/a.",
            ConvergenceWarning, stacklevel=user_stacklevel(),
        )
    log.debug("%s: %s after %d iterations, objective %.8g", method, stop, it, best[0].value)
    return _dro_solution(form, method, status, best[0], lower, history, solver_time,
                         {"stop": stop, "iterations": it, "samples": samples, "step0": gamma0,
                          "a": a, "compiled": compiled, "tol": tol,
                          "target_reached": stop == "target"})
