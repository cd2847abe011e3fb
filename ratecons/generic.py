"""The generic chain: any composition that passes the curvature rules, solved by CVXPY.

Dispatch sends a problem here when no specialized pattern accepts it (``plan()`` says why). The
chain is

    kernelize (KernelModel -> linear over psi)  ->  [hinge relaxation, then MM bounds at anchors]
    ->  to_cvxpy  ->  invert (w over psi -> the user's scorer)

1. **Hinge relaxation.** Every ramp part (rates, worst-case rates) replaced by its hinge upper
   bound: one convex problem (Problem 2 relaxed); its solution is feasible for the ramp problem.
2. **Majorization-minimization** (Alg 1 of Goh et al.): at the anchor (w', b') every ramp part is
   replaced by its convex upper bound of eq. (4), tight at the anchor, and the convex problem
   (Problem 3 with the other parts unchanged) is solved again; the surrogate objective never
   increases. It stops when the relative decrease is below ``tol`` (status ``optimal``: a
   stationary point of the ramp problem, every step solved to optimality) or after
   ``max_iterations`` (``iteration_limit``).
3. **Deterministic repair.** The ramp and the indicator differ near the boundary, so the
   deterministic model f(x) > 0 may miss a ramp-satisfied constraint on the training data. Each
   constraint the deterministic model misses is tightened by what it misses (plus 1e-6, times
   2^r in round r) and MM continues from the current point, at most ``repair_rounds`` times;
   a constraint still missed is named with its violation in the certificate and the status is
   ``iteration_limit``.

With no ramp part the problem is one convex solve.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import settings
from .dispatch import Family, MethodSpec
from .errors import ConvergenceWarning
from .expr.analysis import Analysis
from .reductions.kernelize import MAX_EXACT_KERNEL_POINTS, FeatureMap, kernelize
from .reductions.to_cvxpy import ConvexStep, is_lp, pick_solver, solve_step
from .result import Result
from .settings import FEASIBILITY_TOL
from .solution import Certificate, Solution

__all__ = ["GenericChain", "ComposedResult", "solve_generic"]

#: how far past a missed constraint the repair step tightens it
REPAIR_MARGIN = 1e-6


class ScoreTable:
    """A scorer that answers for the training feature matrices from stored scores (MM
    evaluates every part at every iterate without recomputing psi(X) w)."""

    def __init__(self, scores: dict[int, np.ndarray], fallback: Any) -> None:
        self.scores = scores
        self.fallback = fallback

    def decision_function(self, X: Any) -> np.ndarray:
        found = self.scores.get(id(X))
        return found if found is not None else self.fallback.decision_function(X)


def _scores(psi: dict[int, Any], step: ConvexStep) -> dict[int, np.ndarray]:
    return {key: np.asarray(P @ step.w).ravel() - step.b for key, P in psi.items()}


def _table(analysis: Analysis, fmap: FeatureMap, psi: dict[int, Any],
           scores: dict[int, np.ndarray], step: ConvexStep) -> ScoreTable:
    by_matrix = {id(d.X): scores[id(d)] for d in analysis.datasets}
    return ScoreTable(by_matrix, fmap.invert(step.w, step.b))


def _surrogate_objective(analysis: Analysis, scorer: Any, w: np.ndarray) -> float:
    model = analysis.model
    reg = 0.5 * model.l2 * float(w @ w) + getattr(model, "l1", 0.0) * float(np.abs(w).sum())
    return analysis.objective.value(scorer, "surrogate") + reg


def _missed(analysis: Analysis, scorer: Any) -> np.ndarray:
    """max(0, exact row value - bound) for every constraint (deterministic predictions)."""
    return np.array([max(0.0, row.value(scorer, "exact") - row.bound)
                     for row in analysis.constraints])


def solve_generic(analysis: Analysis, *, solver: str | None = None,
                  solver_options: dict[str, Any] | None = None,
                  max_iterations: int = settings.MM_MAX_ITERATIONS,
                  tol: float = settings.MM_RELATIVE_TOL, repair_rounds: int = 5,
                  kernel_points: int = MAX_EXACT_KERNEL_POINTS, seed: int | None = 0,
                  callback: Callable[[dict[str, Any]], None] | None = None,
                  start: Any = None) -> tuple[Solution, Any]:
    """Run the chain (module docstring); returns the Solution and the user's scorer.

    ``start`` (a scorer) replaces the hinge relaxation by a first MM bound at its scores: how
    ``verify`` re-solves a converged reference with another solver from the same anchor (MM's
    fixed points are local, so two paths from the hinge start may end at different ones).
    """
    start_time = time.perf_counter()
    name = pick_solver(analysis, solver)
    fmap = kernelize(analysis.model, analysis.datasets, kernel_points, seed)
    psi = {id(d): fmap.apply(d.X) for d in analysis.datasets}
    bounds = np.array([row.bound for row in analysis.constraints])
    history: list[dict[str, Any]] = []

    def finish(status: str, step: ConvexStep | None, details: dict[str, Any]) -> tuple:
        details.update({"solver": name, "feature_map": fmap.describe(),
                        "steps_are_lps": is_lp(analysis)})
        if step is None or step.w is None:
            return Solution(status, float("nan"), history=history, solver=name,
                            solve_time=time.perf_counter() - start_time,
                            certificate=Certificate(details=details)), None
        scorer = fmap.invert(step.w, step.b)
        value = _surrogate_objective(analysis, table, step.w)
        missed = _missed(analysis, table)
        details["indicator_violations"] = {row.name: float(v) for row, v in
                                           zip(analysis.constraints, missed)}
        sol = Solution(status, value, primal={"w": step.w, "b": np.float64(step.b)},
                       dual={"v": step.duals}, history=history, solver=f"generic/{name}",
                       solve_time=time.perf_counter() - start_time,
                       certificate=Certificate(upper_bound=value,
                                               max_violation=float(missed.max(initial=0.0)),
                                               details=details))
        return sol, scorer

    anchor = None if start is None else {
        id(d): np.asarray(start.decision_function(d.X), dtype=np.float64).ravel()
        for d in analysis.datasets}
    step = solve_step(analysis, psi, anchor, bounds, name, solver_options)
    if step.status not in settings.SOLVED_STATUSES:
        message = step.message or ""
        if step.status == settings.INFEASIBLE:
            message = ("the hinge relaxation (every rate replaced by its hinge upper bound) is "
                       "infeasible: the targets are out of reach of the convex relaxation. "
                       "Relax the constraints, or check them with problem.describe().")
        return finish(step.status, None, {"message": message})
    scores = _scores(psi, step)
    table = _table(analysis, fmap, psi, scores, step)
    value = _surrogate_objective(analysis, table, step.w)
    history.append({"iteration": 0, "stage": "hinge" if start is None else "start",
                    "objective": value,
                    "time": time.perf_counter() - start_time})
    if callback:
        callback(history[-1])
    status = settings.OPTIMAL
    iterations = 0
    rounds = 0
    if analysis.needs_mm:
        while True:
            status = settings.ITERATION_LIMIT
            for _ in range(max_iterations):
                iterations += 1
                nxt = solve_step(analysis, psi, scores, bounds, name, solver_options)
                if nxt.status not in settings.SOLVED_STATUSES:
                    break
                nxt_scores = _scores(psi, nxt)
                nxt_table = _table(analysis, fmap, psi, nxt_scores, nxt)
                nxt_value = _surrogate_objective(analysis, nxt_table, nxt.w)
                decrease = value - nxt_value
                step, scores, table, value = nxt, nxt_scores, nxt_table, nxt_value
                history.append({"iteration": iterations, "stage": "mm", "objective": value,
                                "time": time.perf_counter() - start_time})
                if callback:
                    callback(history[-1])
                if decrease <= tol * max(1.0, abs(value)):
                    status = settings.OPTIMAL
                    break
            missed = _missed(analysis, table)
            if missed.max(initial=0.0) <= FEASIBILITY_TOL or rounds >= repair_rounds:
                break
            # tighten by what is missed, doubling each round: the indicator's gap to the ramp
            # (and the adversary's reweighting, for worst-case rates) need not shrink in step
            bounds = bounds - np.where(missed > FEASIBILITY_TOL,
                                       (missed + REPAIR_MARGIN) * 2.0 ** rounds, 0.0)
            rounds += 1
            value = np.inf  # the tightened problem has another surrogate objective
    missed = _missed(analysis, table)
    details: dict[str, Any] = {"mm_iterations": iterations, "repair_rounds": rounds,
                               "local": analysis.needs_mm}
    if missed.max(initial=0.0) > FEASIBILITY_TOL:
        worst = int(np.argmax(missed))
        details["message"] = (
            f"the deterministic model misses '{analysis.constraints[worst].name}' on the "
            f"training data by {missed[worst]:.3g} after {rounds} repair round(s)")
        status = settings.ITERATION_LIMIT
        warnings.warn(details["message"], ConvergenceWarning, stacklevel=3)
    return finish(status, step, details)


class ComposedResult(Result):
    """A composed problem's result: the scorer; ``report()`` (from :class:`Result`) covers
    every part through the composition analysis."""


def generic_method(name: str = "generic") -> MethodSpec:
    """The generic chain as a method of any score-model problem (``method="generic"``)."""
    def run(problem: Any, form: Analysis, **kwargs: Any) -> ComposedResult:
        result = _run(problem, form, **kwargs)
        result.method = name
        return result

    run.__signature__ = inspect.signature(_run)  # the options of the chain
    return MethodSpec(name, run, "the generic chain (CVXPY), the reference of every pattern")


def _run(problem: Any, form: Analysis, *, seed: int | None = None, callback: Any = None,
         solver: str | None = None, solver_options: dict[str, Any] | None = None,
         max_iterations: int = settings.MM_MAX_ITERATIONS,
         tol: float = settings.MM_RELATIVE_TOL, repair_rounds: int = 5,
         kernel_points: int = MAX_EXACT_KERNEL_POINTS, start: Any = None) -> ComposedResult:
    solution, scorer = solve_generic(
        form, solver=solver, solver_options=solver_options, max_iterations=max_iterations,
        tol=tol, repair_rounds=repair_rounds, kernel_points=kernel_points,
        seed=0 if seed is None else seed, callback=callback, start=start)
    # the user's sense: E + reg minimized, E - reg maximized (the surrogate E at the solution)
    objective = form.objective.sign * solution.objective
    return ComposedResult(problem, "cvxpy", solution, scorer, objective)


class GenericChain(Family):
    """Every composition no specialized pattern accepts (module docstring)."""

    name = "composed (generic chain)"
    reference_method = "cvxpy"
    specialized_method = None

    def compile(self, problem: Any) -> Analysis:
        return problem.analysis

    def methods(self) -> dict[str, MethodSpec]:
        return {"cvxpy": MethodSpec(
            "cvxpy", _run, "kernelize, hinge relaxation + MM (Alg 1) with every step solved "
            "by CVXPY (the reference)", is_reference=True)}

    def choose(self, problem: Any, form: Analysis) -> tuple[str, list[str]]:
        reasons = list(problem.pattern_reasons)
        reasons.append("the generic chain: " + ("hinge relaxation, then majorization-"
                       "minimization (Alg 1) over the ramp parts" if form.needs_mm else
                       "one convex problem") + f", each step by CVXPY "
                       f"({pick_solver(form, None)})")
        return "cvxpy", reasons

    def cross_check(self, problem: Any, reference: Result) -> dict[str, Any]:
        """Options of an independent solve for ``verify``: another conic solver, from the
        reference's final point when the chain has MM steps (module docstring of
        :func:`solve_generic`)."""
        start = {"start": reference.scorer} if (problem.analysis.needs_mm
                                                and reference.has_model) else {}
        if is_lp(problem.analysis):
            return {"solver": "CLARABEL", **start}
        return {"solver": "SCS", "solver_options": {"eps_abs": 1e-9, "eps_rel": 1e-9,
                                                    "max_iters": 200_000}, **start}

    def compare(self, problem: Any, result: Result, reference: Result) -> dict[str, Any]:
        rows: dict[str, Any] = {"objective": (result.objective, reference.objective)}
        if not (result.has_model and reference.has_model):
            rows["objective_rel_gap"] = None
            return rows
        rows["objective_rel_gap"] = abs(result.objective - reference.objective) / max(
            1.0, abs(reference.objective))
        rows["max_violation"] = (result.certificate.max_violation,
                                 reference.certificate.max_violation)
        X = [d.X for d in problem.analysis.datasets]
        diff = max(float(np.max(np.abs(result.decision_function(x)
                                       - reference.decision_function(x)))) for x in X)
        rows["score_distance"] = diff
        return rows
