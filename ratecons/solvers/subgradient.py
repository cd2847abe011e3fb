"""Subgradient methods for 0-1 minimax risk classifiers (Beristain Cortés, thesis, ch. 2-3).

Notation (thesis, ch. 2): ``psi`` is the ``(n, p)`` matrix of psi(x_i) (intercept column
included), Phi(x, y) = e_y kron psi(x), so that with ``M = mu.reshape(n_classes, p)`` the score of
label y at x is Phi(x, y)^T mu = M[y] @ psi(x). The problems solved here are

* (2.5), MRC with fixed marginals::

      min_mu  1 - tau^T mu + lam^T |mu| + (1/n) sum_i phi(mu, x_i)

* (2.2), MRC without fixed marginals (phi's maximum also over the training instances)::

      min_mu  1 - tau^T mu + lam^T |mu| + max_i phi(mu, x_i)

with phi(mu, x) of (2.6) and its subgradient computed by the sorted prefix maximum of
:mod:`ratecons.solvers.mrc_phi` (section 3.5.2; no label subset is ever enumerated).

Methods: the classic subgradient method (section 3.3) and the stochastic one (section 3.4) for
(2.5); the constrained subgradient method (section 3.3.5) on the reformulation (3.14)-(3.16) of
(2.2). Step rules (section 3.3.3): ``"constant"`` alpha_k = a, ``"constant_length"``
alpha_k = gamma / ||g_k||, ``"a/(b+k)"`` (square summable, not summable) and ``"a/sqrt(k)"``
(nonsummable diminishing). Iterates (section 3.3.1): best point or running average.

Certificates. Every returned ``mu`` is evaluated exactly, so ``objective`` is a true upper bound
on the optimum; the lower bounds come from weak duality (:mod:`ratecons.solvers.mrc_dual_bound`:
the ergodic dual sequence of the method and the active-set LP at the best point). This is
Algorithm 6 of the thesis ("stopping criterion based on the duality gap"). Status is
``"optimal"`` only when the certified gap is <= ``tol``. The run's best point, bounds, limits
and events are kept by :class:`ratecons.solvers.tracker.Tracker`.

The hot loops (sorting the scores of every instance; the stochastic steps) are numba kernels;
the classic and constrained methods are vectorized over examples with NumPy.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ..errors import DataError, parameter_error
from ..solution import Solution
from .mrc_dual_bound import DualBound
from .mrc_phi import (
    MRCInputs,
    check_inputs,
    label_scores,
    minimax_objective,
    phi,
    prefix_max_row,
    regularizer,
    sorted_prefix_max,
)
from .tracker import Tracker, iteration_cap

__all__ = [
    "STEP_RULES",
    "DEFAULT_STEP_PARAMS",
    "fixed_marginals_subgradient",
    "constrained_subgradient",
]

logger = logging.getLogger(__name__)

#: the step-size rules of section 3.3.3, with the names of their parameters
STEP_RULES: dict[str, tuple[str, ...]] = {
    "constant": ("a",),
    "constant_length": ("gamma",),
    "a/(b+k)": ("a", "b"),
    "a/sqrt(k)": ("a",),
}
_STEP_CODES = {"constant": 0, "constant_length": 1, "a/(b+k)": 2, "a/sqrt(k)": 3}

#: default step parameters per (solver, rule); the defaults of each solver reach the LP optimum
#: within 1e-2 on haberman, glass, iris and random data (tests/solvers/test_mrc_subgradient.py)
DEFAULT_STEP_PARAMS: dict[str, dict[str, dict[str, float]]] = {
    "classic": {
        "constant": {"a": 0.05},
        "constant_length": {"gamma": 0.01},
        "a/(b+k)": {"a": 100.0, "b": 1000.0},
        "a/sqrt(k)": {"a": 2.0},
    },
    "stochastic": {
        "constant": {"a": 0.01},
        "constant_length": {"gamma": 0.01},
        "a/(b+k)": {"a": 300.0, "b": 10000.0},
        "a/sqrt(k)": {"a": 0.5},
    },
    "constrained": {
        "constant": {"a": 0.003},
        "constant_length": {"gamma": 0.003},
        "a/(b+k)": {"a": 20.0, "b": 1000.0},
        "a/sqrt(k)": {"a": 0.2},
    },
}


def _step_params(solver: str, step: str, step_params: dict | None, owner: str) -> dict:
    if step not in STEP_RULES:
        raise parameter_error("step", owner, f"one of {sorted(STEP_RULES)}", step)
    params = dict(DEFAULT_STEP_PARAMS[solver][step])
    params.setdefault("b", 0.0)
    if step_params:
        unknown = set(step_params) - set(STEP_RULES[step])
        if unknown:
            raise parameter_error("step_params", owner,
                                  f"a dict with keys among {STEP_RULES[step]} for step={step!r}",
                                  step_params)
        params.update({k: float(v) for k, v in step_params.items()})
    for key in STEP_RULES[step]:
        value = params[key]
        if not (math.isfinite(value) and (value > 0 or (key == "b" and value >= 0))):
            raise parameter_error(f"step_params[{key!r}]", owner,
                                  "a finite number > 0" + (" (>= 0 for b)" if key == "b" else ""),
                                  value)
    return params


def _step_size(code: int, a: float, b: float, k: int, gnorm: float) -> float:
    """alpha_k of the rules of section 3.3.3 (k counts from 1)."""
    if code == 0:
        return a
    if code == 1:
        return a / gnorm if gnorm > 0 else 0.0
    if code == 2:
        return a / (b + k)
    return a / math.sqrt(k)


def _positive_int(value, name: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise parameter_error(name, owner, "an int >= 1", value)
    return int(value)


def _check_common(iterate, tol, improvement_tol, owner):
    if iterate not in ("best", "average"):
        raise parameter_error("iterate", owner, "'best' or 'average'", iterate)
    if isinstance(tol, bool) or not (isinstance(tol, numbers.Real) and tol >= 0):
        raise parameter_error("tol", owner, "a number >= 0", tol)
    if improvement_tol is not None and not (
        isinstance(improvement_tol, numbers.Real) and improvement_tol > 0
    ):
        raise parameter_error("improvement_tol", owner, "None or a number > 0", improvement_tol)


def _initial_mu(mu0, inputs: MRCInputs, owner: str) -> np.ndarray:
    if mu0 is None:
        return np.zeros((inputs.n_classes, inputs.p))
    mu0 = np.array(mu0, dtype=np.float64)
    if mu0.size != inputs.n_classes * inputs.p or not np.all(np.isfinite(mu0)):
        raise DataError(f"{owner}: mu0 must be a finite vector of n_classes * p = "
                        f"{inputs.n_classes * inputs.p} entries; got shape {mu0.shape}.")
    return mu0.reshape(inputs.n_classes, inputs.p)


class _Stall:
    """The improvement rule (Algorithm 5 on the best values): stop when the best objective
    improved by less than ``improvement_tol`` between two checks."""

    def __init__(self, improvement_tol: float | None):
        self.improvement_tol = improvement_tol
        self.last_best = math.inf

    def stalled(self, tracker: Tracker) -> bool:
        if self.improvement_tol is None:
            return False
        improved = self.last_best - tracker.best_value
        self.last_best = tracker.best_value
        if improved < self.improvement_tol:
            return tracker.stop("stalled",
                                "the best objective improved by less than improvement_tol")
        return False


def _best_mu(tracker: Tracker) -> np.ndarray | None:
    return None if tracker.best_point is None else tracker.best_point["mu"]


def _finish(tracker: Tracker, dual: DualBound, extra: dict[str, Any]) -> Solution:
    """The Solution of a run: a last active-set bound at the best point when the gap is not
    certified yet (Algorithm 6), then the tracker's status and certificate."""
    if tracker.stop_reason != "gap":
        tracker.bound(lower=dual.polish(_best_mu(tracker)))
        if tracker.gap <= tracker.tol:
            tracker.stop("gap")
    solution = tracker.solution(
        {"mu": _best_mu(tracker).ravel().copy()}, max_violation=0.0,
        details={"tol": tracker.tol, **extra},
        advice="Increase max_iterations or use the LP / CCG methods for an exact solution.")
    if solution.history:  # the last entry reads the certificate, not a bound checked before
        cert = solution.certificate
        solution.history[-1].update(upper=cert.upper_bound, lower=cert.lower_bound,
                                    gap=cert.gap)
    return solution


