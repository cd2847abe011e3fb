"""What ``auto`` reads to choose a rate method: the measured cost of ``mm`` against ``cvxpy``
and against ``structured``.

Both methods run Algorithm 1 (Goh et al. 2016) over the same Problem-3 bounds; they differ in
how a bound is solved. CLARABEL (``cvxpy``) factors a KKT system whose size grows with the
nonzero entries of the feature rows in every dataset D_i, whether the frame is sparse (Adult's
one-hot: 14 of 108 entries) or dense (3,000 x 100: all of them). SDCA (``mm``, App. F) passes over
the same nonzeros once per epoch, and needs more epochs as l2 |D_i| (its conditioning) falls and
more SDCA solves per bound as the cutting plane over the multipliers (Alg 2) gains dimensions.
The model

    log10(time(mm) / time(cvxpy)) = K0 + K1 log10(nnz terms) + K2 log10(l2 |D|max) + K3 [m > 1]

with nnz terms = sum_i |D_i| x (nonzeros per row) = n d density, is fitted by least squares on
the grid of ``benchmarks.auto_grid`` (both methods timed side by side on sparse and dense
frames, 1-3 constraints; :data:`ratecons.settings.MM_COST_MODEL`, docs/mm.md "When auto picks
mm"); ``auto`` picks ``mm`` where it predicts ``mm`` faster. The constraint term is an
indicator because the grid measured the same slow-down of ``mm`` with two and with three
constraints (the recall floor makes Alg 2's cutting plane two-dimensional, and each further
multiplier cost no more). The structured chain (``structured``: every bound by the structured
interior point, each Newton step one weighted Gram product over the same nonzeros) has a model
of the same form for log10(time(mm) / time(structured)) with one constraint and no constraint
term, :data:`ratecons.settings.MM_STRUCTURED_COST_MODEL`, fitted on the same grid's
one-constraint instances; ``auto`` takes the method predicted fastest. With two or more
constraints it takes the structured chain wherever that applies, without a model: ``mm`` was the
slower on every such instance measured, by 1.4-60x (24 instances, docs/mm.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..canonical.rate_program import RateProgram

__all__ = ["RateSize", "predicted_log_ratio", "rate_size"]


@dataclass(frozen=True)
class RateSize:
    """The quantities of the cost model: example-terms ``n`` (sum of |D_i|), features ``d``,
    ``density`` (nnz / (n d) over those rows), ``nnz`` (= n d density), constraints ``m`` and
    ``l2n`` (l2 x the largest |D_i|)."""

    n: int
    d: int
    density: float
    nnz: float
    m: int
    l2n: float


def _row_nonzeros(X: object) -> np.ndarray:
    """Nonzero entries of every row of a feature matrix."""
    if sp.issparse(X):
        return np.diff(sp.csr_matrix(X).indptr)
    return np.count_nonzero(np.asarray(X), axis=1)


def rate_size(form: RateProgram) -> RateSize:
    """The :class:`RateSize` of a compiled rate program."""
    per_source = [_row_nonzeros(X) for X in form.sources]
    nnz = float(sum(per_source[blk.source][blk.index].sum() for blk in form.blocks))
    n = form.n_total
    largest = max((blk.n for blk in form.blocks), default=0)
    return RateSize(n, form.d, nnz / max(1, n * form.d), nnz, form.m, form.l2 * largest)


def predicted_log_ratio(size: RateSize, model: tuple[float, ...] | None = None) -> float:
    """log10 of the predicted time(mm) / time(other) (module docstring) by the coefficients
    ``model``: (K0, K1, K2, K3), default :data:`~ratecons.settings.MM_COST_MODEL` (the other
    method ``cvxpy``), or (K0, K1, K2) without a constraint term,
    :data:`~ratecons.settings.MM_STRUCTURED_COST_MODEL` (``structured``, one constraint)."""
    k0, k_nnz, k_l2n, *rest = settings.MM_COST_MODEL if model is None else model
    k_m = rest[0] if rest else 0.0
    return (k0 + k_nnz * math.log10(max(size.nnz, 1.0))
            + k_l2n * math.log10(max(size.l2n, 1e-12)) + k_m * float(size.m > 1))
