"""The generic lowering of a composed problem to CVXPY at an anchor (the reference path).

Given the canonical rows of :mod:`ratecons.expr.analysis`, the feature map of the score model
(:mod:`ratecons.reductions.kernelize`) and an anchor (or none), it builds one convex problem over
(w, b) with the scores z_D = psi(X_D) w - b of every dataset D (in one form per dataset: variables
tied to psi(X_D) w - b by one block of equalities when a worst-case rate, a loss or a kernel
model's ranking uses them, else psi(X_D) w - b written into every row that uses them; see
``CvxpyBuilder``):

- the rate parts of every row (rates, counts, ratios multiplied through) are folded first: they
  are written as Problem 1 (:func:`~ratecons.canonical.rate_program.program_of_rows`: c s_p(T)
  for c < 0 becomes c + |c| s_n(T), s_p + s_n = 1) and every s_p, s_n is replaced by its convex
  upper bound of eq. (4) of Goh et al.: max(0, 1/2 + z_x) where the anchor's z'_x <= 1/2 and 1
  elsewhere, max(0, 1/2 - z_x) where z'_x >= -1/2 and 1 elsewhere; without an anchor every
  bound is the hinge (the hinge relaxation of Problem 2). The coefficients are then summed per
  example (:func:`~ratecons.canonical.rate_fold.fold_bound`, eqs 13-15), so an example met in
  several rates of several rows gets one epigraph variable per sign (the LP form), t >= 0,
  t >= 1/2 +- z_x (:func:`folded_rows`). The rate pattern's reference solves the same rows
  (:func:`solve_bound_cvxpy`, Problem 3 of its canonical form, with the multipliers);
- every other term is written by its entry in the lowering table
  (:data:`ratecons.reductions.cvxpy_canon.LOWERINGS`, term type -> canonicalization: worst-case
  rates and robust losses by the support function of their ball, plain losses by their graphs,
  TPR@K and TPR@tau by the surrogate of problem (3) of Macha et al.); a term without an entry
  is refused by name. The regularizer is (l2/2)||w||^2 + l1 ||w||_1;
- minimax risk, an objective of its own (its classifier is not a score model), is lowered from
  its canonical form by :func:`solve_mrc_cvxpy`;
- the ranking pattern's exact kernel dual (7)/(10), a QP in the m = n+ + n~ dual variables
  (:func:`solve_top_dual_qp`), is lowered from its canonical form too: on kernel models it is
  16-20x faster than the primal over the exact n x n feature map (n = 2,000).

This is the one module of the compile path that imports cvxpy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import limits, settings
from ..backends.cvxpy_run import checked_solver, solve_cvxpy
from ..backends.cvxpy_status import status_of
from ..canonical.mrc import MRCForm, all_subset_masks
from ..canonical.rate_fold import ExampleDesign, FoldedBound, fold_bound
from ..canonical.rate_program import RateProgram, hinge_masks, program_of_rows
from ..canonical.top import TopForm
from ..errors import SolverError, SpecError, UnknownOptionError
from ..expr.analysis import Analysis, Row
from ..loss_functions import loss_graph
from ..numerics.phi import CHI2, KL
from ..solution import Solution
from ..solvers.tracker import Tracker
from .cvxpy_canon import LOWERINGS, conditional_bound
from .table import entry_for

__all__ = ["ConvexStep", "CvxpyBuilder", "TIGHT_CLARABEL", "folded_rows", "is_lp",
           "lower_step", "solve_bound_cvxpy", "solve_mrc_cvxpy", "solve_step", "solve_top_dual_qp"]


@dataclass
class ConvexStep:
    """The solved convex problem at one anchor. ``lower_bound``: a lower bound on the step's
    optimal value that its solver certified (the structured interior point's Lagrangian
    bound, :mod:`ratecons.structured_chain`), None when the solver reports only a status."""

    status: str
    objective: float
    w: np.ndarray | None = None
    b: float = 0.0
    duals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    solver: str = ""
    solve_time: float = 0.0
    message: str = ""
    lower_bound: float | None = None


def is_lp(analysis: Analysis) -> bool:
    """Whether every step is a linear program (no l2 term, piecewise-linear parts only)."""
    if analysis.kernel or getattr(analysis.model, "l2", 0.0) > 0:
        return False
    return all(entry_for(LOWERINGS, part, "CVXPY").linear(part) for part in analysis.parts())


def _selector(n: int, rows: np.ndarray) -> sp.csr_matrix:
    """The (n x len(rows)) matrix placing a vector over ``rows`` into positions 0..n-1."""
    return sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))), shape=(n, rows.size))


class CvxpyBuilder:
    """Builds the CVXPY graph of one step (module docstring).

    The scores of a dataset enter every part in one form, chosen once per dataset
    (:meth:`variable_datasets`): the score variables of :meth:`z`, or psi(X) w - b written in
    directly (:meth:`scores`; the folded rate rows too, :meth:`design_scores`). A dataset with
    score variables thus has its feature matrix in the problem once, in the equalities that
    tie them.
    """

    def __init__(self, cp: Any, analysis: Analysis, psi: dict[int, Any], anchor: Any) -> None:
        self.cp = cp
        self.analysis = analysis
        self.psi = psi
        self.anchor = anchor
        d = next(iter(psi.values())).shape[1]
        self.w = cp.Variable(d, name="w")
        fit_b = getattr(analysis.model, "fit_intercept", True)
        self.b = cp.Variable(name="b") if fit_b else cp.Constant(0.0)
        self.variable_ids = self.variable_datasets(analysis)
        self.z_vars: dict[int, Any] = {}
        self.constraints: list[Any] = []

    # ------------------------------------------------------------------ scores and bounds
    @staticmethod
    def variable_datasets(analysis: Analysis) -> set[int]:
        """The ids of the datasets whose scores enter as the variables of :meth:`z`: those
        each part's table entry names (``score_data``): a worst-case rate's, a loss's or a
        kernel model's ranking's, parts that use the scores of most rows several times or
        through a dense n x r map. The rate parts and a linear
        model's ranking read the same variables there, so psi(X) enters the problem once
        (full Adult, a worst-case rate beside a folded error rate: 0.74M nonzeros instead of
        1.20M, a step 7.5 s instead of 11.2 s; a robust loss beside the 80% rule: 1.14M
        instead of 1.55M, 30.6 s instead of 38.8 s; 2,000 rows, a linear TPR@K beside a
        worst-case rate: 55K instead of 111K, 0.42-0.50 s instead of 0.51-0.54 s). A dataset
        that only the folded rates and a linear ranking use has its scores written in
        directly, where each row is met once or twice: score variables were slower there
        (Adult, 5,000 rows, a rate step 0.34 s against 0.25 s; 2,000 rows, TopPushK 7.4 s
        against 4.1 s); a kernel ranking keeps them, since the dense map written into both
        its threshold and its loss rows was 6.6x slower (n = 1,000: 11.3 s against 1.7 s)
        and ended at reduced accuracy at the reference's tolerances."""
        return {id(data) for part in analysis.parts()
                for data in entry_for(LOWERINGS, part, "CVXPY").score_data(part, analysis.kernel)}

    def z(self, data: Any) -> Any:
        """The score variables of ``data``, tied to psi(X) w - b by one block of equalities."""
        key = id(data)
        if key not in self.z_vars:
            z = self.cp.Variable(self.psi[key].shape[0])
            self.constraints.append(z == self.psi[key] @ self.w - self.b)
            self.z_vars[key] = z
        return self.z_vars[key]

    def scores(self, data: Any, rows: np.ndarray) -> Any:
        """The scores of ``rows`` of ``data`` in the form chosen for ``data`` (the class
        docstring): rows of :meth:`z`, or psi(X)[rows] w - b."""
        if id(data) in self.variable_ids:
            return self.z(data)[rows]
        return self.psi[id(data)][rows] @ self.w - self.b

    def design_scores(self, design: ExampleDesign, sources: list[Any], used: np.ndarray
                      ) -> Any:
        """The scores of rows ``used`` of a rate program's example design whose sources are
        the datasets ``sources``, read from every dataset in its form (:meth:`scores`)."""
        total: Any = 0.0
        for s, data in enumerate(sources):
            at = np.flatnonzero(design.source[used] == s)
            if at.size == used.size:
                return self.scores(data, design.row[used])
            if at.size:
                total = total + _selector(used.size, at) @ self.scores(data, design.row[used[at]])
        return total

    def indicator_bound(self, data: Any, rows: np.ndarray, sign: float) -> Any:
        """u+ (sign = +1) or u- (sign = -1) of eq. (4) on ``rows`` of ``data``, a vector."""
        cp = self.cp
        if self.anchor is None:
            mask = np.ones(rows.size, dtype=bool)
        else:
            z0 = self.anchor[id(data)][rows]
            mask = hinge_masks(z0)[0 if sign > 0 else 1]
        const = (~mask).astype(np.float64)
        if not mask.any():
            return cp.Constant(const)
        t = cp.Variable(int(mask.sum()), nonneg=True)
        self.constraints.append(t >= 0.5 + sign * self.scores(data, rows[mask]))
        if mask.all():
            return t
        return _selector(rows.size, np.flatnonzero(mask)) @ t + const

    def folded_rates(self) -> Any:
        """The rate parts of rows 0..m as one vector, folded per example (module docstring);
        None when no row has one."""
        rows = self.analysis.rate_rows()
        if not any(terms for terms, _, _ in rows):
            return None
        sources: list[Any] = []  # the datasets in the program's order of sources

        def features(data: Any) -> Any:
            sources.append(data)
            return self.psi[id(data)]

        program = program_of_rows(rows, features, [row.name for row in self.analysis.rows])
        masks = (program.bound_masks() if self.anchor is None
                 else program.masks_at_scores([self.anchor[id(data)] for data in sources]))
        bound = fold_bound(program, masks)
        values, epigraph = folded_rows(
            self.cp, bound, lambda used: self.design_scores(bound.design, sources, used))
        self.constraints += epigraph
        return program.constant + values

    # ------------------------------------------------------------------ parts
    def support_function(self, losses: Any, phi: Any, rho: float, n: int) -> Any:
        """sup_{q in ball} sum_x q_x l_x for a convex vector of losses (module docstring)."""
        cp = self.cp
        if not losses.is_affine():
            # an epigraph vector ell >= l also for chi-square, where excess >= l - eta could
            # take the convex losses directly: CLARABEL needs fewer iterations with it (robust
            # logistic loss, N = 2e4: 34 against 44, at the same cost per iteration), as with
            # the score variables z of :meth:`z` (the former DRO lowering wrote X w into the
            # loss: 43 iterations chi2, 64 KL against 44 here)
            ell = cp.Variable(n)
            self.constraints.append(ell >= losses)
            losses = ell
        if phi is CHI2:
            eta = cp.Variable()
            excess = cp.Variable(n, nonneg=True)
            self.constraints.append(excess >= losses - eta)
            return eta + np.sqrt((1.0 + rho) / n) * cp.norm(excess, 2)
        if phi is KL:
            alpha = cp.Variable(nonneg=True)
            lam = cp.Variable()
            v = cp.Variable(n)
            mean = cp.Variable()  # (1/N) sum v as a scalar epigraph: N mean >= sum v
            self.constraints += [cp.constraints.ExpCone(losses - lam, alpha * np.ones(n), v),
                                 cp.sum(v) <= n * mean]
            # with the 1/N coefficients in the objective CLARABEL failed with every setting
            # (robust logistic loss, N = 1e4, d = 20, rho = 0.1); with the epigraph it ends
            # optimal in 47 iterations (18 s), at the value of lbfgs to 5e-9
            return alpha * rho + lam - alpha + mean
        raise SpecError(
            f"the CVXPY lowering knows the chi-square and KL balls; phi={phi.name!r} has no "
            "conic form here. Use phi='chi2' or 'kl' (or a DRO gradient method for a custom "
            "phi-divergence).")

    def indicator_losses(self, support: Any, h: np.ndarray) -> Any:
        """Convex upper bounds of h_x 1(f(x) > 0) over the examples of ``support`` (a Subset):
        h u+ where h > 0, h - h u- where h < 0 (u+- of eq. 4 of Goh et al.; tight at the
        anchor)."""
        n = support.n
        losses: Any = self.cp.Constant(np.zeros(n))
        pos, neg = np.flatnonzero(h > 0), np.flatnonzero(h < 0)
        if pos.size:
            u = self.indicator_bound(support.data, support.index[pos], 1.0)
            losses = losses + _selector(n, pos) @ self.cp.multiply(h[pos], u)
        if neg.size:
            u = self.indicator_bound(support.data, support.index[neg], -1.0)
            losses = losses + _selector(n, neg) @ (h[neg] - self.cp.multiply(h[neg], u))
        return losses

    def margin_losses(self, loss: str, data: Any, rows: np.ndarray, y: np.ndarray,
                      scale: float = 1.0) -> Any:
        """l(t y~ z) on ``rows`` of ``data``, t = ``scale``."""
        margins = self.cp.multiply(scale * (2.0 * y - 1.0), self.scores(data, rows))
        graph, constraints = loss_graph(self.cp, loss, margins)
        self.constraints += constraints
        return graph

    def row(self, row: Row, rates: Any, objective: bool = False,
            bound: float | None = None) -> Any:
        """The row's CVXPY expression; ``rates`` is its entry of :meth:`folded_rates`, ``bound``
        the constraint's bound (for a conditional worst-case rate bounded alone)."""
        # only a worst-case rate over a subset of its ball's support is ``conditional``
        if (bound is not None and len(row.parts) == 1
                and getattr(row.parts[0][1], "conditional", False)):
            return conditional_bound(self, row, bound)
        total: Any = row.constant if rates is None else row.constant + rates
        for coef, part in row.parts:
            lower = entry_for(LOWERINGS, part, "CVXPY").lower
            if lower is not None:  # rates (lower None) are in ``rates``, folded per example
                total = total + lower(self, coef, part, objective)
        return total

    def regularizer(self) -> Any:
        model = self.analysis.model
        return regularizer(self.cp, self.w, model.l2, getattr(model, "l1", 0.0))


