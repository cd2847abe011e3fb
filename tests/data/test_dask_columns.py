"""The per-example columns the robust loss and MRC send to the Dask workers go by scatter.

The signed labels of the robust loss's L-BFGS (:class:`ratecons.solvers.dro_dask.DaskPasses`)
and of its value at a fitted model (:mod:`ratecons.dask_robust`), and the label codes of an
MRC's moments and CCG (:class:`ratecons.dask_moments.PartitionedPsi`), reach the workers by
``scatter`` (:func:`ratecons.scans.client_column`), not as data in a graph: the scheduler keeps
no copy of them, and no graph above ``distributed``'s large-graph threshold is sent (set here
below the column's size). The kept ones are sent again when their block futures are no longer
``finished`` (a worker lost; here cancelled, as a lost worker leaves them), and the next
evaluation has the same value as before.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.canonical.dro import DROProgram  # noqa: E402
from ratecons.dask_moments import code_type  # noqa: E402
from ratecons.dask_robust import _margins, dask_robust_value  # noqa: E402
from ratecons.numerics.phi import CHI2  # noqa: E402
from ratecons.result import LinearScorer  # noqa: E402
from ratecons.solvers.dro_dask import DaskPasses  # noqa: E402
from ratecons.solvers.dro_dask_bound import dask_lower_bound  # noqa: E402

#: rows of the data: its labels (one byte each) are above :data:`GRAPH_BYTES`
ROWS = 120_000
#: the large-graph threshold set while the columns are sent and used
GRAPH_BYTES = "40kB"


def _data(n: int = ROWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _features(client, X: np.ndarray) -> da.Array:
    """X on the workers (persisted before the threshold is lowered: only the columns are
    under test)."""
    return client.persist(da.from_array(X, chunks=(ROWS // 4, X.shape[1])))


@contextmanager
def _no_large_graph():
    """Fail on any graph sent above :data:`GRAPH_BYTES` (the warning made an error)."""
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": GRAPH_BYTES}), \
            warnings.catch_warnings():
        warnings.filterwarnings("error", message="Sending large graph", category=UserWarning)
        yield


def _no_numpy(array: da.Array) -> None:
    """No NumPy array among the tasks of ``array``'s graph (futures stand for the data)."""
    tasks = list(dict(array.__dask_graph__()).values())
    assert tasks and not any(isinstance(task, np.ndarray) for task in tasks)


def test_robust_lbfgs_labels_are_scattered_and_sent_again_when_lost(client):
    """DaskPasses: the labels are futures of scattered blocks, no large graph is sent by an
    evaluation and a bound, and labels whose futures were cancelled are sent again: the next
    evaluation and bound are the same numbers, also at a point evaluated before the loss."""
    X, y = _data()
    form = DROProgram(X=_features(client, X), y=np.where(y > 0, 1.0, -1.0), loss="logistic",
                      phi=CHI2, rho=0.1, l2=1e-2)
    theta = np.array([0.4, -0.2, 0.1, 0.05])
    with _no_large_graph():
        passes = DaskPasses(form)
        labels = passes.y
        _no_numpy(labels)
        assert labels.dtype == np.int8 and passes.y is labels  # kept
        first = passes.evaluate(theta)
        value, grad, bound = first.value, first.grad, dask_lower_bound(passes, first)
    # a point whose vectors rest on labels sent before: formed again from those sent since
    passes._labels = None
    assert dask_lower_bound(passes, first) == bound
    assert first.labels is passes.y and first.margins is first.lazy_margins
    # a client cannot cancel a column whose dependents it holds persisted: these go first
    del first
    labels = passes.y
    client.cancel(distributed.futures_of(labels))  # as a lost worker leaves them
    again = passes.evaluate(theta)
    assert passes.y is not labels
    assert int(passes.y.sum().compute()) == int(form.y.sum())
    assert again.value == value and np.array_equal(again.grad, grad)
    assert dask_lower_bound(passes, again) == bound


