"""The certificate of every DRO method: a lower bound on the optimum, and the Solution built on it.

:func:`lower_bound` turns the worst-case weights at any evaluated point into a certified lower
bound on F* = min_theta F(theta) (weak duality of the min-max problem, eq. 2 of Ghosh &
Squillante, with the Fenchel dual of the weighted ERM): with l2 > 0 in closed form, without l2
by one Newton correction of the dual (:func:`newton_dual_value`), for the hinge loss with the
dual refitted at the kink (:mod:`ratecons.solvers.dro_hinge`). :func:`dro_solution` is the
one place that builds a DRO :class:`~ratecons.solution.Solution` (through the solver
skeleton's Tracker) from the best evaluated point and the best bound, and
:func:`certified_status` the one rule for its status (``optimal`` only when the bound proves
the tolerance).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ..canonical.dro import DROProgram
from ..loss_functions import LOSS_CONJUGATES
from ..scans import Rows
from ..settings import ITERATION_LIMIT, OPTIMAL, TIME_LIMIT
from ..solution import Solution
from .dro_eval import class_parts, equal_margins
from .dro_hinge import (
    HINGE_REFIT_WIDTHS,
    HingeSums,
    hinge_dual_from_sums,
    hinge_refit_bound,
    intercept_scales,
    kink_rows,
)
from .dro_point import Evaluation
from .quasi_newton import minimize_small
from .tracker import Tracker

__all__ = ["CONSTRAINT_RTOL", "LOSS_HESSIANS", "certified_status",
           "dro_solution", "lower_bound", "newton_dual_value"]


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
    constraint by the gradient r = sum_n p_n v_n a_n; :func:`newton_dual_value` restores it
    exactly by the first-order change of v along one Newton step of the weighted ERM (smooth
    losses; the hinge loss without l2 has no bound here and returns -inf).

    For the hinge loss (``refit=True``) v is refitted at the kink
    (:func:`~ratecons.solvers.dro_hinge.hinge_refit_bound`).
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
        parts = class_parts(form, p * v * form.y)
    best = _erm_dual_value(form, p, v, parts)
    if balance and equal_margins(ev):
        # equal margins (theta = 0): P*(theta) is not unique; use the pmf in the ball that
        # balances the examples, which certifies a constant predictor when one is optimal
        for q in _balancing_pmfs(form):
            best = max(best, _erm_dual_value(form, q, v, class_parts(form, q * v * form.y)))
    if form.loss == "hinge" and refit:
        best = max(best, _hinge_kink_bound(form, ev, p, parts))
    return best if np.isfinite(best) else -np.inf


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

    c = minimize_small(projection, np.zeros(form.dim + 1))
    q = np.maximum(0.0, 1.0 / n + (a_dot(c[:-1]) + c[-1]) / n)
    out = [q / q.sum()]

    def tilt(lam: np.ndarray) -> tuple[float, np.ndarray]:
        t = a_dot(lam)
        top = float(np.max(t))
        e = np.exp(t - top)
        return top + math.log(float(e.mean())), a_sum(e) / e.sum()

    t = a_dot(minimize_small(tilt, np.zeros(form.dim)))
    e = np.exp(t - np.max(t))
    out.append(e / e.sum())
    return [q for q in out if np.all(q >= 0) and form.phi.divergence(q) <= form.rho]


def _erm_dual_value(form: DROProgram, p: np.ndarray, v: np.ndarray, parts: np.ndarray) -> float:
    """The Fenchel dual of min_theta L(theta, P) at v (see :func:`lower_bound`), after making v
    satisfy the intercept condition (l2 > 0) or the stationarity condition (l2 = 0,
    :func:`newton_dual_value`); ``parts`` is
    :func:`~ratecons.solvers.dro_eval.class_parts` of p v y~."""
    conj, _ = LOSS_CONJUGATES[form.loss]
    if form.l2 <= 0:
        return newton_dual_value(form, p, v, parts)
    if form.loss == "hinge":  # l*(v) = v: the class sums determine the dual
        return hinge_dual_from_sums(_class_sums(form, p, v, parts), form.l2, form.fit_intercept)
    if form.fit_intercept and form.loss == "squared":
        shift = float(np.dot(p * v, form.y))
        v = v - shift * form.y
        u = parts.sum(axis=1) - shift * np.asarray(form.X.T @ p).ravel()
    elif form.fit_intercept:
        pos = form.y > 0
        scale_pos, scale_neg = intercept_scales(float(np.dot(p[pos], v[pos])),
                                                float(np.dot(p[~pos], v[~pos])))
        v = np.where(pos, scale_pos * v, scale_neg * v)
        u = scale_pos * parts[:, 0] + scale_neg * parts[:, 1]
    else:
        u = parts.sum(axis=1)
    return -float(np.dot(p, conj(v))) - float(u @ u) / (2.0 * form.l2)


def _logistic_hessian(v: np.ndarray) -> np.ndarray:
    return (-v) * (1.0 + v)  # l''(m) = sigma(m) sigma(-m) with v = l'(m) = -sigma(-m)


def _squared_hessian(v: np.ndarray) -> np.ndarray:
    return np.full_like(v, 2.0)


#: the residual of sum_n p_n v'_n a_n = 0 accepted by :func:`newton_dual_value`, relative to
#: sum_n p_n |v'_n| |a_n| (rounding of the sum)
CONSTRAINT_RTOL = 1e-12
#: l''(m) of the smooth margin losses as a function of v = l'(m) (the hinge has none)
LOSS_HESSIANS = {"logistic": _logistic_hessian, "squared": _squared_hessian}


def newton_dual_value(form: DROProgram, p: np.ndarray, v: np.ndarray, parts: np.ndarray
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


def _class_sums(form: DROProgram, p: np.ndarray, v: np.ndarray, parts: np.ndarray
                ) -> HingeSums:
    """The class sums of p v with ``parts`` (the data as one block)."""
    pos = form.y > 0
    pv = p * v
    return HingeSums(parts, float(pv[pos].sum()), float(pv[~pos].sum()))


def _hinge_kink_bound(form: DROProgram, ev: Evaluation, p: np.ndarray,
                      parts: np.ndarray) -> float:
    """The best refitted hinge bound over :data:`~ratecons.solvers.dro_hinge.HINGE_REFIT_WIDTHS`
    (:func:`~ratecons.solvers.dro_hinge.hinge_refit_bound`, the data as one block)."""
    rows = kink_rows(form.X, ev.margins, form.y, p, ev.slope, max(HINGE_REFIT_WIDTHS))
    sums = _class_sums(form, p, ev.slope, parts)
    w, _ = form.split(ev.theta)
    return max(hinge_refit_bound(rows, sums, w, form.l2, form.fit_intercept, width)
               for width in HINGE_REFIT_WIDTHS)


def certified_status(proved: bool, stop: str) -> str:
    """optimal only when the certificate proves the tolerance; else the limit that stopped."""
    if proved:
        return OPTIMAL
    return TIME_LIMIT if stop == "time_limit" else ITERATION_LIMIT


def dro_solution(form: DROProgram, method: str, ev: Evaluation, lower: float, *, proved: bool,
                 stop: str, iterations: int, tol: float, history: list[dict[str, Any]],
                 elapsed: float, details: dict[str, Any], warn: bool = True,
                 advice: str = "raise max_iterations/time_limit.") -> Solution:
    """The Solution of any DRO method at the evaluated point ``ev`` with the bound ``lower``,
    built by a :class:`~ratecons.solvers.tracker.Tracker`.

    The status is :func:`certified_status`; a run that a limit stopped short of the tolerance
    warns by the Tracker's rule (``warn``; not when it stopped at a requested ``target``
    objective) with ``advice``. ``elapsed`` is the method's own clock (the stochastic methods
    leave their checkpoints out). The certificate holds both bounds, their gap (absolute and
    relative to max(1, |F|), the Tracker's ``scale_floor=1``), the gradient norm, the inner
    problem's case and dual gap, and ``details`` with ``stop`` and ``iterations``.
    """
    status = certified_status(proved, stop)
    sol = ev.inner
    value = ev.value
    tracker = Tracker(method, relative=True, scale_floor=1.0, tol=tol,
                      warn=warn and stop != "target")
    tracker.iterations = iterations
    tracker.bound(lower=lower, upper=value)
    stalled = stop in ("plateau", "stalled")  # its own rule, not a limit: no budget helps
    tracker.stop("gap" if status == OPTIMAL else "time_limit" if status == TIME_LIMIT
                 else "stalled" if stalled else "iteration_limit",
                 why=f"stopped by {stop} (tol {tol:g} relative)")
    if stalled and status != OPTIMAL:
        advice = ("a larger budget does not help here: method='structured' certifies the "
                  "duality gap (an interior point; for a hinge loss without l2, lbfgs has no "
                  "bound).")
    finite = bool(np.isfinite(lower))
    gap = max(value - lower, 0.0) if finite else None
    details = dict(details, stop=stop, iterations=iterations, tol=tol,
                   relative_gap=None if gap is None else tracker.relative_gap(gap, value),
                   grad_norm=float(np.linalg.norm(ev.grad)), inner_case=sol.case,
                   inner_dual_gap=sol.dual_value - sol.value, divergence=sol.divergence,
                   rho=form.rho)
    return tracker.solution(
        {"theta": ev.theta, "weights": sol.p}, objective=value, status=status,
        dual={"alpha": np.float64(sol.alpha), "lambda": np.float64(sol.lam)}, upper=value,
        gap=gap, max_violation=0.0, details=details, history=history, advice=advice,
        solver=f"ratecons.{method}", solve_time=elapsed)
