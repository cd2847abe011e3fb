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

import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..backends.highs import HighsLP, LPResult
from ..caller import user_stacklevel
from ..canonical.matrix_lp import MatrixLP
from ..canonical.mrc import (
    MRCForm,
    all_subset_masks,
    max_subset_value,
    subset_codes,
    subset_rhs,
    subset_rows,
)
from ..canonical.mrc_matrix import objective_row
from ..errors import ConvergenceWarning, SpecError, parameter_error
from ..solution import Certificate, Solution
from .mrc_ipm import IPMResult, StructuredRows, dual_lower_bound, solve_rows_ipm

__all__ = ["CCG", "greedy_subsets", "solve_mrc_ccg"]

log = logging.getLogger(__name__)

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
#: |mu_j| above this fraction of max |mu| counts as nonzero in the guessed basis.
IPM_SUPPORT_TOL = 1e-6
#: rows with slack below this at the interior solution are candidates for the first
#: restricted LP ...
IPM_ACTIVE_SLACK = 1e-5
#: ... of which at most this many times the basic columns enter, largest alpha first.
IPM_START_ROWS = 2
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
class _Rows:
    """Bookkeeping of the constraint rows in the live model (after the optional positivity
    row, which is always row 0 when present)."""

    inst: np.ndarray  # instance index; -1 - c for the centroid of class c
    masks: np.ndarray  # (R, |Y|) bool
    keys: np.ndarray  # int64 (instance, subset) keys of training rows, -1 for centroids
    slack_age: np.ndarray  # consecutive solves in which the row had positive slack
    offset: int = 0  # 1 when the positivity row is row 0


