"""The deterministic DRO method: L-BFGS on the exact objective with a certified duality gap.

F(theta) = R(theta) + (l2/2)||w||^2 (eq. 2 of Ghosh & Squillante) is evaluated exactly by the
IM procedure of appendix A.1 (:func:`ratecons.solvers.dro_eval.evaluate`, O(N log N)); after
every iteration the bound of :func:`ratecons.solvers.dro_certificate.lower_bound` at the
worst-case weights is computed (without l2, the Newton-corrected dual, gated by the gradient
norm); the run stops with ``optimal`` once the certified gap meets the tolerance. The hinge
loss adds a phase on the kink set (the margins held at 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..canonical.dro import DROProgram
from ..dask_types import is_dask
from ..errors import parameter_error
from ..scans import persisted
from ..solution import Solution
from .dro_certificate import dro_solution, lower_bound
from .dro_eval import equal_margins, evaluate, on_workers
from .dro_hinge import kink_set, nearest_kink
from .dro_point import Evaluation
from .quasi_newton import lbfgs

__all__ = ["solve_dro_lbfgs"]

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
#: :meth:`_LBFGSRun.check` computes the lower bound (with l2: the strongly convex dual; without:
#: the Newton-corrected one) only once |grad F| is at most this fraction of its value at the
#: last bound, O(log) bounds per run: the gap of either bound is O(|grad F|^2) (smooth losses;
#: the hinge loss with l2 keeps a bound every iteration). With l2 every
#: iteration's bound took half of lbfgs's time on the Adult training split (0.6 of 1.2 s,
#: chi-square robust logistic loss, 62 iterations)
NEWTON_BOUND_GATE = 0.5


def solve_dro_lbfgs(
    form: DROProgram,
    *,
    callback: Callable[[dict[str, Any]], None] | None = None,
    max_iterations: int = 1000,
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
    every iteration the bound of
    :func:`~ratecons.solvers.dro_certificate.lower_bound` at the worst-case weights P*(theta) is
    computed; the run stops with ``optimal`` as soon as
    min_k F(theta_k) - max_k bound_k <= tol * max(1, |F|).

    The hinge loss makes F nonsmooth where margins equal 1. Once L-BFGS stops making progress,
    the examples at the kink are guessed (:func:`~ratecons.solvers.dro_hinge.kink_set`: the
    margins nearest 1, cut at the largest jump) and F is minimized on the affine set where
    their margins stay 1, where it is smooth near theta*: L-BFGS in a basis of that set (a few
    rounds, the next guess from the best point). Every point is evaluated exactly and the
    bound is global, so a wrong set costs time, never correctness.

    Parameters
    ----------
    form : DROProgram
    callback : callable, optional
        Receives a record per iteration (``iteration, time, objective, lower, gap``,
        ``method``, ``theta``).
    max_iterations : int
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
    theta = _start(form, max_iterations, tol, time_limit, theta0)
    if is_dask(form.X):  # read once, then every pass from worker memory
        form = replace(form, X=persisted(form.X))
    run = _LBFGSRun(form, tol, int(max_iterations), time_limit, memory, callback)
    if on_workers(form):  # the per-example vectors stay with their partitions
        from .dro_dask import DaskPasses
        from .dro_dask_bound import dask_lower_bound

        passes = DaskPasses(form)
        run.evaluate, run.bound = passes.evaluate, partial(dask_lower_bound, passes)
        run.nearest_kink = passes.nearest_kink
    run.fun(theta)
    first = run.last
    run.check(theta)
    if run.proved():
        run.stop = "tol"
    elif max_iterations > 0:
        _minimize_in_phases(run, theta, first)
    _last_bounds(run, first)
    w_max = float(np.max(np.abs(run.best.theta[: form.d]), initial=0.0))
    return dro_solution(form, "lbfgs", run.best, run.lower, proved=run.proved(), stop=run.stop,
                        iterations=run.it, tol=tol, history=run.history,
                        elapsed=time.perf_counter() - run.start, warn=warn,
                        details={"constant_predictor": w_max <= 1e-8})


def _start(form: DROProgram, max_iterations: int, tol: float, time_limit: float | None,
           theta0: np.ndarray | None) -> np.ndarray:
    """Check the options of :func:`solve_dro_lbfgs`; the starting point (zeros by default)."""
    if int(max_iterations) != max_iterations or max_iterations < 0:
        raise parameter_error("max_iterations", "lbfgs", "an int >= 0", max_iterations)
    if not tol > 0:
        raise parameter_error("tol", "lbfgs", "a positive float", tol)
    if time_limit is not None and not time_limit > 0:
        raise parameter_error("time_limit", "lbfgs", "a positive float or None", time_limit)
    theta = np.zeros(form.dim) if theta0 is None else np.array(theta0, dtype=np.float64).ravel()
    if theta.size != form.dim:
        raise parameter_error("theta0", "lbfgs", f"an array of length {form.dim}", theta.shape)
    return theta


def _minimize_in_phases(run: _LBFGSRun, theta: np.ndarray, first: Evaluation) -> None:
    """L-BFGS from theta (one gradient step away when the losses tie there), then, for the
    hinge loss, up to :data:`KINK_ROUNDS` rounds on the guessed kink set."""
    form = run.form
    if equal_margins(first):
        # all losses tie (theta = 0): F has a kink there (every P in the ball is
        # worst-case), so start one gradient step away, where P* is unique; if after
        # BALANCE_AFTER iterations nothing beats theta = 0, try to prove it optimal
        run.tied_start = first
        theta = theta - first.grad / form.smoothness_estimate()
    run.minimize(theta, plateau=form.loss == "hinge")
    for choice in range(KINK_ROUNDS if form.loss == "hinge" else 0):
        if run.stop not in ("plateau", "stalled") or run.proved():
            break
        dist, index = run.nearest_kink(run.best, form.dim)
        run.minimize_on_kink(kink_set(dist, index, form.dim, choice))


def _last_bounds(run: _LBFGSRun, first: Evaluation) -> None:
    """The bound at the best point (if the last one was elsewhere) and, from tied losses at
    the start that nothing beat, the balancing pmfs' bound there, unless the gap is proved
    already."""
    if not run.proved() and not np.array_equal(run.last.theta, run.best.theta):
        run.lower = max(run.lower, run.bound(run.best))
    if not run.proved() and equal_margins(first) and _unbeaten(run.best, first):
        run.lower = max(run.lower, run.bound(first, balance=True))
    if run.proved():
        run.stop = "tol"


def _unbeaten(best: Evaluation, tied: Evaluation) -> bool:
    """Whether the best point is no better than the start at tied losses (to rounding). Only
    then can the balancing pmfs' bound help: where they succeed it equals F at the tied start
    (the losses all equal l(m0) there and Jensen's inequality holds at every theta), which is
    at most F*; a better point elsewhere means they failed. On Dask data that bound gathers
    the margins (:func:`ratecons.solvers.dro_dask_bound.dask_lower_bound`), so an unproved run
    (a time limit) must not try it in vain."""
    return best.value >= tied.value - 1e-12 * max(1.0, abs(tied.value))


def _nearest_kink(form: DROProgram, ev: Evaluation, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~ratecons.solvers.dro_hinge.nearest_kink` with the data as one block."""
    return nearest_kink(ev.margins, ev.inner.p > 0, np.arange(form.n), k)


def _rows(X: Any, index: np.ndarray) -> np.ndarray:
    """The rows ``index`` of X as a dense NumPy array (a few rows: on Dask data they travel)."""
    rows = X[np.sort(index)] if is_dask(X) else X[index]
    if is_dask(rows):
        return np.asarray(rows.compute())[np.argsort(np.argsort(index))]
    return rows.toarray() if sp.issparse(rows) else np.asarray(rows)


class _LBFGSRun:
    """The state of one :func:`solve_dro_lbfgs` run: best point, best bound, budget, history."""

    def __init__(self, form: DROProgram, tol: float, max_iterations: int,
                 time_limit: float | None, memory: int,
                 callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.form, self.tol, self.time_limit = form, tol, time_limit
        self.max_iterations = max_iterations
        self.memory, self.callback = memory, callback
        self.start = time.perf_counter()
        self.best: Evaluation | None = None
        self.last: Evaluation | None = None
        self.lower = -np.inf
        self.it = 0
        self.stop = "iteration_limit"
        self.history: list[dict[str, Any]] = []
        self.values: list[float] = []
        self.tied_start: Evaluation | None = None  # theta0 when its losses tie (see below)
        self.bound_grad_norm = np.inf  # |grad F| where the l2-free bound was last computed
        # F and its bound: in memory, or with the vectors on the Dask workers (solve_dro_lbfgs)
        self.evaluate: Callable[[np.ndarray], Evaluation] = partial(evaluate, form)
        self.bound: Callable[..., float] = partial(lower_bound, form)
        self.nearest_kink: Callable[[Evaluation, int], tuple[np.ndarray, np.ndarray]] = \
            partial(_nearest_kink, form)

    def fun(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        ev = self.evaluate(theta)
        retired = [old for old in (self.last, self.best) if old is not None]
        self.last = ev
        if self.best is None or ev.value < self.best.value:
            self.best = ev
        for old in retired:  # Dask: the workers may drop what no longer is last or best
            if old is not self.last and old is not self.best and hasattr(old, "release"):
                old.release()
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
        if ((self.form.loss == "hinge" and self.form.l2 > 0)
                or grad_norm <= NEWTON_BOUND_GATE * self.bound_grad_norm):
            # a bound costs a pass over the examples (without l2 a weighted Gram product,
            # O(N d^2)): only where the gradient has shrunk enough to tighten it (its gap is
            # O(|grad|^2), :func:`_newton_dual_value`); the hinge loss's gradient need not
            # shrink (F has kinks), so with l2 its bound is taken every iteration
            self.bound_grad_norm = grad_norm
            self.lower = max(self.lower, self.bound(self.last, refit=refit))
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
                and _unbeaten(self.best, tied)):
            self.lower = max(self.lower, self.bound(tied, balance=True))
            self.tied_start = None  # once
        if self.proved():
            self.stop = "tol"
        elif self.time_limit is not None and time.perf_counter() - self.start >= self.time_limit:
            self.stop = "time_limit"
        elif self.it >= self.max_iterations:
            self.stop = "iteration_limit"
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
            lbfgs(fun, x0, self.memory, self.max_iterations + 1,
                   lambda x, _: self._iteration(to_theta(x), plateau, refit=basis is not None))
        except StopIteration:
            pass

    def minimize_on_kink(self, active: np.ndarray) -> None:
        """L-BFGS on {theta : m_n(theta) = 1 for n in ``active``} from the projection of the
        best point (the least-squares correction of its margins)."""
        form, theta = self.form, self.best.theta
        C = form.y[active, None] * _rows(form.X, active)
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


