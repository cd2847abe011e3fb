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


#: a direction entry in (-BRANCHLESS_FLOOR, 0) divides as -BRANCHLESS_FLOOR in
#: :func:`_step_to_boundary_one`, whose loop then has no branch and is vectorized: its ratio
#: x / BRANCHLESS_FLOOR can only understate x / |dx| (a step as short or shorter, still inside),
#: and only for x below step * 1e-300. On 43,546 pieces of the whole Adult split: 90-110 us
#: against 230-280 us for the loop that branched on the sign of every entry (whose
#: mispredictions cost more than the divisions it saved)
BRANCHLESS_FLOOR = 1e-300


@numba.njit(cache=True, error_model="numpy")  # no zero-divisor check: vectorized
def _step_to_boundary_one(x: np.ndarray, dx: np.ndarray, step: float) -> float:
    """min(step, min over dx_i < 0 of -x_i / dx_i): one branchless pass, no temporaries
    (:data:`BRANCHLESS_FLOOR`)."""
    best = np.inf
    for i in range(x.size):
        d = dx[i]
        ratio = -x[i] / min(d, -BRANCHLESS_FLOOR)
        ratio = ratio if d < 0.0 else np.inf
        best = ratio if ratio < best else best
    return best if best < step else step


def step_to_boundary(*pairs: tuple[np.ndarray, np.ndarray]) -> float:
    """Largest a in (0, 1] with x + a dx >= 0 for every pair (x, dx) given (x >= 0)."""
    step = 1.0
    for x, dx in pairs:
        if x.size:
            step = _step_to_boundary_one(np.ascontiguousarray(x, dtype=np.float64),
                                         np.ascontiguousarray(dx, dtype=np.float64), step)
    return float(step)
