"""The last report values that gathered scores, now on the workers (issue 33): a worst-case
rate's value (:mod:`ratecons.dask_worst_case`) and Pat&Mat's surrogate threshold of TPR@tau
(:meth:`ratecons.dask_metrics.WorkerScores.surrogate_quantile`).

Each value equals the in-memory one to 1e-10 on a LocalCluster of two workers, under the
tripwire of ``conftest.install_tripwire`` (a Dask array of more than GATHER_ROWS rows made
NumPy fails the test) and with the in-memory evaluation refused (so the Dask path is the one
measured): tied scores (indicator values tie by the thousand), both adversaries, both kinds
(indicator and ramp), conditional and unconditional rates, chi-square, KL and a custom phi,
and the diabetes data.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.dask_metrics import WorkerEvaluation, WorkerScores  # noqa: E402
from ratecons.expr.robust import WorstCaseRate  # noqa: E402
from ratecons.numerics import inner_max_dask  # noqa: E402
from ratecons.result import LinearScorer  # noqa: E402
from ratecons.thresholds import SurrogateQuantile  # noqa: E402
from tests.data.conftest import install_tripwire  # noqa: E402
from tests.shared_data import standardized  # noqa: E402
from tests.shared_phi import HELLINGER  # noqa: E402

TOL = 1e-10
SCORER = LinearScorer(np.array([0.8, -0.4, 0.1, 0.05]), 0.1)


def _tied(n: int = 3000, d: int = 4, seed: int = 0, chunk: int = 700):
    """Integer features (scores tie often), labels and a two-level group."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    y = (X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
    g = rng.integers(0, 2, size=n)
    return (rc.Dataset(X, y, groups={"g": g}),
            rc.Dataset(da.from_array(X, chunks=(chunk, d)), y, groups={"g": g}))