def regularizer(cp: Any, w: Any, l2: float, l1: float) -> Any:
    """(l2/2)||w||^2 + l1 ||w||_1 (the terms with a zero weight left out)."""
    reg: Any = 0.0
    if l2 > 0:
        reg = reg + 0.5 * l2 * cp.sum_squares(w)
    if l1 > 0:
        reg = reg + l1 * cp.norm1(w)
    return reg


def lower_step(analysis: Analysis, psi: dict[int, Any], anchor: dict[int, np.ndarray] | None,
               bounds: np.ndarray, elastic: bool = False, penalty: float | None = None
               ) -> tuple[Any, Any, Any, list[Any]]:
    """The convex problem at ``anchor`` (None: the hinge relaxation) with row bounds ``bounds``.

    With ``elastic`` it is the phase-1 problem instead: slacks s_j >= 0 on the constraint rows
    (row_j <= bound_j + s_j) and the objective sum_j s_j + ``settings.PHASE1_NORM_WEIGHT`` *
    regularizer (``penalty`` None) or the exact penalty objective + regularizer + penalty *
    sum_j s_j.

    Returns ``(problem, w, b, row_constraints)``.
    """
    import cvxpy as cp

    builder = CvxpyBuilder(cp, analysis, psi, anchor)
    rates = builder.folded_rates()
    rate_rows = [None if rates is None else rates[j] for j in range(len(analysis.rows))]
    objective = (builder.row(analysis.objective, rate_rows[0], objective=True)
                 + builder.regularizer())
    lhs = [builder.row(row, rate_row, bound=bound) for row, rate_row, bound in
           zip(analysis.constraints, rate_rows[1:], bounds, strict=True)]
    if elastic:
        slack = cp.Variable(len(lhs), nonneg=True, name="s")
        rows = [expr <= bound + slack[j] for j, (expr, bound) in enumerate(zip(lhs, bounds))]
        objective = (cp.sum(slack) + settings.PHASE1_NORM_WEIGHT * builder.regularizer()
                     if penalty is None else objective + float(penalty) * cp.sum(slack))
    else:
        rows = [expr <= bound for expr, bound in zip(lhs, bounds, strict=True)]
    problem = cp.Problem(cp.Minimize(objective), rows + builder.constraints)
    return problem, builder.w, builder.b, rows


