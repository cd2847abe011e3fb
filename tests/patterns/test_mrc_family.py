"""The minimax-risk family end to end: plan, solve, predictions, randomized rule, verify, MPS."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.backends.mps import solve_mps
from tests.mrc_helpers import random_dataset
from tests.shared_data import load


@pytest.fixture(scope="module")
def iris_problem():
    data = load("iris")
    train, test = data.split(0.7, seed=0)
    U = rc.MomentSet(train, features=rc.features.RandomFourier(20, seed=0))
    return rc.Problem(minimize=rc.minimax_risk(U)), train, test


def test_plan_explains_with_row_and_column_counts(iris_problem):
    problem, train, _ = iris_problem
    plan = problem.plan()
    assert plan.method == "ccg"  # LP (4): CCG, whatever the size
    assert f"{train.n * 7} rows" in plan.reasons[0] and "columns" in plan.reasons[0]
    big = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(random_dataset(40, 2, 20, 0))))
    plan = big.plan()
    assert plan.method == "ccg"
    assert str(40 * (2**20 - 1)) in plan.reasons[0]
    assert "2^20 - 1" in big.describe()


def test_result_predictions_randomized_rule_and_errors(iris_problem):
    problem, train, test = iris_problem
    result = problem.solve("lp")
    assert result.status == "optimal" and 0 < result.objective < 1
    scores = result.decision_function(test)
    assert scores.shape == (test.n, 3)
    pred = result.predict(test)
    np.testing.assert_array_equal(pred, result.classes[np.argmax(scores, axis=1)])
    H = result.proba(test.X)
    np.testing.assert_allclose(H.sum(axis=1), 1.0)
    assert np.all(H >= 0)
    # on training data h(y|x) >= Phi(x,y)^T mu - varphi(mu) (Theorem 2.1.1)
    form = problem.canonical()
    V = form.scores(result.mu)
    bound = V - form.varphi(result.mu).max()
    assert np.all(result.proba(train.X) >= bound - 1e-9)
    # the worst-case error bounds the expected error of h on the training data (p_n is in U)
    assert result.error(train, randomized=True) <= result.objective + 1e-9
    a = result.predict(test, randomized=True, seed=3)
    b = result.predict(test, randomized=True, seed=3)
    np.testing.assert_array_equal(a, b)
    assert 0.0 <= result.error(test) <= 1.0
    assert "mu" in json.loads(result.to_json())


def test_fixed_marginals_rule_sums_to_one_without_padding():
    data = random_dataset(60, 2, 4, 3)
    U = rc.MomentSet(data)
    result = rc.Problem(minimize=rc.minimax_risk(U, fixed_marginals=True)).solve("lp")
    V = result.decision_function(data)
    phi = result.problem.canonical().varphi(result.mu)
    # Theorem 2.2.1: h(y|x) = (Phi(x,y)^T mu - varphi(mu, x))_+ sums to one by itself
    np.testing.assert_allclose(np.maximum(V - phi[:, None], 0).sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(result.proba(data.X), np.maximum(V - phi[:, None], 0), atol=1e-9)


def test_labels_are_reported_as_in_the_data():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(loc=c, size=(20, 2)) for c in (-2, 0, 2)])
    y = np.repeat([10, 20, 30], 20)
    result = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, y)))).solve()
    assert set(result.predict(X)) <= {10, 20, 30}
    assert result.error(rc.Dataset(X, y), randomized=True) <= result.objective + 1e-9


def test_verify_compares_ccg_with_the_reference(iris_problem):
    problem, _, _ = iris_problem
    report = rc.verify(problem, "ccg")
    assert report.agrees
    assert report.rows["objective_rel_gap"] <= 1e-6
    assert "objective_at_mu" in str(report)


def test_subgradient_method_is_listed_only_when_installed(iris_problem):
    problem, _, _ = iris_problem
    import importlib.util

    installed = importlib.util.find_spec("ratecons.solvers.subgradient") is not None
    assert ("subgradient" in problem.pattern.methods()) == installed


def test_mps_round_trip_full_and_restricted(tmp_path, iris_problem):
    problem, train, _ = iris_problem
    R = problem.solve("lp").objective
    info = rc.export_mps(problem, tmp_path / "full.mps")
    assert info["rows"] == train.n * 7
    text = (tmp_path / "full.mps").read_text()
    assert "mup_0_0" in text and "i0_C7" in text and "nu" in text
    assert abs(solve_mps(tmp_path / "full.mps").objective - R) <= 1e-7
    assert abs(solve_mps(tmp_path / "full.mps", solver="ipm").objective - R) <= 1e-6
    small = rc.export_mps(problem, tmp_path / "restricted.mps", restricted=True, n_max=10)
    assert small["rows"] < info["rows"]
    assert abs(solve_mps(tmp_path / "restricted.mps").objective - R) <= 1e-7
    assert "centroid0_C7" in (tmp_path / "restricted.mps").read_text()


def test_errors_on_data_with_a_class_unseen_in_training():
    """A user's ecoli split held two rare classes out of training: ``error(test)`` counted
    their rows wrong, while ``error(test, randomized=True)`` and ``report(test)`` raised. The
    randomized rule gives an unseen class h(y|x) = 0: an error too."""
    data = load("iris")
    seen = np.flatnonzero(data.y != 2)
    result = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(
        data.take(seen[::2]), features=rc.features.RandomFourier(10, seed=0)))).solve("lp")
    H = result.proba(data.X)
    codes = np.searchsorted(result.classes, np.minimum(data.y, 1))
    mine = 1.0 - np.mean(np.where(data.y == 2, 0.0, H[np.arange(data.n), codes]))
    assert result.error(data, randomized=True) == pytest.approx(mine, rel=1e-12)
    assert result.error(data) == pytest.approx(np.mean(result.predict(data) != data.y))
    row = result.report(data).rows[0]
    assert row.ramp == pytest.approx(mine, rel=1e-12)


def test_a_result_read_back_from_json_keeps_the_randomized_rule(iris_problem):
    """An MRC result loaded from JSON was a plain Result: it predicted, but had no ``proba``
    or ``error``, the randomized rule being the MRC's own output (a user's check)."""
    problem, _, test = iris_problem
    result = problem.solve("lp")
    back = rc.Result.from_json(result.to_json(), allow_pickle=True)
    assert type(back) is type(result)
    np.testing.assert_allclose(back.proba(test.X), result.proba(test.X))
    assert back.error(test, randomized=True) == result.error(test, randomized=True)


def test_mps_export_errors(tmp_path, iris_problem):
    problem, _, _ = iris_problem
    with pytest.raises(rc.SpecError, match=r"\.mps"):
        rc.export_mps(problem, tmp_path / "x.txt")
    with pytest.raises(rc.SpecError, match="restricted=True"):
        rc.export_mps(problem, tmp_path / "x.mps", eps1=0.1)


def test_cbc_reads_the_mps_file_and_finds_the_same_optimum(tmp_path, iris_problem):
    """A second, independent LP solver (COIN-OR CBC, shipped with PuLP) solves the exported file."""
    pulp = pytest.importorskip("pulp", reason="PuLP (the test extra) brings the CBC solver")
    problem, _, _ = iris_problem
    R = problem.solve("lp").objective
    path = tmp_path / "full.mps"
    rc.export_mps(problem, path)
    _, lp = pulp.LpProblem.fromMPS(str(path))
    with warnings.catch_warnings():  # PuLP 3 announces that 4.0 will stop bundling CBC
        warnings.simplefilter("ignore", DeprecationWarning)
        status = lp.solve(pulp.PULP_CBC_CMD(msg=False))
    assert pulp.LpStatus[status] == "Optimal"
    assert abs(pulp.value(lp.objective) - R) <= 1e-6


@pytest.mark.skipif(shutil.which("glpsol") is None, reason="Debian's glpk-utils is not installed")
def test_glpsol_reads_the_mps_file_and_finds_the_same_optimum(tmp_path, iris_problem):
    problem, _, _ = iris_problem
    R = problem.solve("lp").objective
    path = tmp_path / "full.mps"
    rc.export_mps(problem, path)
    out = tmp_path / "sol.txt"
    subprocess.run(["glpsol", "--freemps", str(path), "-o", str(out)], check=True,
                   capture_output=True, timeout=120)
    line = next(ln for ln in out.read_text().splitlines() if ln.startswith("Objective:"))
    assert abs(float(line.split("=")[1].split()[0]) - R) <= 1e-6


@pytest.mark.parametrize("fixed", [True, False])
def test_subgradient_method_reaches_the_lp_optimum(fixed):
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(load("haberman")),
                                                  fixed_marginals=fixed))
    lp = problem.solve("lp")
    sub = problem.solve("subgradient", seed=0)
    assert sub.method == "subgradient"
    assert abs(sub.objective - lp.objective) <= 1e-2
    assert sub.certificate.upper_bound is None or sub.certificate.upper_bound >= lp.objective - 1e-9
