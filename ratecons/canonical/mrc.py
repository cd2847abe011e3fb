"""Canonical form of minimax risk classifiers: the data of the MRC LP (4) and of (2.5).

Notation of Bondugula et al. (CCG paper): Phi(x, y) = e_y kron psi(x) has m = |Y| p components;
``mu`` is laid out so that ``mu.reshape(n_classes, p)[y] @ psi(x)`` is Phi(x, y)^T mu. More
generally a *label map* E (|Y| x L) gives Phi(x, y) = E[y] kron psi(x) with m = L p components
and Phi(x, y)^T mu = E[y] @ mu.reshape(L, p) @ psi(x); one-hot is E = I. The compact binary map
of MRCpy (``one_hot=False``), Phi(x, 0) = psi(x) and Phi(x, 1) = -psi(x), is E = [[1], [-1]].
The LP (4)

    min_{mu1, mu2 >= 0, nu}  -(tau - lam)^T mu1 + (tau + lam)^T mu2 + nu
    s.t.  F (mu1 - mu2) - nu 1 <= b

has one row per (instance i, non-empty label subset C) with F row sum_{y in C} Phi(x_i, y)^T / |C|
= (sum_{y in C} E[y] / |C|) kron psi(x_i) and b = 1/|C| - 1; its optimal value is R*, the
minimax risk, and nu = 1 + varphi(mu) (eq. 3).
The fixed-marginals problem (thesis eq. 2.5) has one nu_i per instance and objective
-(tau - lam)^T mu1 + (tau + lam)^T mu2 + (1/n) sum_i nu_i over the same rows.

The form stores only psi of the training instances: rows are built on demand for the selected
(instance, subset) pairs (:func:`subset_rows`); all 2^|Y| - 1 subsets are enumerated only by
:func:`all_subset_masks`, which refuses large |Y|.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import numpy as np
import scipy.sparse as sp

from ..errors import DataError, SpecError
from ..numerics.moment_scores import label_scores
from ..shapes import PsiShape

__all__ = [
    "MRCForm",
    "all_subset_masks",
    "max_subset_value",
    "subset_codes",
    "subset_rhs",
    "subset_rows",
    "subset_weights",
]

#: largest |Y| for which all label subsets are ever enumerated
MAX_ENUMERATED_CLASSES = 16
#: largest |Y| for which subsets are coded as bit masks in an int64
MAX_CODED_CLASSES = 62


@dataclass
class MRCForm(PsiShape):
    """The MRC learning problem as plain data (the contract shared by every MRC solver).

    Attributes
    ----------
    psi : ndarray, shape (n, p)
        psi of each training instance (intercept column included, if any).
    n_classes : int
    y : ndarray of int, shape (n,)
        Training labels as codes 0..n_classes-1.
    tau, lam : ndarray, shape (n_classes * p,)
        Mean and confidence vectors of the uncertainty set (eq. 2).
    fixed_marginals : bool
        False: LP (4) for (2.2). True: problem (2.5) (one nu per instance).
    classes : ndarray, optional
        Label values of the codes (for reporting).
    name : str
    label_map : ndarray of shape (n_classes, L), optional
        E of Phi(x, y) = E[y] kron psi(x); None is one-hot (E = I, L = n_classes).
    """

    psi: np.ndarray
    n_classes: int
    y: np.ndarray
    tau: np.ndarray
    lam: np.ndarray
    fixed_marginals: bool = False
    classes: np.ndarray | None = None
    name: str = "mrc"
    notes: dict[str, str] = field(default_factory=dict)
    label_map: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not getattr(self.psi, "partitioned", False):  # Dask partitions: canonical/mrc_dask
            self.psi = np.ascontiguousarray(self.psi, dtype=np.float64)
        if self.psi.ndim != 2 or self.psi.shape[0] < 1:
            raise DataError(f"MRCForm.psi must be an (n, p) array; got shape {self.psi.shape}.")
        if not isinstance(self.n_classes, (int, np.integer)) or self.n_classes < 2:
            raise SpecError(f"MRCForm.n_classes must be an int >= 2; got {self.n_classes!r}.")
        self.n_classes = int(self.n_classes)
        self.y = np.asarray(self.y, dtype=np.int64)
        if self.y.shape != (self.n,):
            raise DataError(f"MRCForm.y must have shape ({self.n},); got {self.y.shape}.")
        if self.y.size and (self.y.min() < 0 or self.y.max() >= self.n_classes):
            raise DataError(f"MRCForm.y must hold codes 0..{self.n_classes - 1}.")
        if self.label_map is not None:
            E = np.asarray(self.label_map, dtype=np.float64)
            if E.ndim != 2 or E.shape[0] != self.n_classes or not np.all(np.isfinite(E)):
                raise DataError(f"MRCForm.label_map must be a finite ({self.n_classes}, L) "
                                f"array; got shape {E.shape}.")
            self.label_map = E
        for name in ("tau", "lam"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (self.m,):
                raise DataError(f"MRCForm.{name} must have shape ({self.m},); got {arr.shape}.")
            if not np.all(np.isfinite(arr)):
                raise DataError(f"MRCForm.{name} has NaN or infinite entries.")
            setattr(self, name, arr)
        if np.any(self.lam < 0):
            raise DataError("MRCForm.lam must be >= 0.")

    def subset_weights(self, masks: np.ndarray) -> np.ndarray:
        """sum_{y in C} E[y] / |C| for each subset row of ``masks``: shape (R, L)."""
        return subset_weights(masks, self.label_map)

    @property
    def n_subsets(self) -> int:
        """2^|Y| - 1 non-empty label subsets (a Python int: exact for any |Y|)."""
        return 2**self.n_classes - 1

    @property
    def n_nu(self) -> int:
        return self.n if self.fixed_marginals else 1

    def full_lp_size(self) -> dict[str, int]:
        """Rows, columns and nonzeros of the full LP (4) / (2.5), counted, not built."""
        K, p = self.n_classes, self.p
        if self.label_map is None:
            # sum over subset sizes s of s * C(K, s) entries of psi per instance, in the mu1
            # and mu2 columns
            blocks = sum(s * comb(K, s) for s in range(1, K + 1))
        else:
            blocks = int(np.count_nonzero(self.subset_weights(all_subset_masks(K))))
        # plus one nu entry per row
        nnz_per_instance = 2 * p * blocks + self.n_subsets
        return {
            "rows": self.n * self.n_subsets,
            "cols": 2 * self.m + self.n_nu,
            "nnz": self.n * nnz_per_instance,
        }

    # ------------------------------------------------------------------ values
    def scores(self, mu: np.ndarray, psi: np.ndarray | None = None) -> np.ndarray:
        """Phi(x, y)^T mu for every instance and label: shape (n, n_classes)."""
        psi = self.psi if psi is None else psi
        return label_scores(psi, mu, self.n_classes, self.label_map)

    def varphi(self, mu: np.ndarray) -> np.ndarray:
        """varphi(mu, x_i) of eq. (2.6) for every training instance, shape (n,)."""
        return max_subset_value(self.scores(mu))[0]

    def objective(self, mu: np.ndarray) -> float:
        """The objective of (2.2) or (2.5) at mu (equal to R* at a solution)."""
        mu = np.asarray(mu, dtype=np.float64)
        return self.objective_given(mu, self.varphi_aggregate(mu))

    def varphi_aggregate(self, mu: np.ndarray) -> float:
        """The mean (fixed marginals, (2.5)) or the max ((2.2), varphi(mu) of (2.3)) of
        varphi(mu, x_i) over the training instances."""
        phi = self.varphi(mu)
        return float(phi.mean() if self.fixed_marginals else phi.max())

    def objective_given(self, mu: np.ndarray, phi_aggregate: float) -> float:
        """1 - tau^T mu + lambda^T |mu| + phi_aggregate: the objective of (2.2) / (2.5) when the
        max (or mean) of varphi(mu, x_i) over the instances is already known."""
        return float(1.0 - self.tau @ mu + self.lam @ np.abs(mu) + phi_aggregate)

    # ------------------------------------------------------------------ reporting
    def describe(self) -> str:
        size = self.full_lp_size()
        kind = "fixed-marginals problem (2.5)" if self.fixed_marginals else "MRC LP (4)"
        lines = [
            f"{kind}: {self.name}",
            f"  instances n          {self.n}",
            f"  classes |Y|          {self.n_classes}",
            f"  psi dimension p      {self.p}",
            f"  features m = L p     {self.m}"
            + ("" if self.label_map is None else "  (compact label map)"),
            f"  label subsets        2^{self.n_classes} - 1 = {self.n_subsets}",
            f"  full LP rows         {size['rows']}  (n (2^|Y| - 1))",
            f"  full LP columns      {size['cols']}  (2m + {'n' if self.fixed_marginals else '1'})",
            f"  full LP nonzeros     {size['nnz']}",
            f"  tau range            [{self.tau.min():.4g}, {self.tau.max():.4g}]",
            f"  lambda range         [{self.lam.min():.4g}, {self.lam.max():.4g}]",
        ]
        return "\n".join(lines)

    def summary(self) -> str:
        size = self.full_lp_size()
        kind = "MRC fixed-marginals LP (2.5)" if self.fixed_marginals else "MRC LP (4)"
        return (
            f"{kind}: n={self.n}, |Y|={self.n_classes}, m={self.m}; full LP "
            f"{size['rows']} rows x {size['cols']} columns, {size['nnz']} nonzeros"
        )


def subset_weights(masks: np.ndarray, label_map: np.ndarray | None = None) -> np.ndarray:
    """sum_{y in C} E[y] / |C| for each subset row C of ``masks`` (R, |Y|): shape (R, L).

    With one-hot E = I this is the mask scaled by 1/|C|."""
    masks = np.asarray(masks, dtype=bool)
    W = masks / masks.sum(axis=1, keepdims=True)
    return W if label_map is None else W @ label_map


def max_subset_value(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """varphi for each row of scores V (n, |Y|): max over non-empty C of (sum_C v - 1)/|C|.

    The greedy argument of Alg. 2 (and thesis Sec. 3.5.2): for each subset size s the best subset
    holds the s largest scores, so sorting each row once (O(|Y| log |Y|)) and scanning the prefix
    averages gives the maximum. Vectorized over instances. Ties prefer the larger subset, as in
    line 7 of Alg. 2.

    Returns
    -------
    value : ndarray, shape (n,)
    masks : ndarray of bool, shape (n, |Y|)
        The maximizing subset of each row.
    """
    V = np.asarray(V, dtype=np.float64)
    n, K = V.shape
    if K == 2:  # subsets {0}, {1}, {0, 1}: the pair wins (ties too) iff |v0 - v1| <= 1
        a, b = V[:, 0], V[:, 1]
        pair = np.abs(a - b) <= 1.0
        value = np.where(pair, 0.5 * (a + b - 1.0), np.maximum(a, b) - 1.0)
        return value, np.column_stack([pair | (a > b), pair | (b > a)])
    order = np.argsort(-V, axis=1, kind="stable")
    sorted_v = np.take_along_axis(V, order, axis=1)
    prefix = (np.cumsum(sorted_v, axis=1) - 1.0) / np.arange(1, K + 1)
    # last index attaining the maximum = largest maximizing subset
    best = K - 1 - np.argmax(prefix[:, ::-1], axis=1)
    value = prefix[np.arange(n), best]
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(K)[None, :].repeat(n, axis=0), axis=1)
    masks = ranks <= best[:, None]
    return value, masks


def all_subset_masks(n_classes: int) -> np.ndarray:
    """All 2^|Y| - 1 non-empty subsets as boolean rows (bit j of the row index + 1 is label j)."""
    if n_classes > MAX_ENUMERATED_CLASSES:
        raise SpecError(
            f"the full MRC LP has 2^{n_classes} - 1 = {2**n_classes - 1} rows per instance; "
            f"enumerating them is refused above {MAX_ENUMERATED_CLASSES} classes. Use "
            "method='ccg', which generates only the rows it needs."
        )
    codes = np.arange(1, 2**n_classes, dtype=np.int64)
    return ((codes[:, None] >> np.arange(n_classes)) & 1).astype(bool)


def subset_codes(masks: np.ndarray) -> np.ndarray:
    """Integer code sum_j 2^j [j in C] of each subset row (|Y| <= 62)."""
    masks = np.asarray(masks, dtype=bool)
    K = masks.shape[1]
    if K > MAX_CODED_CLASSES:
        raise SpecError(f"label subsets are coded in 64 bits: at most {MAX_CODED_CLASSES} classes.")
    return masks.astype(np.int64) @ (np.int64(1) << np.arange(K, dtype=np.int64))


def subset_rhs(masks: np.ndarray) -> np.ndarray:
    """b_C = 1/|C| - 1 of eq. (5) for each subset row of ``masks`` (R, |Y|)."""
    return 1.0 / np.asarray(masks, dtype=bool).sum(axis=1) - 1.0


def subset_rows(
    psi: np.ndarray, instances: np.ndarray, masks: np.ndarray,
    label_map: np.ndarray | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows of F and b of eq. (5) for (instance, subset) pairs.

    Row r has sum_{y in C_r} Phi(x_{i_r}, y)^T / |C_r| (one-hot: block y holds
    psi(x_{i_r}) / |C_r|; with a label map E, block l holds w_l psi(x_{i_r}) for
    w = sum_{y in C_r} E[y] / |C_r|) and b_r = 1/|C_r| - 1.

    Parameters
    ----------
    psi : ndarray, shape (n, p)
    instances : ndarray of int, shape (R,)
    masks : ndarray of bool, shape (R, |Y|)
    label_map : ndarray of shape (|Y|, L), optional

    Returns
    -------
    F : csr_matrix, shape (R, L p)
    b : ndarray, shape (R,)
    """
    instances = np.asarray(instances, dtype=np.int64)
    masks = np.asarray(masks, dtype=bool)
    R = masks.shape[0]
    p = psi.shape[1]
    size = masks.sum(axis=1)
    if R and size.min() < 1:
        raise SpecError("label subsets must be non-empty.")
    W = subset_weights(masks, label_map)  # (R, L)
    blocks = W != 0
    r_idx, l_idx = np.nonzero(blocks)  # row-major: rows in order, blocks ascending
    cols = (l_idx[:, None] * p + np.arange(p)[None, :]).ravel()
    data = (psi[instances[r_idx]] * W[r_idx, l_idx][:, None]).ravel()
    indptr = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(blocks.sum(axis=1) * p, out=indptr[1:])
    F = sp.csr_matrix((data, cols, indptr), shape=(R, W.shape[1] * p))
    F.eliminate_zeros()
    return F, subset_rhs(masks)
