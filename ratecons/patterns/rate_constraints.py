"""The rate-constraint pattern: compile rate problems to Problem 1 and solve the ramp problem.

Compilation (:func:`compile_rate_program`) collects the distinct subsets of the objective and
constraints as the datasets D_i of Problem 1 (Goh et al. 2016), writes every row with
nonnegative alpha, beta using s_p + s_n = 1, and records the constants. Methods:

- ``cvxpy`` (the reference): the hinge relaxation solved by CVXPY, then Algorithm 1
  (majorization-minimization) over Problem 3 solved by CVXPY at each iterate;
- ``hinge``: the hinge relaxation alone (one convex problem);
- ``mm``: Algorithm 1 with every convex bound solved by the specialized solver (cutting planes
  over v and b around SDCA, :mod:`ratecons.patterns.rate_mm`); it needs an l2 term and no l1
  term, and ``auto`` picks it where the measured cost model of
  :mod:`ratecons.patterns.rate_auto` predicts it faster than ``cvxpy``.

Every method ends with the *deterministic repair* (:func:`make_deterministic`): the returned
model 1(<w, x> - b > 0) must meet the indicator constraints of Problem 1 on the training data,
which a solution of the ramp problem (or of the hinge relaxation) can miss by a little. The
exact threshold search of :mod:`ratecons.solvers.bias_repair` picks the bias; a moved bias is
off the certified fixed point, so the method continues from the repaired model with the missed
bounds tightened (gamma_j - margin_j), up to ``settings.BIAS_CONTINUATION_ROUNDS`` times; when
no bias works for this w, the method is re-run from its solution with the violated bounds
tightened, up to ``REPAIR_ROUNDS`` times. ``optimal`` is kept only for a returned model that is
the last run's certified fixed point and meets every constraint; otherwise the status is
``iteration_limit``, with the violations, by constraint, or the bias moves in its certificate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from .. import limits, settings
from ..canonical.rate_program import RateProgram, program_of_rows
from ..comparison import objective_rel_gap
from ..constant_start import better_of_two_runs
from ..errors import DataError, NotLinearError, SolverError, SpecError, parameter_error
from ..models import LinearModel
from ..phase_one import find_feasible_start
from ..problem import Problem
from ..rates import RateExpr, RatioExpr
from ..reductions.to_cvxpy import solve_bound_cvxpy
from ..reductions.to_structured import structured_support
from ..result import LinearScorer, Result
from ..solution import Solution
from ..solvers.bias_repair import ROW_TOL, repair_bias
from ..solvers.mm import Repaired, limit_reached, majorize_minimize, repair_ladder
from ..solvers.tracker import limit_warning, no_point, revised
from ..structured_chain import structured_method
from .composed import GenericChain
from .pattern import MethodSpec, Pattern
from .rate_auto import predicted_log_ratio, rate_size
from .rate_mm import (
    MM_TOL,
    START_EPSILON,
    SpecializedBound,
    certified_epsilon,
    mm_applicable,
    same_anchor_rows,
)
from .rate_warm import Anchor, warm_start_solution

__all__ = ["RateConstraintPattern", "compile_rate_program"]


def compile_rate_program(problem: Problem) -> RateProgram:
    """Lower a rate problem to Problem 1 (see module docstring)."""
    objective: RateExpr = problem.objective
    datasets = problem.analysis.datasets
    if len({ds.d for ds in datasets}) > 1:
        raise DataError(
            "the datasets of this problem have different numbers of features: "
            + ", ".join(f"{ds.name}: {ds.d}" for ds in datasets)
            + ". A linear model needs the same feature columns everywhere."
        )
    names = [f"{problem.sense} {objective.name}"] + [c.name for c in problem.constraints]
    model: LinearModel = problem.model
    notes = []
    if any(c.ratio is not None for c in problem.constraints):
        notes.append("ratio constraints are multiplied through by their denominators (App. B): "
                     "under the ramp relaxation they bound a ratio of expectations.")
    return program_of_rows(problem.analysis.rate_rows(), lambda data: data.X, names,
                           objective_sign=problem.analysis.objective.sign, l2=model.l2,
                           l1=model.l1, fit_intercept=model.fit_intercept, notes=notes)


def rate_result(problem: Problem, method: str, solution: Solution) -> Result:
    """Wrap a solver's Solution for the user (no model unless the status carries one); a
    limit status warns by the :mod:`~ratecons.solvers.tracker` rule (once per solve: the MM
    run's Tracker has usually warned already; a status the repair lowered has not)."""
    program: RateProgram = problem.canonical()
    scorer = None
    objective = float("nan")
    if solution.status in settings.SOLVED_STATUSES and "w" in solution.primal:
        w, b = solution.primal["w"], float(solution.primal["b"])
        scorer = LinearScorer(w, b)
        objective = program.to_user(program.objective(w, b, "ramp"))
    if solution.status in settings.LIMIT_STATUSES:  # the Tracker's rule, once per solve
        limit_warning(f"{solution.solver}: stopped with status {solution.status}; "
                      + solution.certificate.details.get(
                          "message", "the point returned is the best found, not a certified "
                          "optimum."))
    return Result(problem, method, solution, scorer, objective, to_user=program.to_user)


#: re-solves with tightened bounds when no bias makes the deterministic model feasible
REPAIR_ROUNDS = 3

#: Tighten = ``tighten(tightened_program, solution) -> Solution``: the method re-run on a copy of
#: the program with smaller bounds gamma, starting from ``solution``
Tighten = Callable[[RateProgram, Solution], Solution]


def indicator_violations(program: RateProgram, w: np.ndarray, b: float) -> dict[str, float]:
    """max(0, indicator row_j - gamma_j) of every constraint, by name (0.0 when met)."""
    rows = program.row_values(w, b, "indicator")[1:] - program.gamma
    return {name: float(max(v, 0.0)) if v > ROW_TOL else 0.0
            for name, v in zip(program.row_names[1:], rows, strict=True)}


def make_deterministic(program: RateProgram, solution: Solution,
                       tighten: Tighten | None = None, relaxation: bool = False) -> Solution:
    """Make the solution's deterministic model meet Problem 1's constraints (module docstring).

    The repair ladder of every MM run (:func:`~ratecons.solvers.mm.repair_ladder`, eager): the
    bias is chosen by :func:`~ratecons.solvers.bias_repair.repair_bias` (exact threshold
    search, nearest feasible bias; an already feasible bias is kept). A moved bias is off the
    fixed point the run certified, so ``tighten`` continues from the repaired model (Alg 1 of
    Goh et al. 2016 with the repaired (w, b) as first anchor, eq. 4; every bound the fixed
    point's deterministic model missed, by miss_j, tightened by miss_j + 1e-4, accumulating:
    the ramp-indicator gap at a fixed point is about miss_j, so the next fixed point's
    deterministic model meets it), at most ``settings.BIAS_CONTINUATION_ROUNDS`` times. When
    no bias is feasible for w, every violated bound (at the least violating bias) is tightened
    by max(2 violation_j, 1e-4) and ``tighten`` re-runs the method from the current solution;
    at most ``REPAIR_ROUNDS`` rounds, then the least violating bias.

    Returns
    -------
    Solution
        With the repaired (w, b), ``certificate.max_violation`` the largest indicator violation
        and ``details["deterministic"]``: bias before and after, rounds, ``bias_repairs`` (how
        many times the bias was moved), ``bias_moved`` (whether the returned model is off the
        last certified fixed point), the indicator violation of every constraint by name. The
        status is the last MM run's only when the returned model is its fixed point and meets
        every constraint; otherwise ``iteration_limit`` (``time_limit`` past the time limit)
        with a message naming what happened (``relaxation``: ``solution`` is the hinge
        relaxation's optimum, not an MM run's, and the message says so).
    """
    if solution.status not in settings.SOLVED_STATUSES or "w" not in solution.primal:
        return solution
    began = time.perf_counter()
    b0 = float(solution.primal["b"])
    margin = np.zeros(program.m)
    last_fix: list = [None, None]  # (point, its exact search): one search per point
    moves: list[float] = []  # the solver's bias at every move of the exact search

    def best_bias(point: Solution) -> Any:
        if last_fix[0] is not point:
            last_fix[:] = [point, repair_bias(program, np.asarray(point.primal["w"]),
                                              float(point.primal["b"]))]
        return last_fix[1]

    def missed(point: Solution) -> np.ndarray:
        return np.array(list(indicator_violations(program, np.asarray(point.primal["w"]),
                                                  float(point.primal["b"])).values()))

    def intercept(point: Solution, last: bool) -> Solution | None:
        fix = best_bias(point)  # the least violating bias when none is feasible
        if not (fix.feasible or last):
            return None
        moves.append(float(point.primal["b"]))
        return revised(point, primal=dict(point.primal, b=np.float64(fix.b)))

    def rerun(anchor: Solution, more: np.ndarray) -> Solution | None:
        if tighten is None:
            return None
        margin[:] += more
        again = tighten(replace(program, gamma=program.gamma - margin), anchor)
        if again.status not in settings.SOLVED_STATUSES or "w" not in again.primal:
            return None
        return _continued(anchor, again)

    def resolve(point: Solution, miss: np.ndarray, done: int) -> Solution | None:
        excess = np.maximum(best_bias(point).rows[1:] - program.gamma, 0.0)
        return rerun(point, np.where(excess > ROW_TOL, np.maximum(2.0 * excess, 1e-4), 0.0))

    def resume(found: Solution, miss: np.ndarray, count: int) -> Solution | None:
        # the continuation: Alg 1 from the repaired model, each bound the fixed point missed
        # tightened by its miss (+ 1e-4): the ramp-indicator gap at a fixed point is about it
        return rerun(found, np.where(miss > 0.0, miss + 1e-4, 0.0))

    repaired = repair_ladder(solution, missed=missed, intercept=intercept, resolve=resolve,
                             rounds=REPAIR_ROUNDS, eager=True, resume=resume,
                             resumes=settings.BIAS_CONTINUATION_ROUNDS)
    out = repaired.point
    w, b = np.asarray(out.primal["w"]), float(out.primal["b"])
    out.objective = program.objective(w, b, "ramp")
    violations = indicator_violations(program, w, b)
    worst = max(violations.values(), default=0.0)
    out.certificate.max_violation = worst
    out.certificate.details["local"] = True  # a fixed point of Alg 1, as the chains' say
    out.certificate.details["deterministic"] = {
        "bias_before": b0, "bias_after": b, "tightening_rounds": repaired.rounds,
        "tightening_margin": margin, "indicator_violations": violations,
        "ramp_violation": float(np.max(program.violations(w, b, "ramp"), initial=0.0)),
        "bias_moved": repaired.intercepted, "bias_repairs": len(moves),
    }
    if np.any(margin > 0.0):  # the bounds in force at the last step, in the rows' own terms
        # (gamma_j = bound_j - constant_j): export_mps(at=result) writes that step
        out.certificate.details["step_bounds"] = program.gamma + program.constant[1:] - margin
    _honest_status(out, violations, repaired, moves, relaxation)
    # the run's clock plus the repair's (its re-runs included once: _continued adds the anchor)
    out.solve_time = solution.solve_time + (time.perf_counter() - began)
    return out


def _continued(anchor: Solution, again: Solution) -> Solution:
    """``again``, a run continued from ``anchor``, with the run's history (the records of the
    k-th re-run marked ``"round": k``: Alg 1 is monotone within a round), time and counts."""
    again.solve_time += anchor.solve_time
    number = 1 + max((h.get("round", 0) for h in anchor.history), default=0)
    again.history = anchor.history + [dict(h, round=number) for h in again.history]
    details, before = again.certificate.details, anchor.certificate.details
    for key in ("iterations", "mm_steps", "mm_iterations"):  # the run's counts, every round
        if key in details and key in before:
            details[key] += before[key]
    for key in ("hinge_relaxation_objective", "warm_start"):
        if key in before:
            details.setdefault(key, before[key])
    return again


def _honest_status(out: Solution, violations: dict[str, float], repaired: Repaired,
                   moves: list[float], relaxation: bool = False) -> None:
    """``out.status`` stays the MM run's only when ``out`` is its fixed point and meets every
    constraint; otherwise ``iteration_limit`` (``time_limit`` past it) and a message, which
    says that no iteration limit was reached when none was (the status then means "not
    certified": a larger ``max_iterations`` changes nothing) and, for the hinge relaxation
    (``relaxation``), what it certified instead."""
    limit = settings.TIME_LIMIT if limits.active().expired() else settings.ITERATION_LIMIT
    details = out.certificate.details
    unlimited = out.status not in settings.LIMIT_STATUSES  # no limit stopped the run
    if repaired.intercepted and unlimited:
        out.status = limit
    if repaired.intercepted:
        measured = details.get("last_relative_decrease")
        where = "the hinge relaxation's optimum" if relaxation else "where the MM run stopped"
        no_limit = (f" (status {limit} without a limit reached: a larger max_iterations changes "
                    "nothing)" if unlimited and limit == settings.ITERATION_LIMIT else "")
        details["message"] = (
            f"the exact bias repair moved the bias {len(moves)} time(s), the last time from "
            f"{moves[-1]:.6g} ({where}) to {float(out.primal['b']):.6g} so that "
            "the deterministic model meets every constraint on the training data; "
            + ("" if measured is None or not np.isfinite(measured) else
               f"the last MM step improved by {measured:.3g} (relative) where the run stopped, ")
            + (f"so the returned model is certified for neither the relaxation nor the ramp "
               f"problem{no_limit}; method='auto' solves the ramp problem itself."
               if relaxation else
               f"but the returned model is not a certified fixed point{no_limit}: continue "
               "with solve(warm_start=result), or raise settings.BIAS_CONTINUATION_ROUNDS."))
    if max(violations.values(), default=0.0) > 0.0:
        out.status = limit
        details["message"] = (
            "the deterministic model does not meet "
            + ", ".join(f"{n} (by {v:.3g})" for n, v in violations.items() if v > 0)
            + f" on the training data; no bias meets it for this w, and {repaired.rounds} "
            "re-solve(s) with tightened bounds did not either.")


def _hinge_start(program: RateProgram, solve_bound: Any) -> Solution:
    """The hinge relaxation's solution: feasible for Problem 2, the start of Algorithm 1."""
    return solve_bound(program, program.bound_masks(), None)


def check_mm_options(method: str, max_iterations: Any, tol: Any) -> None:
    """Alg 1's options: T an int >= 1, tol a float >= 0 (a clear error otherwise)."""
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)) \
            or max_iterations < 1:
        raise parameter_error("max_iterations", f"method '{method}'", "an int >= 1",
                              max_iterations)
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not tol >= 0:
        raise parameter_error("tol", f"method '{method}'", "a float >= 0 (0: run all T steps)",
                              tol)