@dataclass
class CCG:
    """Alg. 1 on one :class:`MRCForm` (LP (4) only). Call :meth:`run`; afterwards ``model`` is
    the live restricted HiGHS model (for MPS export) and ``history`` the per-iteration record.

    Parameters
    ----------
    form : MRCForm
    eps1, eps2 : float
        Thresholds epsilon_1 (primal rows) and epsilon_2 (dual rows = features).
    n_max, m_max : int
        Rows and features added per iteration at most.
    k_max : int
        Maximum number of iterations.
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
        Wall-clock limit in seconds for the whole run.
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
    k_max: int = 1000
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
        for name in ("n_max", "m_max", "k_max", "init_full_classes", "slack_patience"):
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

    # ------------------------------------------------------------------ rows and columns
    def _row_psi(self, inst: np.ndarray) -> np.ndarray:
        out = np.empty((inst.size, self.form.p))
        train = inst >= 0
        out[train] = self.form.psi[inst[train]]
        out[~train] = self._centroids[-1 - inst[~train]]
        return out

    def _row_block(self, inst: np.ndarray, masks: np.ndarray) -> sp.csr_matrix:
        """Entries of rows (inst, masks) on the live columns (mu1_J, mu2_J, nu)."""
        F, _ = subset_rows(self._row_psi(inst), np.arange(inst.size), masks,
                           self.form.label_map)
        F = F.tocsc()[:, np.maximum(self._col_feat, 0)]
        F = F @ sp.diags(self._col_sign.astype(np.float64))  # nu column: sign 0 -> empty
        nu = sp.csr_matrix((-np.ones(inst.size), (np.arange(inst.size),
                            np.full(inst.size, self._nu_col))), shape=F.shape)
        out = (F + nu).tocsr()
        out.eliminate_zeros()
        return out

    def _col_block(self, feats: np.ndarray) -> tuple[sp.csc_matrix, np.ndarray]:
        """Entries and costs of the columns mu1_j, mu2_j for features ``feats`` on the live rows."""
        f = self.form
        rows = self._rows
        block, k = np.divmod(feats, f.p)
        psi_rows = self._row_psi(rows.inst)
        D = f.subset_weights(rows.masks)[:, block] * psi_rows[:, k]  # (R, J_new): F_{I, j}
        cost1, cost2 = self._c[feats], self._c[f.m + feats]
        block = np.hstack([D, -D])
        cost = np.concatenate([cost1, cost2])
        if rows.offset:
            block = np.vstack([cost[None, :], block])  # positivity row: c^T x >= 0
        return sp.csc_matrix(block), cost

    def _initial(self) -> None:
        f = self.form
        K = f.n_classes
        self._center, self._center_value = None, np.inf
        counts = np.bincount(f.y, minlength=K)
        present = np.flatnonzero(counts)
        # (1/n) sum of psi over the instances of each class
        self._class_sums = (np.eye(K)[f.y].T @ f.psi) / f.n
        if f.label_map is None:
            taus = f.tau.reshape(K, f.p)  # block c of tau is p_c times the centroid of class c
        else:
            taus = self._class_sums
        self._centroids = taus / np.maximum(counts, 1)[:, None] * f.n  # eq. (13)
        if K <= self.init_full_classes:
            subsets = all_subset_masks(K)
            positivity = False
        else:
            subsets = np.vstack([np.eye(K, dtype=bool), np.ones((1, K), dtype=bool)])
            positivity = True
        inst = np.repeat(-1 - present, subsets.shape[0])
        masks = np.tile(subsets, (present.size, 1))
        self._rows = _Rows(inst, masks, np.full(inst.size, -1, dtype=np.int64),
                           np.zeros(inst.size, dtype=np.int64), offset=int(positivity))
        if self.features == "all":
            feats = np.arange(f.m)
        else:
            feats = self._initial_features(inst, masks, positivity)
        self._col_feat = np.concatenate([feats, feats, [-1]])
        self._col_sign = np.concatenate([np.ones(feats.size), -np.ones(feats.size), [0.0]])
        self._nu_col = 2 * feats.size
        self._in_J = np.zeros(f.m, dtype=bool)
        self._in_J[feats] = True
        self.model = HighsLP(self._lp(inst, masks, positivity), solver=self.solver)

    def _tau_is_sample_mean(self) -> bool:
        """Whether tau is the mean of Phi(x_i, y_i) (then R(mu) >= lambda^T |mu|)."""
        f = self.form
        T = self._class_sums
        mean = (T if f.label_map is None else f.label_map.T @ T).ravel()
        return bool(np.allclose(f.tau, mean, rtol=1e-10, atol=1e-12))

    def _interior_phase(self, start: float) -> Solution | None:
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
        deadline = None if self.time_limit is None else start + self.time_limit
        for k in range(1, IPM_MAX_ROUNDS + 1):
            t0 = time.perf_counter()
            rows = full if index.size == inst.size else full.take(index)
            res = solve_rows_ipm(rows, f.tau, f.lam, tol=ipm_tol, protected=protected[index],
                                 deadline=deadline)
            t_lp = time.perf_counter() - t0
            t0 = time.perf_counter()
            phi, best = greedy_subsets(f, res.mu)
            violation = 1.0 + phi - res.nu
            upper = f.objective_given(res.mu, float(phi.max()))
            lower = (dual_lower_bound(rows, res.alpha, f.tau, f.lam, upper) if bounded
                     else -np.inf)
            new = np.flatnonzero(violation >= threshold)
            t_constr = time.perf_counter() - t0
            self._finish_record({
                "iteration": k, "phase": "interior", "R": res.objective,
                "rows": int(index.size), "cols": 2 * f.m + 1,
                "primal_violation": max(float(violation.max()), 0.0), "dual_violation": 0.0,
                "added_rows": int(new.size), "removed_rows": int(index.size - res.live.size),
                "lp_iterations": res.iterations, "lp_time": t_lp, "constr_time": t_constr,
                "feat_time": 0.0, "elapsed": time.perf_counter() - start,
                "lower_bound": lower, "upper_bound": upper,
            })
            solved = res.status in ("converged", "stalled")
            done = new.size == 0 and solved
            if done and upper - lower <= 1e-6:
                self._keep_active_rows(index, res, inst, masks)
                return self._interior_solution(res, self._model_alpha(index, res.alpha),
                                               upper, lower, k, start)
            out_of_time = (self.time_limit is not None
                           and time.perf_counter() - start >= self.time_limit)
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

    def _keep_active_rows(self, index: np.ndarray, res: IPMResult, inst: np.ndarray,
                          masks: np.ndarray) -> None:
        """Put the nearly tight rows of the interior solution into the live model (not
        solved), so ``export_mps(restricted=True)`` writes the LP that was certified."""
        chosen = index[res.slack <= IPM_ACTIVE_SLACK]
        chosen = chosen[inst[chosen] < self.form.n]  # the centroids' rows are in already
        self._add_rows(inst[chosen], masks[chosen], self._row_keys(inst[chosen], masks[chosen]))

    def _model_alpha(self, index: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """The interior multipliers (on the rows ``index`` of :meth:`_interior_phase`'s
        numbering: training row i * S + s, centroid row (n + c) * S + s) on the rows of the
        live model, the order in which the simplex path reports them."""
        f = self.form
        S = f.n_subsets
        rows = self._rows
        code = subset_codes(rows.masks) - 1
        instance = np.where(rows.inst < 0, f.n - 1 - rows.inst, rows.inst)
        full = np.zeros((f.n + f.n_classes) * S)
        full[index] = alpha
        return full[instance * S + code]

    def _crossover_start(self, index: np.ndarray, res: IPMResult, inst: np.ndarray,
                         masks: np.ndarray) -> None:
        """The first restricted LP of the simplex loop from an interior solution: the nearly
        tight rows with the largest alpha, up to ``IPM_START_ROWS`` times the basic columns,
        and a basis guessed from the solution (basic: mu1_j for mu_j > 0, mu2_j for
        mu_j < 0, nu, and all rows but the first of those), so the first restricted solve
        is a crossover. An LP whose optimal face is degenerate (adult: 20,356 of 60,000 rows
        tight at 20k instances, 703 basic columns) has alpha spread over every tight row;
        CONSTR adds what the choice misses."""
        f = self.form
        mu = res.mu
        support = np.abs(mu) > IPM_SUPPORT_TOL * max(float(np.abs(mu).max()), 1e-300)
        n_basic_cols = int(support.sum()) + 1
        training = inst[index] < f.n  # the centroids' rows are in the model already
        slack = np.where(training, res.slack, np.inf)
        tight = np.flatnonzero(slack <= IPM_ACTIVE_SLACK)
        if tight.size < n_basic_cols:  # fewer tight rows than the basis needs: the tightest
            tight = np.argsort(slack, kind="stable")[:n_basic_cols]
        local = tight[np.argsort(-res.alpha[tight], kind="stable")][
            : IPM_START_ROWS * n_basic_cols]
        chosen = index[local]
        n_before = self._rows.inst.size
        self._add_rows(inst[chosen], masks[chosen], self._row_keys(inst[chosen], masks[chosen]))
        row_basic = np.ones(self._rows.inst.size, dtype=bool)
        row_basic[n_before:n_before + n_basic_cols] = False  # the largest alphas
        m = f.m
        col_basic = np.zeros(2 * m + 1, dtype=bool)
        col_basic[:m] = support & (mu > 0)
        col_basic[m:2 * m] = support & (mu < 0)
        col_basic[2 * m] = True
        self.model.set_basis(col_basic, row_basic)

    def _interior_solution(self, res: IPMResult, alpha: np.ndarray, upper: float,
                           lower: float, k: int, start: float) -> Solution:
        f = self.form
        last = self.history[-1]
        return Solution(
            status=settings.OPTIMAL,
            objective=upper,
            primal={"mu": res.mu, "nu": np.array([res.nu])},
            dual={"alpha": alpha},
            certificate=Certificate(
                lower_bound=lower, upper_bound=upper, gap=upper - lower,
                max_violation=last["primal_violation"],
                details={
                    "iterations": k, "phase": "interior",
                    "primal_violation": last["primal_violation"], "dual_violation": 0.0,
                    "ipm_iterations": sum(r["lp_iterations"] for r in self.history),
                    "final_rows": int(last["rows"]), "final_cols": 2 * f.m + 1,
                    "full_rows": f.full_lp_size()["rows"], "full_cols": f.full_lp_size()["cols"],
                },
            ),
            history=self.history,
            solver="ccg/interior-point",
            solve_time=time.perf_counter() - start,
        )

    def _lp(self, inst: np.ndarray, masks: np.ndarray, positivity: bool) -> MatrixLP:
        A = self._row_block(inst, masks)
        b = subset_rhs(masks)
        cost = self._live_cost()
        lower, upper = np.full(b.size, -np.inf), b
        if positivity:
            A = sp.vstack([sp.csr_matrix(cost[None, :]), A], format="csr")
            lower, upper = np.concatenate([[0.0], lower]), np.concatenate([[np.inf], upper])
        col_lower = np.where(self._col_sign == 0, -np.inf, 0.0)
        return MatrixLP(cost, A, lower, upper, col_lower, np.full(cost.size, np.inf),
                        name=self.form.name + "_restricted")

    def _live_cost(self) -> np.ndarray:
        idx = np.where(self._col_sign > 0, self._col_feat,
                       np.where(self._col_sign < 0, self.form.m + self._col_feat, 2 * self.form.m))
        return self._c[idx]

    def _initial_features(self, inst: np.ndarray, masks: np.ndarray, positivity: bool):
        """Support of the solution of the centroid LP over all features (plus intercepts)."""
        f = self.form
        feats = np.arange(f.m)
        self._col_feat = np.concatenate([feats, feats, [-1]])
        self._col_sign = np.concatenate([np.ones(f.m), -np.ones(f.m), [0.0]])
        self._nu_col = 2 * f.m
        res = HighsLP(self._lp(inst, masks, positivity), solver="simplex").solve()
        mu = res.x[: f.m] - res.x[f.m: 2 * f.m]
        support = np.flatnonzero(np.abs(mu) > 1e-12)
        intercepts = np.arange(f.n_blocks) * f.p
        return np.union1d(support, intercepts)

    # ------------------------------------------------------------------ the iteration
    def _mu_nu(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        mu = np.zeros(self.form.m)
        plus, minus = self._col_sign > 0, self._col_sign < 0
        np.add.at(mu, self._col_feat[plus], x[plus])
        np.subtract.at(mu, self._col_feat[minus], x[minus])
        return mu, float(x[self._nu_col])

    def _live_slack(self, mu: np.ndarray, nu: float) -> np.ndarray:
        """b_r - F_r mu + nu of the live rows (after the optional positivity row)."""
        rows = self._rows
        scores = self.form.scores(mu, self._row_psi(rows.inst))
        return (subset_rhs(rows.masks) + nu
                - (scores * rows.masks).sum(axis=1) / rows.masks.sum(axis=1))

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
        if cand.size:
            # the n_max most violated fresh rows lie among the n_max + |I| most violated ones
            # (at most |I| are already in the LP): an O(n) partition instead of sorting all
            top = min(cand.size, self.n_max + self._rows.keys.size)
            if top < cand.size:
                cand = cand[np.argpartition(-violation[cand], top - 1)[:top]]
            keys = self._row_keys(cand, masks[cand])
            fresh = ~np.isin(keys, self._rows.keys)
            cand, keys = cand[fresh], keys[fresh]
            order = np.argsort(-violation[cand], kind="stable")[: self.n_max]
            cand, keys = cand[order], keys[order]
        else:
            keys = np.zeros(0, dtype=np.int64)
        return cand, masks[cand], keys, worst, value

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

    def _remove_slack(self, res: LPResult) -> int:
        rows = self._rows
        off = rows.offset
        b = subset_rhs(rows.masks)
        slack = b - res.row_value[off:]
        rows.slack_age = np.where(slack > 1e-7, rows.slack_age + 1, 0)
        drop = np.flatnonzero((rows.slack_age >= self.slack_patience) & (rows.inst >= 0))
        if drop.size:
            self.model.delete_rows(drop + off)
            keep = np.ones(rows.inst.size, dtype=bool)
            keep[drop] = False
            self._rows = _Rows(rows.inst[keep], rows.masks[keep], rows.keys[keep],
                               rows.slack_age[keep], off)
        return int(drop.size)

    def _add_cols(self, feats: np.ndarray) -> None:
        if feats.size == 0:
            return
        block, cost = self._col_block(feats)
        self.model.add_cols(cost, np.zeros(cost.size), np.full(cost.size, np.inf), block)
        self._col_feat = np.concatenate([self._col_feat, feats, feats])
        self._col_sign = np.concatenate([self._col_sign, np.ones(feats.size),
                                         -np.ones(feats.size)])
        self._in_J[feats] = True

    def _row_keys(self, inst: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """int64 keys (instance << |Y|) | subset code of training rows."""
        return (inst.astype(np.int64) << self.form.n_classes) | subset_codes(masks)

    def _add_rows(self, inst: np.ndarray, masks: np.ndarray, keys: np.ndarray) -> None:
        if inst.size == 0:
            return
        A = self._row_block(inst, masks)
        b = subset_rhs(masks)
        self.model.add_rows(A, np.full(b.size, -np.inf), b)
        rows = self._rows
        self._rows = _Rows(np.concatenate([rows.inst, inst]), np.vstack([rows.masks, masks]),
                           np.concatenate([rows.keys, keys]),
                           np.concatenate([rows.slack_age, np.zeros(inst.size, dtype=np.int64)]),
                           rows.offset)

    def names(self) -> tuple[list[str], list[str]]:
        """Names of the live columns and rows, in the conventions of the full LP's export."""
        p = self.form.p
        prefix = {1.0: "mup", -1.0: "mum"}
        cols = [
            "nu" if sign == 0 else f"{prefix[sign]}_{j // p}_{j % p}"
            for j, sign in zip(self._col_feat.tolist(), self._col_sign.tolist(), strict=True)
        ]
        rows = self._rows
        codes = subset_codes(rows.masks).tolist()
        names = ["objective_nonneg"] if rows.offset else []
        names += [
            f"i{i}_C{c:x}" if i >= 0 else f"centroid{-1 - i}_C{c:x}"
            for i, c in zip(rows.inst.tolist(), codes, strict=True)
        ]
        return cols, names

    def run(self) -> Solution:
        """Run Alg. 1 and return the solution with history and certificate."""
        start = time.perf_counter()
        self._initial()
        if self._use_ipm_start():
            solution = self._interior_phase(start)
            if solution is not None:
                return solution
        status = settings.ITERATION_LIMIT
        k = len(self.history)
        res = None
        while True:
            k += 1
            t0 = time.perf_counter()
            res = self.model.solve()
            t_lp = time.perf_counter() - t0
            if res.status != settings.OPTIMAL:
                status = res.status
                break
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
            record = {
                "iteration": k, "R": res.objective, "rows": self.model.n_rows,
                "cols": self.model.n_cols, "primal_violation": eps1_hat,
                "dual_violation": eps2_hat, "added_rows": int(new_inst.size),
                "added_cols": int(2 * new_feats.size), "removed_rows": 0,
                "lp_iterations": res.iterations, "lp_time": t_lp, "constr_time": t_constr,
                "feat_time": t_feat, "elapsed": time.perf_counter() - start,
            }
            done = new_inst.size == 0 and new_feats.size == 0
            if not done and k >= self.k_max:
                self._finish_record(record)
                break
            if not done and self.time_limit is not None and (
                time.perf_counter() - start >= self.time_limit
            ):
                status = settings.TIME_LIMIT
                self._finish_record(record)
                break
            if done:
                status = settings.OPTIMAL
                self._finish_record(record)
                break
            if self.features == "all" and self.remove_slack:
                record["removed_rows"] = self._remove_slack(res)
            self._add_cols(new_feats)
            self._add_rows(new_inst, new_masks, new_keys)
            self._finish_record(record)
        return self._solution(res, status, k, time.perf_counter() - start)

    def _finish_record(self, record: dict[str, Any]) -> None:
        self.history.append(record)
        log.debug("ccg iteration %(iteration)d: R=%(R).8f rows=%(rows)d "
                  "violation=%(primal_violation).2e", record)
        if self.callback is not None:
            self.callback(dict(record))

    def _solution(self, res: LPResult | None, status: str, k: int, elapsed: float) -> Solution:
        f = self.form
        if res is None or res.status != settings.OPTIMAL:
            return Solution(status, np.nan, history=self.history, solver="ccg", solve_time=elapsed)
        mu, nu = self._mu_nu(res.x)
        last = self.history[-1]
        eps1_hat, eps2_hat = last["primal_violation"], last["dual_violation"]
        upper = f.objective(mu)  # (2.2) at mu^k: an upper bound on R* for any mu
        column_complete = self.features == "all" or eps2_hat <= self.tol
        lower = res.objective if column_complete else None  # a relaxation in rows only
        gap = None if lower is None else upper - lower
        if status in settings.LIMIT_STATUSES:
            warnings.warn(
                f"CCG stopped after {k} iterations ({status}) with primal violation "
                f"{eps1_hat:.2e} and dual violation {eps2_hat:.2e}; raise k_max or time_limit.",
                ConvergenceWarning, stacklevel=user_stacklevel(),
            )
        if status == settings.OPTIMAL and (gap is None or gap > 1e-6):
            # stopped at epsilon_1 / epsilon_2 > 0: the tolerance, not a proof of optimality
            status = settings.ITERATION_LIMIT
        rows = self._rows
        return Solution(
            status=status,
            objective=float(res.objective),
            primal={"mu": mu, "nu": np.array([nu])},
            dual={"alpha": -res.row_dual[rows.offset:]},
            certificate=Certificate(
                lower_bound=lower,
                upper_bound=upper,
                gap=gap,
                max_violation=eps1_hat,
                details={
                    "iterations": k,
                    "primal_violation": eps1_hat,
                    "dual_violation": eps2_hat,
                    "final_rows": self.model.n_rows,
                    "final_cols": self.model.n_cols,
                    "full_rows": f.full_lp_size()["rows"],
                    "full_cols": f.full_lp_size()["cols"],
                    "theorem1_interval": [res.objective, res.objective + eps1_hat],
                },
            ),
            history=self.history,
            solver=f"ccg/highs-{self.solver}",
            solve_time=elapsed,
        )


def solve_mrc_ccg(form: MRCForm, **options: Any) -> Solution:
    """Run :class:`CCG` with ``options`` (its parameters) and return the Solution."""
    return CCG(form, **options).run()
