"""The generic chain on the matrix form: ``method="highs"``, the step at an anchor, and back.

Every LP/QP-representable score-model problem (:func:`ratecons.reductions.to_matrix.
check_representable`) runs the chain of :mod:`ratecons.generic` -- kernelize, the hinge
relaxation, majorization-minimization (Alg 1 of Goh et al.) over the ramp parts, deterministic
repair -- with every step lowered by :func:`~ratecons.reductions.to_matrix.lower_matrix` and
solved by HiGHS (simplex or interior point for LPs, its QP solver when there is an l2 term or a
squared loss). Where the hinge relaxation is infeasible, phase one searches for a feasible
start as in the generic chain, its elastic steps by CVXPY (CLARABEL), so that both chains
start MM from the same point. The objective follows the generic chain's convention (the
surrogate objective plus the regularizer, in the user's sense), so ``method="highs"`` and
``method="generic"`` give comparable numbers. Duals are the nonnegative multipliers of the
user's constraints in the canonical form (row <= bound) of the last step.

:func:`matrix_step` is the step at a given anchor; :func:`export_mps` hands it (or a
minimax-risk LP) as plain data to the MPS backend, which only writes the file;
:func:`read_solution` maps column values of that step, computed by any solver, back to a
:class:`~ratecons.result.Result` whose report can be read.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import settings
from .backends.highs import HighsLP
from .backends.mps import read_solution_file, write_mps
from .caller import user_stacklevel
from .chain_points import missed_rows, surrogate_objective
from .chain_scale import chain_at_loss_scale
from .errors import DataError, SlowMethodWarning, SpecError
from .expr.analysis import Analysis
from .generic import LastStep, solve_generic
from .patterns.pattern import MethodSpec
from .reductions.kernelize import (
    MAX_EXACT_KERNEL_POINTS,
    kernel_map_note,
    kernelize,
    kernelized,
    warn_if_drawn,
)
from .reductions.to_cvxpy import ConvexStep, is_lp
from .reductions.to_matrix import (
    MatrixStep,
    anchor_of,
    check_representable,
    lower_matrix,
    model_column_names,
)
from .result import Result
from .sample_start import SampleStart
from .settings import FEASIBILITY_TOL, HIGHS_METHOD
from .solution import Solution
from .solvers.tracker import Tracker

__all__ = ["check_export_request", "highs_method", "matrix_step", "export_mps", "read_solution"]

#: why ``auto`` never picks ``method="highs"`` for QP steps, as measured (HiGHS 1.16, a
#: loaded 2-core machine): on 977 Adult rows (``adult.split(0.02, seed=0)``), hinge loss with
#: the 80% rule and l2 = 1e-3, HiGHS' active-set QP solver did not finish the hinge relaxation
#: (1,955 rows x 2,063 columns) in 30 s, with or without a larger ``qp_regularization_value``,
#: and the chain hit a 120 s limit after two steps; the whole chain took 1.9 s with
#: ``method="generic"`` (CLARABEL) and 1.1 s with ``method="structured"``
QP_STALL = (
    "its steps are QPs (an l2 term, a kernel model or a squared loss), which HiGHS solves by "
    "its active-set QP solver; that solver can stall on the chain's steps: on 977 Adult rows "
    "(hinge loss, the 80% rule, l2=1e-3) it did not finish the hinge relaxation (1,955 rows x "
    "2,063 columns) in 30 s, where the whole chain took 1.9 s with method='generic' and 1.1 s "
    "with method='structured'. auto never picks 'highs' for QP steps: use "
    "method='structured' or 'generic' (or give time_limit= to bound the wait); 'highs' is "
    "meant for LP steps (l1 or no regularizer)")

#: the header line of an exported QP (docs/export.md, "Solving a file")
QP_FILE_NOTE = ("QP: HiGHS' active-set QP solver can stall on these steps (QP_STALL in "
                "ratecons.matrix_chain); an interior-point QP solver (Gurobi, MOSEK or CPLEX "
                "barrier) reads QUADOBJ too, and an l1 term instead of l2 makes the step an LP")
#: HiGHS QP iterations allowed per row + column before the step is retried (cycling guard)
QP_ITERATIONS_PER_SIZE = 20
#: HiGHS' qp_regularization_value of the retry (its default is 1e-7)
QP_FALLBACK_REGULARIZATION = 1e-5


def _require_analysis(problem: Any, what: str) -> Analysis:
    analysis = problem.analysis
    if analysis is None:
        raise SpecError(f"{what} applies to score-model problems (rates, losses, TPR@K, ...); "
                        f"a {problem.pattern.name} problem has its own LP (rc.export_mps writes "
                        "it as it is).")
    return analysis


def highs_step(analysis: Analysis, solver: str = "simplex", time_limit: float | None = None,
               options: dict[str, Any] | None = None):
    """A step solver for :func:`ratecons.generic.solve_generic`: lower, solve by HiGHS."""
    def step(psi: dict[int, Any], anchor: Any, bounds: np.ndarray) -> ConvexStep:
        lowered = lower_matrix(analysis, psi, anchor, bounds)
        lp = lowered.lp
        opts = dict(options or {})
        if lp.is_qp and "qp_iteration_limit" not in opts:
            opts["qp_iteration_limit"] = QP_ITERATIONS_PER_SIZE * (lp.n_rows + lp.n_cols)
        res = HighsLP(lp, solver=solver, time_limit=time_limit, options=opts).solve()
        if lp.is_qp and res.status == settings.ITERATION_LIMIT and not options:
            # HiGHS' active-set QP solver can cycle on the degenerate MM steps (measured on
            # diabetes, l2 = 1e-3: 600k iterations at the optimal value); a larger
            # regularization of its reduced Hessian ends it (82 iterations, same optimum)
            opts["qp_regularization_value"] = QP_FALLBACK_REGULARIZATION
            res = HighsLP(lp, solver=solver, time_limit=time_limit, options=opts).solve()
        if res.status not in settings.SOLVED_STATUSES:
            return ConvexStep(res.status, float("nan"), solver=f"highs/{solver}",
                              solve_time=res.solve_time, message=f"HiGHS: {res.raw_status}")
        w, b = lowered.parameters(res.x)
        # HiGHS: <= 0 at an active upper bound of a minimization; ratecons: multipliers >= 0
        duals = -res.row_dual[lowered.constraint_rows]
        return ConvexStep(res.status, res.objective, w, b, duals, f"highs/{solver}",
                          res.solve_time, res.raw_status)

    return step


def qp_stall_note(analysis: Analysis) -> str | None:
    """Why ``method="highs"`` is a poor choice for this problem (its steps are QPs), or None
    for LP steps (:data:`QP_STALL`)."""
    return None if is_lp(analysis) else f"method 'highs' is slow here: {QP_STALL}"


def _run(problem: Any, form: Analysis, *, seed: int | None = None, callback: Any = None,
         solver: str = "simplex", time_limit: float | None = None,
         highs_options: dict[str, Any] | None = None,
         max_iterations: int = settings.MM_MAX_ITERATIONS,
         tol: float = settings.MM_RELATIVE_TOL, repair_rounds: int = 5,
         kernel_points: int = MAX_EXACT_KERNEL_POINTS,
         only_step: LastStep | None = None) -> Result:
    check_representable(form)
    note = qp_stall_note(form)
    if note is not None:
        warnings.warn(note + ".", SlowMethodWarning, stacklevel=user_stacklevel())

    def chain(analysis: Analysis, start: SampleStart | None, sampled: bool
              ) -> tuple[Solution, Any, LastStep | None]:
        return solve_generic(
            analysis, max_iterations=max_iterations, tol=tol, repair_rounds=repair_rounds,
            kernel_points=kernel_points, seed=0 if seed is None else seed, callback=callback,
            only_step=only_step, start=start, start_only=sampled,
            step_solver=highs_step(analysis, solver, time_limit, highs_options),
            step_solver_name=f"highs/{solver}", phase_one=True)

    solution, scorer, last_step = chain_at_loss_scale(form, False, chain, only_step)
    objective = form.objective.to_user(solution.objective)
    return Result(problem, HIGHS_METHOD, solution, scorer, objective,
                  extras={"last_step": last_step}, to_user=form.objective.to_user)


def highs_method() -> MethodSpec:
    """``method="highs"``: the generic chain with every step on the matrix form (HiGHS).

    Options: ``solver`` ("simplex", "ipm" or "choose": HiGHS' algorithm for LP steps; QP steps
    use HiGHS' active-set QP solver, which can stall: a
    :class:`~ratecons.errors.SlowMethodWarning` says so, :data:`QP_STALL`), ``time_limit``
    (per step), ``highs_options`` (HiGHS option names),
    and the chain's ``max_iterations``, ``tol``, ``repair_rounds``, ``kernel_points``,
    ``only_step``.
    """
    def run(problem: Any, form: Analysis, **kwargs: Any) -> Result:
        return _run(problem, form, **kwargs)

    run.__signature__ = inspect.signature(_run)
    return MethodSpec(HIGHS_METHOD, run, "the generic chain with every step as a matrix LP/QP "
                                         "solved by HiGHS", at_loss_scale=True)


def matrix_step(problem: Any, at: Any = None, kernel_points: int = MAX_EXACT_KERNEL_POINTS,
                seed: int | None = 0) -> tuple[MatrixStep, Any]:
    """The convex step of ``problem`` at ``at`` (a Result or scorer: its scores are the MM
    anchor; None: the hinge relaxation).

    The constraint bounds are the problem's own, or, for a result of the chain
    (``method="highs"`` or ``"generic"``), those of its last step: the deterministic repair may
    have tightened them, and the step then reproduces the result. Returns the lowered step and
    the feature map (to invert its solution).
    """
    analysis = _require_analysis(problem, "the matrix step")
    check_representable(analysis)
    fmap, psi = kernelized(analysis, kernel_points, seed)
    anchor = None if at is None else anchor_of(analysis, at)
    details = getattr(getattr(at, "certificate", None), "details", {}) or {}
    bounds = details.get("step_bounds")
    name = "_".join(d.name for d in analysis.datasets) or "ratecons"
    step = lower_matrix(analysis, psi, anchor, bounds, kernel=fmap.column_prefix, name=name)
    if bounds is not None:
        original = np.array([row.bound for row in analysis.constraints])
        tightened = np.flatnonzero(np.asarray(bounds) < original)
        if tightened.size:
            step.notes["bounds"] = "tightened by the deterministic repair: " + "; ".join(
                f"{analysis.constraints[j].name} (canonical bound {bounds[j]:.10g})"
                for j in tightened)
    return step, fmap


def export_mps(problem: Any, path: str | Path, at: Any = None, restricted: bool = False,
               **options: Any) -> dict[str, Any]:
    """Write ``problem`` as an MPS file.

    A score-model problem (rates, ratio constraints multiplied through, hinge / squared losses,
    TPR@K, TPR@tau; linear or kernel model) is written as its convex step
    (:func:`matrix_step`): the hinge relaxation, or with ``at=result`` the
    majorization-minimization step at the result's scores (the MM loop as a whole is not an
    LP); an LP, or a QP (``QUADOBJ``) with an l2 term or a squared loss. A minimax-risk problem
    is written as its full LP (4) / (2.5) (:mod:`ratecons.canonical.mrc_matrix`), or with
    ``restricted=True`` the last restricted LP of its generation method (written by HiGHS).
    The file format is that of :mod:`ratecons.backends.mps`.

    Parameters
    ----------
    problem : rc.Problem
        An LP/QP-representable score-model problem, or a minimax-risk problem. Others raise
        :class:`~ratecons.errors.NotLinearError` naming the part without an LP/QP form.
    path : str or Path
        Destination, ending in ``.mps``.
    at : Result or scorer, optional
        Write the majorization-minimization step at its scores (default: the hinge
        relaxation). Score-model problems only.
    restricted : bool, default False
        Minimax risk: the final restricted LP of the generation method instead of the full LP.
    **options
        Minimax risk with ``restricted=True``: options of the generation method (e.g.
        ``eps1``); score-model problems: ``kernel_points`` and ``seed`` of the kernel
        expansion (keep them for :func:`ratecons.read_solution`).

    Returns
    -------
    dict
        ``path``, ``rows``, ``cols`` (the file's, the objective constant's column included),
        ``nonzeros``, ``kind`` ("LP" or "QP"), ``sense`` and, for score-model problems,
        ``sign`` (user objective = sign * the file's objective) and ``feature_map`` (the
        model's map: a kernel model over more training rows than ``kernel_points`` is written
        over its Nystrom sample, an approximation of the kernel problem; the header says so).
    """
    path = Path(path)
    if path.suffix != ".mps" and not (restricted and path.suffix == ".lp"):
        raise SpecError(f"export_mps writes .mps files; got {path.name!r}.")
    if not path.parent.is_dir():
        raise SpecError(f"cannot write {str(path)!r}: the directory {str(path.parent)!r} does "
                        "not exist. Create it first, or choose another path.")
    check_export_request(problem, at is not None, restricted)
    if problem.analysis is not None:
        unknown = sorted(set(options) - {"kernel_points", "seed"})
        if unknown:
            raise SpecError(f"unknown export option(s) {unknown}; score-model problems take "
                            "kernel_points and seed.")
        step, fmap = matrix_step(problem, at=at, **options)
        lp = step.lp
        analysis = problem.analysis
        comments = [f"ratecons export: {analysis.objective.name}",
                    f"step: {step.notes['anchor']}; {lp.summary()}",
                    f"sense: {step.notes['sense']}", f"model: {fmap.describe()}"]
        points = options.get("kernel_points", MAX_EXACT_KERNEL_POINTS)
        seed = options.get("seed", 0)
        kernel = kernel_map_note(analysis.model, analysis.n_examples, points, seed)
        if kernel is not None:
            comments.append(kernel)
            warn_if_drawn(analysis, fmap, points, seed, f"{path}: ")  # a header is missed
        if lp.is_qp:
            comments.append(QP_FILE_NOTE)
        comments += [f"constraint: {row.name}" for row in analysis.constraints]
        if "bounds" in step.notes:
            comments.append(f"bounds {step.notes['bounds']}")
        write_mps(lp, path, "obj", comments)
        return {"path": str(path), "rows": lp.n_rows, "cols": lp.file_columns,
                "nonzeros": lp.A.nnz, "kind": "QP" if lp.is_qp else "LP",
                "sense": step.notes["sense"], "sign": step.sign,
                "feature_map": fmap.describe()}
    pattern = problem.pattern
    if restricted:
        if not hasattr(pattern, "restricted_model"):
            raise SpecError(f"{pattern.name} problems have no restricted LP to export.")
        if options.get("callback") is not None:
            raise SpecError("export_mps takes method options only.")
        model = pattern.restricted_model(problem, **options)
        model.write(str(path))
        return {"path": str(path), "rows": model.n_rows, "cols": model.n_cols, "kind": "LP",
                "sense": "minimize"}
    if options:
        raise SpecError(f"options {sorted(options)} apply to restricted=True only.")
    lp = pattern.to_matrix_lp(problem)
    write_mps(lp, path, "obj", [f"ratecons export: {pattern.name}, {lp.summary()}"])
    return {"path": str(path), "rows": lp.n_rows, "cols": lp.file_columns, "nonzeros": lp.A.nnz,
            "kind": "LP", "sense": "maximize" if lp.maximize else "minimize"}


def check_export_request(problem: Any, anchored: bool, restricted: bool,
                         names: tuple[str, str] = ("at=", "restricted=True")) -> None:
    """What :func:`export_mps` refuses before any work, also for the command line before it
    solves (``names``: how the two requests are spelled there): an anchor for a problem that
    is one LP, a restricted LP for a score-model problem."""
    if problem.analysis is None and anchored:
        raise SpecError(f"{names[0]} applies to score-model problems; {problem.pattern.name} "
                        "problems are one LP.")
    if problem.analysis is not None and restricted:
        raise SpecError(f"{names[1]} applies to minimax-risk problems (constraint generation); "
                        "a score-model problem is exported as one step.")


def _parameters(analysis: Analysis, fmap: Any, values: Any) -> tuple[np.ndarray, float]:
    """(w, b) from column values: a mapping name -> value or an array in column order."""
    d = fmap.dim(analysis.datasets[0].d)
    names = model_column_names(analysis, d, fmap.column_prefix)
    if isinstance(values, Mapping):
        expected = set(names)
        foreign = [n for n in values if str(n).startswith("w[") and n not in expected]
        if foreign:
            raise SpecError(
                f"the solution has model columns this problem's export does not have "
                f"({foreign[0]}, ...; here {names[0]}, ...): read it with the same features"
                + (" (names and their case), and the export's kernel_points and seed (its "
                   "header names them)" if not fmap.is_identity else
                   ", named as the training data's columns (case included)") + ".")
        if len(expected.intersection(values)) == 0:
            raise SpecError(
                f"none of the model's columns ({names[0]}, ...) is in the solution; is it the "
                "solution of this problem's export?")
        x = np.array([float(values.get(n, 0.0)) for n in names])  # absent: 0 (CBC omits zeros)
    else:
        if fmap.draw:  # no names to tell the export's draw from another one
            raise SpecError(
                f"the kernel expansion is a draw ({fmap.approximation}): read its solution "
                "from the solution file or a {column name: value} mapping, whose names say "
                "which draw it is, not from an array.")
        x = np.asarray(values, dtype=np.float64).ravel()
        if x.size < len(names):
            raise SpecError(f"the solution has {x.size} values; the exported program has at "
                            f"least {len(names)} columns (w and b first).")
        x = x[:len(names)]
    if not np.all(np.isfinite(x)):
        bad = names[int(np.flatnonzero(~np.isfinite(x))[0])]
        raise DataError(f"the solution's value of {bad} is {x[names.index(bad)]}: a model needs "
                        "finite values (did the external solver finish?).")
    fit_b = getattr(analysis.model, "fit_intercept", True)
    return x[:d], (float(x[d]) if fit_b else 0.0)


def read_solution(problem: Any, source: Any, kernel_points: int = MAX_EXACT_KERNEL_POINTS,
                  seed: int | None = 0) -> Result:
    """Map an external solver's column values back to a ratecons result.

    Parameters
    ----------
    problem : rc.Problem
        The problem that was exported with :func:`ratecons.export_mps`.
    source : str, Path, mapping or array
        A solution file of HiGHS (``--solution_file``/``writeSolution``), CBC (``solu``) or GLPK
        (``glpsol -w``), a mapping column name -> value, or the column values in the file's
        column order.
    kernel_points, seed : as for the export (the kernel expansion must be the same).

    Returns
    -------
    Result
        The model (inverted to the user's scorer), its objective in the user's sense (the
        generic chain's convention) and ``report()``. The status is the external solver's
        (``optimal`` only when it says so and the problem has no majorized ramp parts, whose
        step is exact; a single MM step is otherwise ``iteration_limit``); without a status
        (a mapping or array) it is ``iteration_limit``.
    """
    start = time.perf_counter()
    analysis = _require_analysis(problem, "read_solution")
    status, label = None, "values"
    if isinstance(source, (str, Path)):
        status, source = read_solution_file(source)
        label = "file"
    fmap = kernelize(analysis.model, analysis.datasets, kernel_points, seed)
    if seed is None and fmap.draw:
        raise SpecError("seed=None draws a new kernel expansion, not the export's: pass the "
                        "seed the export used (its header names it).")
    w, b = _parameters(analysis, fmap, source)
    scorer = fmap.invert(w, b)
    value = surrogate_objective(analysis, scorer, w)
    missed = missed_rows(analysis, scorer)
    details: dict[str, Any] = {"source": label, "external_status": status,
                               "indicator_violations": {row.name: float(v) for row, v in
                                                        zip(analysis.constraints, missed)}}
    if status == settings.OPTIMAL and analysis.needs_mm:
        status = settings.ITERATION_LIMIT
        details["message"] = ("one majorization step solved externally: export at the result "
                              "(export_mps(..., at=result)) to continue MM")
    if status is None:
        status = settings.ITERATION_LIMIT
    # an import, not a run: no warning (the status is the external solver's)
    solution = Tracker("external", warn=False).solution(
        {"w": w, "b": np.float64(b)}, objective=value, status=status, upper=value,
        max_violation=float(missed.max(initial=0.0)), details=details, history=[],
        solve_time=time.perf_counter() - start)
    if missed.max(initial=0.0) > FEASIBILITY_TOL:
        details["message"] = (f"the deterministic model misses "
                              f"'{analysis.constraints[int(np.argmax(missed))].name}' by "
                              f"{missed.max():.3g} on the training data")
    return Result(problem, "external", solution, scorer,
                  analysis.objective.to_user(value), to_user=analysis.objective.to_user)