def solve_ramp(
    problem: Problem, method: str, solve_bound: Any, *, max_iterations: int, tol: float,
    callback: Any, exhausted: Callable[[], bool] | None = None, warm_start: Any = None,
) -> Result:
    """:func:`_ramp_once`; and where its answer is worse than the best feasible constant
    model, the same again from that constant's (w, b), the better answer kept
    (:func:`ratecons.constant_start.better_of_two_runs`)."""
    check_mm_options(method, max_iterations, tol)

    def once(start: Any) -> Result:
        return _ramp_once(problem, method, solve_bound, max_iterations=max_iterations,
                          tol=tol, callback=callback, exhausted=exhausted, warm_start=start)

    return better_of_two_runs(
        problem.analysis, lambda: once(warm_start),
        lambda _, found: once(Anchor(np.zeros(problem.canonical().d), -found[1].score)),
        scorer=lambda r: r.scorer if r.has_model else None, status=lambda r: r.status,
        details=lambda r: r.certificate.details)


def _ramp_once(
    problem: Problem, method: str, solve_bound: Any, *, max_iterations: int, tol: float,
    callback: Any, exhausted: Callable[[], bool] | None, warm_start: Any,
) -> Result:
    """Hinge relaxation (or ``warm_start``'s model, :mod:`~ratecons.patterns.rate_warm`), then
    Algorithm 1 with ``solve_bound`` for every Problem-3 instance, then the deterministic
    repair. ``max_iterations`` caps the bounds of Alg 1 and of the repair's re-solves
    together; the solve's time limit and ``exhausted()`` (the bound solver's own budget) stop
    both (module docstring)."""
    program: RateProgram = problem.canonical()
    start, warm = (None, None) if warm_start is None else warm_start_solution(
        program, solve_bound, warm_start)
    if start is None:
        start = _hinge_start(program, solve_bound)
    # a hinge relaxation's optimum, or phase 1's (on the same rows: the linear model's w)
    relaxed = start.status not in settings.INFEASIBLE_STATUSES
    if not relaxed:
        # on the rows themselves: its MM repairs by the exact bias search, whose continuation
        # from a start 1e-4 inside them (the chain's margin) ended uncertified on a 5-rule grid
        # instance of benchmarks.rate_constraints (synthetic, 299 rows, l2 = 1e-2)
        start = find_feasible_start(problem.analysis, callback=callback)
    if start.status not in settings.SOLVED_STATUSES or "w" not in start.primal:
        return rate_result(problem, method, start)
    cold = warm is None or warm["cold_fallback"]
    if callback:
        callback({"stage": "hinge" if cold else "warm_start", "objective": start.objective,
                  "status": start.status})
    solution = majorize_minimize(program, solve_bound, start, max_iterations=max_iterations,
                                 tol=tol, callback=callback, exhausted=exhausted)
    solution.solve_time += start.solve_time
    if cold and relaxed:
        solution.certificate.details["hinge_relaxation_objective"] = start.objective
    if warm is not None:
        solution.certificate.details["warm_start"] = warm
    steps = solution.certificate.details["mm_steps"]

    def tighten(tight: RateProgram, current: Solution) -> Solution:
        # Problem 3 of the tightened program at the current model (its first step may go
        # uphill: the current model need not meet the tighter bounds), then Alg 1 from there,
        # within what is left of the budgets
        nonlocal steps
        reached = limit_reached(exhausted) or (
            settings.ITERATION_LIMIT if steps >= max_iterations else None)
        if reached:
            return no_point(reached)
        w, b = current.primal["w"], float(current.primal["b"])
        step = solve_bound(tight, tight.bound_masks(w, b),
                           {"w": w, "b": b, "objective": tight.objective(w, b, "ramp")})
        steps += 1
        if step.status not in settings.SOLVED_STATUSES:
            return step
        out = majorize_minimize(tight, solve_bound, step, max_iterations=max_iterations - steps,
                                tol=tol, callback=callback, exhausted=exhausted)
        steps += out.certificate.details["mm_steps"]
        return out

    return rate_result(problem, method, make_deterministic(program, solution, tighten))


