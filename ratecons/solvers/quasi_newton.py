"""Limited-memory BFGS on a smooth function of a short vector (Nocedal & Wright, Alg. 7.4 and 7.5).

The loop of the robust-learning solver (:mod:`ratecons.solvers.dro_lbfgs`) and of the small
smooth problems of its certificate (:mod:`ratecons.solvers.dro_certificate`): a NumPy loop on
vectors of length d + 1. SciPy's L-BFGS-B spent milliseconds per step in multithreaded BLAS
calls on such tiny vectors when the cores are busy, more than one exact evaluation of the DRO
objective costs at N = 4096.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["LINE_SEARCH_TRIALS", "lbfgs", "minimize_small"]

#: trials of the backtracking line search before L-BFGS declares that F cannot be decreased
LINE_SEARCH_TRIALS = 20


def lbfgs(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
          memory: int, max_steps: int,
          on_step: Callable[[np.ndarray, np.ndarray], None]) -> None:
    """Limited-memory BFGS (two-loop recursion, initial scaling s.y / y.y) with an Armijo
    backtracking line search (safeguarded quadratic interpolation); calls ``on_step(x, grad)``
    after every accepted step (it may raise StopIteration) and returns when no step decreases
    ``fun``. ``memory`` pairs are kept; at most ``max_steps`` steps are taken.
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
    scale = 1.0  # s.y / y.y of the newest pair: the initial inverse Hessian H0 = scale I
    for _ in range(max_steps):
        d = -g
        if pairs:  # two-loop recursion: d = -H g
            q = g.copy()
            alphas = []
            for s_k, y_k, r_k in reversed(pairs):
                a_k = r_k * float(s_k @ q)
                alphas.append(a_k)
                q -= a_k * y_k
            q *= scale
            for (s_k, y_k, r_k), a_k in zip(pairs, reversed(alphas), strict=True):
                q += (a_k - r_k * float(y_k @ q)) * s_k
            d = -q
        slope = float(g @ d)
        if not slope < 0:  # not a descent direction: restart from the gradient
            pairs.clear()
            d, slope = -g, -float(g @ g)
            if not slope < 0:
                return
        step = 1.0 if pairs else min(1.0, 1.0 / math.sqrt(-slope))
        for _ in range(LINE_SEARCH_TRIALS):
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * step * slope:
                break
            # minimizer of the quadratic through f, slope and f_new, kept in [0.1, 0.5] step
            curv = f_new - f - slope * step
            step *= min(0.5, max(0.1, -slope * step / (2.0 * curv))) if curv > 0 else 0.1
        else:
            return
        s_vec, y_vec = x_new - x, g_new - g
        sy, yy = float(s_vec @ y_vec), float(y_vec @ y_vec)
        # keep a pair only with curvature s.y > 0 well above rounding, and y.y > 0 (a change
        # of gradient so small that y.y underflows gives no curvature to scale by)
        if yy > 0 and sy > 1e-12 * math.sqrt(float(s_vec @ s_vec) * yy):
            pairs.append((s_vec, y_vec, 1.0 / sy))
            del pairs[:-memory]
            scale = sy / yy
        x, f, g = x_new, f_new, g_new
        on_step(x, g)


def minimize_small(fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
                   x0: np.ndarray) -> np.ndarray:
    """argmin of a smooth convex ``fun`` (value, gradient) by :func:`lbfgs`, to a gradient
    norm of 1e-9 or 100 steps (for the balancing pmfs of the DRO certificate, where a residual
    r weakens the bound by O(|r|^2 / l2) only)."""
    best = [x0]

    def on_step(x: np.ndarray, grad: np.ndarray) -> None:
        best[0] = x
        if float(np.linalg.norm(grad)) <= 1e-9:
            raise StopIteration

    try:
        lbfgs(fun, x0, 20, 100, on_step)
    except StopIteration:
        pass
    return best[0]
