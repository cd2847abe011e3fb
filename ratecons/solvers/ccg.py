"""Constraint and column generation (CCG) for the MRC LP (4): Alg. 1 of Bondugula et al.

The LP (4) has n (2^|Y| - 1) rows and 2m + 1 columns, but few rows are active at the solution
and, with L1 sparsity, few columns. Alg. 1 solves restricted LPs P_{I,J} (eq. 7) over row set I
and feature set J and grows them:

- CONSTR: for every instance the most violated subset, by the greedy sort of Alg. 2
  (:func:`ratecons.canonical.mrc.max_subset_value`, vectorized over instances); the n_max most
  violated instances whose violation F_i (mu1 - mu2) - nu - b_i is at least epsilon_1 get a row.
  When all features are in the LP (FEAT disabled, Sec. III-B), rows with positive slack are
  removed (they have zero multipliers, so R^k stays optimal and Theorem 1's R^k <= R^{k+1}
  holds); ``slack_patience`` > 1 delays the removal, ``stabilization`` > 0 picks the rows at an
  in-out point between the best mu so far and the LP solution (both measured not to pay off on
  the dense RFF benchmark; the defaults are the paper's rules).
- FEAT (Sec. III-C, ``features="generate"``): the reduced costs of the absent columns mu1_j,
  mu2_j under the current multipliers alpha; without the positivity row the violation is
  |F_{I,j}^T alpha - tau_j| - lambda_j. The m_max most violated features with violation at least
  epsilon_2 are added; nothing is removed.
- Initialization (Sec. III-E, eq. 13): rows of the |Y| class centroids psi_bar_c = tau^c / p_c
  for all label subsets (|Y| <= ``init_full_classes``), or for the singletons and the full set
  plus the row "objective >= 0" that keeps the LP bounded when |Y| is larger. With FEAT, the
  initial features are the support of the solution of that small LP over all features.
- Warm starts: one HiGHS model lives across iterations; rows and columns are deleted/added in
  place and the dual simplex hot-starts from the previous basis (no rebuild). Deleting rows
  whose slack is basic keeps the basis valid (checked: a re-solve after deleting every slack
  row takes 0 simplex iterations).

Theorem 1: with epsilon_hat_1 the largest primal violation at iteration k,
R* - epsilon_hat_1 <= R^k <= R* (when all features are in the LP).

``start="ipm"`` (auto's choice for binary data) replaces the centroid start on dense feature
maps, where each simplex pivot of the restricted LP is a dense row operation: the structured
interior point of :mod:`ratecons.solvers.mrc_ipm` solves the full LP with constraint
reduction, Alg. 2 adds what it dropped and was violated, and the result is certified by the
upper bound (2.2) and a weak-duality lower bound of its multipliers; when that bound does not
apply, its rows and a basis guessed from it start the simplex loop above.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import settings
from ..backends.highs import HighsLP, LPResult
from ..canonical.mrc import (
    MRCForm,
    all_subset_masks,
    max_subset_value,
    subset_codes,
    subset_rhs,
)
from ..canonical.mrc_matrix import objective_row
from ..errors import SpecError, parameter_error
from ..solution import Solution
from .ccg_model import RestrictedModel
from .mrc_ipm import IPMResult, StructuredRows, dual_lower_bound, solve_rows_ipm
from .tracker import STATUS_REASON, Tracker, iteration_cap

__all__ = ["CCG", "greedy_subsets", "solve_mrc_ccg"]

#: start="auto" runs the interior-point start up to this many rows of the full LP (4).
IPM_START_MAX_ROWS = 2_000_000
#: ... and from this many components of mu (m = 2 p for binary one-hot): with fewer, the rows
#: are short, simplex pivots cheap and the centroid start faster (best of 3, ms, ipm against
#: centroids: haberman m = 8, 12.5 / 4.0; adult 48,842 linear m = 30, 890 / 159; adult 5,000
#: rff:20 m = 42, 81 / 24; synthetic 5,000 rff:40 m = 82, 154 / 345 but adult 20,000 rff:40,
#: 624 / 53); from m = 102 the interior start wins on every instance measured (haberman
#: rff:50, 29 / 83; credit rff:50, 37 / 210; adult 2,000 relu:100, 145 / 425; 20k rff:400,
#: 15 s / 138 s).
IPM_START_MIN_COMPONENTS = 100
#: interior solves (full LP, then with the violated rows added) before the simplex loop.
IPM_MAX_ROUNDS = 10
#: the interior point's tolerance, and the tighter one of a last round when nothing is
#: violated but the certificate is short of 1e-6
IPM_TOL = 1e-8
IPM_POLISH_TOL = 1e-10


def greedy_subsets(form: MRCForm, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2 for every training instance: (varphi(mu, x_i), maximizing subset mask)."""
    return max_subset_value(form.scores(mu))


