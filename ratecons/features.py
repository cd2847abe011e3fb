"""Feature maps psi(x) of minimax risk classifiers.

An MRC embeds an instance-label pair as Phi(x, y) = e_y kron psi(x) (Bondugula et al., Sec. II-A;
thesis eq. 1.4): the label's one-hot vector times a representation psi(x) of the instance. This
module provides psi:

- :class:`Linear`: the inputs themselves, with a leading intercept column of ones;
- :class:`RandomFourier`: random Fourier features cos(w^T x + b) approximating the Gaussian
  kernel exp(-gamma ||x - x'||^2) (Rahimi and Recht), with a leading intercept;
- :class:`RandomReLU`: random ReLU features max(0, w^T x + b), with a leading intercept;
- :class:`Callable`: any user function mapping an (n, d) array to an (n, p) array.

A map is *fitted* on training inputs (it draws its random weights there, with an explicit seed)
and then applied unchanged to any other data. Z-scoring of the inputs happens before the map
(see :class:`FittedFeatures`), with the training mean and standard deviation.
"""

from __future__ import annotations

from collections.abc import Callable as CallableType
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import DataError, parameter_error

__all__ = [
    "Callable",
    "FeatureMap",
    "FittedFeatures",
    "Linear",
    "RandomFourier",
    "RandomReLU",
    "as_feature_map",
]


def _dense(X: Any) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.toarray(), dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