def _clipped(n: int = 3000, d: int = 4, seed: int = 5, chunk: int = 700):
    """Gaussian features: distinct scores, whose ramp values tie only where clipped at 0 and
    1 (about a quarter of the rows at each end under :data:`SCORER`)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
    g = rng.integers(0, 2, size=n)
    return (rc.Dataset(X, y, groups={"g": g}),
            rc.Dataset(da.from_array(X, chunks=(chunk, d)), y, groups={"g": g}))


def _worst(data: rc.Dataset, which: str, phi, rho: float) -> WorstCaseRate:
    if which == "recall over the positives":  # unconditional: the ball is the rate's subset
        return rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(data.positives, phi=phi,
                                                                   rho=rho))
    if which == "recall over all":  # conditional: B = the positives, S = all examples
        return rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(data, phi=phi, rho=rho))
    group = data.group("g", 1)  # a combination of rates over one group
    return rc.worst_case(rc.positive_rate(group) - 0.5 * rc.error_rate(group),
                         rc.PhiDivergenceBall(group, phi=phi, rho=rho))


def _refuse_in_memory(monkeypatch) -> None:
    """The in-memory evaluations may not run (the values must come from the workers)."""
    def refuse(*args, **kwargs):
        raise AssertionError("evaluated in memory")

    monkeypatch.setattr(WorstCaseRate, "value_for", refuse)
    monkeypatch.setattr(SurrogateQuantile, "value", refuse)


def _values(part, evaluate) -> list[float]:
    return [evaluate(part, kind, coef) for kind in ("exact", "surrogate") for coef in (1, -1)]


@pytest.mark.parametrize("which", ["recall over the positives", "recall over all",
                                   "positive rate - error/2 of a group"])
@pytest.mark.parametrize(("phi", "rho"), [("chi2", 0.05), ("chi2", 0.5), ("kl", 0.05),
                                          ("kl", 0.5)])
def test_worst_case_values_agree(client, monkeypatch, which, phi, rho):
    """Max and min over U, indicator and ramp values: the in-memory ones to 1e-10."""
    memory, lazy = _tied()
    want = _values(_worst(memory, which, phi, rho),
                   lambda p, kind, coef: p.evaluate(SCORER, kind, coef))
    install_tripwire(monkeypatch)
    _refuse_in_memory(monkeypatch)
    ev = WorkerEvaluation(SCORER)
    got = _values(_worst(lazy, which, phi, rho), ev.part_value)
    assert np.max(np.abs(np.subtract(got, want))) <= TOL, (got, want)
    assert len(set(np.round(want, 6))) > 1  # the four values are not all one number


@pytest.mark.parametrize("which", ["recall over the positives", "recall over all",
                                   "positive rate - error/2 of a group"])
def test_worst_case_values_from_a_coefficient_column(client, monkeypatch, which):
    """More distinct coefficients than one-byte codes can name (forced here: a ball's data
    carry no example weights, so a rate's coefficients take a few values): the coefficients
    travel as a column with a membership code, and the values are the same."""
    from ratecons import dask_worst_case

    monkeypatch.setattr(dask_worst_case, "CODE_TABLE", 0)
    memory, lazy = _clipped(n=2000, chunk=500)
    want = _values(_worst(memory, which, "chi2", 0.3),
                   lambda p, kind, coef: p.evaluate(SCORER, kind, coef))
    install_tripwire(monkeypatch)
    _refuse_in_memory(monkeypatch)
    sent = []
    original = dask_worst_case._sent
    monkeypatch.setattr(dask_worst_case, "_sent",
                        lambda *a: sent.append(original(*a)) or sent[-1])
    got = _values(_worst(lazy, which, "chi2", 0.3), WorkerEvaluation(SCORER).part_value)
    assert np.max(np.abs(np.subtract(got, want))) <= TOL, (got, want)
    assert sent and all(rule.table is None and len(columns) == 2 for columns, rule in sent)


def test_worst_case_value_of_a_custom_phi(client, monkeypatch):
    """A Hellinger ball (no closed form; the damped Newton search on the dual in memory it is
    bisection), unconditional, both kinds and adversaries."""
    memory, lazy = _tied(n=1500, chunk=400, seed=1)
    want = _values(_worst(memory, "recall over the positives", HELLINGER, 0.05),
                   lambda p, kind, coef: p.evaluate(SCORER, kind, coef))
    install_tripwire(monkeypatch)
    _refuse_in_memory(monkeypatch)
    got = _values(_worst(lazy, "recall over the positives", HELLINGER, 0.05),
                  WorkerEvaluation(SCORER).part_value)
    assert np.max(np.abs(np.subtract(got, want))) <= TOL, (got, want)


def test_ties_in_a_narrow_bracket(client, monkeypatch):
    """Few candidates, few quantiles and a small cap: the chi-square bracket over distinct
    ramp values is refined by rounds of quantiles, and the hundreds of tied values (indicator
    values, ramp values clipped at 0 or 1) at its lower end stay one block (before, they made
    every round keep the same bracket until the search gave up)."""
    monkeypatch.setattr(inner_max_dask, "CANDIDATES", 8)
    monkeypatch.setattr(inner_max_dask, "PARTITION_QUANTILES", 4)
    monkeypatch.setattr(inner_max_dask, "BRACKET_CAP", 40)
    calls: list[str] = []
    original = inner_max_dask.per_partition
    monkeypatch.setattr(inner_max_dask, "per_partition",
                        lambda fn, *a, **k: calls.append(fn.__name__) or original(fn, *a, **k))
    memory, lazy = _clipped()
    for which in ("recall over the positives", "positive rate - error/2 of a group"):
        want = _values(_worst(memory, which, "chi2", 1.0),
                       lambda p, kind, coef: p.evaluate(SCORER, kind, coef))
        got = _values(_worst(lazy, which, "chi2", 1.0), WorkerEvaluation(SCORER).part_value)
        assert np.max(np.abs(np.subtract(got, want))) <= TOL, (which, got, want)
    assert calls.count("_quantiles_inside") >= 1


@pytest.mark.parametrize("formulation", ["pat&mat", "pat&mat-np"])
@pytest.mark.parametrize("surrogate", ["hinge", "quadratic_hinge"])
@pytest.mark.parametrize("tau", [0.01, 0.2])
def test_pat_mat_surrogate_threshold(client, monkeypatch, formulation, surrogate, tau):
    """The surrogate quantile and the concave TPR bound of the report's "expected" column, on
    tied scores (the breakpoints tie by the hundred), theta 1 and 2."""
    memory, lazy = _tied(seed=2)
    among = "all" if formulation == "pat&mat" else "negatives"
    for theta in (1.0, 2.0):
        def part(data, theta=theta):
            return rc.tpr_at_quantile(data, tau=tau, among=among, formulation=formulation,
                                      surrogate=surrogate, theta=theta)

        s = SCORER.decision_function(memory.X)
        obj = part(memory)
        want_t = obj.threshold_value(s)
        want = obj.surrogate_value(SCORER)
        with monkeypatch.context() as patch:
            install_tripwire(patch)
            _refuse_in_memory(patch)
            workers = WorkerScores(SCORER, lazy)
            got_t = workers.surrogate_quantile(part(lazy))
            got = workers.tpr_surrogate(part(lazy))
        assert abs(got_t - want_t) <= TOL * max(1.0, abs(want_t)), (theta, got_t, want_t)
        assert abs(got - want) <= TOL, (theta, got, want)


def test_pat_mat_report(client, monkeypatch):
    """A Pat&Mat TPR@tau problem solved in memory: its report's row on the Dask copy (exact
    TPR and the surrogate in the "expected" column) is the in-memory one."""
    memory, lazy = _tied(n=1500, chunk=400, seed=3)

    def problem(data):
        return rc.Problem(maximize=rc.tpr_at_quantile(data, tau=0.1, formulation="pat&mat"),
                          model=rc.LinearModel(l2=1e-2))

    result = problem(memory).solve()
    assert result.has_model
    want = result.report(memory).rows[0]
    install_tripwire(monkeypatch)
    _refuse_in_memory(monkeypatch)
    got = result.report(lazy).rows[0]
    assert got.name == want.name
    assert abs(got.indicator - want.indicator) <= TOL and abs(got.ramp - want.ramp) <= TOL


def test_real_data_worst_case_report(client, monkeypatch):
    """Diabetes (UCI, 768 rows, z-scored, grouped by age): logistic loss with a worst-case
    recall floor (chi-square ball over the positives) and a worst-case positive rate of the
    older group (KL ball over all of it), both active, solved in memory; the
    report on the Dask copy (the worst-case rows' achieved and expected values, slacks and
    the table by age) and the metrics equal the in-memory ones, the in-memory worst-case
    evaluation refused."""
    real = standardized("diabetes", group_of=lambda X: {
        "age": np.where(X[:, 7] >= 30, "30+", "under 30")})
    lazy = rc.Dataset(da.from_array(real.X, chunks=(200, real.d)), real.y,
                      groups=real.groups, name="diabetes")

    def problem(data):
        old = data.group("age", "30+")
        return rc.Problem(minimize=rc.mean_loss(data, "logistic"), subject_to=[
            rc.worst_case(rc.recall(data),
                          rc.PhiDivergenceBall(data.positives, phi="chi2", rho=0.1)) >= 0.55,
            rc.worst_case(rc.positive_rate(old),
                          rc.PhiDivergenceBall(old, phi="kl", rho=0.05)) <= 0.6],
            model=rc.LinearModel(l2=1e-2))

    result = problem(real).solve()
    assert result.status == "optimal"
    report, metrics = result.report(real), result.metrics(real)
    install_tripwire(monkeypatch)
    _refuse_in_memory(monkeypatch)
    mine = result.report(lazy)
    assert [r.name for r in mine.rows] == [r.name for r in report.rows]
    assert sum(r.name.startswith("worst_case") for r in mine.rows) == 2
    for a, b in zip(mine.rows, report.rows):
        for field in ("indicator", "ramp", "slack"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None) == (y is None) and (x is None or abs(x - y) <= TOL), field
        assert a.satisfied == b.satisfied
    assert np.allclose(mine.groups["age"].values, report.groups["age"].values, rtol=0,
                       atol=TOL)
    got = result.metrics(lazy)
    assert all(abs(got[k] - metrics[k]) <= TOL for k in metrics)
