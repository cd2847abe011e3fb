"""The U_t problem of Algorithm 2 for one multiplier (m = 1), solved exactly without an LP.

With one constraint, Alg 2's upper model (Goh et al. 2016, App. E) is the concave
piecewise-linear function h_t(v) = min_s c_s + g_s v of one variable, and U_t = max h_t over
[0, box]. Its maximum sits at 0, at the box's end or where a rising cut (g_i > 0) meets a
falling one (g_j < 0), so the candidates are enumerated and evaluated at once; the LP's dual
weights of the cuts (the mu of the primal recovery, (w, b) = sum_s mu_s (w_s, b_s)) follow in
closed form from the one or two cuts active there. This replaces a HiGHS solve (about 1.5 ms
for a handful of rows, most of it call overhead) at every Alg 2 iteration.
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_of_cuts_1d"]


def max_of_cuts_1d(slopes: np.ndarray, offsets: np.ndarray,
                   box: float) -> tuple[float, float, np.ndarray]:
    """``(v*, U, mu)``: the maximizer and maximum of h(v) = min_s offsets_s + slopes_s v over
    [0, box], and dual weights mu >= 0 (summing to 1) of the cuts.

    The dual of ``max z s.t. z <= c_s + g_s v, 0 <= v <= box`` has mu with sum_s mu_s = 1 and
    sum_s mu_s g_s = rho - sigma (rho, sigma >= 0 the multipliers of v <= box and v >= 0): one
    cut with g_s <= 0 active at v* = 0, one with g_s >= 0 active at v* = box, or the two cuts
    i, j meeting at an interior v*, weighted so that the slopes cancel,
    mu_i = -g_j / (g_i - g_j), mu_j = g_i / (g_i - g_j).

    Parameters
    ----------
    slopes, offsets : ndarray, shape (k,)
        g_s and c_s of the k >= 1 cuts.
    box : float
        The upper end of the interval, > 0.
    """
    g = np.asarray(slopes, dtype=np.float64).ravel()
    c = np.asarray(offsets, dtype=np.float64).ravel()
    if g.size == 0 or g.shape != c.shape:
        raise ValueError(f"need k >= 1 cuts with one slope and one offset each; got "
                         f"{g.size} slopes and {c.size} offsets.")
    up, down = np.flatnonzero(g > 0.0), np.flatnonzero(g < 0.0)
    i, j = (x.ravel() for x in np.meshgrid(up, down, indexing="ij"))
    cross = (c[j] - c[i]) / (g[i] - g[j])
    inside = (cross > 0.0) & (cross < box)
    points = np.concatenate([[0.0, box], cross[inside]])
    values = np.min(np.outer(points, g) + c, axis=1)
    best = values.size - 1 - int(np.argmax(values[::-1]))  # ties: the newest cuts, as HiGHS
    v, top = float(points[best]), float(values[best])
    mu = np.zeros(g.size)
    if best >= 2:
        p, q = i[inside][best - 2], j[inside][best - 2]
        mu[p] = -g[q] / (g[p] - g[q])
        mu[q] = g[p] / (g[p] - g[q])
        return v, top, mu
    # an end of the interval: the active cut sloping away from it (ties: the steepest, then
    # the newest: HiGHS's basis keeps the row added last when a cut is repeated)
    at = c + g * v
    active = np.flatnonzero(at == at.min())[::-1]
    steep = g[active] if best == 1 else -g[active]
    mu[active[int(np.argmax(steep))]] = 1.0
    return v, top, mu