class FeatureMap:
    """Base class of psi. Subclasses implement :meth:`_fit` and :meth:`_transform`."""

    #: short description used by ``describe()``
    name: str = "feature map"

    def _fit(self, Z: np.ndarray) -> dict[str, Any]:
        """Return the fitted state (random weights, ...) from training inputs ``Z``."""
        return {}

    def _transform(self, Z: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        raise NotImplementedError

    def n_features(self, d: int) -> int:
        """Dimension p of psi(x) for d-dimensional inputs."""
        raise NotImplementedError


@dataclass(frozen=True)
class Linear(FeatureMap):
    """psi(x) = [1, x] (or x without the intercept)."""

    intercept: bool = True
    name = "linear"

    def _transform(self, Z: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        if self.intercept:
            return np.hstack([np.ones((Z.shape[0], 1)), Z])
        return Z

    def n_features(self, d: int) -> int:
        return d + int(self.intercept)


@dataclass(frozen=True)
class RandomFourier(FeatureMap):
    """psi(x) = [1, cos(W x + b)] with W ~ N(0, 2 gamma I) and b ~ U[0, 2 pi) (seeded).

    ``n_components`` random features approximate (up to the factor 2 / n_components) the
    Gaussian kernel exp(-gamma ||x - x'||^2); ``gamma=None`` uses 1 / d, the natural scale for
    z-scored inputs.
    """

    n_components: int = 100
    gamma: float | None = None
    seed: int = 0
    name = "random Fourier"

    def __post_init__(self) -> None:
        if not isinstance(self.n_components, (int, np.integer)) or self.n_components < 1:
            raise parameter_error("n_components", "RandomFourier", "an int >= 1",
                                  self.n_components)
        if self.gamma is not None and not (np.isfinite(self.gamma) and self.gamma > 0):
            raise parameter_error("gamma", "RandomFourier", "a float > 0 or None", self.gamma)

    def _fit(self, Z: np.ndarray) -> dict[str, Any]:
        d = Z.shape[1]
        gamma = 1.0 / d if self.gamma is None else float(self.gamma)
        rng = np.random.default_rng(self.seed)
        W = rng.normal(scale=np.sqrt(2.0 * gamma), size=(d, self.n_components))
        b = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)
        return {"W": W, "b": b, "gamma": gamma}

    def _transform(self, Z: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        out = np.empty((Z.shape[0], self.n_components + 1))
        out[:, 0] = 1.0
        np.cos(Z @ state["W"] + state["b"], out=out[:, 1:])
        return out

    def n_features(self, d: int) -> int:
        return self.n_components + 1


@dataclass(frozen=True)
class RandomReLU(FeatureMap):
    """psi(x) = [1, max(0, W x + b)] with W ~ N(0, I / d) and b ~ N(0, 1) (seeded)."""

    n_components: int = 100
    seed: int = 0
    name = "random ReLU"

    def __post_init__(self) -> None:
        if not isinstance(self.n_components, (int, np.integer)) or self.n_components < 1:
            raise parameter_error("n_components", "RandomReLU", "an int >= 1",
                                  self.n_components)

    def _fit(self, Z: np.ndarray) -> dict[str, Any]:
        d = Z.shape[1]
        rng = np.random.default_rng(self.seed)
        return {"W": rng.normal(scale=1.0 / np.sqrt(d), size=(d, self.n_components)),
                "b": rng.normal(size=self.n_components)}

    def _transform(self, Z: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        out = np.empty((Z.shape[0], self.n_components + 1))
        out[:, 0] = 1.0
        np.maximum(Z @ state["W"] + state["b"], 0.0, out=out[:, 1:])
        return out

    def n_features(self, d: int) -> int:
        return self.n_components + 1


@dataclass(frozen=True)
class Callable(FeatureMap):
    """A user function ``fn(X) -> (n, p) array`` used as psi (no intercept is added)."""

    fn: CallableType[[np.ndarray], Any] = field(default=lambda Z: Z)
    name = "callable"

    def _transform(self, Z: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        out = np.asarray(self.fn(Z), dtype=np.float64)
        if out.ndim != 2 or out.shape[0] != Z.shape[0]:
            raise DataError(
                f"the feature callable must return an (n, p) array with one row per input "
                f"({Z.shape[0]}); got shape {out.shape}."
            )
        return out

    def n_features(self, d: int) -> int:
        return -1  # known only after a call


def as_feature_map(features: Any) -> FeatureMap:
    """Accept ``"linear"``, a :class:`FeatureMap` or a callable; reject anything else."""
    if isinstance(features, FeatureMap):
        return features
    if isinstance(features, str):
        if features == "linear":
            return Linear()
        raise parameter_error("features", "MomentSet",
                              "'linear', a ratecons.features map or a callable", features)
    if callable(features):
        return Callable(features)
    raise parameter_error("features", "MomentSet",
                          "'linear', a ratecons.features map or a callable", features)


class FittedFeatures:
    """psi fitted on training inputs: optional z-scoring, then the feature map.

    Parameters
    ----------
    feature_map : FeatureMap
    X : array or sparse matrix, shape (n, d)
        Training inputs; the z-scoring statistics and random weights come from them.
    standardize : bool
        Z-score the inputs with the training mean and (population) standard deviation; columns
        with zero deviation are only centred.
    """

    def __init__(self, feature_map: FeatureMap, X: Any, standardize: bool = True) -> None:
        Z = _dense(X)
        self.feature_map = feature_map
        self.d = Z.shape[1]
        self.standardize = standardize
        if standardize:
            self.mean = Z.mean(axis=0)
            std = Z.std(axis=0)
            self.scale = np.where(std > 0, std, 1.0)
        self.state = feature_map._fit(self._scale(Z))
        self.train_psi = self._apply(Z)
        self.p = self.train_psi.shape[1]

    def _scale(self, Z: np.ndarray) -> np.ndarray:
        return (Z - self.mean) / self.scale if self.standardize else Z

    def _apply(self, Z: np.ndarray) -> np.ndarray:
        psi = self.feature_map._transform(self._scale(Z), self.state)
        if not np.all(np.isfinite(psi)):
            raise DataError("the feature map produced NaN or infinite values.")
        return np.ascontiguousarray(psi)

    def __call__(self, X: Any) -> np.ndarray:
        """psi of new inputs, shape (n, p)."""
        Z = _dense(X)
        if Z.ndim == 1:
            Z = Z.reshape(1, -1)
        if Z.ndim != 2 or Z.shape[1] != self.d:
            raise DataError(
                f"the feature map was fitted on inputs with {self.d} columns; got shape "
                f"{Z.shape}."
            )
        if not np.all(np.isfinite(Z)):
            raise DataError("inputs contain NaN or infinite values.")
        out = self._apply(Z)
        if out.shape[1] != self.p:
            raise DataError(f"the feature map returned {out.shape[1]} columns, not {self.p}.")
        return out

    def describe(self) -> str:
        z = "z-scored inputs, " if self.standardize else ""
        return f"{self.feature_map.name} ({z}d={self.d} -> p={self.p})"