def pick_solver(analysis: Analysis, solver: str | None) -> str:
    """HiGHS for LP steps, CLARABEL otherwise; a named solver is checked."""
    return checked_solver(solver, is_lp(analysis), "this problem's steps are not LPs (an l2 "
                          "term, a smooth or conic part)")


#: tight CLARABEL tolerances for reference solves (``solve_step(..., tight=True)``)
TIGHT_CLARABEL = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                  "tol_ktratio": 1e-8, "max_iter": 500}
#: CLARABEL tolerances for the chain's own steps: a relative duality gap of 1e-6. MM stops at
#: a relative decrease of 1e-4 (``settings.MM_RELATIVE_TOL``), so tighter steps buy nothing,
#: and CLARABEL's default 1e-8 is out of reach on exp-cone steps at full Adult scale (the
#: chi-square robust logistic step on 34,189 rows stalls at a gap of 4e-7 after 38 iterations
#: and ends ``AlmostSolved``).
STEP_CLARABEL = {"tol_gap_rel": 1e-6}
#: CLARABEL variants tried when a solve stalls (InsufficientProgress, seen on KL balls) or ends
#: at reduced accuracy: shorter steps, then no equilibration. The 0.9 rung: the KL reference
#: at N = 1e4 (d = 20, rho = 0.1, no intercept, l2 = 0, ``synthetic(10000, 20, 3)``) stalled
#: with every other setting and ended optimal in 40 iterations with it (docs/robust.md)
CLARABEL_RETRIES = ({"max_step_fraction": 0.95}, {"max_step_fraction": 0.9},
                    {"equilibrate_enable": False})