def _run_cvxpy(problem: Problem, form: RateProgram, *, seed: int | None = None,
               callback: Any = None, solver: str | None = None,
               max_iterations: int = settings.MM_MAX_ITERATIONS,
               tol: float = settings.MM_RELATIVE_TOL, warm_start: Any = None) -> Result:
    def bound(program: RateProgram, masks: list, warm: dict | None) -> Solution:
        return solve_bound_cvxpy(program, masks, warm, solver=solver)

    return solve_ramp(problem, "cvxpy", bound, max_iterations=max_iterations, tol=tol,
                      callback=callback, warm_start=warm_start)


def _run_hinge(problem: Problem, form: RateProgram, *, seed: int | None = None,
               callback: Any = None, solver: str | None = None) -> Result:
    solution = _hinge_start(form, lambda p, m, w: solve_bound_cvxpy(p, m, w, solver=solver))
    if solution.status in settings.INFEASIBLE_STATUSES:  # a relaxation's: no proof
        solution.status = settings.INFEASIBLE_INACCURATE
        solution.certificate.details["message"] = (
            "the hinge relaxation (every rate replaced by its hinge upper bound) is infeasible, "
            "which proves nothing of the problem itself; method 'cvxpy' searches for a "
            "feasible start of the ramp problem instead.")
    if solution.status in settings.SOLVED_STATUSES:
        w, b = solution.primal["w"], float(solution.primal["b"])
        solution.certificate.upper_bound = solution.objective
        solution.history = [{"iteration": 0, "objective": form.objective(w, b, "ramp")}]

    def tighten(tight: RateProgram, current: Solution) -> Solution:
        reached = limit_reached()  # no re-solve past the time limit
        if reached:
            return no_point(reached)
        return solve_bound_cvxpy(tight, tight.bound_masks(), None, solver=solver)

    return rate_result(problem, "hinge", make_deterministic(form, solution, tighten,
                                                            relaxation=True))


