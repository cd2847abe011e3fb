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

The same support function bounds a worst-case rate in a constraint row (``rc.worst_case``,
:mod:`ratecons.expr.robust`): there the per-example losses are l_i = c_i + h_i u_k with u_k the
epigraph of a hinge piece (the bound of eq. 4 of Goh et al. at the anchor, h_i >= 0) or a
constant c_i (the bound is the constant 1 past the anchor's ramp), and (eta, lam) are free
variables of the row: row_j <= bound holds exactly when some (eta, lam) make the dual form
<= bound. Its Lagrangian terms are the per-example terms times the row's multiplier (as the
smooth pieces' curvature is), and its gradient on (u, eta, lam) is the row's Jacobian, which
changes with the iterate (:class:`RobustRows`).

Only the objective row's (eta, lam) get the interior point's proximal damping
(``structured.ROBUST_DAMPING``, for the ray of (eta, lam) at w = 0). A constraint row's
Newton model is its linearization, so after each step its second-order remainder is left as
primal residual, in the row's scaled units (kappa = the ball's n: n times the remainder per
example), of order one while (eta, lam) move. A damping tied to the merit then kept their
steps short and so the remainder from falling: on the whole Adult split (chi-square
worst-case 80% rule, 11,395 women) eta crept 0.01-0.04 an iteration at a primal residual of
0.3 and every step ended ``numerical_error`` after 25 iterations (from 5,000 rows on);
undamped, the first step was ``optimal`` in 22. The row's lam is kept off 0 by
``structured_correctors.halve_at_most`` instead, and so is every other ball's lam
(:func:`halved_lams`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..loss_functions import margin_loss
from .margin_curvature import SMOOTH_LOSSES

__all__ = ["ROBUST_PHIS", "RobustPieces", "RobustRows", "RobustTerms", "halved_lams",
           "robust_terms",
           "robust_values", "robust_start"]

#: the divergences with a structured lowering: name -> the coefficient of lam in R beside rho
ROBUST_PHIS = {"chi2": 1.0, "kl": -1.0}
#: largest exponent t / lam evaluated for KL (exp overflows past about 709); an iterate that far
#: out is far from the optimum, where t / lam stays of order log(n) / rho
MAX_EXPONENT = 600.0


@dataclass
class RobustPieces:
    """coef * R over the losses of ``index`` (module docstring), in row ``row``.

    Attributes
    ----------
    phi : {"chi2", "kl"}
    rho : float
        The ball's radius.
    coef : float
        Weight of the term in its row (> 0).
    loss : str
        ``"hinge"`` (the losses are ``offset + factor * u_k`` with u_k the epigraph variables
        of hinge pieces of the form that enter no row linearly) or a smooth margin loss.
    index : ndarray, shape (n_pieces,)
        Hinge: the pieces k; smooth: the example rows of the stacked features.
    label : ndarray, shape (n_pieces,)
        y in {-1, +1} (smooth losses; unused for hinge).
    eta, lam : int
        The positions of eta and lam among the form's free variables v.
    row : int
        The form's row (0: the objective; j >= 1: constraint j, hinge losses only).
    factor, offset : ndarray, shape (n_pieces,), optional
        Hinge losses l_i = offset_i + factor_i u_k (default 0 + 1 u_k), factor >= 0.
    fixed : ndarray, optional
        Constant losses of the ball's examples that have no piece (they count in n).
    """

    phi: str
    rho: float
    coef: float
    loss: str
    index: np.ndarray
    label: np.ndarray
    eta: int
    lam: int
    row: int = 0
    factor: np.ndarray | None = None
    offset: np.ndarray | None = None
    fixed: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n(self) -> int:
        """The ball's examples: the pieces' and the fixed ones."""
        return int(self.index.size + self.fixed.size)

    @property
    def on_pieces(self) -> bool:
        return self.loss == "hinge"

    @property
    def slope(self) -> np.ndarray:
        """d l_i / d u_k of the hinge losses."""
        return np.ones(self.index.size) if self.factor is None else self.factor


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
    """The pieces' losses l_i with dl/dz and d2l/dz2 for smooth losses (l'(y z) y and
    l''(y z) y^2, y the margin factor), or dl/du and 0 for hinge epigraphs."""
    if piece.on_pieces:
        offset = 0.0 if piece.offset is None else piece.offset
        return offset + piece.slope * u[piece.index], piece.slope, np.zeros(piece.index.size)
    margins = piece.label * z[piece.index]
    loss, d1 = margin_loss(piece.loss, margins)
    return loss, piece.label * d1, piece.label ** 2 * SMOOTH_LOSSES[piece.loss](margins)


@dataclass
class RobustTerms:
    """The robust pieces' terms of the Lagrangian at one iterate (the objective row's pieces
    with weight 1, a constraint row's with its multiplier), scattered to the examples (N), the
    hinge pieces (K) and the free variables (r); ``value`` is the objective row's."""

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


@dataclass
class RobustRows:
    """The constraint rows' robust parts at one iterate (scaled rows): their values (m,) and
    their gradients on the hinge epigraphs (m, K) and on the free variables (m, r)."""

    values: np.ndarray
    on_u: np.ndarray
    on_v: np.ndarray


def _piece_terms(piece: RobustPieces, c: float, weight: float, out: RobustTerms,
                 rows: RobustRows, z: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
    """Add one piece (its row scaled by ``c``) to ``out`` with Lagrangian weight ``weight``
    and, for a constraint row, its value and gradient to ``rows``."""
    N = z.size
    each = c / piece.n
    eta, lam = float(v[piece.eta]), float(v[piece.lam])
    ie, il = piece.eta, piece.lam
    loss, d1, d2 = _losses(piece, z, u)
    psi, p_t, p_l, p_tt, p_tl, p_ll = _perspective(piece.phi, loss - eta, lam)
    fixed = _perspective(piece.phi, piece.fixed - eta, lam)
    linear = piece.rho + ROBUST_PHIS[piece.phi]
    value = c * (lam * linear + eta) + each * (psi.sum() + fixed[0].sum())
    g_eta = c - each * (p_t.sum() + fixed[1].sum())
    g_lam = c * linear + each * (p_l.sum() + fixed[2].sum())
    g_u = each * p_t * d1 if piece.on_pieces else None
    if piece.row == 0:
        out.value += value
    else:
        rows.values[piece.row - 1] += value
        rows.on_v[piece.row - 1, ie] += g_eta
        rows.on_v[piece.row - 1, il] += g_lam
        rows.on_u[piece.row - 1, piece.index] += g_u
    each *= weight
    out.g_v[ie] += weight * g_eta
    out.g_v[il] += weight * g_lam
    out.H_v[ie, ie] += each * (p_tt.sum() + fixed[3].sum())
    out.H_v[il, il] += each * (p_ll.sum() + fixed[5].sum())
    out.H_v[ie, il] -= each * (p_tl.sum() + fixed[4].sum())
    out.H_v[il, ie] -= each * (p_tl.sum() + fixed[4].sum())
    if piece.on_pieces:
        out.g_u[piece.index] += weight * g_u
        out.h_u[piece.index] += each * p_tt * d1 ** 2
        out.c_u[piece.index, ie] -= each * p_tt * d1
        out.c_u[piece.index, il] += each * p_tl * d1
    else:
        out.g_z += np.bincount(piece.index, weights=each * p_t * d1, minlength=N)
        out.h_z += np.bincount(piece.index, weights=each * (p_tt * d1 ** 2 + p_t * d2),
                               minlength=N)
        out.E_z[:, ie] -= np.bincount(piece.index, weights=each * p_tt * d1, minlength=N)
        out.E_z[:, il] += np.bincount(piece.index, weights=each * p_tl * d1, minlength=N)


def robust_terms(pieces: list[RobustPieces], scale: np.ndarray, weights: np.ndarray,
                 z: np.ndarray, u: np.ndarray, v: np.ndarray, K: int
                 ) -> tuple[RobustTerms, RobustRows]:
    """:class:`RobustTerms` and :class:`RobustRows` of ``pieces`` at (z, u, v): row j's
    pieces times ``scale[j]`` (the rows' scaling), and in the Lagrangian times ``weights[j]``
    (1 for the objective, the multiplier of a constraint row)."""
    N, r, m = z.size, v.size, scale.size - 1
    out = RobustTerms(0.0, np.zeros(N), np.zeros(K), np.zeros(r), np.zeros(N), np.zeros(K),
                      np.zeros((N, r)), np.zeros((K, r)), np.zeros((r, r)))
    rows = RobustRows(np.zeros(m), np.zeros((m, K)), np.zeros((m, r)))
    for piece in pieces:
        _piece_terms(piece, float(scale[piece.row]) * piece.coef, float(weights[piece.row]),
                     out, rows, z, u, v)
    return out, rows


def robust_values(pieces: list[RobustPieces], z: np.ndarray, hinge: np.ndarray,
                  v: np.ndarray, m: int) -> np.ndarray:
    """Every row's sum of coef * (the dual form at (eta, lam) of v) with the exact losses
    (``hinge``: the pieces' values max(0, a z + c)), shape (m + 1,); equal to the robust
    terms at the optimal (eta, lam) and above them elsewhere."""
    ones = np.ones(m + 1)
    terms, rows = robust_terms(pieces, ones, ones, z, hinge, v, hinge.size)
    return np.concatenate([[terms.value], rows.values])


def robust_start(pieces: list[RobustPieces], z: np.ndarray, u: np.ndarray,
                 v: np.ndarray) -> np.ndarray:
    """v with each piece's (eta, lam) set for its losses at (z, u): lam = 1 (losses are of
    order one), eta = lam log mean exp(l / lam) for KL (the minimizing eta), min(l) - 1 for
    chi-square (every example on the curved side)."""
    v = v.copy()
    for piece in pieces:
        loss = np.concatenate([_losses(piece, z, u)[0], piece.fixed])
        lam = 1.0
        if piece.phi == "kl":
            top = float(np.max(loss))
            eta = top + lam * float(np.log(np.mean(np.exp((loss - top) / lam))))
        else:
            eta = float(np.min(loss)) - 1.0
        v[piece.eta], v[piece.lam] = eta, lam
    return v


def halved_lams(pieces: list[RobustPieces], first: int) -> np.ndarray:
    """Positions (``first`` + the piece's lam) of the ball lams whose Newton steps are cut to
    lose at most half of lam (:func:`.structured_correctors.halve_at_most`): every support
    function's, in the objective and in constraint rows, chi-square and KL.

    KL's perspective lam exp((l - eta) / lam) is exponential in 1 / lam. A KL robust loss whose
    optimum is the constant model (every loss equal: the dual's lam* = 0, the support function
    the largest loss) drew full steps from lam = 0.1 to 1e-3 and then 1e-5, where t / lam hit
    :data:`MAX_EXPONENT` and the gradient 1e264; the step ended ``numerical_error`` after 50
    iterations (balanced letter_recognition, 20,000 rows, rho = 0.2; CLARABEL: log 2). Halving
    at most: ``optimal`` in 30 iterations at log 2 to 1e-9.

    Chi-square's perspective max(0, t)^2 / (4 lam) has curvature 1 / lam, and a large ball
    has lam* = 0 too (many losses tied at the top, near the constant model). With the
    objective's chi-square lam stepping freely, the structured method on 2,000 Adult rows
    (rho = 1, l2 = 1e-3) ran its 500 iterations and 20,000 Gaussian rows took 500 (37.4 s);
    with rho = 5, CLARABEL's fallback answered; inside a composition (Indian liver, rho = 1,
    an error-rate constraint) two steps ended ``numerical_error`` with lam pinned at 1e-10
    and went to the CVXPY step (729 iterations, 1.36 s, against 0.29 s for
    ``method="cvxpy"``). Halved at most, the same problems took 10, 12 and 32 iterations
    (0.13, 0.17 and 0.05 s), and rho = 0.1 the same iterations as before (docs/robust.md, "A
    large chi-square ball").
    """
    return np.array([first + p.lam for p in pieces], dtype=np.int64)