def _attempts(solver: str, options: dict[str, Any] | None, tight: bool,
              short_steps: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The settings a solve tries in turn: the requested ones (:data:`TIGHT_CLARABEL` or
    :data:`STEP_CLARABEL` for CLARABEL), then :data:`CLARABEL_RETRIES` on top of them, then
    (tight only) the solver's defaults; user options are tried alone. ``short_steps`` starts
    at the first retry (the requested tolerances with ``max_step_fraction=0.95``)."""
    if options:
        return [("user", options)]
    if solver != "CLARABEL":
        return [("default", {})]
    name, base = ("tight", TIGHT_CLARABEL) if tight else ("step", STEP_CLARABEL)
    attempts = [(name, base)] + [(f"{name}+{key}={value}", {**base, **extra})
                                 for extra in CLARABEL_RETRIES for key, value in extra.items()]
    if tight:
        attempts.append(("default", {}))
    return attempts[1:] if short_steps else attempts


def solve_step(analysis: Analysis, psi: dict[int, Any], anchor: dict[int, np.ndarray] | None,
               bounds: np.ndarray, solver: str, solver_options: dict[str, Any] | None = None,
               tight: bool = False, elastic: bool = False,
               penalty: float | None = None, retry_inaccurate: bool = True,
               short_steps: bool = False) -> ConvexStep:
    """Build and solve one step; statuses from the one vocabulary.

    ``elastic`` and ``penalty`` ask for the phase-1 problem (:func:`lower_step`).
    ``tight`` asks CLARABEL for the tolerances of :data:`TIGHT_CLARABEL` (reference solves).
    A CLARABEL solve that fails, stalls or ends at reduced accuracy (``AlmostSolved``, CVXPY's
    ``optimal_inaccurate``) is retried with :data:`CLARABEL_RETRIES`; the first optimal answer
    is returned, else the first solved one with its status. With ``retry_inaccurate=False`` an
    answer at reduced accuracy is returned at once (only failures are retried): the robust-loss
    reference, where CLARABEL's defaults end at reduced accuracy too and doubled the time (chi2,
    N = 2e4: tight 45 s, then defaults 55 s for the same status). ``short_steps`` skips the
    first try and starts at ``max_step_fraction=0.95`` (the KL reference at scale, where the
    first try stalls: ``patterns.dro.REFERENCE_SHORT_STEPS_MIN_N``). The settings that
    produced the answer are in the step's ``message``.
    """
    import cvxpy as cp

    problem, w, b, rows = lower_step(analysis, psi, anchor, bounds, elastic, penalty)
    start = time.perf_counter()
    failure = ""
    answer: ConvexStep | None = None
    attempts = _attempts(solver, solver_options, tight, short_steps)
    i = 0
    while i < len(attempts):
        setting, options = attempts[i]
        i += 1
        try:
            solve_cvxpy(problem, solver, **options)
            failure = ""
        except cp.error.SolverError as exc:
            failure = str(exc)
            continue
        status = status_of(problem.status)
        if status == settings.OPTIMAL or (answer is None and w.value is not None
                                          and status in settings.SOLVED_STATUSES):
            answer = _read_step(problem, status, w, b, rows, f"cvxpy/{solver}", setting)
        if status == settings.OPTIMAL or (status == settings.OPTIMAL_INACCURATE
                                          and not retry_inaccurate):
            break
        if status == settings.OPTIMAL_INACCURATE and setting.startswith("tight"):
            i = len(attempts) - 1  # tight tolerances out of reach: the solver's defaults
        elif status not in (settings.OPTIMAL_INACCURATE, settings.NUMERICAL_ERROR):
            break  # infeasible, unbounded or a limit: another setting would not change it
    elapsed = time.perf_counter() - start
    if answer is not None:
        answer.solve_time = elapsed
        return answer
    if failure:  # the last attempt raised
        return ConvexStep(settings.NUMERICAL_ERROR, float("nan"), solver=f"cvxpy/{solver}",
                          solve_time=elapsed,
                          message=f"{solver} failed with every setting tried "
                                  f"({', '.join(a[0] for a in attempts)}); the last: "
                                  f"{failure}. Badly scaled columns are a common cause "
                                  "(standardize the features); otherwise try another "
                                  "solver or the specialized method `plan()` names.")
    return ConvexStep(status_of(problem.status), float("nan"), solver=f"cvxpy/{solver}",
                      solve_time=elapsed, message=f"CVXPY status {problem.status}")


def _read_step(problem: Any, status: str, w: Any, b: Any, rows: list, solver: str,
               setting: str) -> ConvexStep:
    """The step's answer as the backend left it in the CVXPY variables."""
    duals = np.array([float(np.asarray(c.dual_value).item()) if c.dual_value is not None
                      else np.nan for c in rows])
    return ConvexStep(status, float(problem.value), np.asarray(w.value, dtype=np.float64),
                      float(np.asarray(b.value).item()) if b.value is not None else 0.0,
                      duals, solver, message=f"settings: {setting}")