def run_mm(problem: Problem, form: RateProgram, *, seed: int | None = None,
           callback: Any = None, max_iterations: int = settings.MM_MAX_ITERATIONS,
           tol: float = MM_TOL, epsilon: float | None = None,
           start_epsilon: float = START_EPSILON, rho: float = 0.1, v_max: float = 100.0,
           v_chooser: str = "auto", b_chooser: str = "center_of_mass",
           max_epochs: int | None = None, warm_start: Any = None) -> Result:
    """Run ``method="mm"``: options T (``max_iterations``, the most bounds solved after the
    hinge relaxation, repairs included), ``tol`` of Alg 1, ``epsilon`` (the certified gap of
    the last bounds; by default :func:`~ratecons.patterns.rate_mm.certified_epsilon`),
    ``start_epsilon`` and ``rho`` (the looser gaps of the hinge relaxation and of the
    intermediate bounds, see :class:`SpecializedBound`; set ``start_epsilon=epsilon`` to solve
    every bound to ``epsilon``), ``v_max``, the CutChoosers and ``max_epochs``, the most SDCA
    epochs of the whole solve (None: no cap; once spent the solve stops with
    ``iteration_limit`` and the best point so far) and ``warm_start`` (a previous Result: its
    model is Alg 1's first anchor and its SDCA duals and multipliers seed the first bound,
    :mod:`~ratecons.patterns.rate_warm`)."""
    ok, why, instead = mm_applicable(form)
    if not ok:
        raise SolverError(f"method 'mm' cannot solve this problem ({why}); use {instead}.")
    check_mm_options("mm", max_iterations, tol)
    epsilon = certified_epsilon(tol, epsilon)
    for name, value in (("epsilon", epsilon), ("start_epsilon", start_epsilon)):
        if not (isinstance(value, (int, float)) and value > 0):
            raise parameter_error(name, "method 'mm'", "a float > 0", value)
    if not (isinstance(rho, (int, float)) and 0 < rho <= 1):
        raise parameter_error("rho", "method 'mm'", "a float in (0, 1]", rho)
    bound = SpecializedBound(seed, callback, epsilon=epsilon,
                             start_epsilon=max(start_epsilon, epsilon), rho=rho,
                             last_bound=max_iterations, v_max=v_max, v_chooser=v_chooser,
                             b_chooser=b_chooser,
                             epoch_budget=math.inf if max_epochs is None else max_epochs)
    return solve_ramp(problem, "mm", bound, max_iterations=max_iterations, tol=tol,
                      callback=callback, exhausted=bound.exhausted, warm_start=warm_start)



