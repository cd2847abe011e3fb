"""``result.metrics(data)`` and ``result.report(data)`` on Dask data by reductions over the
partitions (issue 33; :mod:`ratecons.dask_metrics`).

Every key equals the in-memory one to 1e-12, on a LocalCluster of two workers under the
tripwire of ``conftest.no_vectors`` (any Dask array of more than GATHER_ROWS rows made NumPy
fails the test): integer features give many tied scores (the AUC's mid-ranks across the
partitions of Dask's sort), a linear model, and real data.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.dask_metrics import WorkerScores  # noqa: E402
from ratecons.metrics import auc  # noqa: E402
from ratecons.result import LinearScorer  # noqa: E402
from ratecons.thresholds import top_k_mean, top_quantile  # noqa: E402
from tests.shared_data import standardized  # noqa: E402

TOL = 1e-12


def _tied(n=1500, d=3, seed=0, weights=False):
    """Integer features (scores tie often) and labels correlated with them."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    y = (X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
    w = rng.uniform(0.5, 2.0, size=n) if weights else None
    return rc.Dataset(X, y, weights=w), rc.Dataset(da.from_array(X, chunks=(400, d)), y,
                                                   weights=w)


def _problem(name, data):
    if name == "robust chi2":
        ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.1)
        return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-2))
    if name == "logistic + recall":
        return rc.Problem(minimize=rc.mean_loss(data, "logistic"),
                          subject_to=[rc.recall(data) >= 0.8], model=rc.LinearModel(l2=1e-2))
    if name == "error rate":
        return rc.Problem(minimize=rc.error_rate(data), model=rc.LinearModel(l2=1e-2))
    top = rc.tpr_at_top(data, k=100) if name == "tpr@K" else rc.tpr_at_quantile(data, tau=0.1)
    return rc.Problem(maximize=top, model=rc.LinearModel(l2=1e-3))


def _agree(mine, theirs):
    assert mine.keys() == theirs.keys()
    for key, want in theirs.items():
        assert abs(mine[key] - want) <= TOL * max(1.0, abs(want)), (key, mine[key], want)


@pytest.mark.parametrize(("name", "weights"), [
    ("logistic + recall", False), ("logistic + recall", True), ("error rate", True),
    ("robust chi2", False), ("tpr@K", False), ("tpr@tau", False)])
def test_metrics_agree_on_tied_scores(client, name, weights, monkeypatch):
    """Each problem solved in memory, its metrics on the Dask copy of the data (with example
    weights where the problem allows them): every key (family keys included) equals the
    in-memory one; nothing N-sized is gathered."""
    from tests.data.conftest import install_tripwire

    memory, lazy = _tied(weights=weights)
    result = _problem(name, memory).solve()
    assert result.has_model
    theirs = result.metrics(memory)
    s = result.decision_function(memory)
    assert np.unique(s).size < s.size // 4  # many ties
    install_tripwire(monkeypatch)
    _agree(result.metrics(lazy), theirs)


def test_tpr_at_top_report(client, monkeypatch):
    """A TPR@K problem's report on the Dask copy: the exact TPR and its concave surrogate
    (the "expected" column) are the in-memory ones, under the tripwire."""
    from tests.data.conftest import install_tripwire

    memory, lazy = _tied(seed=2)
    result = _problem("tpr@K", memory).solve()
    want = result.report(memory).rows[0]
    install_tripwire(monkeypatch)
    got = result.report(lazy).rows[0]
    assert got.name == want.name and 0.0 < want.indicator < 1.0
    assert abs(got.indicator - want.indicator) <= TOL and abs(got.ramp - want.ramp) <= TOL


def test_auc_and_thresholds_with_ties_across_partitions(client, no_vectors):
    """Five distinct scores over 12 partitions (every value in several input partitions):
    the AUC by Dask's sort, the TPR@K and TPR@tau thresholds are the in-memory ones."""
    rng = np.random.default_rng(3)
    n = 2400
    X = rng.integers(-2, 3, size=(n, 1)).astype(float)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    workers = WorkerScores(LinearScorer(np.ones(1), 0.0),
                           rc.Dataset(da.from_array(X, chunks=(200, 1)), y))
    s, pos = X[:, 0], y == 1
    assert abs(workers.auc() - auc(s, y)) <= TOL
    for negatives in (True, False):
        ref = s[~pos] if negatives else s
        for k in (1, 7, 300):
            assert workers.top_k_threshold(k, negatives) == top_k_mean(ref, k)
        for tau in (0.01, 0.2, 0.5, 1.0):
            assert workers.quantile_threshold(tau, negatives) == top_quantile(ref, tau)


