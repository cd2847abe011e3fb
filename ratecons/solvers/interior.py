"""Pieces shared by the primal-dual interior-point solvers (:mod:`.top_ipm`, :mod:`.mrc_ipm`).

Both reduce each Newton system to a small normal system whose costly part is a weighted Gram
product A^T diag(c) A over all examples (:func:`ratecons.scans.weighted_gram`), and both take
the longest step that keeps their slacks and multipliers nonnegative.
"""

from __future__ import annotations

import numba
import numpy as np
from threadpoolctl import threadpool_limits

#: Run a function with one BLAS thread. The Gram products here are thin (p in the hundreds,
#: N in the tens of thousands); on the 2-core machines they were measured on, threaded BLAS
#: was slower, even when nothing else ran (mrc_ipm: 1.3x), and much slower under load
#: (top_ipm: 15-25x). The structured solver (:mod:`.structured`) runs on it at every width:
#: with 500 Nystrom features on the whole Adult split, under load 8 on 2 cores, one LU of its
#: 503-row system took 3.4 ms on one thread and 51 ms on two, one Gram product 0.32 s against
#: 0.93 s and one product with P^T 12 ms against 22 ms (two threads had gained 0.19 -> 0.16 s
#: on the Gram product only when nothing else ran).
single_blas_thread = threadpool_limits.wrap(limits=1, user_api="blas")


@numba.njit(cache=True)
def _step_to_boundary_one(x: np.ndarray, dx: np.ndarray, step: float) -> float:
    """min(step, min over dx_i < 0 of -x_i / dx_i): one pass, no temporaries."""
    for i in range(x.size):
        if dx[i] < 0.0:
            ratio = -x[i] / dx[i]
            if ratio < step:
                step = ratio
    return step


def step_to_boundary(*pairs: tuple[np.ndarray, np.ndarray]) -> float:
    """Largest a in (0, 1] with x + a dx >= 0 for every pair (x, dx) given (x >= 0)."""
    step = 1.0
    for x, dx in pairs:
        if x.size:
            step = _step_to_boundary_one(np.ascontiguousarray(x, dtype=np.float64),
                                         np.ascontiguousarray(dx, dtype=np.float64), step)
    return float(step)