class RateConstraintPattern(Pattern):
    """Rate constraints on datasets (Goh et al. 2016): Problems 1-3."""

    name = "rate constraints"
    objective_types = (RateExpr, RatioExpr)
    reference_method = "cvxpy"
    specialized_method = "mm"

    def validate(self, problem: Problem) -> None:
        if problem.objective.curvature == "ratio":
            raise NotLinearError(
                f"{problem.objective.name} is a ratio metric and cannot be an objective "
                "(App. B): optimize a linear rate and constrain the ratio instead, e.g. "
                "minimize=rc.error_rate(D), subject_to=[rc.precision(D) >= 0.9]."
            )
        if problem.model.is_kernel:
            raise SpecError("rate problems train a linear model: use rc.LinearModel(...).")
        for i, con in enumerate(problem.constraints):
            if not con.rates_only:  # the analysis admitted only Constraints
                raise SpecError(  # a reason of plan(): the generic chain takes the problem
                    f"subject_to[{i}] is not a constraint on rates alone "
                    f"({getattr(con, 'name', con)!r})")

    def compile(self, problem: Problem) -> RateProgram:
        return compile_rate_program(problem)

    def methods(self) -> dict[str, MethodSpec]:
        return {
            "cvxpy": MethodSpec("cvxpy", _run_cvxpy,
                                "hinge relaxation + Alg 1 with Problem 3 solved by CVXPY",
                                is_reference=True),
            "hinge": MethodSpec("hinge", _run_hinge, "the hinge relaxation only (CVXPY)",
                                relaxes=("the hinge relaxation (every rate by its hinge upper "
                                         "bound; the reference's own first step, also by "
                                         "CVXPY)")),
            # --- method "mm" (issue 3): specialized Problem-3 solver, see rate_mm.py
            "mm": MethodSpec("mm", run_mm,
                             "hinge relaxation + Alg 1 with Problem 3 solved by cutting planes "
                             "over v (Alg 2) and b (Alg 3) around SDCA (App. F)"),
            # the same Alg 1 with every Problem-3 bound solved by the structured interior
            # point: what ``auto`` picks where mm does not apply and the bounds are QPs
            settings.STRUCTURED_METHOD: structured_method(),
        }

    def choose(self, problem: Problem, form: RateProgram) -> tuple[str, list[str]]:
        """The method the cost models of :mod:`~ratecons.patterns.rate_auto` predict fastest
        among ``mm`` (where it applies), ``structured`` (where the structured form takes every
        part) and ``cvxpy``; with two or more constraints, ``structured`` wherever it takes
        every part (``mm`` was the slower on every such instance measured:
        :data:`~ratecons.settings.MM_STRUCTURED_COST_MODEL`); where ``mm`` does not apply,
        ``structured`` for QP bounds that it takes, else ``cvxpy``. The reasons name the chosen
        method only as the one used."""
        reasons = [
            f"{form.m} rate constraint(s) over {form.k} subsets of the examples (the rates' "
            "positives and negatives by dataset and group): the ramp problem "
            "(Problem 2) is non-convex and is solved by majorization-minimization (Alg 1) over "
            "convex bounds (Problem 3)",
        ]
        ok, why, _ = mm_applicable(form)
        reasons.append(why)
        if not ok and not form.is_lp:
            structured = _structured_reason(problem)
            if structured is not None:
                reasons.append(structured)
                return settings.STRUCTURED_METHOD, reasons
        if ok:
            z = rate_size(form)
            takes = problem.analysis is not None and not structured_support(problem.analysis)
            if takes and z.m > 1:
                reasons.append(
                    f"{z.m} constraints: so method 'structured' is used, the same Alg 1 with "
                    "every Problem-3 bound solved by the structured interior point; with two "
                    "or more constraints 'mm' (Alg 2's cutting plane over as many multipliers) "
                    "was the slower on every instance measured, by 1.4-60x (benchmarks."
                    "auto_grid, docs/mm.md 'When auto picks mm')")
                return settings.STRUCTURED_METHOD, reasons
            # predicted times relative to mm's: 1 / (time(mm) / time(other))
            predicted = {"mm": 1.0, "cvxpy": 10.0 ** -predicted_log_ratio(z)}
            if takes:
                predicted[settings.STRUCTURED_METHOD] = 10.0 ** -predicted_log_ratio(
                    z, settings.MM_STRUCTURED_COST_MODEL)
            ratios = ", ".join(f"time(mm) / time({m}) = {1.0 / t:.2g}"
                               for m, t in predicted.items() if m != "mm")
            reasons.append(
                f"n = {z.n} example-terms x d = {z.d} features at density {z.density:.2g} = "
                f"{z.nnz:.3g} nonzero terms, {z.m} constraint(s), l2 x largest dataset = "
                f"{z.l2n:.3g}: the cost models measured on sparse and dense frames "
                f"(benchmarks.auto_grid, docs/mm.md 'When auto picks mm') predict {ratios}")
            chosen = min(predicted, key=predicted.__getitem__)
            if chosen == "mm":
                reasons.append("so method 'mm' is used: each Problem-3 bound is solved by "
                               "cutting planes over v (Alg 2) and b (Alg 3) around SDCA "
                               "(App. F) instead of a general conic solver")
                return "mm", reasons
            if chosen == settings.STRUCTURED_METHOD:
                reasons.append("so method 'structured' is used: the same Alg 1 with every "
                               "Problem-3 bound solved by the structured interior point")
                return chosen, reasons
        solver = ("an LP solved by HiGHS" if form.is_lp
                  else "a QP solved by CLARABEL")
        reasons.append(f"so method 'cvxpy' is used: each Problem-3 bound is {solver} through "
                       "CVXPY (the reference)")
        return "cvxpy", reasons

    def verify_method(self, problem: Problem, form: RateProgram) -> str | None:
        return "mm" if mm_applicable(form)[0] else None

    def compare(self, problem: Problem, result: Result, reference: Result) -> dict[str, Any]:
        rows = compare_rate_results(problem.canonical(), result, reference)
        if result.method == "mm":  # issue 3: the same convex subproblems, both solvers
            rows.update(same_anchor_rows(problem.canonical(), result))
        elif result.has_model and getattr(result, "last_step", None) is not None:
            rows.update(last_step_rows(problem, result))  # the generic chain's methods
        return rows

    def verdict_rows(self, rows: dict[str, Any]) -> tuple[str, ...]:
        """The rows ``rc.verify``'s verdict rests on: for ``mm``, the same steps at the same
        anchors (:func:`~ratecons.patterns.rate_mm.same_anchor_rows`); the two runs' final
        objectives are shown, but each MM path may end at its own local fixed point."""
        if "bound_at_mm_solution_objective" in rows:
            return ("hinge_relaxation_rel_gap", "bound_at_mm_solution_rel_gap",
                    "fixed_point_rel_gap")
        if "last_step_rel_gap" in rows:
            return ("last_step_rel_gap", "fixed_point_rel_gap")
        return ("objective_rel_gap",)