def test_auc_of_distinct_scores_and_one_class(client, no_vectors):
    """Distinct scores (uneven partitions); labels of one class give a NaN AUC as in memory."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1000, 3))
    y = (X[:, 1] + rng.normal(size=1000) > 0.3).astype(int)
    scorer = LinearScorer(np.array([0.2, 1.0, -0.4]), 0.1)
    workers = WorkerScores(scorer, rc.Dataset(da.from_array(X, chunks=(137, 3)), y))
    assert abs(workers.auc() - auc(scorer.decision_function(X), y)) <= TOL
    one = rc.Dataset(X, np.ones(1000, dtype=int))
    result = rc.Problem(minimize=rc.error_rate(rc.Dataset(X, y)),
                        model=rc.LinearModel(l2=1e-2)).solve()
    lazy = rc.Dataset(da.from_array(X, chunks=(300, 3)), np.ones(1000, dtype=int))
    mine, theirs = result.metrics(lazy), result.metrics(one)
    assert np.isnan(mine["auc"]) and np.isnan(theirs["auc"])
    assert abs(mine["error"] - theirs["error"]) <= TOL


def test_real_data_metrics_and_report(client, monkeypatch):
    """Diabetes (UCI, 768 rows, z-scored, grouped by age), logistic loss with a recall floor
    and the 80% rule between the age groups, solved in memory: the metrics and the whole
    report on the Dask copy (objective, constraints, the ratio, the rate rows, the table by
    group) equal the in-memory ones, under the tripwire."""
    from tests.data.conftest import install_tripwire

    real = standardized("diabetes", group_of=lambda X: {
        "age": np.where(X[:, 7] >= 30, "30+", "under 30")})
    lazy = rc.Dataset(da.from_array(real.X, chunks=(200, real.d)), real.y,
                      groups=real.groups, name="diabetes")

    def problem(data):
        old, young = data.group("age", "30+"), data.group("age", "under 30")
        return rc.Problem(minimize=rc.mean_loss(data, "logistic"),
                          subject_to=[rc.recall(data) >= 0.7,
                                      rc.positive_rate_ratio(young, old) >= 0.8],
                          model=rc.LinearModel(l2=1e-2))

    result = problem(real).solve()
    assert result.has_model
    theirs, report = result.metrics(real), result.report(real)
    install_tripwire(monkeypatch)
    _agree(result.metrics(lazy), theirs)
    mine = result.report(lazy)
    assert [r.name for r in mine.rows] == [r.name for r in report.rows]
    assert any(r.linear_indicator is not None for r in mine.rows)  # the ratio's row
    for a, b in zip(mine.rows, report.rows):
        for field in ("indicator", "ramp", "slack", "linear_indicator", "linear_ramp"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None) == (y is None) and (x is None or abs(x - y) <= TOL), field
        assert a.satisfied == b.satisfied
    table, want = mine.groups["age"], report.groups["age"]
    assert table.levels == want.levels and table.columns == want.columns
    assert np.allclose(table.values, want.values, rtol=0, atol=TOL)
    assert np.allclose(table.overall, want.overall, rtol=0, atol=TOL)


def test_columns_sent_once_are_scattered_and_sent_again_when_lost(client, no_vectors):
    """The labels and the rows' coefficients reach the workers by ``scatter``, not as data in
    a graph (which the scheduler keeps, and which ``distributed`` warns about above 10 MB),
    are kept for the next use, and are sent again when their blocks are gone (a worker
    lost): the values are the same each time."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(900, 2))
    y = (X[:, 0] + rng.normal(size=900) > 0).astype(int)
    workers = WorkerScores(LinearScorer(np.array([1.0, -0.5]), 0.2),
                           rc.Dataset(da.from_array(X, chunks=(200, 2)), y))
    labels = workers.labels
    tasks = list(dict(labels.__dask_graph__()).values())
    assert tasks and all(not isinstance(task, np.ndarray) for task in tasks)
    assert workers.labels is labels  # kept
    first = workers.classification()
    client.cancel(workers.kept["labels"][2])  # as a lost worker would leave them
    again = workers.labels
    assert again is not labels
    assert int(again.sum().compute()) == int(y.sum())
    assert workers.classification() == first


