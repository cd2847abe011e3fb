"""One evaluated point of the robust loss: F(theta), its gradient and the worst-case weights.

Ghosh & Squillante, eq. 2 (F), eq. 6 (the gradient) and problem (4) (P*); filled in by
:func:`ratecons.solvers.dro_eval.evaluate` in memory and by
:class:`ratecons.solvers.dro_dask.DaskPasses` on Dask data, read by the certificate
(:mod:`ratecons.solvers.dro_certificate`) and the DRO solvers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..numerics.inner_max import InnerSolution

__all__ = ["Evaluation"]


@dataclass
class Evaluation:
    """F(theta), its gradient and what the lower bound of
    :func:`ratecons.solvers.dro_certificate.lower_bound` reuses.

    Attributes
    ----------
    theta : ndarray
    value : float
        F(theta) = R(theta) + (l2/2)||w||^2 on all N examples.
    grad : ndarray
        grad F(theta): the gradient (6) with the full-data P*, plus l2 w.
    inner : InnerSolution
        P*(theta) and the dual variables of (5).
    margins, slope : ndarray
        m_n(theta) and l'(m_n(theta)) of every example.
    parts : ndarray, shape (d, 2)
        sum_n p_n l'(m_n) y~_n x_n over the examples labelled +1 (column 0) and -1 (column 1).
    """

    theta: np.ndarray
    value: float
    grad: np.ndarray
    inner: InnerSolution
    margins: np.ndarray
    slope: np.ndarray
    parts: np.ndarray

    def margin_range(self) -> tuple[float, float]:
        """The smallest and the largest margin."""
        return float(np.min(self.margins)), float(np.max(self.margins))
