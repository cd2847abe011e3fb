"""Pieces shared by the primal-dual interior-point solvers (:mod:`.top_ipm`, :mod:`.mrc_ipm`,
:mod:`.structured`).

Each reduces its Newton systems to a small normal system whose costly part is a weighted Gram
product A^T diag(c) A over all examples (:func:`ratecons.scans.weighted_gram`), and each takes
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
#: on the Gram product only when nothing else ran). A whole solve runs on one BLAS thread
#: too, unless the user says otherwise (:mod:`ratecons.blas_threads`).
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


@numba.njit(cache=True, error_model="numpy")
def _smallest_ratios(x: np.ndarray, dx: np.ndarray, kept: np.ndarray) -> None:
    """Merge the ratios -x_i / dx_i (dx_i < 0) into ``kept``, the smallest so far in
    ascending order (inf where none yet): one pass, no temporaries."""
    last = kept.size - 1
    for i in range(x.size):
        d = dx[i]
        if d < 0.0:
            ratio = -x[i] / d
            if ratio < kept[last]:
                j = last
                while j > 0 and kept[j - 1] > ratio:
                    kept[j] = kept[j - 1]
                    j -= 1
                kept[j] = ratio


def step_past_blockers(blockers: int, *pairs: tuple[np.ndarray, np.ndarray]) -> float:
    """The step to the boundary of every pair (x, dx) given but the ``blockers`` entries
    that block it first, at most 1: the (blockers + 1)-th smallest ratio -x_i / dx_i over
    dx_i < 0 (1 when there are no more than ``blockers`` such entries). The same number as
    ``np.partition`` of the concatenated ratios gives, without forming them: on an MM step of
    hinge + 80% rule on the whole Adult split (245,858 pairs, 10 blockers; load 7 on 2 cores)
    0.9-1.3 ms against 5.7-10 ms."""
    kept = np.full(blockers + 1, np.inf)
    for x, dx in pairs:
        if x.size:
            _smallest_ratios(np.ascontiguousarray(x, dtype=np.float64),
                             np.ascontiguousarray(dx, dtype=np.float64), kept)
    return min(1.0, float(kept[blockers]))