def test_robust_value_labels_are_scattered(client):
    """The robust value at a fitted model sends its labels by scatter (no large graph) and is
    the same as on the local scheduler, where the labels are NumPy blocks of the graph."""
    X, y = _data()
    data = rc.Dataset(_features(client, X), y)
    ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.1)
    scorer = LinearScorer(np.array([0.4, -0.2, 0.1]), -0.05)
    with _no_large_graph():
        margins = _margins(ball, scorer)
        value = dask_robust_value(ball, "logistic", scorer)
    _no_numpy(margins)  # the features' and the labels' futures, and the margins' tasks
    local = rc.Dataset(da.from_array(X, chunks=(ROWS // 4, 3)), y)
    with dask.config.set(scheduler="threads"):
        local_ball = rc.PhiDivergenceBall(local, phi="chi2", rho=0.1)
        assert dask_robust_value(local_ball, "logistic", scorer) == value


def test_mrc_label_codes_are_scattered_small_and_sent_again_when_lost(client):
    """PartitionedPsi: the label codes go as int8 futures (no large graph in the moments and
    a CCG solve), and codes whose futures were cancelled are sent again: the moment sums are
    the same numbers."""
    X, y = _data()
    data = rc.Dataset(_features(client, X), y)
    with _no_large_graph():
        U = rc.MomentSet(data)
        codes = U.psi.labels
        _no_numpy(codes)
        assert codes.dtype == np.int8 and U.psi.labels is codes  # kept
        first = U.psi.moment_sums(U.n_classes, U.label_map)
        result = rc.Problem(minimize=rc.minimax_risk(U)).solve(method="ccg", n_max=20)
    client.cancel(distributed.futures_of(codes))  # as a lost worker leaves them
    again = U.psi.moment_sums(U.n_classes, U.label_map)
    assert U.psi.labels is not codes
    assert np.array_equal(again, first)
    memory = rc.MomentSet(rc.Dataset(X, y))
    reference = rc.Problem(minimize=rc.minimax_risk(memory)).solve(method="ccg", n_max=20)
    assert result.status == reference.status == "optimal"
    assert abs(result.objective - reference.objective) <= 1e-8 * max(1.0, abs(reference.objective))


def test_label_codes_take_the_smallest_integer_type():
    assert [code_type(k) for k in (0, 127, 128, 32767, 32768, 2**31)] == [
        np.int8, np.int8, np.int16, np.int16, np.int32, np.int64]


def test_local_scheduler_keeps_numpy_blocks():
    """Without a Client the columns are NumPy blocks of the graph: the evaluation runs on the
    threaded scheduler, with the same value as the in-memory one."""
    from ratecons.solvers.dro_eval import evaluate

    X, y = _data(n=3000)
    memory = DROProgram(X=X, y=np.where(y > 0, 1.0, -1.0), loss="logistic", phi=CHI2, rho=0.1,
                        l2=1e-2)
    theta = np.array([0.4, -0.2, 0.1, 0.05])
    with dask.config.set(scheduler="threads"):
        passes = DaskPasses(replace(memory, X=da.from_array(X, chunks=(700, 3))))
        tasks = list(dict(passes.y.__dask_graph__()).values())
        assert all(isinstance(task, np.ndarray) for task in tasks)
        ours = passes.evaluate(theta)
    assert abs(ours.value - evaluate(memory, theta).value) <= 1e-12


def test_columns_are_scattered_under_their_keys_next_to_their_partitions(client):
    """client_column scatters each block under the array's own key (a pass reads it with no
    task in between) and, given ``near``, to the worker that holds that partition."""
    from ratecons.scans import client_column

    X, _ = _data(n=8000)
    features = client.persist(da.from_array(X, chunks=(1000, 3)))
    distributed.wait(features)
    values = np.arange(8000.0)
    column, futures = client_column(values, features.chunks[0], near=features)
    assert [future.key for future in futures] == column.__dask_keys__()
    holders = client.who_has(distributed.futures_of(features))
    placed = client.who_has(futures)
    for row, future in zip(features.__dask_keys__(), futures, strict=True):
        assert set(placed[future.key]) <= set(holders[row[0]])
    assert np.array_equal(np.asarray(column.compute()), values)
