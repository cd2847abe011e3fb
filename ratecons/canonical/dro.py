"""The phi-divergence DRO program (eq. 2 of the DRO paper) as plain data.

    minimize_theta  R(theta) + (l2/2) ||w||^2,
    R(theta) = max { sum_n p_n l(m_n(theta)) : (1/N) sum_n phi(N p_n) <= rho, sum p = 1, p >= 0 },

with a linear score f(x) = <w, x> - b, theta = (w, b) (just w without an intercept), signed
labels y~_n in {-1, +1} and margins m_n = y~_n f(x_n). The losses are functions of the margin
(:data:`ratecons.loss_functions.MARGIN_LOSSES`); the gradient of l(m_n(theta)) is
l'(m_n) y~_n (x_n, -1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..data import Features
from ..loss_functions import LOSS_CURVATURE, margin_loss
from ..shapes import ExampleShape

if TYPE_CHECKING:  # pragma: no cover
    from ..numerics.phi import Phi

__all__ = ["DROProgram"]


@dataclass
class DROProgram(ExampleShape):
    """The DRO problem (module docstring) on N examples.

    Attributes
    ----------
    X : ndarray or csr_matrix, shape (N, d)
    y : ndarray, shape (N,)
        Signed labels in {-1.0, +1.0}.
    loss : str
        A key of :data:`ratecons.loss_functions.MARGIN_LOSSES`.
    phi : Phi
    rho : float
    l2 : float
        (l2/2) ||w||^2 is added to R(theta); the intercept is not regularized.
    fit_intercept : bool
    rho_bound : float
        The paper's Assumption 1 bound rho_1(N, phi).
    name : str
    notes : list of str
    """

    X: Features
    y: np.ndarray
    loss: str
    phi: Phi
    rho: float
    l2: float = 0.0
    fit_intercept: bool = True
    rho_bound: float = float("inf")
    name: str = ""
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ sizes
    @property
    def dim(self) -> int:
        """Length of theta: d (+1 with an intercept)."""
        return self.d + int(self.fit_intercept)

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """theta -> (w, b)."""
        theta = np.asarray(theta, dtype=np.float64)
        return theta[: self.d], (float(theta[self.d]) if self.fit_intercept else 0.0)

    # ------------------------------------------------------------------ evaluation
    def margins(self, theta: np.ndarray, index: np.ndarray | None = None) -> np.ndarray:
        """m_n = y~_n (<w, x_n> - b) on all examples or the rows ``index``."""
        w, b = self.split(theta)
        X = self.X if index is None else self.X[index]
        y = self.y if index is None else self.y[index]
        return y * (np.asarray(X @ w).ravel() - b)

    def losses(
        self, theta: np.ndarray, index: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(l(m_n), l'(m_n)) on all examples or the rows ``index``."""
        return margin_loss(self.loss, self.margins(theta, index))

    def weighted_gradient(
        self, weights: np.ndarray, slopes: np.ndarray, index: np.ndarray | None = None
    ) -> np.ndarray:
        """sum_n weights_n grad l(m_n(theta)) = sum_n weights_n l'(m_n) y~_n (x_n, -1) (eq. 6)."""
        X = self.X if index is None else self.X[index]
        y = self.y if index is None else self.y[index]
        c = weights * slopes * y
        gw = np.asarray(X.T @ c).ravel()
        if self.fit_intercept:
            return np.append(gw, -c.sum())
        return gw

    def regularizer(self, theta: np.ndarray) -> float:
        w, _ = self.split(theta)
        return 0.5 * self.l2 * float(w @ w)

    def regularizer_gradient(self, theta: np.ndarray) -> np.ndarray:
        g = np.zeros(self.dim)
        g[: self.d] = self.l2 * np.asarray(theta, dtype=np.float64)[: self.d]
        return g

    def smoothness_estimate(self) -> float:
        """A rough curvature scale of the objective: l'' bound x mean ||(x, -1)||^2 x
        (1 + sqrt(rho)) + l2, used by the default step size (gamma_0 = 1 / this)."""
        if sp.issparse(self.X):
            sq = np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", self.X, self.X)
        scale = float(np.mean(sq)) + float(self.fit_intercept)
        return LOSS_CURVATURE[self.loss] * scale * (1.0 + np.sqrt(self.rho)) + self.l2

    # ------------------------------------------------------------------ display
    def summary(self) -> str:
        kind = "sparse" if sp.issparse(self.X) else "dense"
        return (
            f"phi-divergence DRO program (eq. 2): N={self.n} examples, d={self.d} features "
            f"({kind}), loss={self.loss}, phi={self.phi.name}, rho={self.rho:g} "
            f"(Assumption 1 bound {self.rho_bound:.3g}), l2={self.l2:g}, "
            f"intercept={'yes' if self.fit_intercept else 'no'}"
        )

    def describe(self) -> str:
        """The program in words and numbers."""
        pos = int(np.sum(self.y > 0))
        lines = [
            self.summary(),
            "",
            "minimize_theta  max_P sum_n p_n l(y_n (<w, x_n> - b)) + (l2/2) ||w||^2",
            "  over P with (1/N) sum_n phi(N p_n) <= rho, sum p = 1, p >= 0",
            f"data: {self.name or 'unnamed'}: {pos} labelled +1, {self.n - pos} labelled -1",
            f"theta: {self.dim} parameters (w in R^{self.d}"
            + (", b)" if self.fit_intercept else ")"),
        ]
        lines += self.notes
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "d": self.d, "loss": self.loss, "phi": self.phi.name,
                "rho": self.rho, "l2": self.l2, "fit_intercept": self.fit_intercept}
