"""Lowering of the MRC canonical form to matrix LPs (:class:`MatrixLP`) for HiGHS and MPS.

Primal (Bondugula et al., eq. 4; fixed marginals: thesis eq. 2.5 with nu_i = 1 + varphi(mu, x_i))
over the columns [mu1 (m), mu2 (m), nu (1 or n)]:

    min  -(tau - lam)^T mu1 + (tau + lam)^T mu2 + nu            (or + (1/n) sum_i nu_i)
    s.t. F_r (mu1 - mu2) - nu_{i_r} <= b_r   for the selected rows r = (i_r, C_r)
         mu1, mu2 >= 0, nu free.

Dual (eq. 6; fixed marginals: one equality per instance):

    max  -b^T alpha   s.t.  tau - lam <= F^T alpha <= tau + lam,
                           1^T alpha = 1  (or sum_{r: i_r = i} alpha_r = 1/n),  alpha >= 0.

Rows and columns carry names (``i<instance>_C<hex subset code>``, ``mup_<class>_<k>``,
``mum_<class>_<k>``, ``nu``/``nu_<i>``) so exported MPS files are readable.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..canonical.mrc import MRCForm, all_subset_masks, subset_codes, subset_rows
from .matrix_lp import MatrixLP

__all__ = [
    "column_names",
    "full_rows",
    "mrc_dual_lp",
    "mrc_primal_lp",
    "nu_block",
    "objective_row",
    "row_names",
]


def full_rows(form: MRCForm) -> tuple[np.ndarray, np.ndarray]:
    """(instances, masks) of every row of the full LP: n (2^|Y| - 1) pairs, instance-major."""
    masks = all_subset_masks(form.n_classes)
    S = masks.shape[0]
    return np.repeat(np.arange(form.n), S), np.tile(masks, (form.n, 1))


def column_names(form: MRCForm) -> list[str]:
    L, p = form.n_blocks, form.p
    base = [f"{c}_{k}" for c in range(L) for k in range(p)]
    nu = ["nu"] if not form.fixed_marginals else [f"nu_{i}" for i in range(form.n)]
    return [f"mup_{s}" for s in base] + [f"mum_{s}" for s in base] + nu


def row_names(instances: np.ndarray, masks: np.ndarray) -> list[str]:
    codes = subset_codes(masks)
    return [f"i{i}_C{c:x}" for i, c in zip(instances.tolist(), codes.tolist(), strict=True)]


def nu_block(form: MRCForm, instances: np.ndarray) -> sp.csr_matrix:
    """The -nu entries of the selected rows (one nu, or nu_i of each row's instance)."""
    R = instances.size
    cols = np.zeros(R, dtype=np.int64) if not form.fixed_marginals else instances
    return sp.csr_matrix((-np.ones(R), (np.arange(R), cols)), shape=(R, form.n_nu))


def objective_row(form: MRCForm) -> np.ndarray:
    """c of the primal: [-(tau - lam), tau + lam, 1 (or 1/n each)]."""
    nu_cost = np.full(form.n_nu, 1.0 / form.n_nu)
    return np.concatenate([-(form.tau - form.lam), form.tau + form.lam, nu_cost])


def mrc_primal_lp(
    form: MRCForm,
    instances: np.ndarray | None = None,
    masks: np.ndarray | None = None,
    names: bool = True,
) -> MatrixLP:
    """The primal LP (4) / (2.5) over the given rows (all n (2^|Y| - 1) rows by default)."""
    if instances is None or masks is None:
        instances, masks = full_rows(form)
    F, b = subset_rows(form.psi, instances, masks, form.label_map)
    A = sp.hstack([F, -F, nu_block(form, instances)], format="csr")
    m = form.m
    lower = np.concatenate([np.zeros(2 * m), np.full(form.n_nu, -np.inf)])
    kind = "fixed-marginals MRC (2.5)" if form.fixed_marginals else "MRC LP (4)"
    return MatrixLP(
        c=objective_row(form),
        A=A,
        row_lower=np.full(b.size, -np.inf),
        row_upper=b,
        col_lower=lower,
        col_upper=np.full(lower.size, np.inf),
        col_names=column_names(form) if names else None,
        row_names=row_names(instances, masks) if names else None,
        name=form.name,
        notes={"kind": kind, "mu": "x[:m] - x[m:2m]", "objective": "R*"},
    )


def mrc_dual_lp(form: MRCForm) -> MatrixLP:
    """The dual LP (6) (or the dual of (2.5)) over all rows; its optimal value is R* too."""
    instances, masks = full_rows(form)
    F, b = subset_rows(form.psi, instances, masks, form.label_map)
    R = b.size
    if form.fixed_marginals:
        E = sp.csr_matrix((np.ones(R), (instances, np.arange(R))), shape=(form.n, R))
        e_rhs = np.full(form.n, 1.0 / form.n)
    else:
        E = sp.csr_matrix(np.ones((1, R)))
        e_rhs = np.ones(1)
    A = sp.vstack([F.T.tocsr(), E], format="csr")
    return MatrixLP(
        c=-b,
        A=A,
        row_lower=np.concatenate([form.tau - form.lam, e_rhs]),
        row_upper=np.concatenate([form.tau + form.lam, e_rhs]),
        col_lower=np.zeros(R),
        col_upper=np.full(R, np.inf),
        maximize=True,
        name=form.name + "_dual",
        notes={"kind": "dual (6)"},
    )
