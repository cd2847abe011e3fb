"""Primal objective and Lagrangian dual bound of linear ranking-at-the-top models.

For a linear model the problem (3) with the regularizer R(w) = (l2/2)||w||^2 + l1 ||w||_1 is

    minimize  R(w) + (1/n_+) sum_i l(t - <w, x_i^+>),   t = G(X~ w)   (Table 1),

and any multipliers of its LP/QP rows (the hinge rows of the positives, the rows of the LP form
of the threshold) give a lower bound on its optimum by Lagrangian duality. These two numbers
certify every primal method of the family (:mod:`ratecons.solvers.top_ipm`).
"""

from __future__ import annotations

import numpy as np

from ..canonical.top import TopForm
from .top_projections import project_toppushk

__all__ = ["dual_bound", "primal_objective"]


def primal_objective(form: TopForm, w: np.ndarray) -> float:
    """The objective (3) at w with the exact threshold t = G(X~ w) (Table 1), with the l1 term
    of ``form.l1``."""
    s_pos = np.asarray(form.X_pos @ w).ravel()
    s_tilde = np.asarray(form.X_tilde @ w).ravel()
    t = form.threshold_from_scores(s_tilde)
    loss = float(np.mean(np.maximum(0.0, 1.0 + t - s_pos) ** (1 if form.surrogate == "hinge"
                                                                 else 2)))
    return 0.5 * form.lam * float(w @ w) + form.l1 * float(np.abs(w).sum()) + loss


def dual_bound(form: TopForm, mu: np.ndarray, b: np.ndarray
               ) -> tuple[float, np.ndarray, np.ndarray]:
    """A certified lower bound on (3) from multipliers of the hinge rows (``mu``) and of the
    threshold rows (``b``: nu for TopPushK, theta nu for Pat&Mat).

    (mu, b) is first projected onto the feasible set of the dual (7) (Thm 3.10, with
    C = 1/n_+; the dual (7) of (3) has alpha = mu / lambda) or of (10) (clip and balance);
    the bound is then the Lagrangian dual of (3),

        sum mu [- n_+ ||mu||^2 / 4] [+ sum b / theta - delta n~ tau] - R*(z),
        z = X+^T mu - X~^T b,  R*(z) = sum_k (|z_k| - l1)_+^2 / (2 l2),

    with l1 = ``form.l1`` and l2 = ``form.lam``,

    which equals lambda times (7a)/(10a) when l1 = 0. With l2 = 0, R* is the indicator of
    ||z||_inf <= l1 and (mu, b) is scaled into it first. Returns (bound, mu, b).
    """
    l1, l2 = form.l1, form.lam
    npos = form.n_pos
    hinge = form.surrogate == "hinge"
    cap = 1.0 / npos if hinge else np.inf
    mu = np.maximum(np.asarray(mu, dtype=np.float64), 0.0)
    b = np.maximum(np.asarray(b, dtype=np.float64), 0.0)
    if form.family == "toppushk":
        mu, b = project_toppushk(mu, b, cap, int(form.K))
    else:
        mu = np.minimum(mu, cap)
        sa, sb = mu.sum(), b.sum()
        if sa > sb:
            mu = mu * (sb / sa)
        elif sb > sa:
            b = b * (sa / sb)
    z = (np.asarray(form.X_pos.T @ mu).ravel() - np.asarray(form.X_tilde.T @ b).ravel())

    def value(scale: float) -> float:
        m, bb = scale * mu, scale * b
        val = float(m.sum())
        if not hinge:
            val -= npos * float(m @ m) / 4.0
        if form.family == "patmat":
            val += float(bb.sum()) / form.theta - form.optimal_delta(bb) * form.n_tilde \
                * float(form.tau)
        return val

    if l2 > 0:
        excess = np.maximum(np.abs(z) - l1, 0.0)
        return value(1.0) - float(excess @ excess) / (2.0 * l2), mu, b
    zmax = float(np.abs(z).max(initial=0.0))
    scale = 1.0 if zmax <= l1 else l1 / zmax
    return value(scale), scale * mu, scale * b