def folded_rows(cp: Any, bound: FoldedBound, scores: Callable[[np.ndarray], Any]
                ) -> tuple[Any, list[Any]]:
    """Rows 0..m of Problem 3 (eq. 5) at folded coefficients as one CVXPY vector, and the
    epigraph constraints: per sign, t >= 0 and t >= 1/2 +- z_x for the examples with a nonzero
    coefficient in some row (7,984 variables instead of 20,000 for five constraints on 5,000
    Adult rows). The explicit epigraph is the standard LP form; it also sidesteps CVXPY's bound
    propagation for ``pos`` atoms that made HiGHS report feasible LPs as infeasible (CVXPY 1.9).

    ``scores(used)`` gives z_x of the rows ``used`` of ``bound.design``, in that order: the rate
    pattern's reference writes X[used] w - b in directly, the generic lowering reads the
    dataset's score variables when other parts use them (:class:`CvxpyBuilder`).
    """
    terms, epigraph = [], []
    for sign, coef in ((+1.0, bound.A), (-1.0, bound.B)):
        used = np.flatnonzero(np.any(coef != 0, axis=0))
        if used.size:
            t = cp.Variable(used.size, nonneg=True)
            epigraph.append(t >= 0.5 + sign * scores(used))
            terms.append(coef[:, used] @ t)
    return bound.const + sum(terms, cp.Constant(np.zeros(bound.m + 1))), epigraph


