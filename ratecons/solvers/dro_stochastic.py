"""The first-order DRO methods: iteration (3) with the gradient estimators of sections 2-4.

Ghosh & Squillante, iteration (3): theta_{t+1} = theta_t - gamma_t G_t, gamma_t = gamma_0 a/(a+t),
with one gradient estimator per method (:data:`STOCHASTIC_METHODS`, the table
:func:`solve_dro` dispatches on):

``fsg``  full-support gradient (Namkoong & Duchi): G_t = grad R(theta_t) on all N examples;
``pssg`` progressively sampled subgradients (Ghosh et al. 2018): subsets of size
         M_t = ceil(m0 nu^t) growing to N;
``gssg`` Algorithm 1: the multilevel Monte Carlo estimator (7)-(8), unbiased for grad R
         (compiled for chi-square and KL, :func:`ratecons.solvers.dro_kernels.gssg_draws`);
``sgd``  fixed subset size M (the biased baseline of section 4).

Subset problems use rho_M = rho + eta_M, eta_M = c (1/M - 1/N)^((1-delta)/2) (Theorem 2). Every
method records, at checkpoints spaced geometrically in cumulative samples, the robust objective
evaluated *exactly* on the full data and a certified lower bound
(:func:`ratecons.solvers.dro_certificate.lower_bound`), neither counted in the reported time;
``optimal`` means the certified gap meets the tolerance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import limits
from ..canonical.dro import DROProgram
from ..errors import parameter_error
from ..numerics.inner_max import inner_maximize
from ..numerics.phi import CHI2, KL
from ..solution import Solution
from .dro_certificate import dro_solution, lower_bound
from .dro_eval import equal_margins, evaluate, subset_gradient
from .dro_kernels import gssg_draws
from .dro_point import Evaluation

__all__ = ["DEFAULT_R", "METHODS", "STOCHASTIC_METHODS", "eta", "gssg_estimate", "gssg_levels",
           "solve_dro"]

#: the variance-time optimal r* = 2^(-3/2) of Blanchet & Glynn used in section 4
DEFAULT_R = 2.0 ** -1.5


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




# ====================================================================== one run's state
class _Run:
    """Checkpoints, best point, best bound, samples and solver time of one run."""

    def __init__(self, form: DROProgram, method: str, tol: float, target: float | None,
                 callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.form, self.method, self.tol, self.target = form, method, tol, target
        self.callback = callback
        self.history: list[dict[str, Any]] = []
        self.best: Evaluation | None = None
        self.first: Evaluation | None = None
        self.lower = -np.inf
        self.samples = 0
        self.stop: str | None = None
        self._spent = 0.0  # solver time before the clock last resumed
        self._since = time.perf_counter()

    def elapsed(self) -> float:
        """Solver time: checkpoints excluded."""
        return self._spent + (time.perf_counter() - self._since)

    def proved(self) -> bool:
        return self.best.value - self.lower <= self.tol * max(1.0, abs(self.best.value))

    def checkpoint(self, it: int, theta: np.ndarray, ev: Evaluation | None = None) -> None:
        """Exact F and the lower bound at theta, one history record (untimed)."""
        self._spent += time.perf_counter() - self._since
        if ev is None:
            ev = evaluate(self.form, theta)
        self.lower = max(self.lower, lower_bound(self.form, ev))
        if self.best is None or ev.value < self.best.value:
            self.best = ev
        if self.first is None:
            self.first = ev
        rec = {"iteration": it, "samples": self.samples, "time": self._spent,
               "objective": ev.value, "robust_loss": ev.inner.value,
               "grad_norm": float(np.linalg.norm(ev.grad)), "lower": self.lower,
               "gap": self.best.value - self.lower}
        self.history.append(rec)
        if self.callback is not None:
            self.callback(dict(rec, method=self.method, theta=theta.copy()))
        self._since = time.perf_counter()

    def checkpoint_stops(self, it: int, theta: np.ndarray, ev: Evaluation | None = None) -> bool:
        """:meth:`checkpoint`; True (and the stop reason set) when the gap is proved or the
        exact objective reached ``target``."""
        self.checkpoint(it, theta, ev)
        if self.proved():
            self.stop = "tol"
        elif self.target is not None and self.history[-1]["objective"] <= self.target:
            self.stop = "target"
        return self.stop is not None


# ====================================================================== gradient estimators
@dataclass
class _Sampler:
    """What the gradient estimators of one run draw with: the generator, the subset sizes of
    PSSG and SGD, the levels of GSSG and its compiled kernel (None: the NumPy estimator)."""

    form: DROProgram
    rng: np.random.Generator
    nu: float
    m0: int
    batch: int
    draws: int
    eta_c: float
    delta: float
    sizes: np.ndarray
    q: np.ndarray
    kernel: Callable[[np.ndarray], tuple[np.ndarray, int]] | None = None

    def subset(self, theta: np.ndarray, m: int) -> tuple[np.ndarray, int]:
        """grad R_M at a uniform subset of m rows (rho_M inflated) plus the l2 gradient."""
        n = self.form.n
        idx = self.rng.permutation(n) if m == n else self.rng.choice(n, size=m, replace=False)
        _, g = subset_gradient(self.form, theta, idx,
                               self.form.rho + float(eta(m, n, self.eta_c, self.delta)))
        return g + self.form.regularizer_gradient(theta), m


def _fsg_gradient(run: _Run, sampler: _Sampler, theta: np.ndarray,
                  it: int) -> tuple[np.ndarray, int] | None:
    """The exact grad F; the exact value at theta_t comes with it: a checkpoint at t (None when
    it stops the run)."""
    ev = evaluate(run.form, theta)
    if it > 1 and run.checkpoint_stops(it - 1, theta, ev):
        return None
    return ev.grad, run.form.n


def _gssg_gradient(run: _Run, sampler: _Sampler, theta: np.ndarray,
                   it: int) -> tuple[np.ndarray, int]:
    """The mean of ``draws`` estimates (7)-(8) plus the l2 gradient."""
    if sampler.kernel is not None:
        g, used = sampler.kernel(theta)
    else:
        g, used = np.zeros(run.form.dim), 0
        for _ in range(sampler.draws):
            g_i, used_i = gssg_estimate(run.form, theta, sampler.rng, sampler.sizes, sampler.q,
                                        sampler.eta_c, sampler.delta)
            g, used = g + g_i / sampler.draws, used + used_i
    return g + run.form.regularizer_gradient(theta), used


def _pssg_gradient(run: _Run, sampler: _Sampler, theta: np.ndarray,
                   it: int) -> tuple[np.ndarray, int]:
    """grad R_M on a subset of M_t = ceil(m0 nu^(t-1)) rows (at most N)."""
    return sampler.subset(theta, min(run.form.n, math.ceil(sampler.m0 * sampler.nu ** (it - 1))))


def _sgd_gradient(run: _Run, sampler: _Sampler, theta: np.ndarray,
                  it: int) -> tuple[np.ndarray, int]:
    """grad R_M on a subset of the fixed size ``batch``."""
    return sampler.subset(theta, min(sampler.batch, run.form.n))


class StochasticMethod(NamedTuple):
    """One first-order method: its gradient estimator and its default iteration cap."""

    gradient: Callable[[_Run, _Sampler, np.ndarray, int], tuple[np.ndarray, int] | None]
    max_iterations: int
    #: whether the estimator evaluates F exactly (and checkpoints itself, every iteration)
    exact: bool = False


#: the methods :func:`solve_dro` runs, by name
STOCHASTIC_METHODS: dict[str, StochasticMethod] = {
    "fsg": StochasticMethod(_fsg_gradient, 500, exact=True),
    "pssg": StochasticMethod(_pssg_gradient, 20000),
    "gssg": StochasticMethod(_gssg_gradient, 20000),
    "sgd": StochasticMethod(_sgd_gradient, 20000),
}
METHODS = tuple(STOCHASTIC_METHODS)


def _compiled_gssg(form: DROProgram, rng: np.random.Generator, sizes: np.ndarray,
                   q: np.ndarray, eta_c: float, delta: float,
                   draws: int) -> Callable[[np.ndarray], tuple[np.ndarray, int]] | None:
    """theta -> (mean of ``draws`` estimates (7)-(8), examples touched) by the compiled kernel,
    compiled (or loaded from its cache) before any timing; None for a phi other than chi-square
    and KL."""
    if form.phi is not CHI2 and form.phi is not KL:
        return None
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

    def draw(theta: np.ndarray, count: int = draws) -> tuple[np.ndarray, int]:
        return gssg_draws(rng, X_c, *feats, csr, form.y, theta, form.fit_intercept, loss_code,
                          phi_code, form.rho, eta_c, delta, sizes, cdf, q, count)

    draw(np.zeros(form.dim), 0)  # zero draws return at once, compiled
    return draw


# ====================================================================== the outer loop
def _checkpoint_grid(n: int) -> Callable[[int], int]:
    """Next checkpoint (in cumulative samples) after ``s``: 8 per decade, at least every N."""
    def nxt(s: int) -> int:
        return int(min(max(s * 10 ** 0.125, s + 1), s + n))
    return nxt


def _check_options(form: DROProgram, method: str, step: float | str, a: float, r: float,
                   nu: float, m0: int, batch: int, draws: int, eta_c: float,
                   delta: float) -> float:
    """Refuse bad options naming them; returns gamma_0."""
    if method not in STOCHASTIC_METHODS:
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
    gamma0 = 1.0 / form.smoothness_estimate() if step == "auto" else float(step)
    if not np.isfinite(gamma0) or gamma0 <= 0:
        raise parameter_error("step", method, "a positive float or 'auto'", step)
    return gamma0


def _descend(run: _Run, sampler: _Sampler, method: StochasticMethod, theta: np.ndarray,
             gamma0: float, a: float, max_iterations: int, max_samples: float | None,
             time_limit: float | None) -> tuple[np.ndarray, int, bool]:
    """Iteration (3) until a checkpoint proves the gap or reaches the target, or a limit;
    returns the last iterate, the iteration count and whether the last iterate has a
    checkpoint."""
    next_cp = _checkpoint_grid(run.form.n)
    cp_at, checked, it = 0, True, 0
    for it in range(1, max_iterations + 1):
        step = method.gradient(run, sampler, theta, it)
        if step is None:  # the exact estimator's checkpoint stopped the run
            return theta, it, True
        g, used = step
        theta = theta - gamma0 * a / (a + it - 1) * g
        checked = False
        run.samples += used
        if not method.exact and run.samples >= cp_at:
            cp_at, checked = next_cp(run.samples), True
            if run.checkpoint_stops(it, theta):
                break
        if max_samples is not None and run.samples >= max_samples:
            run.stop = "max_samples"
            break
        if (time_limit is not None and run.elapsed() >= time_limit) or limits.active().expired():
            run.stop = "time_limit"  # solver time, or the solve's wall-clock budget
            break
    return theta, it, checked


def solve_dro(
    form: DROProgram,
    method: str,
    *,
    seed: int | None = 0,
    callback: Callable[[dict[str, Any]], None] | None = None,
    step: float | str = "auto",
    a: float = 1000.0,
    max_iterations: int | None = None,
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
        A key of :data:`STOCHASTIC_METHODS`.
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
    max_iterations, max_samples, time_limit : stopping limits (iterations, cumulative examples
        touched, seconds of solver time). Inside ``problem.solve`` its ``time_limit`` is also
        the solve's wall-clock budget (:mod:`ratecons.limits`; the checkpoints' exact
        evaluations count there), and no balancing bound is added once it is spent.
        ``max_iterations`` defaults to the method's entry of :data:`STOCHASTIC_METHODS` (500
        for fsg, 20000 for the sampled methods).
    tol : float
        Stop with status "optimal" when the certified gap at a checkpoint, min F over the
        checkpoints minus the best lower bound, is <= tol * max(1, |F|).
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
    gamma0 = _check_options(form, method, step, a, r, nu, m0, batch, draws, eta_c, delta)
    entry = STOCHASTIC_METHODS[method]
    theta = np.zeros(form.dim) if theta0 is None else np.array(theta0, dtype=np.float64).ravel()
    if theta.size != form.dim:
        raise parameter_error("theta0", method, f"an array of length {form.dim}", theta.shape)
    rng = np.random.default_rng(seed)
    sizes, q = gssg_levels(form.n, r)
    sampler = _Sampler(form, rng, nu, m0, batch, draws, eta_c, delta, sizes, q)
    if method == "gssg":
        sampler.kernel = _compiled_gssg(form, rng, sizes, q, eta_c, delta, draws)
    run = _Run(form, method, tol, target, callback)
    run.checkpoint(0, theta)
    cap = entry.max_iterations if max_iterations is None else max_iterations
    theta, it, checked = _descend(run, sampler, entry, theta, gamma0, a, cap, max_samples,
                                  time_limit)
    solve_time = run.elapsed()
    if not checked:
        run.checkpoint(it, theta)
    if not run.proved() and equal_margins(run.first) and not limits.active().expired():
        run.lower = max(run.lower, lower_bound(form, run.first, balance=True))
    stop = run.stop or "iteration_limit"
    return dro_solution(form, method, run.best, run.lower, proved=run.proved(), stop=stop,
                        iterations=it, tol=tol, history=run.history, elapsed=solve_time,
                        warn=warn, advice="raise max_iterations/time_limit or tune step/a.",
                        details={"samples": run.samples, "step0": gamma0, "a": a,
                                 "compiled": sampler.kernel is not None,
                                 "target_reached": stop == "target"})
