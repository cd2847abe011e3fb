"""The structured chain runs on one BLAS thread, its bookkeeping between steps included.

The interior point of every step already ran on one BLAS thread
(:data:`ratecons.solvers.interior.single_blas_thread`), but the chain around it did not: its
row checks, extrapolation trials and lowering are level-1 products of tens of thousands of
entries, which threaded OpenBLAS spread over both cores of a loaded machine. A ramp rate's value
on the whole Adult split's group b (22,794 examples) took 3-8 ms that way against 0.04 ms on one
thread (load 3-4); whole rows of ``benchmarks.composition`` on the split took 0.66-0.90 of their
former time (docs/composition_log.md).
"""

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import ratecons as rc


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.mark.skipif(not _blas_threads(), reason="no BLAS library seen by threadpoolctl")
def test_the_chain_between_steps_runs_on_one_blas_thread():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 6))
    g = np.where(rng.random(500) < 0.4, "a", "b")
    y = (X[:, 0] + 0.6 * rng.normal(size=500) > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": g})
    a, b = D.group("g", "a"), D.group("g", "b")
    problem = rc.Problem(minimize=rc.error_rate(D),
                         subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)],
                         model=rc.LinearModel(l2=1e-3))
    seen: list[set[int]] = []
    with threadpool_limits(limits=2, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _blas_threads() == {2}
        result = problem.solve("structured", callback=lambda event: seen.append(
            _blas_threads()))
        after = _blas_threads()
    assert result.status == "optimal"
    assert seen, "the chain reported no MM step"
    assert all(threads == {1} for threads in seen), seen
    assert after == {2}  # the caller's setting is back once the solve returns