def _backend_iterations(problem: Any) -> int:
    """The iterations the CVXPY backend reported (0 when it reported none)."""
    stats = getattr(problem, "solver_stats", None)
    return int(getattr(stats, "num_iters", None) or 0)


def solve_bound_cvxpy(
    program: RateProgram,
    masks: list[tuple[np.ndarray, np.ndarray]],
    warm_start: dict[str, np.ndarray] | None = None,
    *,
    solver: str | None = None,
) -> Solution:
    """Solve Problem 3 of a rate program (Goh et al. eq. 5; the hinge relaxation when every
    mask is True) for the bounds chosen by ``masks``: the rate pattern's reference step, with
    the rows of :func:`folded_rows` that the generic step uses too.

    Parameters
    ----------
    program : RateProgram
    masks : list of (hinge_p, hinge_n) boolean arrays, one pair per block
        From :meth:`RateProgram.bound_masks`.
    warm_start : dict, optional
        ``{"w": ..., "b": ...}`` initial values (used by solvers that accept them).
    solver : {"CLARABEL", "SCS", "HIGHS"}, optional
        Default: HIGHS when the problem is an LP (no l2 term), else CLARABEL.

    Returns
    -------
    Solution
        ``primal={"w", "b"}``, ``dual={"v"}`` (constraint multipliers), objective of Problem 3.
    """
    import cvxpy as cp

    name = checked_solver(solver, program.is_lp,
                          f"this problem has an l2 term (l2={program.l2:g}; l2=0 makes it one)")
    w = cp.Variable(program.d, name="w")
    b = cp.Variable(name="b") if program.fit_intercept else cp.Constant(0.0)
    if warm_start is not None:
        w.value = np.asarray(warm_start["w"], dtype=np.float64)
        if program.fit_intercept:
            b.value = float(warm_start["b"])
    bound = fold_bound(program, masks)
    rows, epigraph = folded_rows(cp, bound, lambda used: bound.design.X[used] @ w - b)
    reg = regularizer(cp, w, program.l2, program.l1)
    constraints = [rows[1:] <= program.gamma] if program.m else []
    problem = cp.Problem(cp.Minimize(rows[0] + reg), constraints + epigraph)
    tracker = Tracker(f"cvxpy/{name}", warn=False)  # a step: the MM run warns
    try:
        solve_cvxpy(problem, name, warm_start=warm_start is not None)
    except cp.error.SolverError as exc:
        return tracker.solution({}, objective=float("nan"), status=settings.NUMERICAL_ERROR,
                                details={"message": str(exc)}, history=[])
    status = status_of(problem.status)
    tracker.iterations = _backend_iterations(problem)
    if status not in settings.SOLVED_STATUSES or w.value is None:
        return tracker.solution({}, objective=float("nan"), status=status, history=[],
                                details={"cvxpy_status": problem.status})
    w_val = np.asarray(w.value, dtype=np.float64)
    b_val = float(b.value) if program.fit_intercept else 0.0
    v = (np.asarray(constraints[0].dual_value, dtype=np.float64).reshape(program.m)
         if constraints else np.zeros(0))
    rows = program.bound_row_values(w_val, b_val, masks)
    violation = float(np.max(np.maximum(rows[1:] - program.gamma, 0.0), initial=0.0))
    return tracker.solution({"w": w_val, "b": np.float64(b_val)},
                            objective=float(problem.value), status=status, dual={"v": v},
                            max_violation=violation, history=[],
                            details={"cvxpy_status": problem.status,
                                     "num_iters": problem.solver_stats.num_iters})


