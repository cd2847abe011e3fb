"""The restricted LP of constraint and column generation (:mod:`ratecons.solvers.ccg`).

One HiGHS model lives across the iterations of Alg. 1 (Bondugula et al.): rows are training
instances with a label subset (or the class centroids of eq. (13)), columns are mu1_j, mu2_j of
the features in J and nu. :class:`RestrictedModel` keeps that model and its bookkeeping: it
builds the first restricted LP, adds and deletes rows and columns in place (the dual simplex
hot-starts from the previous basis), reads mu and nu back, names rows and columns for the
export, and seeds the model from an interior solution (its rows and a basis guessed from it).
CCG itself (the scans CONSTR and FEAT, the loop, the certificate) is
:class:`ratecons.solvers.ccg.CCG`, which mixes this class in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backends.highs import HighsLP, LPResult
from ..canonical.matrix_lp import MatrixLP
from ..canonical.mrc import all_subset_masks, subset_codes, subset_rhs, subset_rows
from .mrc_ipm import IPMResult

__all__ = ["RestrictedModel"]

#: |mu_j| above this fraction of max |mu| counts as nonzero in the guessed basis.
IPM_SUPPORT_TOL = 1e-6
#: rows with slack below this at the interior solution are candidates for the first
#: restricted LP ...
IPM_ACTIVE_SLACK = 1e-5
#: ... of which at most this many times the basic columns enter, largest alpha first.
IPM_START_ROWS = 2


@dataclass
class _Rows:
    """Bookkeeping of the constraint rows in the live model (after the optional positivity
    row, which is always row 0 when present)."""

    inst: np.ndarray  # instance index; -1 - c for the centroid of class c
    masks: np.ndarray  # (R, |Y|) bool
    keys: np.ndarray  # int64 (instance, subset) keys of training rows, -1 for centroids
    slack_age: np.ndarray  # consecutive solves in which the row had positive slack
    offset: int = 0  # 1 when the positivity row is row 0


class RestrictedModel:
    """The live restricted HiGHS model of CCG and its row and column bookkeeping (a mixin:
    the class that mixes it in holds ``form``, ``features``, ``solver``,
    ``init_full_classes``, ``slack_patience`` and ``model``)."""

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
