"""Robust-loss pieces of the structured step: the chi-square and KL support functions of a
phi-divergence ball in their dual form, per example given two scalar variables.

Ghosh & Squillante (the DRO paper), eq. (5): the robust loss over the ball
{P : (1/n) sum phi(n p_i) <= rho} is

    R = min_{lam > 0, eta}  lam rho + eta + lam (1/n) sum_i phi*((l_i - eta) / lam),

with phi* the conjugate of phi on s >= 0 (:mod:`ratecons.phi_divergence`). Given (eta, lam)
it is a sum of per-example terms, each a convex function of (l_i, eta, lam) (a perspective of
phi*, nondecreasing in l_i), so the structured interior point keeps eta and lam as two of its
free scalar variables v and each example's term adds

- curvature on its score z_i (a smooth loss l_i = l(y_i z_i): psi_tt l'^2 + psi_t l'') or on
  its hinge epigraph variable u_k (l_i = u_k >= max(0, 1 - y z)),
- cross terms between z_i (or u_k) and (eta, lam),
- a 2 x 2 block on (eta, lam),

to the Newton system: the reduced system stays one weighted Gram product plus rank-two
corrections through the free variables, never n x n.

With t = l - eta the per-example functions psi(t, lam) = lam phi*(t / lam) are

- chi-square, phi*(t) = -1 + max(0, t + 2)^2 / 4: with eta shifted by 2 lam,
  R = min lam (1 + rho) + eta + (1/n) sum max(0, t_i)^2 / (4 lam) (psi is C^1: its second
  derivative jumps where t_i = 0, which the Newton steps meet as a generalized Hessian);
- KL, phi*(t) = exp(t) - 1: R = min lam (rho - 1) + eta + (1/n) sum lam exp(t_i / lam).

Only the objective row takes these pieces (the support function is convex; as a constraint
row its multiplier would scale the per-example terms, which this module does not do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..loss_functions import margin_loss
from .margin_curvature import SMOOTH_LOSSES

__all__ = ["ROBUST_PHIS", "RobustPieces", "RobustTerms", "robust_terms", "robust_value",
           "robust_start"]

#: the divergences with a structured lowering: name -> the coefficient of lam in R beside rho
ROBUST_PHIS = {"chi2": 1.0, "kl": -1.0}
#: largest exponent t / lam evaluated for KL (exp overflows past about 709); an iterate that far
#: out is far from the optimum, where t / lam stays of order log(n) / rho
MAX_EXPONENT = 600.0


@dataclass
class RobustPieces:
    """coef * R over the losses of ``index`` (module docstring), in the objective row.

    Attributes
    ----------
    phi : {"chi2", "kl"}
    rho : float
        The ball's radius.
    coef : float
        Weight of the term in the objective (> 0).
    loss : str
        ``"hinge"`` (the losses are the epigraph variables u_k of hinge pieces
        max(0, 1 - y z) of the form, with no coefficient in any row) or a smooth margin loss.
    index : ndarray, shape (n,)
        Hinge: the pieces k; smooth: the example rows of the stacked features.
    label : ndarray, shape (n,)
        y in {-1, +1} (smooth losses; unused for hinge).
    eta, lam : int
        The positions of eta and lam among the form's free variables v.
    """

    phi: str
    rho: float
    coef: float
    loss: str
    index: np.ndarray
    label: np.ndarray
    eta: int
    lam: int

    @property
    def n(self) -> int:
        return int(self.index.size)

    @property
    def on_pieces(self) -> bool:
        return self.loss == "hinge"


def _perspective(phi: str, t: np.ndarray, lam: float
                 ) -> tuple[np.ndarray, ...]:
    """psi(t, lam) and its derivatives (psi, psi_t, psi_lam, psi_tt, psi_tl, psi_ll)."""
    if phi == "chi2":
        tp = np.maximum(t, 0.0)
        on = (t > 0).astype(np.float64)
        return (tp ** 2 / (4 * lam), tp / (2 * lam), -tp ** 2 / (4 * lam ** 2),
                on / (2 * lam), -tp / (2 * lam ** 2), tp ** 2 / (2 * lam ** 3))
    ratio = np.minimum(t / lam, MAX_EXPONENT)
    E = np.exp(ratio)
    return (lam * E, E, E * (1.0 - ratio), E / lam, -ratio * E / lam, ratio ** 2 * E / lam)


def _losses(piece: RobustPieces, z: np.ndarray, u: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The losses l_i with l'(y z) y and l''(y z) (zeros for the hinge epigraphs)."""
    if piece.on_pieces:
        zero = np.zeros(piece.n)
        return u[piece.index], zero, zero
    margins = piece.label * z[piece.index]
    loss, d1 = margin_loss(piece.loss, margins)
    return loss, piece.label * d1, SMOOTH_LOSSES[piece.loss](margins)