def solve_mrc_cvxpy(
    form: MRCForm, solver: str = "CLARABEL", formulation: str = "subsets"
) -> Solution:
    """The minimax-risk objective (Mazuelas et al.) lowered to CVXPY: (2.2) or (2.5) stated from
    the definitions, not from the matrix lowering of :mod:`ratecons.canonical.mrc_matrix`,

        min_mu  1 - tau^T mu + lam^T |mu| + varphi(mu)

    with varphi(mu) = max_{i, C} (sum_{y in C} Phi(x_i, y)^T mu - 1) / |C| (eq. 2.3), or the
    average over instances of the per-instance maximum (eq. 2.6) for fixed marginals. With
    ``formulation="subsets"`` all 2^|Y| - 1 label subsets are enumerated (small |Y| only);
    ``"compact"`` states the same problems with n (|Y| + 1) extra variables through the LP
    duality (thesis Sec. 3.5.2)

        varphi(mu, x_i) = min { t_i : sum_y (s_iy - t_i)_+ <= 1 },   s_iy = Phi(x_i, y)^T mu,

    which holds because sum_y (s_iy - t)_+ <= 1 is exactly "sum_{y in C} (s_iy - t) <= 1 for
    every C", i.e. t >= (sum_{y in C} s_iy - 1) / |C|: the reference where enumerating the
    subsets is too large for CVXPY (e.g. the subgradient benchmark). Minimax risk is not a score
    model, so it is an objective of its own; this is the MRC pattern's reference.

    Parameters
    ----------
    form : MRCForm
    solver : {"CLARABEL", "SCS", "HIGHS"}
    formulation : {"subsets", "compact"}
        varphi as the maximum over all label subsets (eq. 2.3 / 2.6), or through its compact LP
        dual (see the module docstring).
    """
    import cvxpy as cp

    solver = checked_solver(solver, True, "")  # an LP: every CVXPY solver of ours takes it
    if formulation not in ("subsets", "compact"):
        raise UnknownOptionError(
            f"unknown formulation {formulation!r} for the MRC CVXPY reference; use 'subsets' "
            "or 'compact'."
        )
    K, p, n = form.n_classes, form.p, form.n
    mu = cp.Variable(form.m, name="mu")
    V = form.psi @ cp.reshape(mu, (p, form.n_blocks), order="F")  # V[i, y] = Phi(x_i, y)^T mu
    if form.label_map is not None:  # Phi(x, y) = E[y] kron psi(x)
        V = V @ form.label_map.T
    constraints = []
    if formulation == "subsets":
        masks = all_subset_masks(K)
        sizes = masks.sum(axis=1)
        average = (masks.T / sizes).astype(np.float64)  # (K, S): column C averages C's labels
        G = V @ average - (1.0 / sizes)[None, :]  # (n, S): (sum_C Phi^T mu - 1) / |C|
        phi_i = cp.max(G, axis=1)
    else:
        phi_i = cp.Variable(n, name="t")
        W = cp.Variable((n, K), nonneg=True, name="w")  # w_iy >= (s_iy - t_i)_+
        constraints = [W >= V - cp.reshape(phi_i, (n, 1), order="F") @ np.ones((1, K)),
                       cp.sum(W, axis=1) <= 1]
    phi = cp.sum(phi_i) / n if form.fixed_marginals else cp.max(phi_i)
    objective = 1 - form.tau @ mu + form.lam @ cp.abs(mu) + phi
    prob = cp.Problem(cp.Minimize(objective), constraints)
    tracker = Tracker(f"cvxpy/{solver}")
    try:
        solve_cvxpy(prob, solver)
    except cp.error.SolverError as exc:
        raise SolverError(f"CVXPY/{solver} failed on the MRC reference: {exc}") from exc
    status = status_of(prob.status)
    tracker.iterations = _backend_iterations(prob)
    if status not in settings.SOLVED_STATUSES:
        return tracker.solution({}, objective=np.nan, status=status, history=[])
    mu_val = np.asarray(mu.value, dtype=np.float64)
    exact = form.objective(mu_val)
    return tracker.solution({"mu": mu_val}, objective=float(prob.value), status=status,
                            upper=exact, max_violation=0.0, history=[],
                            details={"objective_at_mu": exact, "solver_status": prob.status},
                            solver=f"cvxpy/{solver} ({formulation})")


