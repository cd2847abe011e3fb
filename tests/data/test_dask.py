"""Dask-backed datasets (issue 33) on a LocalCluster of two workers.

- validation as a reduction: NaN/inf features, missing labels and Parquet columns are reported
  with their column, partition and row;
- the features are never gathered: every test that solves runs with ``dask.array.Array``'s
  conversion to NumPy refused for 2-D arrays of more than ``conftest.GATHER_ROWS`` rows;
- same answers: ``method="structured"`` (rate constraints with a logistic loss) agrees with
  the in-memory solve to 1e-8 in w, b and the objective (the robust loss's ``lbfgs``:
  test_dask_robust.py);
- the other methods refuse a Dask dataset naming the supported ones; ``plan()`` says the solve
  is distributed;
- a worker killed mid-solve (one of three) ends in a finished solve, never a hang.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import ratecons as rc  # noqa: E402
from ratecons.errors import DataError, SpecError  # noqa: E402
from ratecons.reductions.kernelize import kernelized  # noqa: E402
from ratecons.reductions.to_structured import lower_structured  # noqa: E402
from ratecons.scans import Rows, dask_passes  # noqa: E402
from ratecons.solvers.structured import solve_structured  # noqa: E402
from tests.shared_data import standardized  # noqa: E402

TOL = 1e-8
N = 1200


def _data(n: int = N, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(int)
    g = np.where(rng.random(n) < 0.4, "F", "M")
    return X, y, g


def _pair(chunk: int = 350):
    X, y, g = _data()
    memory = rc.Dataset(X, y, groups={"g": g}, name="d")
    lazy = rc.Dataset(da.from_array(X, chunks=(chunk, X.shape[1])),
                      da.from_array(y, chunks=chunk), groups={"g": g}, name="d")
    return memory, lazy


def _agree(a, b) -> None:
    assert a.status == b.status == "optimal"
    assert np.max(np.abs(a.w - b.w)) <= TOL
    assert abs(a.b - b.b) <= TOL
    assert abs(a.objective - b.objective) <= TOL * max(1.0, abs(a.objective))


# ---------------------------------------------------------------------- datasets
def test_features_stay_in_dask_and_subsets_are_lazy(client):
    memory, lazy = _pair()
    assert lazy.in_dask and not memory.in_dask
    assert lazy.X.chunks[0] == (350, 350, 350, 150) and lazy.X.chunks[1] == (5,)
    women = lazy.group("g", "F")
    assert hasattr(women.X, "dask")  # a lazy slice, not a NumPy copy
    assert np.array_equal(women.index, memory.group("g", "F").index)
    assert lazy.positives.n == memory.positives.n


def test_nan_features_are_named_by_column_partition_and_row(client):
    X, y, _ = _data()
    X[800, 2] = np.inf
    X[1000, 0] = np.nan
    with pytest.raises(DataError, match=r"2 NaN or infinite.*column 2, partition 2, row 800 "
                                        r"\(row 100 of the partition\)"):
        rc.Dataset(da.from_array(X, chunks=(350, 5)), y)


def test_missing_labels_are_named_by_partition_and_row(client):
    X, y, _ = _data()
    labels = y.astype(float)
    labels[400] = np.nan
    with pytest.raises(DataError, match=r"y has 1 missing.*partition 1, row 400"):
        rc.Dataset(da.from_array(X, chunks=(350, 5)), da.from_array(labels, chunks=350))


def test_parquet_is_read_lazily_and_validated_by_column_name(client, tmp_path):
    X, y, g = _data()
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(5)]).assign(label=y, sex=g)
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "ok")
    data = rc.Dataset.from_parquet(tmp_path / "ok", label="label", groups=["sex"])
    assert data.in_dask and data.feature_names == [f"x{i}" for i in range(5)]
    assert data.n == N and data.group("sex", "F").n == int(np.sum(g == "F"))
    assert np.array_equal(data.y, y)
    frame.loc[900, "x3"] = np.nan
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "bad")
    with pytest.raises(DataError, match=r"column 'x3', partition 2, row 900"):
        rc.Dataset.from_parquet(tmp_path / "bad", label="label", groups=["sex"])
    frame.loc[900, "x3"] = 0.0
    frame.loc[450, "sex"] = None
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "no_group")
    with pytest.raises(DataError, match=r"group 'sex' has 1 missing.*partition 1, row 450 "
                                        r"\(row 50 of the partition\)"):
        rc.Dataset.from_parquet(tmp_path / "no_group", label="label", groups=["sex"])
    with pytest.raises(DataError, match=r"no column\(s\) \['income'\]"):
        rc.Dataset.from_parquet(tmp_path / "ok", label="income")
    with pytest.raises(SpecError, match=r"unknown option\(s\) \['categorical', 'labels'\]; "
                                        r"it takes \['label', 'groups'"):
        rc.Dataset.from_parquet(tmp_path / "ok", labels="label", categorical="onehot")


def test_rows_over_partitions_match_in_memory(client, no_gather):
    X, _, _ = _data()
    rng = np.random.default_rng(1)
    memory, lazy = Rows(X), Rows(da.from_array(X, chunks=(350, 5)))
    w, c, V = rng.normal(size=5), rng.random(N), rng.normal(size=(N, 2))
    before = dask_passes()
    assert np.allclose(lazy.scores(w, 0.3), memory.scores(w, 0.3), rtol=0, atol=1e-12)
    assert np.allclose(lazy.transpose_apply(V), memory.transpose_apply(V), rtol=0, atol=1e-11)
    assert np.allclose(lazy.gram(c), memory.gram(c), rtol=0, atol=1e-11)
    assert np.allclose(lazy.squared_norms(), memory.squared_norms(), rtol=0, atol=1e-12)
    G, col = lazy.gram_and_column(c)  # one pass for both
    assert np.allclose(G, memory.gram(c), rtol=0, atol=1e-11)
    assert np.allclose(col, memory.transpose_apply(c), rtol=0, atol=1e-11)
    assert lazy.gram_and_column(c, column=False)[1] is None
    assert dask_passes() - before == 6


# ---------------------------------------------------------------------- same answers
def _rates(data):
    women, men = data.group("g", "F"), data.group("g", "M")
    return rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-3),
                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])


def _hinge_step(problem: rc.Problem):
    """The chain's first step (the hinge relaxation) lowered and solved by the structured
    interior point, and the form it solved."""
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    form = lower_structured(analysis, psi, None, bounds)
    return solve_structured(form), form


def test_structured_step_agrees_on_the_cluster(client, no_gather):
    """One step of the chain on the two workers, its Newton systems' Gram products reduced
    over the partitions (the whole chain makes about 180 passes per step, each a round trip
    to the scheduler, so it runs in the next test under the local scheduler)."""
    memory, lazy = _pair()
    plan = _rates(lazy).plan()
    assert plan.method == "structured"
    assert any("distributed over 4 partitions" in r for r in plan.reasons)
    (ours, form), (reference, _) = _hinge_step(_rates(lazy)), _hinge_step(_rates(memory))
    assert type(form.rows).__name__ == "DaskRows" and form.rows.partitions == 4
    assert ours.status == reference.status == "optimal"
    assert np.max(np.abs(ours.w - reference.w)) <= TOL and abs(ours.b - reference.b) <= TOL
    assert abs(ours.objective - reference.objective) <= TOL


def test_structured_chain_agrees_under_the_local_scheduler(client, no_gather):
    memory, lazy = _pair()
    with dask.config.set(scheduler="threads"):  # no Client: the local scheduler
        ours = _rates(lazy).solve()
    _agree(_rates(memory).solve(method="structured"), ours)
    assert ours.report().all_satisfied


def test_other_methods_refuse_dask_data_naming_the_supported_ones(client):
    _, lazy = _pair()
    rates = rc.Problem(minimize=rc.error_rate(lazy), subject_to=[rc.recall(lazy) >= 0.7])
    with pytest.raises(SpecError, match=r"method 'cvxpy' needs the examples in one process.*"
                                        r"'structured', 'lbfgs'"):
        rates.solve(method="cvxpy")
    robust = rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(lazy, phi="chi2",
                                                                     rho=0.1)))
    with pytest.raises(SpecError, match=r"method 'gssg' needs the examples"):
        robust.solve(method="gssg")
    ball = rc.PhiDivergenceBall(lazy, phi="chi2", rho=0.1)
    bounded = rc.Problem(minimize=rc.logistic_loss(lazy),
                         subject_to=[rc.robust_loss(ball) <= 0.9])
    with pytest.raises(SpecError, match=r"no method runs this problem on its Dask data: the "
                                        r"structured step solver takes"):
        bounded.solve()
    # verify, which the user did not call with method='cvxpy', says what it needs
    # auto's plan on Dask data gives the pattern's own reasons when it picks the same method
    # as in memory (the robust ladder to 'structured' holds on Dask too)
    plan = rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(lazy, phi="chi2", rho=0.1),
                                              loss="hinge")).plan()
    assert plan.method == "lbfgs" and "the method auto picks in memory" in plan.reasons[0]
    assert any("auto goes on with method 'structured'" in r for r in plan.reasons)
    with pytest.raises(SpecError, match=r"verify compares the method with the CVXPY reference"
                                        r".*in-memory sample"):
        rc.verify(rates)


def test_constructions_that_need_memory_refuse_dask_data(client):
    _, lazy = _pair()
    with pytest.raises(SpecError, match=r"rc.MomentSet over a Subset .*needs the examples in "
                                        r"one process.*'structured', 'lbfgs', 'ccg'"):
        rc.MomentSet(lazy.group("g", "F"))
    kernel = rc.Problem(minimize=rc.logistic_loss(lazy),
                        model=rc.KernelModel(kernel="gaussian", l2=1e-2))
    sparse = da.from_array(scipy.sparse.random(500, 4, density=0.3, format="csr",
                                               random_state=0), chunks=(250, 4))
    with pytest.raises(DataError, match=r"scipy.sparse blocks.*make the partitions dense"):
        rc.Dataset(sparse, np.arange(500) % 2)
    with pytest.raises(SpecError, match=r"KernelModel \(kernel='gaussian'\) needs the "
                                        r"examples in one process"):
        kernel.solve(method="structured")


def _in_dask(data: rc.Dataset, chunk: int) -> rc.Dataset:
    X = data.X.toarray() if data.is_sparse else data.X
    return rc.Dataset(da.from_array(X, chunks=(chunk, data.d)), data.y,
                      groups=data.groups, name=data.name)


@pytest.mark.slow
def test_real_data_agrees_with_in_memory(client, no_gather):
    """Diabetes (UCI, 768 rows) with a KL-robust logistic loss on the cluster; a 1,500-row
    sample of Adult with the logistic loss and the 80% rule under the local scheduler."""
    diabetes = standardized("diabetes")

    def robust(data):
        return rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(data, phi="kl",
                                                                       rho=0.05)),
                          model=rc.LinearModel(l2=1e-3))

    _agree(robust(diabetes).solve(method="lbfgs"), robust(_in_dask(diabetes, 200)).solve())
    adult, _ = rc.datasets.load_adult().split(1500 / 48842, seed=3)

    def fair(data):
        women, men = data.group("sex", "Female"), data.group("sex", "Male")
        return rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-3),
                          subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])

    with dask.config.set(scheduler="threads"):
        ours = fair(_in_dask(adult, 400)).solve()
    _agree(fair(adult).solve(method="structured"), ours)


# ---------------------------------------------------------------------- a worker lost
def test_a_worker_killed_mid_solve_ends_in_a_finished_solve(lose_a_worker):
    """One of three worker processes is killed half a second after the solve's first pass
    (an L-BFGS solve of a chi-square-robust loss that takes several seconds); the scheduler
    recomputes the lost partitions from the graph and the solve finishes with the in-memory
    answer, or raises a clear error: never a hang (``conftest.HANG_SECONDS``)."""
    X, y, _ = _data(n=3000, seed=2)

    def robust(data):
        return rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(data, phi="chi2",
                                                                       rho=0.1)),
                          model=rc.LinearModel(l2=1e-3))

    lazy = rc.Dataset(da.from_array(X, chunks=(500, 5)), y)
    result = lose_a_worker(lambda: robust(lazy).solve(method="lbfgs", tol=1e-10))
    if isinstance(result, Exception):  # a clear error is acceptable, a silent one is not
        assert str(result), f"{type(result).__name__} without a message"
        return
    _agree(robust(rc.Dataset(X, y)).solve(method="lbfgs", tol=1e-10), result)


@pytest.mark.slow
def test_a_worker_killed_mid_composition_ends_in_a_finished_solve(lose_a_worker):
    """The structured chain (logistic loss + 80% rule) with one of three workers killed
    after its first pass: the lost partitions of the features are recomputed from the graph,
    a pass that lost a scattered block is made again, and a kept column of the chain's row
    checks (labels, the rows' coefficients) that lost a block is sent again; the solve ends
    with the in-memory answer (before, a scatter to the dead worker could raise
    ``CommClosedError``: seen at 3,000 rows; ``test_a_scatter_to_a_dead_worker_is_made_again``
    makes that case every time)."""
    X, y, g = _data(n=1200, seed=4)

    def fair(data):
        a, b = data.group("g", "F"), data.group("g", "M")
        return rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-3),
                          subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)])

    lazy = rc.Dataset(da.from_array(X, chunks=(300, 5)), y, groups={"g": g})
    result = lose_a_worker(lambda: fair(lazy).solve(method="structured"), delay=1.0)
    assert not isinstance(result, Exception), f"{type(result).__name__}: {result}"
    _agree(fair(rc.Dataset(X, y, groups={"g": g})).solve(method="structured"), result)


def test_a_scatter_to_a_dead_worker_is_made_again(client, monkeypatch):
    """A client column whose scatter meets a worker that died (the connection reset before
    the scheduler removed it) is scattered again, and holds the values sent."""
    from distributed.comm.core import CommClosedError

    from ratecons.scans import client_column

    calls = []
    scatter = type(client).scatter

    def dead_once(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise CommClosedError("in <TCP (closed) ConnectionPool.update_data>: reset")
        return scatter(self, *args, **kwargs)

    monkeypatch.setattr(type(client), "scatter", dead_once)
    values = np.arange(10.0)
    column, futures = client_column(values, (4, 6))
    assert len(calls) == 2 and len(futures) == 2
    assert np.array_equal(np.asarray(column.compute()), values)


@pytest.mark.slow
def test_the_rounds_at_the_losss_scale_agree_with_in_memory(client, no_gather):
    """Indian liver (UCI, 583 rows), the chi-square robust logistic loss (rho = 0.1) with a
    recall floor: in memory the chain solves again at the loss's scale
    (:mod:`ratecons.chain_scale`; three rounds, width 0.63). On the cluster the same rounds,
    the best scale searched by passes over the workers: the same width, model and objective."""
    liver = standardized("indian_liver")

    def problem(data):
        return rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(data, phi="chi2",
                                                                       rho=0.1)),
                          model=rc.LinearModel(l2=1e-3), subject_to=[rc.recall(data) >= 0.7])

    memory = problem(liver).solve(method="structured")
    lazy = problem(_in_dask(liver, 200)).solve()
    assert len(memory.certificate.details["score_scale"]["rounds"]) >= 2
    assert memory.ramp_width < 0.9
    assert lazy.ramp_width == pytest.approx(memory.ramp_width, rel=1e-8)
    assert lazy.method == "structured"
    _agree(memory, lazy)