@dataclass
class RobustTerms:
    """Every robust piece's value, gradient and Hessian at one iterate, scattered to the
    examples (N), the hinge pieces (K) and the free variables (r)."""

    value: float
    g_z: np.ndarray  # (N,)
    g_u: np.ndarray  # (K,)
    g_v: np.ndarray  # (r,)
    h_z: np.ndarray  # (N,) diagonal on z
    h_u: np.ndarray  # (K,) diagonal on u
    E_z: np.ndarray  # (N, r) cross z-v
    c_u: np.ndarray  # (K, r) cross u-v
    H_v: np.ndarray  # (r, r)

    def hessian_apply(self, dz: np.ndarray, du: np.ndarray, dv: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The Hessian's cross and free-variable parts applied to (dz, du, dv) (the diagonal
        on z enters the smooth curvature)."""
        return (self.E_z @ dv, self.h_u * du + self.c_u @ dv,
                self.E_z.T @ dz + self.c_u.T @ du + self.H_v @ dv)


def robust_terms(pieces: list[RobustPieces], scale: float, z: np.ndarray, u: np.ndarray,
                 v: np.ndarray, K: int) -> RobustTerms:
    """:class:`RobustTerms` of ``pieces`` at (z, u, v), every term times ``scale`` (the
    objective row's scaling)."""
    N, r = z.size, v.size
    out = RobustTerms(0.0, np.zeros(N), np.zeros(K), np.zeros(r), np.zeros(N), np.zeros(K),
                      np.zeros((N, r)), np.zeros((K, r)), np.zeros((r, r)))
    for piece in pieces:
        c = scale * piece.coef
        weight = c / piece.n
        eta, lam = float(v[piece.eta]), float(v[piece.lam])
        loss, d1, d2 = _losses(piece, z, u)
        psi, p_t, p_l, p_tt, p_tl, p_ll = _perspective(piece.phi, loss - eta, lam)
        out.value += c * (lam * (piece.rho + ROBUST_PHIS[piece.phi]) + eta) + weight * psi.sum()
        out.g_v[piece.eta] += c - weight * p_t.sum()
        out.g_v[piece.lam] += c * (piece.rho + ROBUST_PHIS[piece.phi]) + weight * p_l.sum()
        ie, il = piece.eta, piece.lam
        out.H_v[ie, ie] += weight * p_tt.sum()
        out.H_v[il, il] += weight * p_ll.sum()
        out.H_v[ie, il] -= weight * p_tl.sum()
        out.H_v[il, ie] -= weight * p_tl.sum()
        if piece.on_pieces:
            out.g_u[piece.index] += weight * p_t
            out.h_u[piece.index] += weight * p_tt
            out.c_u[piece.index, ie] -= weight * p_tt
            out.c_u[piece.index, il] += weight * p_tl
        else:
            out.g_z += np.bincount(piece.index, weights=weight * p_t * d1, minlength=N)
            out.h_z += np.bincount(piece.index, weights=weight * (p_tt * d1 ** 2 + p_t * d2),
                                   minlength=N)
            out.E_z[:, ie] -= np.bincount(piece.index, weights=weight * p_tt * d1, minlength=N)
            out.E_z[:, il] += np.bincount(piece.index, weights=weight * p_tl * d1, minlength=N)
    return out


def robust_value(pieces: list[RobustPieces], z: np.ndarray, hinge: np.ndarray,
                 v: np.ndarray) -> float:
    """sum coef * (the dual form at (eta, lam) of v) with the exact losses (``hinge``: the
    pieces' values max(0, a z + c)); equal to the robust losses at the optimal (eta, lam)."""
    return robust_terms(pieces, 1.0, z, hinge, v, hinge.size).value


def robust_start(pieces: list[RobustPieces], z: np.ndarray, u: np.ndarray,
                 v: np.ndarray) -> np.ndarray:
    """v with each piece's (eta, lam) set for its losses at (z, u): lam = 1 (losses are of
    order one), eta = lam log mean exp(l / lam) for KL (the minimizing eta), min(l) - 1 for
    chi-square (every example on the curved side)."""
    v = v.copy()
    for piece in pieces:
        loss, _, _ = _losses(piece, z, u)
        lam = 1.0
        if piece.phi == "kl":
            top = float(np.max(loss))
            eta = top + lam * float(np.log(np.mean(np.exp((loss - top) / lam))))
        else:
            eta = float(np.min(loss)) - 1.0
        v[piece.eta], v[piece.lam] = eta, lam
    return v
