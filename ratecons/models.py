"""Score models and their regularizers (spec layer: describes, never fits).

The linear model scores an example as f(x) = <w, x> - b (the sign convention of Goh et al.,
eq. 1), with an unregularized bias b. Its regularizer is (l2 / 2) ||w||_2^2 + l1 ||w||_1, so
``l2`` is the lambda of Problem 1 of the dataset-constraints paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import check_flag, parameter_error

__all__ = ["LinearModel", "KernelModel", "KERNELS"]

KERNELS = ("linear", "gaussian", "polynomial", "precomputed")
#: how a kernel model is made linear when it has more training rows than expansion points
APPROXIMATIONS = ("nystrom", "random_features")


def _nonnegative(value: Any, name: str, owner: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise parameter_error(name, owner, "a nonnegative float", value) from None
    if not np.isfinite(v) or v < 0:
        raise parameter_error(name, owner, "a nonnegative float", value)
    return v


@dataclass(frozen=True)
class LinearModel:
    """Linear scores f(x) = <w, x> - b.

    Parameters
    ----------
    l2 : float, default 1e-4
        lambda of the regularizer (lambda / 2) ||w||_2^2 (Problem 1 of Goh et al.).
    l1 : float, default 0
        Weight of an l1 penalty l1 * ||w||_1. With ``l2 == 0`` the problems of the rate family
        are linear programs.
    fit_intercept : bool, default True
        Learn the unregularized bias b; if False, b = 0.
    """

    l2: float = 1e-4
    l1: float = 0.0
    fit_intercept: bool = True
    #: scores in the representer form s = K a - b (False: s = Xw - b)
    is_kernel = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "l2", _nonnegative(self.l2, "l2", "LinearModel"))
        object.__setattr__(self, "l1", _nonnegative(self.l1, "l1", "LinearModel"))
        check_flag(self.fit_intercept, "fit_intercept", "LinearModel")

    @property
    def is_lp_representable(self) -> bool:
        """True when the regularizer adds no quadratic term."""
        return self.l2 == 0.0


@dataclass(frozen=True)
class KernelModel:
    """Kernel scores f(x) = sum_i a_i k(x_i, x) (the ranking-at-the-top family).

    Parameters
    ----------
    kernel : {"linear", "gaussian", "polynomial", "precomputed"}
    l2 : float, default 1e-3
        Regularization lambda (the ranking family's dual uses C = 1 / (lambda n_+), Sec. 4.2).
    gamma : float, optional
        Gaussian width parameter k(x, z) = exp(-gamma ||x - z||^2); None means the default of
        the ranking paper, 1 / d.
    degree, coef0 : polynomial kernel (gamma <x, z> + coef0) ** degree.
    approximation : {"nystrom", "random_features"}, default "nystrom"
        Where the problem is kernelized (the generic chain, its export) and the training rows
        outnumber the expansion points (``kernel_points``, 500 by default): a seeded Nystrom
        sample of the rows, or (gaussian kernel only) as many random Fourier features
        sqrt(2/D) cos(W x + u), W ~ N(0, 2 gamma I), u ~ U[0, 2 pi) (Rahimi and Recht). Up to
        ``kernel_points`` rows the representer form is exact either way; the ranking pattern's
        dual methods always use the exact kernel.
    """

    kernel: str = "gaussian"
    l2: float = 1e-3
    gamma: float | None = None
    degree: int = 3
    coef0: float = 1.0
    approximation: str = "nystrom"
    #: scores in the representer form s = K a - b
    is_kernel = True

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise parameter_error("kernel", "KernelModel", f"one of {KERNELS}", self.kernel)
        object.__setattr__(self, "l2", _nonnegative(self.l2, "l2", "KernelModel"))
        if self.gamma is not None and (not np.isfinite(self.gamma) or self.gamma <= 0):
            raise parameter_error("gamma", "KernelModel", "a positive float or None", self.gamma)
        if int(self.degree) != self.degree or self.degree < 1:
            raise parameter_error("degree", "KernelModel", "an int >= 1", self.degree)
        if self.approximation not in APPROXIMATIONS:
            raise parameter_error("approximation", "KernelModel", f"one of {APPROXIMATIONS}",
                                  self.approximation)
        if self.approximation == "random_features" and self.kernel != "gaussian":
            raise parameter_error("approximation", "KernelModel",
                                  "'nystrom' for a non-gaussian kernel (random Fourier features "
                                  "approximate the gaussian kernel)", self.approximation)
