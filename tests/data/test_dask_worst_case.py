"""A composition with a worst-case rate on Dask data (issue 33, "Done when"): the chain with
the structured step agrees with the in-memory solve to 1e-8 in w, b and the objective.

A worst-case rate over a chi-square or KL ball (:mod:`ratecons.expr.robust`) enters the
structured step as per-example perspective terms over the rate's losses
(:mod:`ratecons.reductions.to_structured`), so every pass over the examples is a Gram product
or a product with X that :class:`ratecons.scans.DaskRows` reduces over the partitions. The
features are never gathered (the ``no_gather`` tripwire). The whole chain runs under the local
scheduler (each MM step takes about 180 passes, each a round trip to a Client's scheduler);
one step runs on the two-worker cluster.
"""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from tests.shared_data import standardized  # noqa: E402

TOL = 1e-8


def _synthetic(n: int = 1200, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(int)
    g = np.where(rng.random(n) < 0.4, "F", "M")
    return X, y, g


def _both(X, y, groups, chunk: int, name: str = "d") -> tuple[rc.Dataset, rc.Dataset]:
    memory = rc.Dataset(X, y, groups=groups, name=name)
    lazy = rc.Dataset(da.from_array(X, chunks=(chunk, X.shape[1])),
                      da.from_array(y, chunks=chunk), groups=groups, name=name)
    return memory, lazy


def _worst_recall(data: rc.Dataset, phi: str, rho: float, floor: float,
                  loss=rc.logistic_loss) -> rc.Problem:
    ball = rc.PhiDivergenceBall(data.positives, phi=phi, rho=rho)
    return rc.Problem(minimize=loss(data), model=rc.LinearModel(l2=1e-2),
                      subject_to=[rc.worst_case(rc.recall(data), ball) >= floor])


def _agree(memory: rc.Result, lazy: rc.Result) -> None:
    assert memory.status == lazy.status == "optimal"
    assert np.max(np.abs(memory.w - lazy.w)) <= TOL
    assert abs(memory.b - lazy.b) <= TOL
    assert abs(memory.objective - lazy.objective) <= TOL * max(1.0, abs(memory.objective))


@pytest.mark.parametrize("phi, rho", [("chi2", 0.1), ("kl", 0.05)])
def test_worst_case_recall_floor_agrees_with_in_memory(client, no_gather, phi, rho):
    X, y, g = _synthetic()
    memory, lazy = _both(X, y, {"g": g}, chunk=350)
    plan = _worst_recall(lazy, phi, rho, 0.7).plan()
    assert plan.method == "structured" and plan.available == ["structured"]
    assert any("distributed over 4 partitions" in r for r in plan.reasons)
    reference = _worst_recall(memory, phi, rho, 0.7).solve(method="structured")
    with dask.config.set(scheduler="threads"):
        ours = _worst_recall(lazy, phi, rho, 0.7).solve()
    _agree(reference, ours)
    # the floor holds under the worst reweighting of the positives (the constraint's own
    # value at the returned model, evaluated on the in-memory data)
    assert reference.report().all_satisfied
    assert ours.certificate.details.get("mm_iterations", 0) >= 1


def test_worst_case_rate_in_a_fairness_row_agrees(client, no_gather):
    """The worst-case positive rate of one group against the other's plain rate (the 80%
    rule under a chi-square reweighting of the women), with the hinge loss."""
    X, y, g = _synthetic(seed=4)
    memory, lazy = _both(X, y, {"g": g}, chunk=300)

    def rule(data: rc.Dataset) -> rc.Problem:
        women, men = data.group("g", "F"), data.group("g", "M")
        ball = rc.PhiDivergenceBall(women, phi="chi2", rho=0.05)
        return rc.Problem(minimize=rc.hinge_loss(data), model=rc.LinearModel(l2=1e-2),
                          subject_to=[rc.worst_case(rc.positive_rate(women), ball)
                                      >= 0.8 * rc.positive_rate(men)])

    reference = rule(memory).solve(method="structured")
    with dask.config.set(scheduler="threads"):
        ours = rule(lazy).solve()
    _agree(reference, ours)


@pytest.mark.slow
def test_diabetes_worst_case_recall_agrees(client, no_gather):
    """Real data: the Pima diabetes set (UCI, 768 rows, z-scored) in partitions of 200 rows,
    a KL-robust recall floor."""
    diabetes = standardized("diabetes")
    memory, lazy = _both(diabetes.X, diabetes.y, None, chunk=200, name="diabetes")
    reference = _worst_recall(memory, "kl", 0.05, 0.7).solve(method="structured")
    with dask.config.set(scheduler="threads"):
        ours = _worst_recall(lazy, "kl", 0.05, 0.7).solve()
    _agree(reference, ours)


def test_one_worst_case_step_on_the_cluster(client, no_gather):
    """The first step of the chain on the two workers (a Client: every pass a reduction over
    the partitions), against the same step in memory."""
    X, y, g = _synthetic(n=800)
    memory, lazy = _both(X, y, {"g": g}, chunk=300)
    options = {"max_iterations": 1}
    with pytest.warns(Warning):
        reference = _worst_recall(memory, "chi2", 0.1, 0.7).solve(method="structured",
                                                                  **options)
    with pytest.warns(Warning):
        ours = _worst_recall(lazy, "chi2", 0.1, 0.7).solve(**options)
    assert ours.status == reference.status
    assert np.max(np.abs(reference.w - ours.w)) <= TOL and abs(reference.b - ours.b) <= TOL
