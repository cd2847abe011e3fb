"""Per-example folded coefficients of Problem 3 (Goh et al. 2016, App. F.1, eqs 13-17).

For fixed bound masks (the choice between hinge and constant-1 upper bounds of eq. 4, made at an
anchor (w', b')), every row j = 0..m of Problem 3 is

    row_j(w, b) = const_j + sum_x  A[j, x] max(0, 1/2 + z_x) + B[j, x] max(0, 1/2 - z_x),

with z_x = <w, x> - b, ``A[j, x] = sum_{i: x in D_i} alpha_i^(j) weight_{i,x} hinge_p_{i,x}``
(eqs 13-14, with the dataset weights 1/|D_i| of eq. 5 folded in), ``B`` alike for beta, and
``const_j`` the total weight of the constant-1 bounds (the sums of eq. 15). An example that lies
in several datasets D_i appears once: its hinge terms simply add up, which keeps the per-example
loss of eq. 16 a two-sided hinge. For multipliers v the loss coefficients of eq. 17 are
``a(v) = A[0] + v @ A[1:]`` and ``b(v) = B[0] + v @ B[1:]`` (without the n/|D_i| rescaling of
the paper: we minimise the sum of the losses rather than their average).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..dask_types import is_dask
from ..scans import stack_rows, take_rows
from .rate_program import RateProgram, weighted_sum

__all__ = ["ExampleDesign", "FoldedBound", "example_design", "fold_bound"]


@dataclass
class ExampleDesign:
    """The distinct examples used by a rate program, stacked into one feature matrix.

    Attributes
    ----------
    X : ndarray or csr_matrix, shape (N, d)
        One row per distinct (source, row) pair used by some block, in a fixed pseudo-random
        order; CSR when any source is sparse, C-contiguous float64 otherwise.
    positions : list of ndarray
        For every block, the row of ``X`` holding each of its examples.
    sq_norms : ndarray, shape (N,)
        ||x||^2 of every row (used by the SDCA step).
    source, row : ndarray of int, shape (N,)
        Where every row of ``X`` comes from: row ``row[r]`` of the program's source
        ``source[r]`` (the generic lowering reads the rows' scores from its score variables).
    """

    X: np.ndarray | sp.csr_matrix
    positions: list[np.ndarray]
    sq_norms: np.ndarray
    source: np.ndarray
    row: np.ndarray

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    def scores(self, w: np.ndarray, b: float) -> np.ndarray:
        """z_x = <w, x> - b for every distinct example."""
        return np.asarray(self.X @ w).ravel() - b


_DESIGNS: dict[int, ExampleDesign] = {}


def example_design(program: RateProgram) -> ExampleDesign:
    """Stack the examples of ``program`` once (cached for the program's lifetime)."""
    key = id(program)
    if key in _DESIGNS:
        return _DESIGNS[key]
    sparse = any(sp.issparse(X) for X in program.sources)
    lazy = any(is_dask(X) for X in program.sources)  # Dask: never gathered
    parts, offsets, used = [], [], []
    start = 0
    for s, X in enumerate(program.sources):
        idx = np.unique(np.concatenate(
            [blk.index for blk in program.blocks if blk.source == s] or [np.empty(0, np.int64)]
        )).astype(np.int64)
        used.append(idx)
        offsets.append(start)
        start += idx.size
        if idx.size:
            rows = take_rows(X, idx)
            parts.append(rows if lazy else sp.csr_matrix(rows, dtype=np.float64) if sparse
                         else np.asarray(rows, dtype=np.float64))
    # rows are stored in a fixed pseudo-random order, so that SDCA's chunked visiting order
    # (see sdca.CHUNK) is random across the data while its memory access stays sequential
    # (Dask partitions keep their order: SDCA does not run on them, and a shuffle would move
    # every row between workers)
    perm = np.arange(start) if lazy else np.random.default_rng(0).permutation(start)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(start)
    if sparse:
        Xs = sp.vstack(parts, format="csr")[perm]
        Xs.sum_duplicates()
        Xs.sort_indices()
        sq = np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel()
    elif lazy:
        Xs = stack_rows(parts)
        sq = (Xs * Xs).sum(axis=1)  # lazy: computed only by a solver that reads it
    else:
        Xs = np.ascontiguousarray(np.vstack(parts)[perm])
        sq = np.einsum("ij,ij->i", Xs, Xs)
    positions = [
        inverse[offsets[blk.source] + np.searchsorted(used[blk.source], blk.index)]
        for blk in program.blocks
    ]
    origin = np.repeat(np.arange(len(used)), [idx.size for idx in used])
    design = ExampleDesign(Xs, positions, sq, origin[perm], np.concatenate(used)[perm])
    _DESIGNS[key] = design
    weakref.finalize(program, _DESIGNS.pop, key, None)
    return design


@dataclass
class FoldedBound:
    """Problem 3 at fixed masks with coefficients folded per example (eqs 13-17).

    Attributes
    ----------
    design : ExampleDesign
    A, B : ndarray, shape (m+1, N)
        Hinge coefficients of max(0, 1/2 + z) and max(0, 1/2 - z) per row and example.
    const : ndarray, shape (m+1,)
        Contribution of the constant-1 bounds to every row.
    gamma_check : ndarray, shape (m,)
        gamma - const[1:] (eq. 15): the bounds left for the hinge terms.
    l2 : float
        lambda of the regularizer (lambda/2)||w||^2.
    fit_intercept : bool
        Whether b is free (else b = 0).
    """

    design: ExampleDesign
    A: np.ndarray
    B: np.ndarray
    const: np.ndarray
    gamma_check: np.ndarray
    l2: float
    fit_intercept: bool

    @property
    def m(self) -> int:
        return int(self.gamma_check.size)

    def loss_coefficients(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-example coefficients (a_x, b_x) of the two-sided hinge (16) at multipliers v."""
        v = np.asarray(v, dtype=np.float64)
        return self.A[0] + v @ self.A[1:], self.B[0] + v @ self.B[1:]

    def hinge_rows(self, z: np.ndarray) -> np.ndarray:
        """sum_x A[j,x] max(0, 1/2 + z_x) + B[j,x] max(0, 1/2 - z_x) for every row j."""
        return self.A @ np.maximum(0.0, 0.5 + z) + self.B @ np.maximum(0.0, 0.5 - z)

    def rows(self, w: np.ndarray, b: float) -> np.ndarray:
        """Problem-3 row values (eq. 5), shape (m+1,); equal to ``bound_row_values``."""
        return self.const + self.hinge_rows(self.design.scores(w, b))

    def objective(self, w: np.ndarray, b: float) -> float:
        """Problem-3 objective: row 0 plus (lambda/2)||w||^2."""
        return float(self.rows(w, b)[0]) + 0.5 * self.l2 * float(w @ w)

    def lagrangian(self, w: np.ndarray, b: float, v: np.ndarray) -> tuple[float, np.ndarray]:
        """Psi(w, b, v) of eq. (7) and its gradient in v (constraint rows minus gamma)."""
        r = self.rows(w, b)
        g = r[1:] - (self.gamma_check + self.const[1:])
        return float(r[0] + 0.5 * self.l2 * float(w @ w) + v @ g), g


def fold_bound(program: RateProgram, masks: list[tuple[np.ndarray, np.ndarray]]) -> FoldedBound:
    """Fold the Problem-3 coefficients of ``program`` at ``masks`` per example (eqs 13-15).

    Parameters
    ----------
    program : RateProgram
    masks : list of (hinge_p, hinge_n)
        From :meth:`RateProgram.bound_masks`; all True gives the hinge relaxation.
    """
    if len(masks) != program.k:
        raise ValueError(f"masks has {len(masks)} entries; the program has {program.k} blocks.")
    design = example_design(program)
    rows = program.m + 1
    A = np.zeros((rows, design.n))
    B = np.zeros((rows, design.n))
    const = np.zeros(rows)
    triples = zip(program.blocks, design.positions, masks, strict=True)
    for i, (blk, pos, (mp, mn)) in enumerate(triples):
        wp = blk.weights * mp
        wn = blk.weights * mn
        # an example may sit in several blocks (and, in principle, twice in one): sum per row
        hp = np.bincount(pos, weights=wp, minlength=design.n)
        hn = np.bincount(pos, weights=wn, minlength=design.n)
        for j in range(rows):
            if program.alpha[j, i] != 0.0:
                A[j] += program.alpha[j, i] * hp
            if program.beta[j, i] != 0.0:
                B[j] += program.beta[j, i] * hn
        const += program.alpha[:, i] * weighted_sum(blk.weights, ~mp)
        const += program.beta[:, i] * weighted_sum(blk.weights, ~mn)
    return FoldedBound(design, A, B, const, program.gamma - const[1:], float(program.l2),
                       bool(program.fit_intercept))