class _SuffixMean:
    """Running mean of the iterates (Algorithm 3), restarted when the iteration count doubles.

    The plain mean of Algorithm 3 keeps the weight of the first iterates, far from the optimum,
    for ever; restarting at k = 1, 2, 4, ... (times ``check_every``) keeps the mean over the
    latest half of the run (suffix averaging), which converges at the same rate and forgets
    the start.
    """

    def __init__(self, coef: np.ndarray):
        self.mean = coef.copy()
        self.count = 1
        self.start = 0

    def add(self, coef: np.ndarray) -> None:
        self.count += 1
        self.mean += (coef - self.mean) / self.count

    def maybe_restart(self, k: int, coef: np.ndarray) -> None:
        if k >= 2 * self.start:
            self.mean = coef.copy()
            self.count = 1
            self.start = k


# ------------------------------------------------------------------------------------------------
# the stochastic inner loop (numba): one chunk of iterations between two checks
# ------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _stochastic_chunk(psi, coef, avg, tau, lam, order, batch, k0, n_avg0, code, a, b,
                      dual_sum, dual_weight, steps):
    """Run ``order.size // batch`` stochastic subgradient steps (section 3.4) in place.

    Step j uses the instances ``order[j*batch:(j+1)*batch]``: the stochastic subgradient is
    -tau + lam * sign(mu) + (1/batch) sum_b h(x_b) kron psi(x_b). ``avg`` is the running mean
    of the iterates (Algorithm 3), ``dual_sum`` / ``dual_weight`` accumulate the step-weighted
    label weights of every visited instance (the ergodic dual sequence).
    """
    n_classes, p = coef.shape
    n_steps = order.size // batch
    weights = np.empty(n_classes)
    scores = np.empty(n_classes)
    grad = np.empty((n_classes, p))
    hs = np.empty((batch, n_classes))
    work = np.empty(n_classes, dtype=np.int64)
    for j in range(n_steps):
        k = k0 + j + 1
        for c in range(n_classes):
            for f in range(p):
                grad[c, f] = -tau[c, f] + lam[c, f] * np.sign(coef[c, f])
        for bi in range(batch):
            i = order[j * batch + bi]
            for c in range(n_classes):
                s = 0.0
                for f in range(p):
                    s += coef[c, f] * psi[i, f]
                scores[c] = s
            prefix_max_row(scores, weights, work)
            for c in range(n_classes):
                hs[bi, c] = weights[c]
                w = weights[c] / batch
                if w != 0.0:
                    for f in range(p):
                        grad[c, f] += w * psi[i, f]
        gnorm = 0.0
        if code == 1:
            for c in range(n_classes):
                for f in range(p):
                    gnorm += grad[c, f] * grad[c, f]
            gnorm = np.sqrt(gnorm)
        if code == 0:
            alpha = a
        elif code == 1:
            alpha = a / gnorm if gnorm > 0 else 0.0
        elif code == 2:
            alpha = a / (b + k)
        else:
            alpha = a / np.sqrt(k)
        steps[j] = alpha
        for bi in range(batch):
            i = order[j * batch + bi]
            dual_weight[i] += alpha
            for c in range(n_classes):
                dual_sum[i, c] += alpha * hs[bi, c]
        t = n_avg0 + j + 1
        for c in range(n_classes):
            for f in range(p):
                coef[c, f] -= alpha * grad[c, f]
                avg[c, f] += (coef[c, f] - avg[c, f]) / t