@dataclass
class CCG(RestrictedModel):
    """Alg. 1 on one :class:`MRCForm` (LP (4) only). Call :meth:`run`; afterwards ``model`` is
    the live restricted HiGHS model (for MPS export) and ``history`` the per-iteration record.

    Parameters
    ----------
    form : MRCForm
    eps1, eps2 : float
        Thresholds epsilon_1 (primal rows) and epsilon_2 (dual rows = features).
    n_max, m_max : int
        Rows and features added per iteration at most.
    k_max : int, optional
        Maximum number of iterations (default 1000); ``max_iterations`` is the same cap under
        the name every method shares (give one of them).
    features : {"all", "generate"}
        Keep every feature (FEAT disabled; rows with slack are removed) or generate columns.
    remove_slack : bool
        Remove rows with positive slack (only with ``features="all"``, as the paper allows).
    slack_patience : int
        A row is removed once it has had positive slack in this many consecutive restricted
        solves (1: the paper's rule, remove at once). Removed rows have zero multipliers, so
        R^k stays optimal whatever the patience.
    stabilization : float
        In-out separation weight a in [0, 1) (0: the paper's CONSTR at the LP solution).
    init_full_classes : int
        Largest |Y| whose centroid rows cover all label subsets.
    start : {"auto", "centroids", "ipm"}
        First restricted LP. "centroids": the centroid rows of eq. (13) (the paper's start).
        "ipm": the rows that are active at the solution of the full LP by the structured
        interior point of :mod:`ratecons.solvers.mrc_ipm` (constraint-reduced), added to the
        centroid rows with a starting basis guessed from that solution, so the first
        restricted solve is the simplex's crossover; the loop then adds whatever that
        solution missed and certifies as usual. Needs ``features="all"`` and
        |Y| <= ``init_full_classes``. "auto": "ipm" for binary problems (three rows per
        instance) with ``features="all"``, at least ``IPM_START_MIN_COMPONENTS`` components
        of mu (dense rows, where simplex pivots are costly) and at most
        ``IPM_START_MAX_ROWS`` rows in the full LP, else "centroids" (with short rows the
        centroid start is faster; with many classes it already wins by 50x and more, and
        the full row set grows as 2^|Y|).
    solver : {"simplex", "ipm"}
        HiGHS algorithm for the restricted LPs (only simplex hot-starts).
    time_limit : float, optional
        Wall-clock limit in seconds for the whole run (the active :mod:`ratecons.limits`
        apply too).
    tol : float
        Violations below ``max(eps, tol)`` count as satisfied (HiGHS works to 1e-7).
    callback : callable, optional
        Receives each iteration's history record.
    """

    form: MRCForm
    eps1: float = 0.0
    eps2: float = 0.0
    n_max: int = 400
    m_max: int = 400
    k_max: int | None = None
    max_iterations: int | None = None
    features: str = "all"
    remove_slack: bool = True
    slack_patience: int = 1
    stabilization: float = 0.0
    init_full_classes: int = 8
    start: str = "auto"
    solver: str = "simplex"
    time_limit: float | None = None
    tol: float = 1e-8
    callback: Callable[[dict[str, Any]], None] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    model: HighsLP | None = None

    def __post_init__(self) -> None:
        f = self.form
        if f.fixed_marginals:
            raise SpecError(
                "CCG solves the MRC LP (4); the fixed-marginals problem (2.5) is solved by "
                "method='lp', 'subgradient' or 'cvxpy'."
            )
        for name in ("eps1", "eps2", "tol"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise parameter_error(name, "ccg", "a finite float >= 0", v)
        self.k_max, self._cap_name = iteration_cap("ccg", 1000, self.max_iterations,
                                                   k_max=self.k_max)
        for name in ("n_max", "m_max", "init_full_classes", "slack_patience"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise parameter_error(name, "ccg", "an int >= 1", v)
        if not (isinstance(self.stabilization, (int, float)) and 0 <= self.stabilization < 1):
            raise parameter_error("stabilization", "ccg", "a float in [0, 1)", self.stabilization)
        if self.features not in ("all", "generate"):
            raise parameter_error("features", "ccg", "'all' or 'generate'", self.features)
        if self.start not in ("auto", "centroids", "ipm"):
            raise parameter_error("start", "ccg", "'auto', 'centroids' or 'ipm'", self.start)
        if self.start == "ipm" and not self._ipm_start_applies():
            raise SpecError(
                "CCG's start='ipm' needs features='all' and at most init_full_classes="
                f"{self.init_full_classes} classes (here features={self.features!r}, "
                f"{f.n_classes} classes); use start='centroids'."
            )
        if self.solver not in ("simplex", "ipm"):
            raise parameter_error("solver", "ccg", "'simplex' or 'ipm'", self.solver)
        if f.n_classes + int(np.ceil(np.log2(f.n + 1))) > 62:
            raise SpecError(
                f"CCG codes (instance, subset) pairs in 64 bits: n={f.n} with {f.n_classes} "
                "classes does not fit."
            )
        self._c = objective_row(f)  # [-(tau - lam), tau + lam, 1]

    def _ipm_start_applies(self) -> bool:
        return self.features == "all" and self.form.n_classes <= self.init_full_classes

    def _use_ipm_start(self) -> bool:
        if self.start == "auto":
            return (self._ipm_start_applies() and self.form.n_classes == 2
                    and self.form.m >= IPM_START_MIN_COMPONENTS
                    and self.form.full_lp_size()["rows"] <= IPM_START_MAX_ROWS)
        return self.start == "ipm"

    def _interior_phase(self) -> Solution | None:
        """start="ipm": constraint generation around the structured interior point.

        Round 1 solves the full LP (4) by :func:`ratecons.solvers.mrc_ipm.solve_rows_ipm`,
        which drops the rows that cannot be active as it converges. Each round scans all
        instances by Alg. 2 at the solution, adds the violated rows to the rows still live
        and solves again, until no row is violated by max(eps1, tol). The solution is then
        certified without a simplex: the upper bound is (2.2) at mu, the lower bound is
        :func:`ratecons.solvers.mrc_ipm.dual_lower_bound` of the multipliers (valid when tau is
        the sample mean). Returns the solution when upper - lower <= 1e-6; otherwise the
        rows and basis of the last interior solution seed the simplex loop
        (:meth:`_crossover_start`) and None is returned; when the interior point fails
        (iteration limit, numerical error) the simplex loop starts from the centroids.
        """
        f = self.form
        subsets = all_subset_masks(f.n_classes)
        S = subsets.shape[0]
        # the training rows (instance i, subset s at i * S + s), then the centroids' rows:
        # the centroids' singletons reproduce tau, so every row set that holds them is
        # bounded; they are never dropped
        n_train = f.n * S
        inst = np.concatenate([np.repeat(np.arange(f.n), S),
                               np.repeat(f.n + np.arange(f.n_classes), S)])
        masks = np.tile(subsets, (f.n + f.n_classes, 1))
        full = StructuredRows(np.vstack([f.psi, self._centroids]), inst,
                              f.subset_weights(masks), subset_rhs(masks))
        protected = np.arange(inst.size) >= n_train
        index = np.arange(inst.size)  # the rows of this round's interior solve
        threshold = max(self.eps1, self.tol)
        bounded = self._tau_is_sample_mean()
        ipm_tol = IPM_TOL
        tracker = self._tracker
        for k in range(1, IPM_MAX_ROUNDS + 1):
            t0 = time.perf_counter()
            rows = full if index.size == inst.size else full.take(index)
            res = solve_rows_ipm(rows, f.tau, f.lam, tol=ipm_tol, protected=protected[index],
                                 deadline=tracker.deadline)
            t_lp = time.perf_counter() - t0
            t0 = time.perf_counter()
            phi, best = greedy_subsets(f, res.mu)
            violation = 1.0 + phi - res.nu
            upper = f.objective_given(res.mu, float(phi.max()))
            lower = (dual_lower_bound(rows, res.alpha, f.tau, f.lam, upper) if bounded
                     else -np.inf)
            new = np.flatnonzero(violation >= threshold)
            t_constr = time.perf_counter() - t0
            # (2.2) bounds R* from above at any mu: the point to return if a limit stops later
            tracker.offer(upper, mu=res.mu, nu=np.array([res.nu]))
            if res.status in ("converged", "stalled"):
                tracker.bound(lower=lower)
            tracker.record(
                k, phase="interior", objective=res.objective, lower=lower, upper=upper,
                max_violation=max(float(violation.max()), 0.0), rows=int(index.size),
                cols=2 * f.m + 1, primal_violation=max(float(violation.max()), 0.0),
                dual_violation=0.0, added_rows=int(new.size),
                removed_rows=int(index.size - res.live.size), lp_iterations=res.iterations,
                lp_time=t_lp, constr_time=t_constr, feat_time=0.0)
            solved = res.status in ("converged", "stalled")
            done = new.size == 0 and solved
            if done and upper - lower <= 1e-6:
                self._keep_active_rows(index, res, inst, masks)
                return self._interior_solution(res, self._model_alpha(index, res.alpha),
                                               upper, lower)
            out_of_time = tracker.expired()
            if not solved:  # no usable interior solution: the simplex loop from the centroids
                return None
            if done and bounded and ipm_tol > IPM_POLISH_TOL and not out_of_time:
                # nothing violated but the bound is short of 1e-6: the same rows once more,
                # to a tighter tolerance (the bound's slack is U times the dual residual
                # relative to the smallest lambda_j)
                ipm_tol = IPM_POLISH_TOL
                index = index[res.live]
                continue
            if done or out_of_time:
                break
            codes = subset_codes(best[new]) - 1  # row index of subset C is code(C) - 1
            index = np.union1d(index[res.live], new * S + codes)
        self._crossover_start(index, res, inst, masks)
        return None

    def _interior_solution(self, res: IPMResult, alpha: np.ndarray, upper: float,
                           lower: float) -> Solution:
        f = self.form
        last = self.history[-1]
        self._tracker.stop("gap")
        return self._tracker.solution(
            {"mu": res.mu, "nu": np.array([res.nu])}, objective=upper, dual={"alpha": alpha},
            lower=lower, upper=upper, max_violation=last["primal_violation"],
            details={
                "phase": "interior",
                "primal_violation": last["primal_violation"], "dual_violation": 0.0,
                "ipm_iterations": sum(r["lp_iterations"] for r in self.history),
                "final_rows": int(last["rows"]), "final_cols": 2 * f.m + 1,
                "full_rows": f.full_lp_size()["rows"], "full_cols": f.full_lp_size()["cols"],
            },
            solver="ccg/interior-point")

    # ------------------------------------------------------------------ the iteration
    def _constr(self, mu: np.ndarray, nu: float):
        """Most violated subset per instance (Alg. 2); the n_max most violated new rows.

        With ``stabilization`` > 0 the rows are chosen at a separation point (see
        :meth:`_separate`); the reported violation (Theorem 1) is always the one at the LP
        solution (mu, nu), over all n instances."""
        inst, masks, keys, worst, value = self._scan(mu, nu)
        if self.stabilization > 0 and inst.size:
            inst, masks, keys = self._separate(mu, value, (inst, masks, keys))
        return inst, masks, keys, worst

    def _separate(self, mu: np.ndarray, value: float, fallback: tuple):
        """In-out separation: rows violated at mu_s = a mu_c + (1 - a) mu, between the best point
        mu_c found so far (the lowest objective of (2.2)) and the LP
        solution mu; violation at mu_s is measured against the restricted model's nu at mu_s.
        Damps the zig-zag of the cutting planes; when no row is violated at mu_s, the rows of mu
        are used (so the method never stalls)."""
        if self._center is None or value < self._center_value:
            self._center, self._center_value = mu, value
        a = self.stabilization
        mu_s = a * self._center + (1.0 - a) * mu
        nu_s = float(-self._live_slack(mu_s, 0.0).min())  # the restricted model's nu at mu_s
        inst, masks, keys, _, value_s = self._scan(mu_s, nu_s)
        if value_s < self._center_value:
            self._center, self._center_value = mu_s, value_s
        return (inst, masks, keys) if inst.size else fallback

    def _scan(self, mu: np.ndarray, nu: float):
        """CONSTR at (mu, nu): the new rows, the largest violation and the objective of (2.2)
        at mu."""
        f = self.form
        phi, masks = greedy_subsets(f, mu)
        violation = 1.0 + phi - nu  # F_i mu - nu - b_i for the maximizing subset
        top = float(violation.max())
        value = f.objective_given(mu, top + nu - 1.0)
        worst = max(top, 0.0)
        threshold = max(self.eps1, self.tol)
        cand = np.flatnonzero(violation >= threshold)
        return (*self._fresh_rows(cand, violation[cand], masks[cand]), worst, value)

    def _fresh_rows(self, inst: np.ndarray, violation: np.ndarray, masks: np.ndarray):
        """The n_max most violated rows not yet in the LP among candidate rows (instance,
        violation, maximizing subset), most violated first, with their keys."""
        if inst.size == 0:
            return inst, masks, np.zeros(0, dtype=np.int64)
        # the n_max most violated fresh rows lie among the n_max + |I| most violated ones
        # (at most |I| are already in the LP): an O(n) partition instead of sorting all
        top = min(inst.size, self.n_max + self._rows.keys.size)
        if top < inst.size:
            keep = np.argpartition(-violation, top - 1)[:top]
            inst, violation, masks = inst[keep], violation[keep], masks[keep]
        keys = self._row_keys(inst, masks)
        fresh = np.flatnonzero(~np.isin(keys, self._rows.keys))
        order = fresh[np.argsort(-violation[fresh], kind="stable")[: self.n_max]]
        return inst[order], masks[order], keys[order]

    def _feat(self, res: LPResult):
        """Reduced costs of absent columns; the m_max most violated features."""
        f = self.form
        rows = self._rows
        y = res.row_dual  # min-convention: <= 0 on active "<= b" rows
        beta = y[0] if rows.offset else 0.0  # positivity row (a ">= 0" row)
        alpha = -y[rows.offset:]
        active = np.flatnonzero(np.abs(alpha) > 0)
        W = f.subset_weights(rows.masks[active]) * alpha[active][:, None]
        g = (W.T @ self._row_psi(rows.inst[active])).ravel()  # F_I^T alpha, length m
        d1 = (1.0 - beta) * self._c[: f.m] + g  # reduced cost of mu1_j
        d2 = (1.0 - beta) * self._c[f.m: 2 * f.m] - g  # reduced cost of mu2_j
        violation = np.maximum(-np.minimum(d1, d2), 0.0)
        outside = ~self._in_J
        worst = float(violation[outside].max(initial=0.0))
        cand = np.flatnonzero(outside & (violation >= max(self.eps2, self.tol)))
        top = cand[np.argsort(-violation[cand], kind="stable")[: self.m_max]]
        return np.sort(top), worst

    def run(self) -> Solution:
        """Run Alg. 1 and return the solution with history and certificate."""
        self._tracker = Tracker(f"ccg/highs-{self.solver}", max_iterations=self.k_max,
                                cap_name=self._cap_name, time_limit=self.time_limit,
                                callback=self.callback, stage="ccg")
        self.history = self._tracker.history
        self._initial()
        if self._use_ipm_start():
            solution = self._interior_phase()
            if solution is not None:
                return solution
        k = len(self.history)
        last: LPResult | None = None  # the last restricted LP solved
        while True:
            k += 1
            t0 = time.perf_counter()
            res = self.model.solve()
            t_lp = time.perf_counter() - t0
            if res.status != settings.OPTIMAL:
                return self._unsolved(res.status, last)
            last = res
            mu, nu = self._mu_nu(res.x)
            t0 = time.perf_counter()
            new_inst, new_masks, new_keys, eps1_hat = self._constr(mu, nu)
            t_constr = time.perf_counter() - t0
            t0 = time.perf_counter()
            if self.features == "generate":
                new_feats, eps2_hat = self._feat(res)
            else:
                new_feats, eps2_hat = np.zeros(0, dtype=np.int64), 0.0
            t_feat = time.perf_counter() - t0
            # R^k bounds R* from below when every feature is in the LP (Theorem 1)
            complete = self.features == "all" or eps2_hat <= self.tol
            record = {
                "lower" if complete else "objective": res.objective,
                "max_violation": eps1_hat, "rows": self.model.n_rows,
                "cols": self.model.n_cols, "primal_violation": eps1_hat,
                "dual_violation": eps2_hat, "added_rows": int(new_inst.size),
                "added_cols": int(2 * new_feats.size), "removed_rows": 0,
                "lp_iterations": res.iterations, "lp_time": t_lp, "constr_time": t_constr,
                "feat_time": t_feat,
            }
            done = new_inst.size == 0 and new_feats.size == 0
            if not done and not self._tracker.check(k):
                if self.features == "all" and self.remove_slack:
                    record["removed_rows"] = self._remove_slack(res)
                self._add_cols(new_feats)
                self._add_rows(new_inst, new_masks, new_keys)
            self._tracker.record(k, **record)
            if done or self._tracker.stop_reason is not None:
                return self._solution(res, done)

    def _unsolved(self, status: str, last: LPResult | None) -> Solution:
        """The answer when a restricted LP ends unsolved: on a limit, the point of the last LP
        solved, else the interior start's point, with their certificates; when neither exists
        (the budget ended in the first LP), no point and why."""
        tracker = self._tracker
        if status not in settings.LIMIT_STATUSES:
            return tracker.solution({}, objective=np.nan, status=status)
        tracker.stop(STATUS_REASON[status])
        if last is not None:
            return self._solution(last, False)
        if tracker.best_point is not None:
            return tracker.solution(tracker.best_point, details={"phase": "interior"},
                                    advice=f"raise {self._cap_name} or time_limit.")
        why = (f"no point: the {status.replace('_', ' ')} was reached in CCG's first "
               f"restricted LP ({self.model.n_rows} rows, {self.model.n_cols} columns), so "
               "there is no iterate (no mu, no bounds); raise time_limit, or use "
               "method='subgradient', whose every iterate is a model")
        return tracker.solution({}, objective=np.nan, details={"limit": why},
                                advice=why[0].upper() + why[1:] + ".")

    def _solution(self, res: LPResult, done: bool) -> Solution:
        """The certified solution of the last restricted LP (``done``: nothing was violated;
        otherwise a limit stopped the loop)."""
        f = self.form
        tracker = self._tracker
        mu, nu = self._mu_nu(res.x)
        last = self.history[-1]
        eps1_hat, eps2_hat = last["primal_violation"], last["dual_violation"]
        upper = f.objective(mu)  # (2.2) at mu^k: an upper bound on R* for any mu
        column_complete = self.features == "all" or eps2_hat <= self.tol
        lower = res.objective if column_complete else None  # a relaxation in rows only
        certified = done and lower is not None and upper - lower <= 1e-6
        if certified:
            tracker.stop("gap")
        elif done:  # stopped at epsilon_1 / epsilon_2 > 0: the tolerance, not a proof
            tracker.stop("stalled", f"nothing violated by more than eps1={self.eps1:g}, "
                                    f"eps2={self.eps2:g}")
        # R^k is R* once the gap is certified; before, it is only a lower bound on R*, and
        # the returned model's own worst-case risk (an upper bound) is its value, as for
        # every other method (k_max = 2 on ecoli: R^k 0.406, R* 0.488, the model's 1.395)
        return tracker.solution(
            {"mu": mu, "nu": np.array([nu])},
            objective=float(res.objective) if certified else float(upper),
            dual={"alpha": -res.row_dual[self._rows.offset:]},
            lower=-np.inf if lower is None else lower, upper=upper, max_violation=eps1_hat,
            details={
                "primal_violation": eps1_hat,
                "dual_violation": eps2_hat,
                "final_rows": self.model.n_rows,
                "final_cols": self.model.n_cols,
                "full_rows": f.full_lp_size()["rows"],
                "full_cols": f.full_lp_size()["cols"],
                "theorem1_interval": [res.objective, res.objective + eps1_hat],
            },
            advice=f"Primal violation {eps1_hat:.2e}, dual violation {eps2_hat:.2e}; "
                   + ("use eps1 = eps2 = 0 for a certified optimum." if done else
                      f"raise {self._cap_name} or time_limit."))


def solve_mrc_ccg(form: MRCForm, **options: Any) -> Solution:
    """Run :class:`CCG` with ``options`` (its parameters) and return the Solution."""
    return CCG(form, **options).run()