def _structured_reason(problem: Problem) -> str | None:
    """Why ``auto`` runs Alg 1 with every Problem-3 bound solved by the structured interior
    point (the generic chain, ``method='structured'``) where ``mm`` does not apply and the
    bounds are QPs (l1 and l2), or None (then ``cvxpy``): when the structured form takes every
    part of the problem. It was as fast as ``cvxpy`` (0.60 s against 0.57 s on 1,000 Adult
    rows) or faster (1.3-29x) at every size measured, 100 to 34,189 rows of eleven data sets
    (docs/mm.md, "When auto picks mm"). LP bounds (no l2) stay with ``cvxpy``: the structured
    chain is faster there too (error rate + recall floor, l2 = 0, l1 = 1e-4..1e-2 on 1,000 to
    5,000 Adult rows: 2.9-27x; 12.6 s against 585 s on the whole split), but where the two
    chains part it ended at the higher MM fixed point (8 of 13 instances, by 5.4e-4 to
    9.2e-3 relative; never lower; docs/composition_log.md, "The l1 row")."""
    analysis = problem.analysis
    if analysis is None or structured_support(analysis):
        return None
    return ("QP bounds (l1 and l2) that the structured form takes: the generic chain with "
            "structured interior-point steps was measured as fast as CVXPY's bounds or "
            "faster at every size (error rate + recall floor with l1 on 100 to 34,189 rows of "
            "eleven data sets, docs/mm.md): so method 'structured' is used, the same Alg 1 "
            "over the same Problem-3 bounds")


