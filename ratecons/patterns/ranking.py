"""The ranking-at-the-top family: TopPush, TopPushK, TopMeanK, tau-FPL, Pat&Mat, Pat&Mat-NP.

Objectives :func:`ratecons.tpr_at_top` and :func:`ratecons.tpr_at_quantile` compile to a
:class:`~ratecons.canonical.top.TopForm`; three methods solve it:

* ``primal_ipm`` -- linear models: a primal-dual interior-point method on the primal LP/QP in
  (w, t) (:mod:`ratecons.solvers.top_ipm`), certified by the Lagrangian dual bound; the only
  method for an l1 penalty or l2 = 0;
* ``dual_ca`` -- dual coordinate ascent (Section 3.4, Algorithm 2) with a duality-gap stop;
* ``cvxpy`` -- the reference: the generic chain (:mod:`ratecons.generic`), i.e. the generic
  CVXPY lowering of the primal (6)/(9), with kernel models kernelized exactly over every
  training point.

The solvers minimize the objective (3), (lambda/2)||w||^2 [+ l1 ||w||_1] + (1/n_+) sum_i
l(t - s_i). The user maximized the TPR surrogate, so every method's result is inverted to the
user's sense (:func:`_to_user_sense`, the pattern's one inversion): ``result.objective`` is
1 - (3) at the returned model, the number the generic chain reports for the same problem, and
the certificate's bounds are bounds on it (the solver's lower bound on (3) becomes the upper
bound), and ``result.history`` reads the same way; ``certificate.details["eq3_value"]`` keeps
(3) itself, and ``result.solution`` the solver's own terms. When the model ranks no better
than a constant score (w = 0), :func:`ratecons.degenerate.check_degenerate`, run at the end of
every solve, says so in ``details["degenerate"]`` and a :class:`TrivialOptimumWarning`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import limits, settings
from ..canonical.top import TopForm
from ..comparison import objective_rel_gap
from ..errors import DataError, SpecError
from ..kernels import KernelSpec
from ..ranking import RankingObjective, TPRAtQuantile, TPRAtTop
from ..result import KernelScorer, LinearScorer, Result
from ..solution import Solution
from ..solvers.top_dual import solve_top_dual
from ..solvers.top_ipm import solve_top_ipm
from ..solvers.top_primal import primal_objective
from ..solvers.tracker import Tracker, no_point
from ..thresholds import top_k_mean
from .pattern import MethodSpec, Pattern

__all__ = ["RankingPattern"]

#: above this many dual variables ``auto`` never picks the CVXPY reference
CVXPY_AUTO_MAX = 1500
#: ``auto`` uses the interior-point method for linear models up to this many columns of
#: y = (w, t, r) (its p x p Schur complement is dense; benchmarks.top measures d <= 123)
IPM_AUTO_MAX_DIM = 2000
#: CLARABEL's own default tolerances, at which the reference solves (the generic chain's steps
#: stop at a relative gap of 1e-6, :data:`ratecons.reductions.to_cvxpy.STEP_CLARABEL`)
REFERENCE_CLARABEL = {"tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8}
#: seconds per m^2 and per m^3 of ``dual_qp``'s steps that no time limit stops: CVXPY's
#: compile of the dense m x m quadratic form and CLARABEL's setup (the factorization of its
#: KKT system with that dense block); fitted to 0.18-17.2 s at m = 500-4000 (Adult, load 1)
DUAL_QP_SETUP_SECONDS = (0.8e-6, 0.7e-10)
#: what plan() suggests when w = 0 looks optimal
TRIVIAL_HINT = ("try a smaller l2, a larger K (e.g. 1% of the negatives instead of 5), "
                "standardized features, or a kernel model")


def _to_user_sense(value: float) -> float:
    """The user's maximized surrogate 1 - (3) of a value of (3), minimized: the Result's map
    of the objective, the certificate (bounds swapped: a lower bound on (3) is an upper bound
    on 1 - (3), the gap unchanged) and the history (:class:`ratecons.result.Result`)."""
    return 1.0 - value


def _zero_looks_optimal(form: TopForm) -> bool | None:
    """Cheap test for :meth:`RankingPattern.choose`: for the TopPushK family (linear model, l1 = 0),
    w = 0 is optimal iff no direction u has u^T mean(x+) > mean of the K largest u^T x~_j
    (the directional derivative of (3) at 0). Tries the mean difference and the LDA
    direction; True when neither improves (w = 0 likely optimal), False when one does, None
    when the test does not apply."""
    if form.family != "toppushk" or not form.linear_model or form.X_pos is None \
            or form.l1 > 0 or form.d > IPM_AUTO_MAX_DIM:
        return None
    mean_pos = np.asarray(form.X_pos.mean(axis=0)).ravel()
    mean_tilde = np.asarray(form.X_tilde.mean(axis=0)).ravel()
    diff = mean_pos - mean_tilde
    cov = _covariance(form.X_tilde, mean_tilde)
    ridge = 1e-6 * max(1.0, float(np.trace(cov)) / form.d)
    lda = np.linalg.solve(cov + ridge * np.eye(form.d), diff)
    for u in (diff, lda):
        if top_k_mean(np.asarray(form.X_tilde @ u).ravel(), int(form.K)) < mean_pos @ u:
            return False
    return True


def _covariance(X: Any, mean: np.ndarray) -> np.ndarray:
    """The sample covariance of X's rows (ddof 1; ``mean`` their mean): sparse X as
    (X^T X - n mean mean^T) / (n - 1), without a dense copy (on the whole Adult split's
    26,000 one-hot rows ``np.cov`` of the dense copy took 0.5 s of a 2.1 s TPR@K solve)."""
    n = X.shape[0]
    if not sp.issparse(X):
        return np.atleast_2d(np.cov(np.asarray(X), rowvar=False))
    gram = np.asarray((X.T @ X).toarray(), dtype=np.float64)
    return (gram - n * np.outer(mean, mean)) / max(1, n - 1)


def _scorer(form: TopForm, alpha: np.ndarray | None, beta: np.ndarray | None,
            w: np.ndarray | None, t: float) -> LinearScorer | KernelScorer:
    """The fitted model s(x) - t: from w (linear models) or, by eqs. (8), (11) and (13),
    from the dual variables v = (alpha, beta), s(x) = sum_l (S v)_l k(p_l, x)."""
    if w is not None:
        return LinearScorer(w, t)
    v = np.concatenate([alpha, beta])
    keep = np.flatnonzero(v > 0)
    coef = (form.signs * v)[keep]
    if form.gram is not None:
        cols = np.concatenate([form.pos_index, form.tilde_index])[keep]
        return KernelScorer(form.kernel, None, coef, t, cols, form.gram.shape[1])
    return KernelScorer(form.kernel, form.points()[keep], coef, t)


def _make_result(problem: Any, form: TopForm, method: str, solution: Solution,
                 scorer: LinearScorer | KernelScorer | None, t: float,
                 alpha: np.ndarray | None = None, beta: np.ndarray | None = None
                 ) -> Result:
    """The one Result in the user's sense, with the extras ``threshold`` (t; the model
    predicts positive at s > t), ``alpha`` and ``beta`` (the dual variables of (7)/(10), None
    for the primal methods)."""
    solution.certificate.details["eq3_value"] = solution.objective
    return Result(problem, method, solution, scorer=scorer,
                  objective=_to_user_sense(solution.objective),
                  extras={"threshold": float(t), "alpha": alpha, "beta": beta},
                  to_user=_to_user_sense)


def _run_dual_ca(problem: Any, form: TopForm, *, seed: int | None = None,
                 callback: Any = None, tol: float = 1e-6, max_iterations: int | None = None,
                 max_epochs: int | None = None, time_limit: float | None = None,
                 max_kernel_bytes: int = 2**30,
                 selection: str = "greedy", group_moves: bool = True,
                 shrinking: bool = True, working_set_size: int | None = None,
                 block_solver: str = "exact", check_feasibility: bool = False) -> Result:
    if form.lam <= 0 or form.l1 > 0:
        raise SpecError("dual_ca solves the dual (7)/(10), which needs l2 > 0 and l1 = 0; "
                        "use method='primal_ipm' for an l1 penalty or l2 = 0.")
    sol = solve_top_dual(form, tol=tol, max_iterations=max_iterations, max_epochs=max_epochs,
                         time_limit=time_limit,
                         seed=0 if seed is None else seed, max_kernel_bytes=max_kernel_bytes,
                         check_feasibility=check_feasibility, selection=selection,
                         group_moves=group_moves, shrinking=shrinking,
                         working_set_size=working_set_size, block_solver=block_solver,
                         callback=callback)
    p = sol.primal
    return _make_result(problem, form, "dual_ca", sol,
                        _scorer(form, p["alpha"], p["beta"], p.get("w"), p["t"]), p["t"],
                        p["alpha"], p["beta"])


def _primal_ipm_refuses(problem: Any) -> str | None:
    """Why ``primal_ipm`` does not apply: a kernel model has no explicit w for its primal."""
    if getattr(problem.analysis, "kernel", False):
        return ("it solves the primal LP/QP in (w, t) of a linear model, and a kernel model "
                "has no explicit w")
    return None


def _run_primal_ipm(problem: Any, form: TopForm, *, seed: int | None = None,
                    callback: Any = None, tol: float = 1e-6,
                    max_iterations: int | None = None, max_iter: int | None = None,
                    time_limit: float | None = None) -> Result:
    sol = solve_top_ipm(form, tol=tol, max_iterations=max_iterations, max_iter=max_iter,
                        time_limit=time_limit, callback=callback)
    w, t = sol.primal["w"], sol.primal["t"]
    return _make_result(problem, form, "primal_ipm", sol, LinearScorer(w, t), t)


def _conic_settings(solver: str | None, solver_options: dict[str, Any] | None
                   ) -> tuple[str, dict[str, Any] | None]:
    """The conic solver of ``dual_qp`` and the reference (default CLARABEL) and its options
    (:data:`REFERENCE_CLARABEL` for CLARABEL unless the user gave some)."""
    solver = solver or settings.DEFAULT_CONIC_SOLVER
    if solver_options is None and solver.upper() == "CLARABEL":
        solver_options = REFERENCE_CLARABEL
    return solver, solver_options


def _run_dual_qp(problem: Any, form: TopForm, *, seed: int | None = None,
                 callback: Any = None, solver: str | None = None,
                 solver_options: dict[str, Any] | None = None) -> Result:
    """The exact dual (7)/(10) by a conic QP solver
    (:func:`ratecons.reductions.to_cvxpy.solve_top_dual_qp`), with the primal recovered by
    eqs. (8), (11) and (13): s = K v, (3) at s, t = G(s) of Table 1; certified by the duality
    gap between (3) and lambda times the dual optimum."""
    from ..reductions.to_cvxpy import solve_top_dual_qp

    if form.lam <= 0 or form.l1 > 0:
        raise SpecError("dual_qp solves the dual (7)/(10), which needs l2 > 0 and l1 = 0; "
                        "use method='primal_ipm' for an l1 penalty or l2 = 0.")
    solver, solver_options = _conic_settings(solver, solver_options)
    per_square, per_cube = DUAL_QP_SETUP_SECONDS
    setup = per_square * form.m**2 + per_cube * form.m**3
    left = limits.active().remaining()
    if setup > left:
        return _out_of_time(problem, form, f"compiling the dense m x m dual QP and the "
                            f"solver's setup take about {setup:.2g} s at m = {form.m}, which no "
                            f"time limit can stop, and {left:.2g} s of the time limit are left")
    gram = form.signed_gram()
    dual = solve_top_dual_qp(form, solver, solver_options, gram)
    if "alpha" not in dual.primal:
        if dual.status == settings.TIME_LIMIT:
            return _out_of_time(problem, form, "the time limit was reached while CVXPY "
                                "compiled the dense m x m dual QP")
        return _make_result(problem, form, "dual_qp", dual, None, np.nan)
    alpha, beta = dual.primal["alpha"], dual.primal["beta"]
    v = np.concatenate([alpha, beta])
    s = gram @ v
    obj = form.lam * form.primal_from_dual_scores(v, s)
    t = form.threshold_from_scores(-s[form.n_pos:])
    w = (np.asarray(form.points().T @ (form.signs * v)).ravel() if form.linear_model
         else None)
    primal = {"alpha": alpha, "beta": beta, "t": t, "scores": s}
    if w is not None:
        primal["w"] = w
    sol = Tracker(dual.solver).solution(
        primal, objective=obj, status=dual.status, lower=form.lam * dual.objective,
        upper=obj, gap=obj - form.lam * dual.objective,
        max_violation=form.dual_violation(v, dual.primal["delta"]),
        details={"form": "dual (7)/(10)", "C": form.C}, history=[],
        solve_time=dual.solve_time)
    return _make_result(problem, form, "dual_qp", sol, _scorer(form, alpha, beta, w, t), t,
                        alpha, beta)


def _out_of_time(problem: Any, form: TopForm, why: str) -> Result:
    """``dual_qp``'s answer when its budget ends before the QP solver has a point: status
    ``time_limit``, no model, ``why`` and what to do instead in the certificate and the
    warning."""
    advice = ("Use method='dual_ca'" + (" or 'primal_ipm'" if form.linear_model else "")
              + ", which stop at the time limit with their best point, or a larger "
              "time_limit.")
    sol = Tracker("dual_qp").solution({}, objective=float("nan"), status=settings.TIME_LIMIT,
                                      details={"limit": f"no point: {why}. {advice}"},
                                      advice=f"No point: {why}. {advice}", history=[])
    return _make_result(problem, form, "dual_qp", sol, None, np.nan)


def _run_cvxpy(problem: Any, form: TopForm, *, seed: int | None = None, callback: Any = None,
               solver: str | None = None,
               solver_options: dict[str, Any] | None = None) -> Result:
    """The reference: the generic chain (:func:`ratecons.generic.solve_generic`) on the
    problem's analysis.

    Its lowering (:mod:`ratecons.reductions.to_cvxpy`) is the primal (6) with the threshold
    epigraph sum_largest(z~, K) / K <= t, or (9) with the Pat&Mat threshold equation in its
    convex form sum_j l(theta (z~_j - t)) <= n~ tau (Appendix A.2), scaled to (3). A kernel
    model is kernelized over every training point (``kernel_points`` = n), which is exact:
    psi(x) = k(x, P) V Lambda^(-1/2) with ||w||^2 = a^T K a is the representer form, so the
    problem is the one whose dual is (7)/(10), not a Nystrom approximation of it.

    Parameters
    ----------
    solver : str, optional
        CVXPY solver of the chain's step (default CLARABEL).
    solver_options : dict, optional
        Passed to the solver; without them CLARABEL runs at :data:`REFERENCE_CLARABEL` (its
        own default tolerances), not at the chain's looser step tolerance.

    Returns
    -------
    Result
        In the pattern's terms: the threshold t = G(s) recomputed from the training scores
        (Table 1), (3) evaluated at the returned model by the function every method uses,
        inverted by :func:`_to_user_sense`, and a certificate with that value as its bound
        (no dual bound; ``alpha`` and ``beta`` are None).
    """
    from ..generic import solve_generic

    solver, solver_options = _conic_settings(solver, solver_options)
    analysis = problem.analysis
    sol, scorer, _ = solve_generic(analysis, solver=solver, solver_options=solver_options,
                                   kernel_points=sum(d.n for d in analysis.datasets),
                                   callback=callback)
    details = {"form": "generic lowering: primal (6)/(9) over psi",
               "feature_map": sol.certificate.details["feature_map"],
               "step_status": sol.certificate.details.get("step_status")}
    if scorer is None:
        failed = no_point(sol.status, details=details, solver=sol.solver,
                          solve_time=sol.solve_time)
        return _make_result(problem, form, "cvxpy", failed, None, np.nan)
    w = sol.primal["w"]
    if form.linear_model:
        obj = primal_objective(form, w)
        t = form.threshold_from_scores(np.asarray(form.X_tilde @ w).ravel())
        fitted: LinearScorer | KernelScorer = LinearScorer(w, t)
        primal = {"w": w, "t": t}
    else:
        # the model's scores s = psi w on the training data (the chain's scorer is s - b)
        s = scorer.decision_function(problem.objective.data) + scorer.b
        t = form.threshold_from_scores(s[form.tilde_index])
        obj = form.lam * form.primal_c(s[form.pos_index], s[form.tilde_index], float(w @ w))
        fitted = KernelScorer(scorer.spec, scorer.points, scorer.a, t, scorer.columns,
                              scorer.n_train)
        primal = {"coef": scorer.a, "t": t, "scores": s}
    result = Tracker(sol.solver).solution(primal, objective=obj, status=sol.status, upper=obj,
                                          max_violation=0.0, details=details,
                                          history=sol.history, solve_time=sol.solve_time)
    return _make_result(problem, form, "cvxpy", result, fitted, t)


class RankingPattern(Pattern):
    """Classification at the top (Macha, Adam, Smidl): the TopPushK and Pat&Mat families."""

    name = "ranking at the top"
    objective_types = (TPRAtTop, TPRAtQuantile)
    reference_method = "cvxpy"
    specialized_method = "dual_ca"

    def validate(self, problem: Any) -> None:
        obj: RankingObjective = problem.objective
        if problem.sense != "maximize":
            raise SpecError(f"{obj.name} maximizes a true-positive rate at the top; use "
                            "rc.Problem(maximize=...).")
        if problem.constraints:
            raise SpecError("ranking-at-the-top objectives take no constraints (subject_to); "
                            "the threshold is part of the objective.")
        model = problem.model
        if not model.is_kernel:
            if model.l1 + model.l2 <= 0:
                raise SpecError(f"{obj.name} needs a regularizer: l2 > 0 (lambda of (3)) or "
                                "l1 > 0. Got l1=0, l2=0.")
            if (model.l1 > 0 or model.l2 == 0) and obj.family == "patmat" \
                    and obj.surrogate != "hinge":
                raise SpecError(f"{obj.name} with the quadratic hinge needs l2 > 0 and l1 = 0 "
                                "(its dual (10) is the only method; the primal threshold "
                                "constraint is quadratic). Use surrogate='hinge' for l1.")
        elif model.l2 <= 0:
            raise SpecError(f"{obj.name} with a kernel model needs a positive l2 (lambda of "
                            "(3)); the dual form uses C = 1 / (lambda n_+). Got l2=0.")
        if model.is_kernel and model.kernel == "precomputed":
            X = obj.data.X
            if X.shape[0] != X.shape[1]:
                raise DataError("with kernel='precomputed' the dataset's X must be the n x n "
                                f"training kernel matrix; got shape {X.shape}.")

    def compile(self, problem: Any) -> TopForm:
        obj: RankingObjective = problem.objective
        data, model = obj.data, problem.model
        y = data.require_labels(obj.name, binary=True)
        pos = np.flatnonzero(y == 1)
        tilde = np.flatnonzero(y == 0) if obj.among == "negatives" else np.arange(data.n)
        linear = not model.is_kernel
        spec = KernelSpec("linear") if linear else KernelSpec.from_model(model, data.d)
        X = data.X
        gram = None
        X_pos = X_tilde = None
        if spec.name == "precomputed":
            gram = X.toarray() if sp.issparse(X) else np.asarray(X)
        else:
            X_pos, X_tilde = X[pos], X[tilde]
        notes = []
        if linear and model.fit_intercept:
            notes.append("note: no separate bias is learned; the threshold t plays its role "
                         "(scores are w^T x, prediction s >= t).")
        return TopForm(
            formulation=obj.formulation, family=obj.family, surrogate=obj.surrogate,
            K=obj.k, tau=obj.tau, theta=obj.theta, lam=model.l2, kernel=spec,
            X_pos=X_pos, X_tilde=X_tilde, gram=gram, pos_index=pos, tilde_index=tilde,
            linear_model=linear, l1=model.l1 if linear else 0.0, notes=notes)

    def methods(self) -> dict[str, MethodSpec]:
        return {
            "primal_ipm": MethodSpec("primal_ipm", _run_primal_ipm,
                                     "linear models: primal-dual interior point on the LP/QP "
                                     "in (w, t), Lagrangian dual bound",
                                     refuses=_primal_ipm_refuses),
            "dual_ca": MethodSpec("dual_ca", _run_dual_ca,
                                  "dual coordinate ascent (Alg 2), duality-gap stop"),
            "dual_qp": MethodSpec("dual_qp", _run_dual_qp,
                                  "the exact dual (7)/(10) as one QP by CLARABEL, duality-gap "
                                  "certificate"),
            "cvxpy": MethodSpec("cvxpy", _run_cvxpy,
                                "CVXPY reference: the generic chain's primal (6)/(9), kernel "
                                "models kernelized exactly over every training point",
                                is_reference=True),
        }

    def choose(self, problem: Any, form: TopForm) -> tuple[str, list[str]]:
        reasons = self._trivial_reasons(form)
        primal_ok = form.linear_model and (form.family == "toppushk"
                                           or form.surrogate == "hinge")
        if form.lam <= 0 or form.l1 > 0:
            reasons.append("l1 > 0 or l2 = 0: the dual (7)/(10) does not apply; the primal "
                           "LP/QP is solved by the interior-point method")
            return "primal_ipm", reasons
        p = form.d * (2 if form.l1 > 0 else 1) + 2
        if primal_ok and p <= IPM_AUTO_MAX_DIM:
            reasons.append(f"linear model, d={form.d}: the primal LP/QP in (w, t) by a "
                           f"primal-dual interior point, O((n+ + n~) p^2) per iteration with "
                           f"p={p} (<= {IPM_AUTO_MAX_DIM}), instead of the dual's "
                           f"m={form.m} coordinates; faster than the CVXPY reference on every "
                           "instance of benchmarks.top, certified by the Lagrangian dual bound")
            return "primal_ipm", reasons
        if form.family == "patmat" and form.m <= CVXPY_AUTO_MAX:
            reasons.append(f"{form.name}: coordinate ascent may stall short of the optimum "
                           "(Section 4.7, Fig. 2); the problem is small "
                           f"(m={form.m} <= {CVXPY_AUTO_MAX}), so a conic solver takes it: "
                           + ("the CVXPY reference's primal (9)" if form.linear_model else
                              "the exact dual (10) as one QP (the reference's primal over the "
                              "exact n x n feature map was 6-17x slower at m = 1000-1500)"))
            return ("cvxpy" if form.linear_model else "dual_qp"), reasons
        if form.linear_model:
            reasons.append(f"{form.name}, linear model: block coordinate ascent on the dual, "
                           f"each working set's QP solved exactly with w kept explicitly "
                           f"(m = n+ + n~ = {form.m} dual variables, no m x m matrix)")
        else:
            reasons.append(f"{form.name}: closed-form two-coordinate steps (Props 3.7-3.9"
                           + (", B.4-B.9" if form.family == "patmat" else "") + ")")
            reasons.append(f"m = n+ + n~ = {form.m} dual variables; kernel matrix "
                           f"{form.gram_bytes / 2**20:.0f} MiB "
                           + ("precomputed" if form.gram_bytes <= 2**30
                              else "computed by rows"))
        if form.family == "patmat" and not form.linear_model:
            reasons.append("Pat&Mat may keep a duality gap; the certificate reports it")
        return "dual_ca", reasons

    @staticmethod
    def _trivial_reasons(form: TopForm) -> list[str]:
        """A plan line when w = 0 looks optimal (linear TopPushK family; cheap test)."""
        if _zero_looks_optimal(form):
            return [f"warning: w = 0 looks optimal (neither the mean difference nor the LDA "
                    f"direction puts the positives' mean above the mean of the {form.K} "
                    f"largest negative scores), so expect the trivial objective "
                    f"{form.objective_at_zero():g}; {TRIVIAL_HINT}"]
        return []

    def compare(self, problem: Any, result: Result, reference: Result) -> dict[str, Any]:
        a, b = result.objective, reference.objective
        rows: dict[str, Any] = {
            "objective": (a, b),
            "objective_rel_gap": objective_rel_gap(a, b),
            "max_violation": (result.certificate.max_violation,
                              reference.certificate.max_violation),
        }
        data = problem.objective.data
        if result.has_model and reference.has_model:
            fa = result.decision_function(data)
            fb = reference.decision_function(data)
            rows["solution_distance"] = float(np.linalg.norm(fa - fb)
                                              / max(1.0, np.linalg.norm(fb)))
            ra, rb = result.metrics(data), reference.metrics(data)
            for key in ra:
                rows[f"train {key}"] = (ra[key], rb[key])
        return rows


#: the instance :mod:`ratecons.dispatch` tries
PATTERN = RankingPattern()
