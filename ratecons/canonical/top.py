"""Canonical form of the ranking-at-the-top family (TopPushK and Pat&Mat, Sections 3.1-3.3).

Plain data: the positives X^+ and the threshold examples X~ (the negatives, or all examples),
the kernel, K (TopPushK family) or tau and theta (Pat&Mat family), the surrogate, lambda and
C = 1 / (lambda n_+). The duals (7) and (10) act on v = (alpha, beta) with the signed kernel
matrix K = S k(P, P) S, P = (X^+; X~), S = diag(+1 (n_+ times), -1 (n~ times)) (eq. 14), and
the "dual scores" s = K v (eq. 15) are

    s_i = <w, x_i^+> (i <= n_+),    s_{n_+ + j} = -<w, x~_j>,

with w = sum_i alpha_i x_i^+ - sum_j beta_j x~_j (eqs. 8 and 11). The objectives are evaluated
from the scores: :meth:`TopForm.primal_c` gives (6)/(9) (the C form), :meth:`TopForm.dual_c`
gives (7a)/(10a); the user-facing objective (3) is lambda times the C form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..kernels import KernelSpec, kernel_block, kernel_diagonal
from ..loss_functions import surrogate as surrogate_value
from ..thresholds import surrogate_quantile, top_k_mean

__all__ = ["TopForm"]

_NAMES = {"toppush": "TopPush", "toppushk": "TopPushK", "topmeank": "TopMeanK",
          "tau-fpl": "tau-FPL", "pat&mat": "Pat&Mat", "pat&mat-np": "Pat&Mat-NP"}


@dataclass
class TopForm:
    """Dual-ready data of one TopPushK- or Pat&Mat-family problem.

    Attributes
    ----------
    formulation : str
        ``toppush``, ``toppushk``, ``topmeank``, ``tau-fpl``, ``pat&mat`` or ``pat&mat-np``.
    family : str
        ``toppushk`` (dual (7)) or ``patmat`` (dual (10)).
    surrogate : str
        ``hinge`` or ``quadratic_hinge``.
    K : int or None
        Number of largest scores averaged by the threshold (TopPushK family).
    tau, theta : float or None
        Quantile level and surrogate scale of the Pat&Mat threshold.
    lam : float
        Regularization lambda of (3) (the model's ``l2``; 0 only for linear models with l1 > 0,
        which only the primal methods solve).
    kernel : KernelSpec
    X_pos, X_tilde : array or CSR matrix, or None
        Features of the positives and of the threshold examples (None for precomputed kernels).
    gram : ndarray or None
        For ``precomputed`` kernels: the user's n x n training kernel matrix.
    pos_index, tilde_index : ndarray
        Rows of the training data behind X_pos and X_tilde.
    linear_model : bool
        True for ``rc.LinearModel``: w is explicit and the CVXPY reference solves the primal.
    l1 : float
        Weight of l1 ||w||_1 added to (3) (linear models; primal methods only).
    """

    formulation: str
    family: str
    surrogate: str
    K: int | None
    tau: float | None
    theta: float
    lam: float
    kernel: KernelSpec
    X_pos: Any
    X_tilde: Any
    gram: np.ndarray | None
    pos_index: np.ndarray
    tilde_index: np.ndarray
    linear_model: bool
    l1: float = 0.0
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ sizes and constants
    @property
    def name(self) -> str:
        return _NAMES[self.formulation]

    @property
    def n_pos(self) -> int:
        return int(self.pos_index.size)

    @property
    def n_tilde(self) -> int:
        return int(self.tilde_index.size)

    @property
    def m(self) -> int:
        """Number of dual variables n_+ + n~ (without delta)."""
        return self.n_pos + self.n_tilde

    @property
    def C(self) -> float:
        """C = 1 / (lambda n_+) of the dual forms (Section 4.2); inf when lambda = 0."""
        return 1.0 / (self.lam * self.n_pos) if self.lam > 0 else np.inf

    @property
    def d(self) -> int:
        return int(self.gram.shape[0] if self.gram is not None else self.X_pos.shape[1])

    @property
    def signs(self) -> np.ndarray:
        return np.concatenate([np.ones(self.n_pos), -np.ones(self.n_tilde)])

    @property
    def gram_bytes(self) -> int:
        """Memory of the full signed kernel matrix in float64."""
        return 8 * self.m * self.m

    # ------------------------------------------------------------------ kernel matrix
    def points(self) -> Any:
        """P = (X^+; X~), the rows behind the dual variables (alpha, beta)."""
        if sp.issparse(self.X_pos):
            return sp.vstack([self.X_pos, self.X_tilde]).tocsr()
        return np.vstack([np.asarray(self.X_pos), np.asarray(self.X_tilde)])

    def signed_block(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """Rows ``rows`` (and columns ``cols``, default all) of K = S k(P, P) S."""
        sg = self.signs
        cols = np.arange(self.m) if cols is None else cols
        if self.gram is not None:
            idx = np.concatenate([self.pos_index, self.tilde_index])
            block = np.asarray(self.gram[np.ix_(idx[rows], idx[cols])], dtype=np.float64)
        else:
            P = self.points()
            block = kernel_block(self.kernel, P[rows], P[cols])
        return block * sg[rows][:, None] * sg[cols][None, :]

    def signed_gram(self) -> np.ndarray:
        """The full m x m matrix K of eq. (14) (check :attr:`gram_bytes` first)."""
        return self.signed_block(np.arange(self.m))

    def diagonal(self) -> np.ndarray:
        """K_ll for every l."""
        if self.gram is not None:
            idx = np.concatenate([self.pos_index, self.tilde_index])
            return np.asarray(self.gram[idx, idx], dtype=np.float64)
        return kernel_diagonal(self.kernel, self.points())

    # ------------------------------------------------------------------ objectives
    def threshold_from_scores(self, s_tilde: np.ndarray) -> float:
        """t = G(s) from the scores <w, x~_j> of the threshold examples (Table 1)."""
        if self.family == "toppushk":
            return top_k_mean(s_tilde, int(self.K))
        return surrogate_quantile(s_tilde, float(self.tau), self.theta, self.surrogate)

    def primal_c(self, s_pos: np.ndarray, s_tilde: np.ndarray, wnorm2: float) -> float:
        """Objective (6)/(9): ||w||^2 / 2 + C sum_i l(t - <w, x_i^+>)."""
        t = self.threshold_from_scores(s_tilde)
        return 0.5 * wnorm2 + self.C * float(np.sum(surrogate_value(self.surrogate, t - s_pos)))

    def objective_at_zero(self) -> float:
        """The objective (3) at w = 0: every score 0, t = G(0) (1 for the TopPushK family,
        the surrogate loss at (1 - tau)/theta for Pat&Mat with the hinge)."""
        t = self.threshold_from_scores(np.zeros(self.n_tilde))
        return float(surrogate_value(self.surrogate, np.array([t]))[0])

    def primal_from_dual_scores(self, v: np.ndarray, s: np.ndarray) -> float:
        """Objective (6)/(9) at w(v) given the dual scores s = K v (eq. 15)."""
        n = self.n_pos
        return self.primal_c(s[:n], -s[n:], float(v @ s))

    def optimal_delta(self, beta: np.ndarray) -> float:
        """The best delta of (10) for fixed beta: eq. (39) (hinge) or (42) (quadratic)."""
        if self.surrogate == "hinge":
            return float(np.max(beta, initial=0.0)) / self.theta
        return float(np.sqrt(np.sum(beta * beta) / (4.0 * self.theta**2 * self.n_tilde
                                                      * self.tau)))

    def dual_c(self, v: np.ndarray, s: np.ndarray, delta: float | None = None) -> float:
        """Objective (7a) or (10a) at v = (alpha, beta) (and delta) with s = K v."""
        n = self.n_pos
        alpha, beta = v[:n], v[n:]
        val = -0.5 * float(v @ s) + float(alpha.sum())
        if self.surrogate == "quadratic_hinge":
            val -= float(alpha @ alpha) / (4.0 * self.C)
        if self.family == "patmat":
            if delta is None:
                delta = self.optimal_delta(beta)
            val += float(beta.sum()) / self.theta - delta * self.n_tilde * float(self.tau)
            if self.surrogate == "quadratic_hinge" and delta > 0:
                val -= float(beta @ beta) / (4.0 * delta * self.theta**2)
        return val

    def dual_violation(self, v: np.ndarray, delta: float | None = None) -> float:
        """Largest violation of the dual constraints (7b-7c), (18c) / (10b-10c), (38c-38d)."""
        n = self.n_pos
        alpha, beta = v[:n], v[n:]
        viol = [abs(alpha.sum() - beta.sum()), float(np.max(-v, initial=0.0))]
        if self.surrogate == "hinge":
            viol.append(float(np.max(alpha - self.C, initial=0.0)))
        if self.family == "toppushk" and self.K > 1:
            viol.append(float(np.max(beta - alpha.sum() / self.K, initial=0.0)))
        if self.family == "patmat" and self.surrogate == "hinge" and delta is not None:
            viol.append(float(np.max(beta - delta * self.theta, initial=0.0)))
        return max(viol)

    # ------------------------------------------------------------------ reports
    def summary(self) -> str:
        par = (f"K={self.K}" if self.family == "toppushk"
               else f"tau={self.tau:g}, theta={self.theta:g}")
        model = "linear model" if self.linear_model else f"kernel {self.kernel.describe()}"
        reg = (f"lambda={self.lam:g} (C={self.C:.4g})" if self.lam > 0
               else f"lambda=0, l1={self.l1:g}")
        if self.l1 > 0 and self.lam > 0:
            reg += f", l1={self.l1:g}"
        return (f"{self.name} ({'dual (7)' if self.family == 'toppushk' else 'dual (10)'}): "
                f"n+={self.n_pos}, n~={self.n_tilde}, d={self.d}, {par}, {self.surrogate}, "
                f"{reg}, {model}")

    def describe(self) -> str:
        if self.family == "toppushk":
            thr = f"t = mean of the {self.K} largest scores of the {self._among()} (6c)"
        else:
            thr = (f"t solves (1/{self.n_tilde}) sum_j l({self.theta:g} (s_j - t)) = "
                   f"{self.tau:g} over the {self._among()} (9)")
        lines = [
            self.summary(),
            "",
            "minimize  (lambda/2)||w||^2 " + ("+ l1 ||w||_1 " if self.l1 > 0 else "")
            + f"+ (1/n+) sum_(i in I+) {self.surrogate}(t - s_i)",
            f"  with    {thr}",
            f"dual variables: alpha (n+={self.n_pos}), beta (n~={self.n_tilde})"
            + (", delta" if self.family == "patmat" else ""),
            f"signed kernel matrix K: {self.m} x {self.m} "
            f"({self.gram_bytes / 2**20:.1f} MiB as float64)",
        ]
        return "\n".join(lines + self.notes)

    def _among(self) -> str:
        return "negatives" if self.formulation in ("toppush", "toppushk", "tau-fpl",
                                                   "pat&mat-np") else "examples"
