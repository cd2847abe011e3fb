"""The chain's start from a row sample on Dask data (issue 33, :mod:`ratecons.sample_start`).

The sample is every k-th row by global row index, so the in-memory and the Dask paths solve
the same sample (on Dask only its rows travel: one pass, O(sample x p)) and start MM on all
rows from the same model; the answers agree to 1e-8 in w, b and the objective. The features
are never gathered whole (the ``no_gather`` tripwire refuses any conversion of more than 100
rows to NumPy; the sample comes through ``compute``).
"""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.scans import dask_passes  # noqa: E402

TOL = 1e-8


def _both(n: int = 1200, seed: int = 2) -> tuple[rc.Dataset, rc.Dataset]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    g = np.where(rng.random(n) < 0.4, "F", "M")
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(int)
    X[:, 0] -= 0.8 * (g == "F")
    memory = rc.Dataset(X, y, groups={"g": g}, name="d")
    lazy = rc.Dataset(da.from_array(X, chunks=(350, 5)), da.from_array(y, chunks=350),
                      groups={"g": g}, name="d")
    return memory, lazy


def _rule(D: rc.Dataset) -> rc.Problem:
    return rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-2),
                      subject_to=[rc.positive_rate(D.group("g", "F"))
                                  >= 0.8 * rc.positive_rate(D.group("g", "M"))])


def test_the_sample_start_agrees_with_in_memory(client, no_gather):
    memory, lazy = _both()
    plan = _rule(lazy).plan(sample_start=300)
    assert plan.method == "structured"
    assert any(r.startswith("starts from a solve on a 300-row sample") for r in plan.reasons)
    reference = _rule(memory).solve(method="structured", sample_start=300)
    before = dask_passes()
    with dask.config.set(scheduler="threads"):
        ours = _rule(lazy).solve(sample_start=300)
    assert dask_passes() > before  # the chain ran on the partitions
    for result in (reference, ours):
        used = result.certificate.details["sample_start"]
        assert used["rows"] == 300 and used["used"].startswith("as ")
    assert abs(reference.certificate.details["sample_start"]["objective"]
               - ours.certificate.details["sample_start"]["objective"]) <= 1e-12  # one sample
    assert reference.status == ours.status == "optimal"
    assert np.max(np.abs(reference.w - ours.w)) <= TOL
    assert abs(reference.b - ours.b) <= TOL
    assert abs(reference.objective - ours.objective) <= TOL * max(1.0, abs(reference.objective))
    # the start changed the path: without it the chain takes another number of MM steps
    off = _rule(memory).solve(method="structured", sample_start=False)
    assert (off.certificate.details["interior_iterations"]
            != reference.certificate.details["interior_iterations"])


def test_a_tpr_at_k_sample_agrees_with_in_memory(client, no_gather):
    # TPR@K's K scaled to the sample's share (sample_start.sampled_analysis) on both paths:
    # 4,000 rows, K = 40, a 1,000-row sample (K = 10 there)
    rng = np.random.default_rng(0)
    shifted = rng.random(4000) < 0.4
    X = rng.normal(size=(4000, 8))
    X[:, 0] -= np.where(shifted, 1.0, 0.0)
    y = (X @ rng.normal(size=8) + 0.5 * rng.normal(size=4000) > 0).astype(int)
    g = np.where(shifted, "a", "b")
    memory = rc.Dataset(X, y, groups={"g": g}, name="d")
    lazy = rc.Dataset(da.from_array(X, chunks=(1000, 8)), da.from_array(y, chunks=1000),
                      groups={"g": g}, name="d")

    def at_k(D: rc.Dataset) -> rc.Problem:
        return rc.Problem(maximize=rc.tpr_at_top(D, k=40), model=rc.LinearModel(l2=1e-3),
                          subject_to=[rc.positive_rate(D.group("g", "a"))
                                      >= 0.8 * rc.positive_rate(D.group("g", "b"))])

    reference = at_k(memory).solve(method="structured", sample_start=1000)
    with dask.config.set(scheduler="threads"):
        ours = at_k(lazy).solve(sample_start=1000)
    for result in (reference, ours):
        assert result.certificate.details["sample_start"]["used"] == "as the start of MM"
        assert result.status == "optimal"
    assert abs(reference.objective - ours.objective) <= TOL
    assert np.max(np.abs(reference.w - ours.w)) <= TOL
    # the intercept moves TPR@K not at all and the 80% rule only through the few rows near
    # the threshold: it agrees to the steps' tolerance, not to 1e-8 (4.5e-7 here)
    assert abs(reference.b - ours.b) <= 1e-5