def test_ramp_rates_on_the_workers_use_the_models_ramp_width(client, no_vectors):
    """A model returned at its loss's scale (f = t g, ramp width t;
    :mod:`ratecons.chain_scale`) has the ramp rates of g on the workers as in memory: plain
    rates and a worst-case rate, the same values as the unscaled scorer's."""
    from ratecons.dask_metrics import WorkerEvaluation

    rng = np.random.default_rng(6)
    X = rng.normal(size=(1200, 3))
    y = (X[:, 0] + rng.normal(size=1200) > 0).astype(int)
    memory = rc.Dataset(X, y)
    lazy = rc.Dataset(da.from_array(X, chunks=(250, 3)), y)
    g = LinearScorer(np.array([0.3, -0.2, 0.1]), 0.05)
    f = g.scaled(0.25)
    ball = rc.PhiDivergenceBall(lazy.positives, phi="chi2", rho=0.1)
    worst = rc.worst_case(rc.recall(lazy), ball)
    evaluation = WorkerEvaluation(f)
    for expr, in_memory in ((rc.positive_rate(lazy), rc.positive_rate(memory)),
                            (rc.recall(lazy), rc.recall(memory))):
        assert abs(evaluation.rate(expr, "ramp") - in_memory.value(g, "ramp")) <= TOL
        assert abs(evaluation.rate(expr, "indicator") - in_memory.value(g)) <= TOL
    in_memory = rc.worst_case(rc.recall(memory), rc.PhiDivergenceBall(
        memory.positives, phi="chi2", rho=0.1))
    assert abs(evaluation.part_value(worst, "surrogate", 1.0)
               - in_memory.evaluate(g, "surrogate", 1.0)) <= 1e-7


def test_weighted_auc_is_the_auc_of_the_rows_repeated(client, no_vectors):
    """Example weights count in the AUC as in the other metrics (a user's weighted diabetes
    data: error and positive rate were weighted, the AUC was not): integer weights give the
    AUC of each row repeated w times, with ties, in memory and on Dask."""
    rng = np.random.default_rng(5)
    X = rng.integers(-3, 4, size=(900, 1)).astype(float)
    y = (X[:, 0] + rng.normal(size=900) > 0).astype(int)
    w = rng.integers(1, 4, size=900)
    repeated = auc(np.repeat(X[:, 0], w), np.repeat(y, w))
    assert abs(auc(X[:, 0], y, sample_weight=w) - repeated) <= TOL
    assert abs(auc(X[:, 0], y) - repeated) > 1e-4  # the weights matter here
    workers = WorkerScores(LinearScorer(np.ones(1), 0.0),
                           rc.Dataset(da.from_array(X, chunks=(100, 1)), y, weights=w))
    assert abs(workers.auc() - repeated) <= TOL
    result = rc.Problem(minimize=rc.error_rate(rc.Dataset(X, y)),
                        model=rc.LinearModel(l2=1e-2)).solve()
    memory = rc.Dataset(X, y, weights=w)
    assert abs(result.metrics(memory)["auc"]
               - auc(result.decision_function(X), y, sample_weight=w)) <= TOL


def test_a_model_of_rounding_noise_on_dask_is_the_constant(client, monkeypatch):
    """Diabetes (standardized), TPR@20 with l2 = 1e-2: w = 0 is optimal. In memory the model
    of rounding noise a solver returns is replaced by the constant (degenerate.SCORE_NOISE);
    on Dask the check did not run, and ``structured`` returned |w| ~ 3e-11 as ``optimal`` with
    no warning, its metrics ranking that noise (train TPR@20 0.108 against 0). The check now
    summarizes the scores in one reduction (range and mean, under the tripwire), compares a
    noise-level model as the constant at its mean, and snaps it as in memory; a model that
    separates is still not compared on Dask, and says so."""
    from ratecons.degenerate import check_degenerate
    from tests.data.conftest import install_tripwire

    real = standardized("diabetes")
    lazy = rc.Dataset(da.from_array(real.X, chunks=(200, real.d)), real.y)
    problem = rc.Problem(maximize=rc.tpr_at_top(lazy, k=20), model=rc.LinearModel(l2=1e-2))
    with pytest.warns(rc.TrivialOptimumWarning, match="compared as the constant score"):
        result = problem.solve("structured")
    assert result.status == "optimal" and np.all(result.w == 0.0) and result.b == 0.0
    record = result.certificate.details["degenerate"]
    assert 0.0 < record["snapped_spread"] <= 1e-6 and "degenerate_check" not in \
        result.certificate.details
    assert result.objective == 0.0 and result.metrics()["tpr@20"] == 0.0
    in_memory = rc.Problem(maximize=rc.tpr_at_top(real, k=20), model=rc.LinearModel(l2=1e-2))
    with pytest.warns(rc.TrivialOptimumWarning):
        reference = in_memory.solve("structured")
    assert reference.metrics()["tpr@20"] == 0.0 and np.all(reference.w == 0.0)

    install_tripwire(monkeypatch)
    for w, degenerate in ((np.full(real.d, 1e-11), True), (np.ones(real.d), False)):
        result.scorer = LinearScorer(w, -0.3, 1.0)
        del result.certificate.details["degenerate"]
        if degenerate:
            with pytest.warns(rc.TrivialOptimumWarning):
                assert check_degenerate(problem, result) is not None
            assert np.all(result.w == 0.0)
        else:
            result.certificate.details["degenerate"] = None
            assert check_degenerate(problem, result) is None
            assert "not run on Dask data" in result.certificate.details["degenerate_check"]
