"""Kernel functions and signed kernel matrices of the ranking duals (Notation 3.2, eq. (14)).

The duals (7) and (10) use K = S k(P, P) S where the rows of P stack the positives and the
threshold examples x~_j (negatives, or all examples) and S = diag(+1, ..., +1, -1, ..., -1).
Kernels: ``linear`` <x, z>; ``gaussian`` exp(-gamma ||x - z||^2) with the paper's default
gamma = 1/d (Section 4.7, the LIBSVM default); ``polynomial`` (gamma <x, z> + coef0)^degree;
``precomputed`` (the user gives k(X, X) for training and k(X_new, X_train) for scoring).

Blocks are computed by rows (:func:`kernel_rows`) so that no more than ``block_bytes`` are held
at once when the full matrix would not fit in memory.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .caller import user_stacklevel
from .dask_types import is_dask
from .errors import DataError, DataWarning
from .kernel_formula import kernel_from_dot

__all__ = ["KernelSpec", "kernel_block", "kernel_diagonal", "kernel_from_dot", "kernel_rows",
           "warn_if_flat", "KERNEL_CODES", "FLAT_KERNEL_EXPONENT"]

#: a Gaussian kernel exp(-gamma ||x - z||^2) whose exponent at the mean squared distance of two
#: training rows exceeds this is nearly the identity matrix: every score is the row's own. On
#: 1,050 raw Adult rows (capital gain up to 1e5; gamma = 1/d) the held-out TPR@5 was 0.009,
#: 0.136 on the same rows standardized, with no warning (the magnitude warning starts at 1e6)
FLAT_KERNEL_EXPONENT = 50.0

#: integer codes used by the compiled loops of the dual coordinate ascent
KERNEL_CODES = {"linear": 0, "gaussian": 1, "polynomial": 2, "precomputed": 3}


@dataclass(frozen=True)
class KernelSpec:
    """A resolved kernel: name and numeric parameters (gamma already defaulted)."""

    name: str
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0

    @classmethod
    def from_model(cls, model: object, d: int) -> KernelSpec:
        """From an ``rc.KernelModel`` (gamma=None -> 1/d) or ``rc.LinearModel`` (linear)."""
        name = getattr(model, "kernel", "linear")
        gamma = getattr(model, "gamma", None)
        if gamma is None:
            gamma = 1.0 / max(d, 1)
        return cls(name, float(gamma), int(getattr(model, "degree", 3)),
                   float(getattr(model, "coef0", 1.0)))

    @property
    def code(self) -> int:
        return KERNEL_CODES[self.name]

    def describe(self) -> str:
        if self.name == "gaussian":
            return f"gaussian exp(-{self.gamma:.4g} ||x - z||^2)"
        if self.name == "polynomial":
            return f"polynomial ({self.gamma:.4g} <x, z> + {self.coef0:g})^{self.degree}"
        return self.name


def warn_if_flat(model: object, datasets: list) -> None:
    """Warn (:class:`~ratecons.errors.DataWarning`) when a Gaussian ``model`` over the
    in-memory ``datasets`` puts two typical training rows at exp(-more than
    :data:`FLAT_KERNEL_EXPONENT`): gamma times their mean squared distance, 2 sum_j var(x_j)."""
    if getattr(model, "kernel", None) != "gaussian":
        return
    for data in datasets:
        X = data.X
        if is_dask(X) or X.shape[0] < 2:
            continue
        mean = np.asarray(X.mean(axis=0)).ravel()
        squares = np.asarray((X.multiply(X) if sp.issparse(X) else X * X).mean(axis=0)).ravel()
        spread = 2.0 * float(np.sum(np.maximum(squares - mean * mean, 0.0)))
        gamma = KernelSpec.from_model(model, data.d).gamma
        if gamma * spread > FLAT_KERNEL_EXPONENT:
            widest = int(np.argmax(squares - mean * mean))
            name = data.feature_names[widest] if data.feature_names else f"column {widest}"
            warnings.warn(
                f"the gaussian kernel exp(-{gamma:.3g} ||x - z||^2) is about exp(-"
                f"{gamma * spread:.3g}) between two typical rows of {data.name!r}: nearly "
                f"0, so the model can only memorize its training rows. The columns' spreads "
                f"differ ({name!r} has the largest): standardize the features, or set "
                "KernelModel(gamma=...).", DataWarning, stacklevel=user_stacklevel())
            return


def _dense(X: object) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


#: the second factor of a sparse product A B^T is made dense when its dense copy takes at most
#: this many bytes: SciPy's sparse-by-sparse product and its densification took 1.4-5.3 s for
#: the 34,189 x 500 Gaussian kernel block of the Adult split against 0.36-0.39 s for the
#: sparse-by-dense product (same values)
DENSE_FACTOR_MAX_BYTES = 64 * 2**20


def _dot(A: object, B: object) -> np.ndarray:
    """A B^T as a dense array."""
    if sp.issparse(B) and B.shape[0] * B.shape[1] * 8 <= DENSE_FACTOR_MAX_BYTES:
        B = B.toarray()
    return _dense(A @ B.T)


def _sqnorms(X: object) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def kernel_block(spec: KernelSpec, A: object, B: object) -> np.ndarray:
    """k(A, B): the (len(A), len(B)) matrix of kernel values (not for ``precomputed``)."""
    if spec.name == "precomputed":
        raise DataError("a precomputed kernel has no kernel function; pass kernel values.")
    G = np.ascontiguousarray(_dot(A, B), dtype=np.float64)  # a new array: ours to overwrite
    if spec.name == "gaussian":  # the norms enter the gaussian kernel only
        sq_a, sq_b = _sqnorms(A), _sqnorms(B)
    else:
        sq_a, sq_b = np.zeros(G.shape[0]), np.zeros(G.shape[1])
    from .kernel_loops import kernel_in_place  # numba: not at ``import ratecons``

    kernel_in_place(spec.code, G, sq_a, sq_b, spec.gamma, spec.degree, spec.coef0)
    return G


def kernel_diagonal(spec: KernelSpec, A: object) -> np.ndarray:
    """k(a, a) for every row a of A."""
    sq = _sqnorms(A)
    return np.broadcast_to(kernel_from_dot(spec.code, sq, sq, sq, spec.gamma, spec.degree,
                                           spec.coef0), sq.shape).astype(np.float64)


def kernel_rows(spec: KernelSpec, A: object, B: object, block_bytes: int = 2**27):
    """Yield (start, stop, k(A[start:stop], B)) in row blocks of at most ``block_bytes``."""
    rows = max(1, int(block_bytes // (8 * max(B.shape[0], 1))))
    for start in range(0, A.shape[0], rows):
        stop = min(A.shape[0], start + rows)
        yield start, stop, kernel_block(spec, A[start:stop], B)
