"""Robust learning over phi-divergence balls: ``rc.robust_loss(U)`` as a Problem objective.

Methods: ``lbfgs`` (the default: L-BFGS on the exact objective with a certified duality gap),
``fsg``, ``pssg``, ``gssg`` (Algorithm 1), ``sgd`` (fixed subsets, biased) and the
``cvxpy`` reference (chi-square: second-order cone dual; KL: exponential cones). Whatever the
method, ``result.objective`` is R(theta) + (l2/2)||w||^2 evaluated exactly on the full training
data by the IM procedure, and ``result.weights`` (one of the result's extras) is the worst-case
pmf P*(theta).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from .. import settings
from ..canonical.dro import DROProgram
from ..comparison import objective_rel_gap
from ..dask_types import is_dask
from ..errors import SolverError, SpecError
from ..expr.robust_loss import RobustLoss
from ..models import LinearModel
from ..numerics.phi import CHI2, KL
from ..result import LinearScorer, Result
from ..settings import (
    DEFAULT_CONIC_SOLVER,
    OPTIMAL,
    OPTIMAL_INACCURATE,
    SOLVED_STATUSES,
    STRUCTURED_METHOD,
)
from ..solution import Solution
from ..solvers.dro import (
    evaluate,
    full_objective,
    lower_bound,
    solve_dro,
    solve_dro_lbfgs,
)
from ..solvers.dro_certificate import dro_solution
from ..solvers.dro_eval import equal_margins
from ..solvers.dro_point import Evaluation
from ..solvers.structured import CERTIFIED_TOL
from ..solvers.structured import DEFAULT_TOL as STRUCTURED_TOL
from ..solvers.tracker import Tracker, revised, rounded_lower
from ..structured_chain import structured_method, structured_support
from .pattern import MethodSpec, NextRun, Pattern

__all__ = ["DROPattern"]

Callback = Callable[[dict[str, Any]], None] | None
#: the CVXPY reference retries a tight answer at reduced accuracy with CLARABEL's defaults only
#: up to this many examples (see :func:`_run_cvxpy`)
REFERENCE_RETRY_MAX_N = 5000
#: above this many examples the KL reference starts at ``max_step_fraction=0.95``: its tight
#: first try stalled on 3 of 10 instances of 1e4-1e5 examples, and the ladder from 0.95 took
#: 0.87x the iterations of the one from tight over the 10 (docs/robust.md "The KL reference at
#: scale"; every KL instance of the tests is smaller, and keeps the ladder from tight)
REFERENCE_SHORT_STEPS_MIN_N = 5000
#: the relative duality gap (the pattern's own bound, at the reference's model) under which a
#: reference that CLARABEL left ``optimal_inaccurate`` is reported ``optimal``: lbfgs's ``tol``
REFERENCE_GAP_TOL = 1e-6


class DROPattern(Pattern):
    """Distributionally robust learning (the DRO paper, eq. 2)."""

    name = "robust learning (phi-divergence DRO)"
    objective_types = (RobustLoss,)
    reference_method = "cvxpy"
    specialized_method = "lbfgs"

    def validate(self, problem: Any) -> None:
        if problem.sense != "minimize":
            raise SpecError("rc.robust_loss(U) is a loss: use rc.Problem(minimize=...), not "
                            "maximize=.")
        if problem.constraints:
            raise SpecError("robust-learning problems take no subject_to constraints; put the "
                            "distributional constraint in rc.PhiDivergenceBall(data, rho=...).")
        model = problem.model
        if not isinstance(model, LinearModel):
            raise SpecError(f"rc.robust_loss needs rc.LinearModel(...); got "
                            f"{type(model).__name__}.")
        if model.l1 != 0:
            raise SpecError("rc.robust_loss supports an l2 regularizer only (the gradient "
                            "methods of the DRO paper); use LinearModel(l2=..., l1=0).")

    def compile(self, problem: Any) -> DROProgram:
        obj: RobustLoss = problem.objective
        ball = obj.ball
        data = ball.data
        y = 2.0 * data.require_labels("rc.robust_loss", binary=True).astype(np.float64) - 1.0
        notes = []
        if ball.rho >= ball.rho_bound:
            notes.append(f"note: rho={ball.rho:g} exceeds the Assumption 1 bound "
                         f"{ball.rho_bound:.3g} (strict=False): P* may have zero weights.")
        return DROProgram(
            X=data.X, y=y, loss=obj.loss, phi=ball.phi, rho=ball.rho, l2=problem.model.l2,
            fit_intercept=problem.model.fit_intercept, rho_bound=ball.rho_bound,
            name=data.name or "", notes=notes,
        )

    # ------------------------------------------------------------------ methods
    def methods(self) -> dict[str, MethodSpec]:
        return {
            "lbfgs": MethodSpec("lbfgs", _run_lbfgs, "L-BFGS on the exact objective (IM "
                                "procedure, O(N log N) per step) with a certified duality gap "
                                "from the worst-case weights (l2 = 0: Newton-corrected dual)"),
            "gssg": MethodSpec("gssg", _STOCHASTIC["gssg"], "Algorithm 1: SGD with the "
                               "unbiased multilevel Monte Carlo gradient (7)-(8)"),
            "pssg": MethodSpec("pssg", _STOCHASTIC["pssg"], "SGD on subsets growing by a "
                               "factor nu (Ghosh et al. 2018)"),
            "fsg": MethodSpec("fsg", _STOCHASTIC["fsg"], "gradient descent with the exact "
                              "full-data gradient (6) (Namkoong & Duchi)"),
            "sgd": MethodSpec("sgd", _STOCHASTIC["sgd"], "fixed-size subsets: the biased "
                              "baseline"),
            "cvxpy": MethodSpec("cvxpy", _run_cvxpy, "CVXPY conic dual (chi2: SOC, KL: "
                                "exponential cone), CLARABEL", is_reference=True),
            STRUCTURED_METHOD: _structured_spec(),
        }

    def choose(self, problem: Any, form: DROProgram) -> tuple[str, list[str]]:
        builtin = form.phi is CHI2 or form.phi is KL
        if builtin and form.l2 <= 0 and form.loss == "hinge":
            why = "l2 = 0 with the hinge loss: lbfgs has no duality-gap certificate there"
            if form.n >= settings.DRO_STRUCTURED_MIN_EXAMPLES:
                return STRUCTURED_METHOD, [
                    why + f"; from {settings.DRO_STRUCTURED_MIN_EXAMPLES} examples the chain's "
                    "interior point (one convex step, certified by its duality gap) was "
                    "faster than the conic reference on every instance measured "
                    "(docs/robust.md)"]
            return "cvxpy", [why + f"; below {settings.DRO_STRUCTURED_MIN_EXAMPLES} examples "
                             "the conic reference (CLARABEL), which may end optimal_inaccurate "
                             "without a certificate: auto then goes on with method "
                             "'structured', whose duality gap certifies it"]
        reasons = ["the inner maximum is exact in O(N log N) (IM procedure, App. A.1), so "
                   "F(theta) and its gradient (6) are exact: L-BFGS on F, stopped by the "
                   "duality gap at the worst-case weights (a certificate)"]
        if self._ladder(problem, "lbfgs"):
            reasons.append(
                f"at most {_budget(form)} L-BFGS iterations: uncertified "
                "by then (ill-conditioned data: one-hot or unscaled features), auto goes on "
                "with method 'structured' (the chain's interior point, one convex step, its own "
                "duality gap; 2-20x faster than L-BFGS there, up to 7x slower on well-scaled "
                "data, docs/robust.md), and lbfgs goes on from its point if that fails too")
        if form.l2 <= 0:
            reasons.append("l2 = 0: the certificate is the Fenchel dual of the weighted ERM at "
                           "the worst-case weights with its stationarity restored by one Newton "
                           "step (no l2 needed; benchmarks.dro --unregularized: within 2.9x of "
                           "SciPy's L-BFGS-B on the same objective, 92-297x faster than the "
                           "conic reference at N = 1e4)")
        if form.loss == "hinge":
            reasons.append("hinge loss: F is nonsmooth where margins equal 1; after L-BFGS "
                           "the examples at the kink are held there and the dual is refitted "
                           "on them (measured faster than CVXPY on benchmarks.dro's grid)")
        if not builtin:
            reasons.append(f"phi={form.phi.name!r} has no conic form: gradient methods only")
        return "lbfgs", reasons

    def _ladder(self, problem: Any, method: str) -> bool:
        """Whether ``auto``'s ``method`` has the structured chain after it: ``lbfgs``, or the
        conic reference (small unregularized hinge problems), on a chi-square or KL ball, which
        the chain lowers (on Dask data too: a user's hinge loss on 400 rows there ended
        ``lbfgs`` ``iteration_limit`` in 35 s where the chain certified in 13 s)."""
        form = problem.canonical()
        return (method in ("lbfgs", "cvxpy") and (form.phi is CHI2 or form.phi is KL)
                and structured_support(problem.analysis) is None)

    def verify_method(self, problem: Any, form: DROProgram) -> str | None:
        """``lbfgs``; or, where ``auto`` runs the conic reference with the structured chain
        after it (:meth:`fallback`: small unregularized hinge problems), the chain, which is
        what ``solve`` returns whenever the reference falls short."""
        chosen, _ = self.choose(problem, form)
        if chosen == self.reference_method and self._ladder(problem, chosen):
            return STRUCTURED_METHOD
        return self.specialized_method

    def ladder_options(self, problem: Any, method: str) -> dict[str, Any]:
        """``auto``'s ``lbfgs`` gets :func:`_budget` iterations when the structured chain can
        follow it (:meth:`fallback`)."""
        return ({"max_iterations": _budget(problem.canonical())}
                if method == "lbfgs" and self._ladder(problem, method) else {})

    def fallback(self, problem: Any, runs: list[Result]) -> NextRun | None:
        """The conic reference (``auto``'s method for a small unregularized hinge problem)
        ended short of ``optimal`` (CLARABEL's ``optimal_inaccurate``, no certificate): the
        chain's interior point, which certifies its own gap. ``lbfgs`` stopped short of its
        certified gap, at ``auto``'s budget
        (:meth:`ladder_options`: ill-conditioned data) or by its own rule (the hinge loss's kink
        phase, most often): the chain's interior point, which certifies its own gap; and if
        that ends uncertified too, ``lbfgs`` again from where the budget stopped it, for the
        rest of its default 1,000 iterations."""
        last, first = runs[-1], runs[0]
        if last.method == "cvxpy" and len(runs) == 1 and self._ladder(problem, "cvxpy"):
            return NextRun(STRUCTURED_METHOD, (
                f"the conic reference ended {last.status}, without a certified optimum, so "
                "auto went on with method 'structured', the chain's interior point, which "
                "certifies its own duality gap"), {})
        if last.method == "lbfgs" and len(runs) == 1 and self._ladder(problem, "lbfgs"):
            gap = last.certificate.gap
            return NextRun(STRUCTURED_METHOD, (
                f"lbfgs ended {last.status} (certified gap "
                f"{'unknown' if gap is None else f'{gap:.1e}'}, stop: "
                f"{last.certificate.details.get('stop')}), so auto went on with method "
                "'structured', the chain's interior point, which certifies its own duality "
                "gap"), {})
        used = first.certificate.details.get("iterations", 0)
        if (last.method == STRUCTURED_METHOD and first.method == "lbfgs" and len(runs) == 2
                and first.status == settings.ITERATION_LIMIT
                and used == _budget(problem.canonical())):
            return NextRun("lbfgs", (
                f"method 'structured' ended {last.status}, so "
                f"lbfgs went on from its point after {used} iterations"),
                {"theta0": first.extras["theta"], "max_iterations": LBFGS_MAX_ITERATIONS - used},
                continues=True)
        return None

    def compare(self, problem: Any, result: Result, reference: Result) -> dict[str, Any]:
        a, ref = result.objective, reference.objective
        out: dict[str, Any] = {
            "objective": (a, ref),
            "objective_rel_gap": objective_rel_gap(a, ref),
            "max_violation": (0.0, 0.0),
        }
        if "theta" in result.extras and "theta" in reference.extras:
            out["robust_loss"] = (result.robust_loss, reference.robust_loss)
            out["solution_distance"] = float(np.linalg.norm(result.theta - reference.theta))
            out["weights_max_diff"] = float(np.max(np.abs(result.weights - reference.weights)))
        return out


def _result(problem: Any, method: str, solution: Solution, form: DROProgram,
            theta: np.ndarray | None = None, extras: dict[str, Any] | None = None,
            at: Evaluation | None = None) -> Result:
    """The one Result: the model (w, b) from theta (the solution's own by default),
    ``objective`` R(theta) + (l2/2)||w||^2 evaluated exactly on the full training data (or
    taken from the evaluation ``at`` of theta), and the extras ``theta``, ``weights``
    (P*(theta)), ``robust_loss`` (R(theta)), ``alpha`` and ``lam`` (eq. 5) at theta (and
    ``extras``)."""
    theta = np.asarray(solution.primal["theta"] if theta is None else theta, dtype=np.float64)
    if at is None:
        value, _, sol = full_objective(form, theta)
    else:
        value, sol = at.value, at.inner
    w, b = form.split(theta)
    return Result(problem, method, solution, scorer=LinearScorer(w, b), objective=value,
                  extras={"theta": theta, "weights": sol.p, "robust_loss": sol.value,
                          "alpha": sol.alpha, "lam": sol.lam, **(extras or {})})


def _constant_optimum(problem: Any, program: DROProgram) -> Result | None:
    """The constant predictor theta = 0, when the balancing pmfs' bound proves it optimal
    (:func:`~ratecons.solvers.dro_certificate.lower_bound` with ``balance=True``, within the
    structured step's tolerance), as ``method="structured"``'s answer with that certificate;
    else None. There every loss ties, the ball's support function is linear along a ray of
    (eta, lambda), and the interior point crawls towards lambda = 0: on 4,096 rows of Adult's
    14 numeric columns (chi-square, rho = 1, l2 = 1e-4: ``benchmarks.dro``'s grid) it took 500
    iterations and CLARABEL's fallback ended ``optimal_inaccurate`` after 9.6 s, while the bound
    at theta = 0 proves the constant predictor optimal in one evaluation."""
    started = time.perf_counter()
    theta = np.zeros(program.dim)
    at = evaluate(program, theta)
    if not equal_margins(at):
        return None
    lower = lower_bound(program, at, balance=True)
    if not at.value - lower <= STRUCTURED_TOL * max(1.0, abs(at.value)):
        return None
    solution = dro_solution(program, STRUCTURED_METHOD, at, lower, proved=True, stop="tol",
                            iterations=0, tol=STRUCTURED_TOL, history=[],
                            elapsed=time.perf_counter() - started,
                            details={"constant_predictor": True})
    return _result(problem, STRUCTURED_METHOD, solution, program, theta, at=at)


def _structured_spec() -> MethodSpec:
    """``method="structured"``: the chain with the structured interior point
    (:mod:`ratecons.solvers.structured`). A robust loss has no ramp part, so the chain is one
    convex step: the ball's support function in the dual form of eq. (5) (free eta and
    lambda >= 0, per-example perspective terms), certified by the step's duality gap. The
    Result carries the extras of every robust-learning method at the chain's model, and (in
    memory) the certificate's lower bound is the pattern's own at that model
    (:func:`~ratecons.solvers.dro_certificate.lower_bound`: weak duality at the worst-case
    weights), so its gap reads as every other method's, or the step's own dual bound where
    that one is tighter; the status rests on the step's own certificate (relative gap and
    residuals <= its tolerance)."""
    chain = structured_method()

    def run(problem: Any, form: Any, **options: Any) -> Result:
        program = problem.canonical()
        constant = None if is_dask(program.X) else _constant_optimum(problem, program)
        if constant is not None:
            return constant
        solved = chain.run(problem, form, **options)
        if not solved.has_model:
            return solved
        theta = np.append(solved.w, solved.b) if program.fit_intercept else solved.w
        extras = {"last_step": solved.extras.get("last_step")}
        if is_dask(program.X):  # the chain's certificate only
            return _result(problem, chain.name, solved.solution, program, theta, extras)
        at = evaluate(program, theta)
        lower = lower_bound(program, at)
        solution = solved.solution
        cert = solution.certificate
        own = cert.lower_bound  # the step's dual bound, on the same objective
        if own is not None and np.isfinite(own) and not own <= lower:
            # at a degenerate point (w ~ 0, a large ball) the worst-case weights are not
            # unique and weak duality at the ones found is loose (KL rho = 0.5 on Indian
            # liver: 0.271 against the step's 0.693147, which proves the optimum)
            lower, source = own, "the structured step's duality gap"
        else:
            source = "dro_certificate.lower_bound"
        if np.isfinite(lower):
            lower = rounded_lower(lower, at.value)
            gap = max(0.0, at.value - lower)
            solution = revised(solution, certificate=replace(
                cert, lower_bound=lower, gap=gap,
                details={**cert.details, "lower_bound": source}))
            if (solution.status == OPTIMAL
                    and gap > CERTIFIED_TOL * max(1.0, abs(at.value))):
                # the step was the CVXPY fallback's (no dual bound of ours), and weak duality
                # at the worst-case weights is loose at a degenerate point: optimal by the
                # backend's tolerance only (2,000 Adult rows, chi-square rho = 5, before the
                # ball's lam was halved: gap 13.8 reported as optimal)
                solution.certificate.details["message"] = (
                    f"the step's solver reported optimal, but the certificate's gap is "
                    f"{gap:.3g} (lower bound from {source}), above the tolerance "
                    f"{CERTIFIED_TOL:g} relative")
                solution = revised(solution, status=OPTIMAL_INACCURATE)
        return _result(problem, chain.name, solution, program, theta, extras, at)

    run.__signature__ = inspect.signature(chain.run)
    return replace(chain, run=run)


def _budget(form: DROProgram) -> int:
    """``auto``'s L-BFGS iterations before the structured chain: from
    :data:`~ratecons.settings.DRO_AUTO_LBFGS_LARGE_FROM` examples
    :data:`~ratecons.settings.DRO_AUTO_LBFGS_ITERATIONS` (the logistic loss) and
    :data:`~ratecons.settings.DRO_AUTO_LBFGS_HINGE_ITERATIONS` (the hinge loss), below it
    :data:`~ratecons.settings.DRO_AUTO_LBFGS_SMALL_ITERATIONS`."""
    if form.n < settings.DRO_AUTO_LBFGS_LARGE_FROM:
        return settings.DRO_AUTO_LBFGS_SMALL_ITERATIONS
    return (settings.DRO_AUTO_LBFGS_HINGE_ITERATIONS if form.loss == "hinge"
            else settings.DRO_AUTO_LBFGS_ITERATIONS)


#: ``lbfgs``'s default iteration cap
LBFGS_MAX_ITERATIONS = 1000


def _run_lbfgs(problem: Any, form: DROProgram, *, seed: int | None = None,
               callback: Callback = None, max_iterations: int = LBFGS_MAX_ITERATIONS,
               time_limit: float | None = None, tol: float = 1e-6, memory: int = 20,
               theta0: np.ndarray | None = None, warn: bool = True) -> Result:
    sol = solve_dro_lbfgs(form, callback=callback, max_iterations=max_iterations,
                          time_limit=time_limit, tol=tol, memory=memory, theta0=theta0, warn=warn)
    return _result(problem, "lbfgs", sol, form)


#: the options of every stochastic method (:func:`~ratecons.solvers.dro.solve_dro`'s names)
_STOCHASTIC_OPTIONS = frozenset({"step", "a", "max_iterations", "time_limit", "tol", "target",
                                 "theta0", "warn"})
#: each stochastic method's own options on top of them
_OWN_OPTIONS = {"fsg": frozenset(),
                "gssg": frozenset({"max_samples", "r", "draws", "eta_c", "delta"}),
                "pssg": frozenset({"max_samples", "nu", "m0", "eta_c", "delta"}),
                "sgd": frozenset({"max_samples", "batch", "eta_c", "delta"})}


def _stochastic_runner(method: str) -> Callable[..., Result]:
    """The run of a stochastic method (iteration (3) with its gradient estimator): its options
    are :func:`~ratecons.solvers.dro.solve_dro`'s, with their defaults, that the method reads
    (the signature :class:`~ratecons.patterns.pattern.MethodSpec` lists them from)."""
    def run(problem: Any, form: DROProgram, *, seed: int | None = None,
            callback: Callback = None, **options: Any) -> Result:
        sol = solve_dro(form, method, seed=seed, callback=callback, **options)
        return _result(problem, method, sol, form)

    own = _STOCHASTIC_OPTIONS | _OWN_OPTIONS[method]
    head = [p for name, p in inspect.signature(run).parameters.items() if name != "options"]
    params = [p for name, p in inspect.signature(solve_dro).parameters.items() if name in own]
    run.__signature__ = inspect.Signature(head + params, return_annotation=Result)
    run.__name__ = run.__qualname__ = f"_run_{method}"
    return run


#: the runs of the stochastic methods
_STOCHASTIC = {method: _stochastic_runner(method) for method in _OWN_OPTIONS}


def _run_cvxpy(problem: Any, form: DROProgram, *, seed: int | None = None,
               callback: Callback = None, solver: str = DEFAULT_CONIC_SOLVER,
               solver_options: dict[str, Any] | None = None) -> Result:
    """The reference: the generic CVXPY lowering of the same problem
    (:mod:`ratecons.reductions.to_cvxpy`: the support function of the ball over the margin
    losses, a second-order cone for chi-square and exponential cones for KL, the duals of
    problem (4)), solved at tight tolerances. Above :data:`REFERENCE_RETRY_MAX_N` examples an
    answer at reduced accuracy is kept as it is (``optimal_inaccurate``), as the former DRO
    lowering did: CLARABEL's default tolerances, the generic ladder's next try, end there too
    on robust losses at scale and doubled the time (N = 2e4, chi-square: 45 s + 55 s for the
    same status); on small problems the retry costs little and often ends ``optimal``. Above
    :data:`REFERENCE_SHORT_STEPS_MIN_N` examples a KL reference starts at the first retry."""
    from ..reductions.to_cvxpy import solve_step

    if form.phi is not CHI2 and form.phi is not KL:
        raise SpecError(
            f"the CVXPY reference supports phi='chi2' and phi='kl' only; got {form.phi!r}. "
            "Solve custom phi-divergences with method='lbfgs', 'fsg', 'pssg' or 'gssg'.")
    analysis = problem.analysis
    psi = {id(d): d.X for d in analysis.datasets}
    step = solve_step(analysis, psi, None, np.zeros(0), solver, solver_options, tight=True,
                      retry_inaccurate=form.n <= REFERENCE_RETRY_MAX_N,
                      short_steps=form.phi is KL and form.n > REFERENCE_SHORT_STEPS_MIN_N)
    if step.status not in SOLVED_STATUSES:
        raise SolverError(f"CVXPY ({solver}) could not solve the DRO program: {step.status}. "
                          f"{step.message}")
    theta = np.append(step.w, step.b) if form.fit_intercept else step.w
    solved = step.status in (OPTIMAL, OPTIMAL_INACCURATE)  # a user's budget: no bound
    # the pattern's own lower bound at the answer (weak duality at its worst-case weights),
    # beside the conic solver's status, so that the certificate carries a gap of ours
    at = evaluate(form, theta)
    lower = lower_bound(form, at) if solved else -np.inf
    lower = rounded_lower(lower, at.value) if np.isfinite(lower) else None
    status, details = step.status, {}
    if lower is not None:
        details["lower_bound"] = "dro_certificate.lower_bound"
        gap = at.value - lower  # the returned model's exact objective against our bound
        if status == OPTIMAL_INACCURATE and gap <= REFERENCE_GAP_TOL * max(1.0, abs(at.value)):
            # the conic solver's reduced accuracy concerns its own residuals; the model it
            # returned is certified by the pattern's gap, as lbfgs's answers are
            status = OPTIMAL
            details["status_raised"] = (
                f"{solver} said optimal_inaccurate; the duality gap {gap:.1e} of the returned "
                f"model (weak duality at its worst-case weights) proves the tolerance "
                f"{REFERENCE_GAP_TOL:g}")
    sol = Tracker(step.solver).solution(
        {"theta": theta}, objective=step.objective, status=status,
        upper=at.value if solved else None, max_violation=0.0,  # the model's own value
        lower=lower,
        details={"solver": solver, "conic_objective": step.objective, "settings": step.message,
                 **details},
        solve_time=step.solve_time)
    result = _result(problem, "cvxpy", sol, form, at=at)
    if callback is not None:
        callback({"method": "cvxpy", "objective": result.objective})
    return result


#: the instance :mod:`ratecons.dispatch` tries
PATTERN = DROPattern()