def last_step_rows(problem: Problem, result: Result) -> dict[str, Any]:
    """Rows for ``rc.verify`` of a generic-chain method (``structured``, ``generic``,
    ``highs``): the result's last convex step (:class:`~ratecons.generic.LastStep`: same
    anchor, same bounds) solved again by CVXPY (the steps of ``generic`` and ``highs`` by
    another solver, :meth:`GenericChain.cross_check <ratecons.patterns.composed.GenericChain.
    cross_check>`). A convex problem has one optimal value, so the two must agree
    (``last_step_rel_gap``); and at a fixed point of Alg 1 the surrogate objective of the
    returned model reproduces that value (``fixed_point_rel_gap``, as for ``mm``), whichever
    MM fixed point each run ended at (the runs' own objectives stay in ``objective_rel_gap``,
    for information)."""
    made = result.certificate.details
    options = {key: made[key] for key in ("kernel_points", "seed") if key in made}
    if result.method in (settings.GENERIC_METHOD, settings.HIGHS_METHOD):
        options.update(GenericChain().cross_check(problem, result))
    else:
        options["only_step"] = result.last_step
    again = problem.solve(settings.GENERIC_METHOD, **options)
    step = getattr(again, "last_step", None) if again.has_model else None
    value = math.nan if step is None else step.bound_objective
    pair = (result.last_step.bound_objective, value)
    user = problem.analysis.objective.to_user  # shown in the user's sense, as the objective
    return {"last_step_objective": (user(pair[0]), user(pair[1])),
            "last_step_rel_gap": objective_rel_gap(*pair),
            "fixed_point_rel_gap": objective_rel_gap(result.solution.objective, value)}


def compare_rate_results(program: RateProgram, result: Result, reference: Result
                         ) -> dict[str, Any]:
    """Objective, indicator (``max_violation``) and ramp violations, solution distance."""
    rows: dict[str, Any] = {"objective": (result.objective, reference.objective)}
    if not (result.has_model and reference.has_model):
        rows["objective_rel_gap"] = None
        return rows
    rows["objective_rel_gap"] = objective_rel_gap(result.objective, reference.objective)
    # feasibility of the returned (deterministic) models: the indicator rows of Problem 1;
    # the ramp rows of Problem 2 alongside (the repaired bias may leave them slightly violated)
    rows["max_violation"] = tuple(
        float(np.max(program.violations(r.w, r.b, "indicator"), initial=0.0))
        for r in (result, reference))
    rows["max_violation_ramp"] = tuple(
        float(np.max(program.violations(r.w, r.b, "ramp"), initial=0.0))
        for r in (result, reference))
    dw = np.linalg.norm(result.w - reference.w) / max(1.0, np.linalg.norm(reference.w))
    rows["solution_distance"] = float(dw + abs(result.b - reference.b))
    return rows


#: the instance :mod:`ratecons.dispatch` tries
PATTERN = RateConstraintPattern()