# ------------------------------------------------------------------------------------------------
# (2.5): classic and stochastic subgradient methods
# ------------------------------------------------------------------------------------------------
def fixed_marginals_subgradient(
    psi: np.ndarray,
    n_classes: int,
    y: np.ndarray,
    tau: np.ndarray,
    lam: np.ndarray,
    *,
    method: str = "classic",
    step: str | None = None,
    step_params: dict[str, float] | None = None,
    iterate: str | None = None,
    max_iterations: int | None = None,
    tol: float = 1e-3,
    improvement_tol: float | None = None,
    check_every: int | None = None,
    batch_size: int = 1,
    sampling: str = "shuffle",
    mu0: np.ndarray | None = None,
    seed: int | None = None,
    callback: Callable[[dict], Any] | None = None,
) -> Solution:
    """Subgradient methods for the fixed-marginals MRC (2.5).

    Parameters
    ----------
    psi : ndarray of shape (n, p)
        psi(x_i) of every training instance (intercept column included).
    n_classes : int
        |Y| >= 2.
    y : ndarray of shape (n,)
        Class codes 0..n_classes-1 (used for the dual certificate).
    tau, lam : ndarray of shape (n_classes * p,)
        Expectation estimates and confidence vector of the uncertainty set (2.4).
    method : {"classic", "stochastic"}
        Classic subgradient method (section 3.3: exact subgradient, a pass over all instances
        per iteration) or stochastic subgradient method (section 3.4: ``batch_size`` instances
        per iteration).
    step : {"constant", "constant_length", "a/(b+k)", "a/sqrt(k)"}, optional
        Step-size rule of section 3.3.3. Default ``"constant_length"`` for classic,
        ``"a/sqrt(k)"`` for stochastic.
    step_params : dict, optional
        Parameters of the rule (``a``; ``gamma``; ``a`` and ``b``; ``a``), defaulting to
        :data:`DEFAULT_STEP_PARAMS` ``[method][step]``.
    iterate : {"best", "average"}, optional
        Candidates evaluated: the iterates themselves (best point, Algorithm 2) or their
        running mean (averaging, Algorithm 3); the best evaluated candidate is returned. Default
        ``"best"`` for classic (its objective comes free with the subgradient) and ``"average"``
        for stochastic.
    max_iterations : int, optional
        Default 5,000 (classic) / 200 * ceil(n / batch_size) (stochastic, 200 epochs).
    tol : float
        Stop with status ``"optimal"`` when best objective - certified lower bound <= tol
        (Algorithm 6).
    improvement_tol : float, optional
        Also stop when the best objective improved by less than this between two checks
        (Algorithm 5 on the best values); the status is then ``"iteration_limit"``.
    check_every : int, optional
        Iterations between checks (candidate evaluation for stochastic / averaged runs,
        lower bound, stopping rules, history entry). Default 10 (classic) / one epoch
        ceil(n / batch_size) (stochastic).
    batch_size : int
        Instances per stochastic step (1 is the thesis's method).
    sampling : {"shuffle", "random", "cyclic"}
        Stochastic index rule: a fresh permutation per epoch, uniform with replacement
        (randomized rule), or 1, 2, ..., n, 1, ... (cyclic rule, section 3.4).
    mu0 : ndarray, optional
        Starting point (default 0).
    seed : int, optional
        Seed of the stochastic sampling.
    callback : callable, optional
        Called with a copy of every history entry.

    Returns
    -------
    Solution
        ``primal={"mu": mu}`` (length n_classes * p), ``objective`` the exact value of (2.5) at
        mu, certificate with the certified lower bound and gap, ``history`` with
        ``objective`` / ``best_objective`` per iteration (classic) or per check (stochastic).
    """
    owner = "fixed_marginals_subgradient"
    inputs = check_inputs(psi, n_classes, y, tau, lam, owner)
    step, iterate = _fm_rules(method, step, iterate, batch_size, sampling, inputs.n, owner)
    batch_size = int(batch_size)
    params = _step_params(method, step, step_params, owner)
    _check_common(iterate, tol, improvement_tol, owner)
    epoch = -(-inputs.n // batch_size)
    cap, _ = iteration_cap(owner, 5000 if method == "classic" else 200 * epoch, max_iterations)
    if check_every is None:
        check_every = 10 if method == "classic" else epoch
    check_every = _positive_int(check_every, "check_every", owner)
    coef = _initial_mu(mu0, inputs, owner)
    run = _Run.start(f"subgradient-{method}", inputs, step, params, iterate, check_every, cap,
                     (tol, improvement_tol), callback, fixed_marginals=True)
    k = (_classic(run, coef) if method == "classic"
         else _stochastic(run, coef, batch_size, sampling, seed))
    logger.info("%s (%s, %s): %d iterations, objective %.6g, gap %.3g", owner, method, step, k,
                run.tracker.best_value, run.tracker.gap)
    return _finish(run.tracker, run.dual,
                   {"method": method, "step": step, "step_params": params, "iterate": iterate,
                    "batch_size": batch_size if method == "stochastic" else inputs.n})


def _fm_rules(method: str, step: str | None, iterate: str | None, batch_size: int,
              sampling: str, n: int, owner: str) -> tuple[str, str]:
    """Check the fixed-marginals method's choices; the step and iterate rules with their
    per-method defaults."""
    if method not in ("classic", "stochastic"):
        raise parameter_error("method", owner, "'classic' or 'stochastic'", method)
    _positive_int(batch_size, "batch_size", owner)
    if method == "stochastic" and batch_size > n:
        raise parameter_error("batch_size", owner, f"an int in 1..n = {n}", batch_size)
    if sampling not in ("shuffle", "random", "cyclic"):
        raise parameter_error("sampling", owner, "'shuffle', 'random' or 'cyclic'", sampling)
    return (step or ("constant_length" if method == "classic" else "a/sqrt(k)"),
            iterate or ("best" if method == "classic" else "average"))


@dataclass
class _Run:
    """What every subgradient loop shares: the inputs, the step rule (code and parameters of
    section 3.3.3), the iterate rule, the check period, the tracker (best point, limits,
    events), the ergodic dual bound and the improvement rule."""

    inputs: MRCInputs
    code: int
    params: dict
    iterate: str
    check_every: int
    tracker: Tracker
    dual: DualBound
    stall: _Stall

    @classmethod
    def start(cls, solver: str, inputs: MRCInputs, step: str, params: dict, iterate: str,
              check_every: int, cap: int, tols: tuple[float, float | None],
              callback: Callable[[dict], Any] | None, fixed_marginals: bool) -> _Run:
        """A run's state: its tracker (cap, gap ``tol`` = ``tols[0]``), the dual bound and the
        improvement rule (``improvement_tol`` = ``tols[1]``)."""
        tracker = Tracker(solver, max_iterations=cap, tol=float(tols[0]), callback=callback)
        return cls(inputs, _STEP_CODES[step], params, iterate, check_every, tracker,
                   DualBound(inputs, fixed_marginals=fixed_marginals), _Stall(tols[1]))

    @property
    def first(self) -> float:
        """The rule's leading parameter: gamma (constant length) or a."""
        return self.params["gamma" if "gamma" in self.params else "a"]


def _fm_value(inputs: MRCInputs, coef: np.ndarray) -> tuple[float, np.ndarray]:
    """(2.5) at coef and the label weights h(x_i) of every instance."""
    values, weights = sorted_prefix_max(label_scores(coef, inputs.psi))
    return regularizer(coef, inputs.tau, inputs.lam) + float(values.mean()), weights


def _checkpoint(run: _Run, k: int, entry: dict[str, Any], coef: np.ndarray, avg: _SuffixMean,
                objective: Callable[[np.ndarray], float]) -> bool:
    """Record iteration ``k``; every ``check_every`` iterations (at the last, and once the time
    budget is spent, so that ``time_limit`` stops the loop within one iteration) also offer
    the averaged iterate, refresh the certified lower bound and gap, and say whether to stop."""
    tracker = run.tracker
    if k % run.check_every and k != tracker.max_iterations and not tracker.expired():
        tracker.record(k, upper=tracker.best_value, **entry)
        return False
    if run.iterate == "average":
        entry["candidate_objective"] = objective(avg.mean)
        tracker.offer(entry["candidate_objective"], mu=avg.mean)
        avg.maybe_restart(k, coef)
    if tracker.expired():  # the finish polishes the best point once (:func:`_finish`)
        tracker.check(k)
        tracker.record(k, upper=tracker.best_value, **entry)
        return True
    lower = run.dual.bound(k, _best_mu(tracker), tracker.elapsed())
    tracker.bound(lower=lower)
    stop = tracker.check(k) or run.stall.stalled(tracker)
    tracker.record(k, upper=tracker.best_value, lower=lower, gap=tracker.gap, **entry)
    return stop


def _classic(run: _Run, coef: np.ndarray) -> int:
    """Classic subgradient method (Algorithms 2/3) on (2.5); returns the iteration count."""
    inputs, tracker, dual = run.inputs, run.tracker, run.dual
    psi, n = inputs.psi, inputs.n
    tau = inputs.tau.reshape(coef.shape)
    lam = inputs.lam.reshape(coef.shape)
    avg = _SuffixMean(coef)
    k = 0
    for k in range(1, tracker.max_iterations + 1):
        value, weights = _fm_value(inputs, coef)
        grad = -tau + lam * np.sign(coef) + (weights.T @ psi) / n
        gnorm = float(np.linalg.norm(grad))
        alpha = _step_size(run.code, run.first, run.params["b"], k, gnorm)
        entry = {"objective": value, "step": alpha}
        if run.iterate == "best":
            tracker.offer(value, mu=coef)
        dual.sums += alpha * weights
        dual.weight += alpha
        coef = coef - alpha * grad
        avg.add(coef)
        if _checkpoint(run, k, entry, coef, avg, lambda mu: _fm_value(inputs, mu)[0]):
            break
    if run.iterate == "best":
        tracker.offer(_fm_value(inputs, coef)[0], mu=coef)
    return k


def _stochastic(run: _Run, coef: np.ndarray, batch_size: int, sampling: str,
                seed: int | None) -> int:
    """Stochastic subgradient method (section 3.4) on (2.5); returns the iteration count."""
    inputs, tracker, dual = run.inputs, run.tracker, run.dual
    psi, n = inputs.psi, inputs.n
    max_iterations = tracker.max_iterations
    rng = np.random.default_rng(seed)
    tau = inputs.tau.reshape(coef.shape)
    lam = inputs.lam.reshape(coef.shape)
    coef = coef.copy()
    avg = _SuffixMean(coef)
    queue = np.empty(0, dtype=np.int64)
    k = 0
    while k < max_iterations:
        n_steps = min(run.check_every, max_iterations - k)
        need = n_steps * batch_size
        while queue.size < need:
            if sampling == "shuffle":
                fresh = rng.permutation(n)
            elif sampling == "random":
                fresh = rng.integers(0, n, size=n)
            else:
                fresh = np.arange(n)
            queue = np.concatenate([queue, fresh])
        order, queue = queue[:need], queue[need:]
        steps = np.empty(n_steps)
        _stochastic_chunk(psi, coef, avg.mean, tau, lam, order, batch_size, k, avg.count,
                          run.code, run.first, run.params["b"], dual.sums, dual.weight, steps)
        avg.count += n_steps
        k += n_steps
        candidate = avg.mean if run.iterate == "average" else coef
        value = _fm_value(inputs, candidate)[0]
        tracker.offer(value, mu=candidate)
        avg.maybe_restart(k, coef)
        lower = dual.bound(k, _best_mu(tracker), tracker.elapsed())
        tracker.bound(lower=lower)
        stop = tracker.check(k) or run.stall.stalled(tracker)
        tracker.record(k, objective=value, upper=tracker.best_value, step=float(steps[-1]),
                       lower=lower, gap=tracker.gap)
        if stop:
            break
    return k


# ------------------------------------------------------------------------------------------------
# (2.2): constrained subgradient method on (3.14)-(3.16)
# ------------------------------------------------------------------------------------------------
def constrained_subgradient(
    psi: np.ndarray,
    n_classes: int,
    y: np.ndarray,
    tau: np.ndarray,
    lam: np.ndarray,
    *,
    step: str = "a/sqrt(k)",
    step_params: dict[str, float] | None = None,
    iterate: str = "best",
    max_iterations: int | None = None,
    tol: float = 1e-3,
    improvement_tol: float | None = None,
    check_every: int = 100,
    mu0: np.ndarray | None = None,
    callback: Callable[[dict], Any] | None = None,
) -> Solution:
    """Constrained subgradient method (section 3.3.5) for the MRC (2.2) via (3.14)-(3.16).

    The variables are (mu, nu); the constraints f_j(mu, nu) = phi(mu, x_i; C) - nu <= 0 of
    (3.16) are all checked at once through max_i phi(mu, x_i) (section 3.5.3). A feasible
    iterate steps along a subgradient of the objective (3.15), (-tau + lam sign(mu), 1); an
    infeasible one along the subgradient (h(x_i*) kron psi(x_i*), -1) of the most violated
    constraint, i* = argmax_i phi(mu, x_i).

    Every iterate mu is also a point of (2.2) with objective
    1 - tau^T mu + lam^T |mu| + max_i phi(mu, x_i) (nu eliminated), which is what ``objective``,
    the best-point rule and the history report.

    Parameters
    ----------
    psi, n_classes, y, tau, lam
        As in :func:`fixed_marginals_subgradient`.
    step, step_params
        Step rule and parameters (section 3.3.3); defaults
        :data:`DEFAULT_STEP_PARAMS` ``["constrained"][step]``.
    iterate : {"best", "average"}
        Best point over the iterates (default; free, every iteration evaluates (2.2)) or best
        over the running means evaluated every ``check_every`` iterations.
    max_iterations, tol, improvement_tol, check_every, mu0, callback
        As in :func:`fixed_marginals_subgradient` (``max_iterations`` default 20,000); the
        lower bound comes from the step-weighted
        mean of the instance/label weights of the constraint steps (a distribution over
        (x_i, y), made feasible for |E Phi - tau| <= lam by mixing with the empirical one).

    Returns
    -------
    Solution
        ``primal={"mu": mu, "nu": [max_i phi(mu, x_i)]}``; ``objective`` the exact value of
        (2.2) at mu.
    """
    owner = "constrained_subgradient"
    inputs = check_inputs(psi, n_classes, y, tau, lam, owner)
    params = _step_params("constrained", step, step_params, owner)
    _check_common(iterate, tol, improvement_tol, owner)
    cap, _ = iteration_cap(owner, 20000, max_iterations)
    check_every = _positive_int(check_every, "check_every", owner)
    coef = _initial_mu(mu0, inputs, owner).copy()
    run = _Run.start("subgradient-constrained", inputs, step, params, iterate, check_every, cap,
                     (tol, improvement_tol), callback, fixed_marginals=False)
    k, n_feasible = _constrained(run, coef)
    solution = _finish(run.tracker, run.dual,
                       {"step": step, "step_params": params, "iterate": iterate,
                        "feasible_steps": n_feasible})
    best_values = phi(solution.primal["mu"], inputs.psi, inputs.n_classes)
    solution.primal["nu"] = np.array([float(best_values.max())])
    return solution


def _constrained(run: _Run, coef: np.ndarray) -> tuple[int, int]:
    """The loop of :func:`constrained_subgradient`; returns the iteration count and the
    number of objective (feasible) steps."""
    inputs, tracker, dual = run.inputs, run.tracker, run.dual
    psi = inputs.psi
    tau = inputs.tau.reshape(coef.shape)
    lam = inputs.lam.reshape(coef.shape)
    values = sorted_prefix_max(label_scores(coef, psi))[0]
    nu = float(values.max())  # feasible start of (3.14)
    avg = _SuffixMean(coef)
    n_feasible = 0
    k = 0
    for k in range(1, tracker.max_iterations + 1):
        values, weights = sorted_prefix_max(label_scores(coef, psi))
        worst = int(np.argmax(values))
        value = regularizer(coef, inputs.tau, inputs.lam) + float(values[worst])
        if run.iterate == "best":
            tracker.offer(value, mu=coef)
        feasible = values[worst] <= nu
        if feasible:  # objective step on (3.15)
            grad = -tau + lam * np.sign(coef)
            gnu = 1.0
            n_feasible += 1
        else:  # step on the most violated constraint (3.16)
            grad = weights[worst][:, None] * psi[worst][None, :]
            gnu = -1.0
        gnorm = math.sqrt(float(np.sum(grad * grad)) + gnu * gnu)
        alpha = _step_size(run.code, run.first, run.params["b"], k, gnorm)
        if not feasible:
            dual.sums[worst] += alpha * weights[worst]
            dual.weight += alpha
        coef = coef - alpha * grad
        nu -= alpha * gnu
        avg.add(coef)
        entry = {"objective": value, "step": alpha, "feasible": bool(feasible)}
        if _checkpoint(run, k, entry, coef, avg,
                       lambda mu: minimax_objective(mu, psi, inputs.n_classes, inputs.tau,
                                                    inputs.lam)):
            break
    if run.iterate == "best":
        tracker.offer(minimax_objective(coef, psi, inputs.n_classes, inputs.tau, inputs.lam),
                      mu=coef)
    return k, n_feasible
