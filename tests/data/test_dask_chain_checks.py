"""The chain checks its rows on the workers (issue 33; :mod:`ratecons.chain_points`).

At every point the chain evaluates its surrogate objective, the surrogate value of every
constraint row and what the deterministic model misses (the repair's check). On Dask data it
gathered the point's scores (an N-vector per dataset) and evaluated the rows in memory; now the
scores stay on the workers, persisted, and each row is a reduction over them that returns a
few numbers per partition (:class:`ratecons.dask_metrics.WorkerEvaluation`), with the columns
the checks need sent once per run. Checked here with the in-memory evaluation of a row refused
and every gather of a Dask vector recorded: none passes through the row checks (the scores
reach the client only where the next step is lowered at the point, ``on_client``), and w, b
and the objective agree with the in-memory chain to 1e-8.
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.expr.analysis import Row  # noqa: E402
from tests.data.conftest import GATHER_ROWS  # noqa: E402
from tests.shared_data import standardized  # noqa: E402

TOL = 1e-8
#: the chain's functions that compute or check a point's rows
CHECKS = {"step_scores", "score_table", "surrogate_objective", "surrogate_rows",
          "missed_rows"}


@pytest.fixture
def watch(monkeypatch):
    """``watch()``: from then on, every gather of a Dask vector of more than GATHER_ROWS rows
    (``compute`` or ``np.asarray``) is recorded in the list returned, as the set of function
    names on its stack, and the in-memory evaluation of a row is refused."""
    def install() -> list[set[str]]:
        seen: list[set[str]] = []
        compute, to_numpy = da.Array.compute, da.Array.__array__

        def record(array: da.Array) -> None:
            if array.ndim == 1 and array.shape[0] > GATHER_ROWS:
                seen.append({frame.name for frame in traceback.extract_stack()})

        def watched_compute(self, *args, **kwargs):
            record(self)
            return compute(self, *args, **kwargs)

        def watched_array(self, *args, **kwargs):
            record(self)
            return to_numpy(self, *args, **kwargs)

        def refused(self, scorer, kind):
            raise AssertionError(f"row {self.name!r} evaluated in memory")

        monkeypatch.setattr(da.Array, "compute", watched_compute)
        monkeypatch.setattr(da.Array, "__array__", watched_array)
        monkeypatch.setattr(Row, "value", refused)
        return seen

    return install


def _in_dask(data: rc.Dataset, chunk: int) -> rc.Dataset:
    return rc.Dataset(da.from_array(np.asarray(data.X), chunks=(chunk, data.d)), data.y,
                      groups=data.groups, name=data.name)


def _synthetic(n: int = 1200, d: int = 5, seed: int = 0) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(int)
    return rc.Dataset(X, y, groups={"g": np.where(rng.random(n) < 0.4, "F", "M")}, name="d")


def _fair(data: rc.Dataset) -> rc.Problem:
    """Logistic loss with the 80% rule."""
    women, men = data.group("g", "F"), data.group("g", "M")
    return rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-3),
                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])


def _worst_recall(data: rc.Dataset) -> rc.Problem:
    """Hinge loss with a worst-case recall floor over a chi-square ball of the positives."""
    ball = rc.PhiDivergenceBall(data.positives, phi="chi2", rho=0.1)
    return rc.Problem(minimize=rc.hinge_loss(data), model=rc.LinearModel(l2=1e-2),
                      subject_to=[rc.worst_case(rc.recall(data), ball) >= 0.7])


def _check(memory: rc.Problem, lazy: rc.Problem, watch) -> None:
    reference = memory.solve(method="structured")
    gathers = watch()
    with dask.config.set(scheduler="threads"):
        ours = lazy.solve()
    assert not [names & CHECKS for names in gathers if names & CHECKS]
    lowered = [names for names in gathers if "on_client" in names]
    assert lowered and len(lowered) <= ours.certificate.details["mm_iterations"] + 1
    assert ours.status == reference.status == "optimal"
    assert np.max(np.abs(ours.w - reference.w)) <= TOL and abs(ours.b - reference.b) <= TOL
    assert abs(ours.objective - reference.objective) <= TOL * max(1.0, abs(reference.objective))


def test_the_80_percent_rule_is_checked_on_the_workers(client, no_gather, watch):
    data = _synthetic()
    _check(_fair(data), _fair(_in_dask(data, 350)), watch)


def test_a_worst_case_recall_floor_on_diabetes_is_checked_on_the_workers(client, no_gather,
                                                                         watch):
    data = standardized("diabetes")
    _check(_worst_recall(data), _worst_recall(_in_dask(data, 200)), watch)
