"""The one kernel formula, k(a, b) from <a, b> and the squared norms: used on arrays by
:mod:`ratecons.kernels` and compiled by :mod:`ratecons.kernel_loops`. It imports nothing of
the package, so both can import it without a cycle."""

from __future__ import annotations

import numpy as np

__all__ = ["kernel_from_dot"]


def kernel_from_dot(code: int, dot: np.ndarray | float, sq_a: np.ndarray | float,
                    sq_b: np.ndarray | float, gamma: float, degree: float,
                    coef0: float) -> np.ndarray | float:
    """k(a, b) from <a, b> and the squared norms ||a||^2, ||b||^2: the one kernel formula.

    ``code`` is :data:`ratecons.kernels.KERNEL_CODES` of the kernel (not ``precomputed``).
    Arrays broadcast (:func:`ratecons.kernels.kernel_diagonal`); :mod:`ratecons.kernel_loops`
    compiles this same function for scalars with numba (the ranking duals' loops and
    :func:`ratecons.kernels.kernel_block`).
    """
    if code == 0:
        return dot
    if code == 1:
        return np.exp(-gamma * np.maximum(sq_a + sq_b - 2.0 * dot, 0.0))
    return (gamma * dot + coef0) ** degree
