"""Kernelize: a kernel model becomes a linear model over explicit features, and back.

A :class:`ratecons.models.KernelModel` scores by the representer form
s(x) = sum_j a_j k(x_j, x) - b over points x_j, with regularizer (l2/2) a^T K a, K = k(P, P).
With the eigendecomposition K = V diag(lambda) V^T (eigenvalues below a relative 1e-10 dropped)
and the feature map

    psi(x) = k(x, P) V diag(lambda)^(-1/2),     w = diag(lambda)^(1/2) V^T a,

the scores are s(x) = <w, psi(x)> - b and the regularizer is (l2/2) ||w||^2 exactly, so every atom
that works for a linear model works for a kernel model over psi (apply); a solution w maps back
to a = V diag(lambda)^(-1/2) w (invert). P is every training row of every dataset the problem
touches when there are at most ``max_exact`` of them (the exact representer theorem for the
regularized problem); otherwise a uniform sample of ``max_exact`` of them (the Nystrom
approximation, seeded), which the plan states. A gaussian kernel model with
``approximation="random_features"`` uses ``max_exact`` random Fourier features instead,
psi(x) = sqrt(2/D) cos(W x + u) (Rahimi and Recht; the draw of
:class:`ratecons.features.RandomFourier`), so that psi(x)^T psi(x') approximates k(x, x') and
(l2/2)||w||^2 plays the role of the kernel regularizer; the solution maps back to the scorer
f(x) = <w, psi(x)> - b (:class:`~ratecons.result.FeatureScorer`).

A ``precomputed`` kernel has no kernel function: the problem's one dataset holds the n x n
training kernel matrix, and any X holds kernel values against the n training examples, so
k(x, P) is the columns of X that index the expansion points.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..caller import user_stacklevel
from ..data import Dataset, Features
from ..errors import ApproximationWarning, SpecError
from ..features import RandomFourier
from ..kernels import KernelSpec, kernel_block
from ..result import FeatureScorer, KernelScorer, LinearScorer

__all__ = ["FeatureMap", "KernelScorer", "approximation_of", "kernel_map_note", "kernelize",
           "kernelized", "MAX_EXACT_KERNEL_POINTS", "warn_if_drawn"]

#: above this many training rows the kernel expansion uses a Nystrom sample of this size
MAX_EXACT_KERNEL_POINTS = 500


@dataclass
class FeatureMap:
    """psi and its inverse (module docstring); the identity for linear models.

    For a ``precomputed`` kernel ``points`` is None, ``columns`` are the expansion points'
    indices among the ``n_train`` training examples."""

    spec: KernelSpec | None = None
    points: Features | None = None
    transform_matrix: np.ndarray | None = None
    approximation: str = "none"
    fourier: RandomFourier | None = None
    fourier_state: dict[str, Any] | None = None
    columns: np.ndarray | None = None
    n_train: int | None = None
    #: the draw of an approximation ("nystrom60s3": 60 sampled points, seed 3); "" when exact
    draw: str = ""

    @property
    def is_identity(self) -> bool:
        return self.spec is None

    def dim(self, d: int) -> int:
        """The number of psi columns (``d``, the data's features, for a linear model)."""
        if self.is_identity:
            return d
        if self.fourier is not None:
            return int(self.fourier.n_components)
        return int(self.transform_matrix.shape[1])

    @property
    def column_prefix(self) -> str | None:
        """The prefix of the psi columns' names in an exported program (``psi`` for an exact
        expansion, ``nystrom60s3:psi`` for a draw; None for a linear model): a solution read
        back under another draw then names columns this map does not have."""
        if self.is_identity:
            return None
        return f"{self.draw}:psi" if self.draw else "psi"

    def apply(self, X: Features) -> Features:
        """psi(X) (X itself for a linear model)."""
        if self.is_identity:
            return X
        if self.fourier is not None:
            D = self.fourier.n_components
            cosines = self.fourier._transform(X, self.fourier_state)[:, 1:]  # no intercept
            return np.sqrt(2.0 / D) * cosines
        if self.points is None:
            return X[:, self.columns] @ self.transform_matrix
        return kernel_block(self.spec, X, self.points) @ self.transform_matrix

    def invert(self, w: np.ndarray, b: float) -> LinearScorer | KernelScorer | FeatureScorer:
        """The user's scorer for a solution (w, b) over psi."""
        if self.is_identity:
            return LinearScorer(w, b)
        if self.fourier is not None:
            return FeatureScorer(self, self.fourier_state["W"].shape[0], w, b)
        return KernelScorer(self.spec, self.points, self.transform_matrix @ w, b, self.columns,
                            self.n_train)

    def describe(self) -> str:
        if self.is_identity:
            return "linear model: psi(x) = x"
        if self.fourier is not None:
            return (f"kernel {self.spec.describe()}: psi(x) = sqrt(2/D) cos(W x + u), "
                    f"{self.approximation}")
        m = self.transform_matrix.shape[0]
        return (f"kernel {self.spec.describe()}: psi(x) = k(x, P) V Lambda^(-1/2) over "
                f"{m} points ({self.approximation}), {self.transform_matrix.shape[1]} features")


def _stack(datasets: list[Dataset]) -> Features:
    mats = [d.X for d in datasets]
    if any(sp.issparse(X) for X in mats):
        return sp.vstack([sp.csr_matrix(X) for X in mats]).tocsr()
    return np.vstack(mats)


def approximation_of(model: Any, n: int, max_exact: int = MAX_EXACT_KERNEL_POINTS,
                     seed: int | None = 0) -> str:
    """How :func:`kernelize` makes ``model`` linear over ``n`` training rows, in words (for
    ``plan()`` and the result's details)."""
    if n <= max_exact:
        return f"exact representer over {n} training rows"
    if getattr(model, "approximation", "nystrom") == "random_features":
        return f"{max_exact} random Fourier features for {n} training rows (seed {seed})"
    return f"Nystrom sample of {max_exact} of {n} training rows (seed {seed})"


def kernel_map_note(model: Any, n: int, max_exact: int = MAX_EXACT_KERNEL_POINTS,
                    seed: int | None = 0) -> str | None:
    """The plan's line for a chain (and an export) over ``n`` training rows of a kernel
    ``model`` (None for a linear model): how its feature map makes it linear, and, when that
    map is an approximation, that it solves another problem than the exact kernel one."""
    if not hasattr(model, "kernel"):
        return None
    how = approximation_of(model, n, max_exact, seed)
    note = (f"kernel model made linear by its feature map: {how} (solve(kernel_points=...) "
            "sets the size)")
    if n > max_exact:
        note += ("; an approximation of the kernel problem, whose optimum can differ from an "
                 "exact method's (a pattern's own, e.g. dual_ca for TPR@K)")
    return note


def warn_if_drawn(analysis: Any, fmap: FeatureMap, max_exact: int, seed: int | None,
                  where: str = "") -> None:
    """An :class:`~ratecons.errors.ApproximationWarning` with :func:`kernel_map_note` when
    ``fmap`` is a draw (a Nystrom sample or random features, not the exact representer), for
    a solve and for an export (``where``: the file): a user's kernel TPR@8 on 840 rows by
    ``generic`` ended ``optimal`` at 0.336 where the exact methods reach 0.423, with the
    approximation named only in ``result.reasons``."""
    if fmap.draw:
        note = kernel_map_note(analysis.model, analysis.n_examples, max_exact, seed)
        warnings.warn(f"{where}{note}", ApproximationWarning, stacklevel=user_stacklevel())


def kernelize(model: Any, datasets: list[Dataset], max_exact: int = MAX_EXACT_KERNEL_POINTS,
              seed: int | None = 0) -> FeatureMap:
    """The feature map of ``model`` over every training row of ``datasets`` (module docstring).

    Parameters
    ----------
    model : LinearModel or KernelModel
    datasets : list of Dataset
        Every dataset the problem touches (their rows are the expansion points).
    max_exact : int
        Largest number of expansion points; above it, a uniform Nystrom sample of this size
        (or this many random Fourier features, by the model's ``approximation``).
    seed : int, optional
        Seed of the Nystrom sample or of the random features.
    """
    if not hasattr(model, "kernel"):
        return FeatureMap()
    precomputed = model.kernel == "precomputed"
    if precomputed and len(datasets) != 1:
        raise SpecError("kernel='precomputed' needs a problem over one dataset (its X is the "
                        f"training kernel matrix); this one touches {len(datasets)}.")
    P = _stack(datasets)
    n = P.shape[0]
    approximation = approximation_of(model, n, max_exact, seed)
    spec = KernelSpec.from_model(model, P.shape[1])
    if n > max_exact and model.approximation == "random_features":
        fourier = RandomFourier(n_components=max_exact, gamma=spec.gamma,
                                seed=0 if seed is None else seed)
        state = fourier._fit(np.empty((0, P.shape[1])))
        return FeatureMap(spec, approximation=approximation, fourier=fourier,
                          fourier_state=state, draw=f"fourier{max_exact}s{fourier.seed}")
    rows = np.arange(n)
    draw = ""
    if n > max_exact:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_exact, replace=False))
        P = P[rows]
        draw = f"nystrom{max_exact}s{'random' if seed is None else seed}"
    if precomputed:
        K = P[:, rows]
        K = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=np.float64)
    else:
        K = kernel_block(spec, P, P)
    vals, vecs = np.linalg.eigh(0.5 * (K + K.T))
    keep = vals > 1e-10 * max(1.0, float(vals.max(initial=0.0)))
    transform = vecs[:, keep] / np.sqrt(vals[keep])
    if precomputed:
        return FeatureMap(spec, None, transform, approximation, columns=rows, n_train=n,
                          draw=draw)
    return FeatureMap(spec, P, transform, approximation, draw=draw)


def kernelized(analysis: Any, max_exact: int = MAX_EXACT_KERNEL_POINTS, seed: int | None = 0,
               fmap: FeatureMap | None = None) -> tuple[FeatureMap, dict[int, Features]]:
    """The feature map of ``analysis``'s model (:func:`kernelize`; ``fmap`` when given, such as
    the whole data's map for the chain on a row sample of it) and psi(X) of each of its
    datasets, keyed by ``id(dataset)``."""
    if fmap is None:
        fmap = kernelize(analysis.model, analysis.datasets, max_exact, seed)
    return fmap, {id(d): fmap.apply(d.X) for d in analysis.datasets}