def solve_top_dual_qp(form: TopForm, solver: str | None = None,
                      solver_options: dict[str, Any] | None = None,
                      gram: np.ndarray | None = None) -> Solution:
    """The dual (7) (TopPushK family) or (10) (Pat&Mat family) of ranking at the top (Macha,
    Adam, Smidl), in its C form over all m = n+ + n~ points, with the signed kernel matrix of
    eq. (14) as the quadratic objective: max -1/2 v^T K v + sum alpha subject to
    sum alpha = sum beta, 0 <= alpha <= C (hinge, (18); the quadratic hinge subtracts
    ||alpha||^2 / 4C, (27)) and beta <= sum(alpha) / K (7c), or for Pat&Mat
    + sum(beta) / theta - delta n~ tau with beta <= delta theta (38) (quadratic hinge: (41)).

    ``gram`` is ``form.signed_gram()`` when the caller has it already.

    Returns
    -------
    Solution
        ``objective`` the dual optimum (lambda times it is the optimum of (3));
        ``primal={"alpha", "beta", "delta"}`` (delta None for TopPushK).
    """
    import cvxpy as cp

    name = checked_solver(solver, False, "the dual (7)/(10) is a quadratic program")
    Kmat = form.signed_gram() if gram is None else gram
    alpha = cp.Variable(form.n_pos, nonneg=True, name="alpha")
    beta = cp.Variable(form.n_tilde, nonneg=True, name="beta")
    v = cp.hstack([alpha, beta])
    # v^T K v as the solver's quadratic objective (K is a kernel matrix, PSD up to rounding):
    # 3.4x faster in CLARABEL than ||L^T v||^2 with K = L L^T at m = 2000 (and no eigh)
    objective = -0.5 * cp.quad_form(v, cp.psd_wrap(0.5 * (Kmat + Kmat.T))) + cp.sum(alpha)
    constraints = [cp.sum(alpha) == cp.sum(beta)]
    if form.surrogate == "hinge":
        constraints.append(alpha <= form.C)
    else:
        objective = objective - cp.sum_squares(alpha) / (4.0 * form.C)
    delta = None
    if form.family == "toppushk":
        if int(form.K) > 1:
            constraints.append(beta <= cp.sum(alpha) / int(form.K))
    else:
        delta = cp.Variable(nonneg=True, name="delta")
        objective = (objective + cp.sum(beta) / form.theta
                     - delta * form.n_tilde * float(form.tau))
        if form.surrogate == "hinge":
            constraints.append(beta <= delta * form.theta)
        else:
            objective = objective - cp.quad_over_lin(beta, delta) / (4.0 * form.theta**2)
    problem = cp.Problem(cp.Maximize(objective), constraints)
    tracker = Tracker(f"cvxpy/{name} dual", warn=False)  # ranking's dual_qp run warns
    try:
        # the compile (O(m^2), no backend limit stops it) first, kept for the solve below
        problem.get_problem_data(name)
        if limits.active().expired():
            return tracker.solution({}, objective=float("nan"), status=settings.TIME_LIMIT,
                                    history=[], details={"limit": "the time limit was reached "
                                                         "while CVXPY compiled the dual QP"})
        solve_cvxpy(problem, name, **(solver_options or {}))
    except cp.error.SolverError as exc:
        raise SolverError(f"{name} failed on the dual (7)/(10): {exc}") from exc
    status = status_of(problem.status)
    tracker.iterations = _backend_iterations(problem)
    if status not in settings.SOLVED_STATUSES or alpha.value is None:
        return tracker.solution({}, objective=float("nan"), status=status, history=[])
    primal = {"alpha": np.maximum(np.asarray(alpha.value), 0.0),
              "beta": np.maximum(np.asarray(beta.value), 0.0),
              "delta": None if delta is None else float(delta.value)}
    return tracker.solution(primal, objective=float(problem.value), status=status, history=[])
