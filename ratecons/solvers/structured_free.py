"""The free scalar variables' block of the structured interior point's reduced system
(:meth:`.structured_newton.NewtonSystem.factor`): the thresholds of ranking terms and the
(eta, lam) of the robust pieces couple with the hinge pieces through G and with the robust
pieces' curvature; after the pieces' elimination they leave a cross block with theta = (w, b)
and their own block.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .structured_kernels import scatter_product
from .structured_robust import RobustTerms

__all__ = ["free_block"]


def free_block(ipm: Any, W: dict, Du: np.ndarray, e: np.ndarray, rob: RobustTerms | None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The free variables' cross terms with theta = (w, b) and their own block after the
    pieces' elimination: with B_k = (-W_A a_k, -W_A G_k + c_k) the coupling of u_k to
    (z_{i_k}, v) (c_k: the robust pieces' u-v curvature), W_A (a, G)^T (a, G) - B^T B / Du
    leaves a (e G_k + (W_A / Du) c_k) on (z, v) and e G^T G + (W_A / Du)(G^T c + c^T G)
    - c^T c / Du on (v, v); the smooth robust pieces add their z-v and v-v curvature."""
    f = ipm.form
    N = ipm.rows.n
    G = ipm.G  # (:class:`.thin_products.FreeColumns`)
    on_examples = np.zeros((N, ipm.r))
    weight = e * f.hinge_slope
    for at, j in enumerate(G.nonzero):  # sum_k (e_k a_k) G[k, j] on example i_k, in order
        on_examples[:, j] = scatter_product(f.hinge_index, weight, G.columns[:, at], N)
    own = G.weighted_gram(e)
    if rob is not None:
        through = (W["A"] / Du)[:, None] * rob.c_u  # (K, r)
        for j in range(ipm.r):
            on_examples[:, j] += np.bincount(f.hinge_index, minlength=N,
                                             weights=f.hinge_slope * through[:, j])
        on_examples += rob.E_z
        mixed = G.transpose_times(through)
        own += mixed + mixed.T - rob.c_u.T @ (rob.c_u / Du[:, None]) + rob.H_v
        own[ipm.positive - ipm.p1, ipm.positive - ipm.p1] += W["L"]
    return ipm.q_transpose(on_examples), own
