"""A solve runs on one BLAS thread (``settings.SOLVE_BLAS_THREADS``), the structured chain's
bookkeeping between its steps and the rate pattern's MM included; only a large weighted Gram
product of dense rows takes ``settings.GRAM_THREADS`` (every core), and gives them back.

The interior points already ran on one BLAS thread
(:data:`ratecons.solvers.interior.single_blas_thread`), but the code around them did not: row
checks, extrapolation trials and rate values are level-1 products of tens of thousands of
entries, which threaded OpenBLAS spread over both cores of a loaded machine. A ramp rate's value
on the whole Adult split's group b (22,794 examples) took 3-8 ms that way against 0.04 ms on one
thread (load 3-4); whole rows of ``benchmarks.composition`` on the split took 0.63-0.94 of their
former time, the rate pattern's error rate + 80% rule 0.50 (docs/composition_log.md).
"""

import os
import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import ratecons as rc
from ratecons import scans, settings


def _blas_threads() -> dict[str, int]:
    """Each loaded BLAS library's thread count, by its file (a library loaded with
    OPENBLAS_NUM_THREADS=1, as the test processes' may be, cannot go above 1)."""
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


def _threads_seen_outside() -> set[int]:
    """The thread counts the loaded BLAS libraries take when asked for two."""
    with threadpool_limits(limits=2, user_api="blas"):
        return set(_blas_threads().values())


def _rule_problem() -> rc.Problem:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 6))
    g = np.where(rng.random(500) < 0.4, "a", "b")
    y = (X[:, 0] + 0.6 * rng.normal(size=500) > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": g})
    a, b = D.group("g", "a"), D.group("g", "b")
    return rc.Problem(minimize=rc.error_rate(D),
                      subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)],
                      model=rc.LinearModel(l2=1e-3))


def _threads_seen(method: str) -> tuple[str, list[dict[str, int]], dict[str, int],
                                        dict[str, int]]:
    seen: list[dict[str, int]] = []
    with threadpool_limits(limits=2, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = _blas_threads()
        result = _rule_problem().solve(method, callback=lambda event: seen.append(
            _blas_threads()))
        after = _blas_threads()
    return result.status, seen, before, after


@pytest.mark.skipif(2 not in _threads_seen_outside(), reason="no BLAS library takes two threads")
@pytest.mark.parametrize("method", ["structured", "mm"])
def test_a_solve_runs_on_one_blas_thread(method):
    status, seen, before, after = _threads_seen(method)
    assert status == "optimal"
    assert 2 in before.values()
    assert seen, "the method reported no event"
    assert all(set(threads.values()) == {1} for threads in seen), seen
    assert after == before  # the caller's setting is back once the solve returns


@pytest.mark.skipif(2 not in _threads_seen_outside(), reason="no BLAS library takes two threads")
def test_none_leaves_blas_alone(monkeypatch):
    monkeypatch.setattr(settings, "SOLVE_BLAS_THREADS", None)
    status, seen, before, _ = _threads_seen("structured")
    assert status == "optimal"
    assert seen and all(threads == before for threads in seen), seen


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_bad_thread_count_is_refused_by_name(monkeypatch, bad):
    monkeypatch.setattr(settings, "SOLVE_BLAS_THREADS", bad)
    with pytest.raises(rc.SpecError, match="SOLVE_BLAS_THREADS.*an int >= 1 or None"):
        _rule_problem().solve("structured")


@pytest.mark.parametrize("bad", [0, -2, 2.0, "all", False])
def test_a_bad_gram_thread_count_is_refused_by_name(monkeypatch, bad):
    monkeypatch.setattr(settings, "GRAM_THREADS", bad)
    with pytest.raises(rc.SpecError, match="GRAM_THREADS.*an int >= 1 or None"):
        _rule_problem().solve("structured")


@pytest.mark.parametrize("threads", [None, 2])
def test_a_large_dense_gram_takes_blas_threads_and_gives_them_back(monkeypatch, threads):
    # the same product on one BLAS thread and on GRAM_THREADS, the caller's limit back after
    monkeypatch.setattr(scans, "GRAM_THREADED_FROM", 0)
    monkeypatch.setattr(scans, "GRAM_THREADED_COLUMNS", 0)
    rng = np.random.default_rng(5)
    A, c = rng.normal(size=(3000, 40)), rng.random(3000)
    expected = A.T @ (A * c[:, None])
    with threadpool_limits(limits=1, user_api="blas"):
        before = _blas_threads()
        monkeypatch.setattr(settings, "GRAM_THREADS", threads)
        seen = []
        real = scans.dsyrk
        monkeypatch.setattr(scans, "dsyrk", lambda *a, **k: (
            seen.append(_blas_threads()), real(*a, **k))[1])
        G = scans.Rows(A).gram(c)
        assert _blas_threads() == before
    np.testing.assert_allclose(G, expected, rtol=1e-10, atol=1e-9)
    wanted = threads or len(os.sched_getaffinity(0))
    if 2 in _threads_seen_outside() and wanted > 1:
        assert seen and all(max(t.values()) == wanted for t in seen), seen
    else:  # a BLAS library held at one thread (OPENBLAS_NUM_THREADS=1) stays there
        assert seen


def test_a_dask_partitions_gram_leaves_the_workers_blas_threads_alone(monkeypatch):
    # a worker runs as many partitions side by side as it has threads: each partition's syrk
    # on every core would ask for threads x cores, and the process-wide limit of one task
    # would reset another's; the products stay those of the rows in memory
    da = pytest.importorskip("dask.array")
    import dask

    monkeypatch.setattr(scans, "GRAM_THREADED_FROM", 0)
    monkeypatch.setattr(scans, "GRAM_THREADED_COLUMNS", 0)
    limited = []
    real = scans._blas_controller
    monkeypatch.setattr(scans, "_blas_controller", lambda: (limited.append(1), real())[1])
    rng = np.random.default_rng(6)
    A, c, V = rng.normal(size=(4000, 30)), rng.random(4000), rng.normal(size=(4000, 2))
    expected = A.T @ (A * c[:, None])
    in_memory = scans.Rows(A).gram(c)
    assert limited, "the rows in memory did not take the Gram threads: the test checks nothing"
    limited.clear()
    rows = scans.Rows(da.from_array(A, chunks=(1000, 30)))
    assert type(rows).__name__ == "DaskRows"
    with dask.config.set(scheduler="threads"):
        G = rows.gram(c)
        G2, column, products = rows.gram_and_products(c, V)
    assert not limited, "a partition's product changed the BLAS thread limit"
    for got in (in_memory, G, G2):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(column, A.T @ c, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(products, A.T @ V, rtol=1e-10, atol=1e-9)
