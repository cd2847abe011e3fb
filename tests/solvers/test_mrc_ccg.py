"""Constraint and column generation (Alg. 1) and the greedy subset search (Alg. 2)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import ratecons as rc
from ratecons.canonical.mrc import max_subset_value
from ratecons.errors import ConvergenceWarning, SpecError
from ratecons.solvers.ccg import CCG
from ratecons.solvers.mrc_lp import solve_mrc_lp
from tests.mrc_helpers import random_dataset
from tests.shared_data import load


def restricted_value(record: dict) -> float:
    """R^k of a simplex-loop record: ``lower`` when every feature is in the LP (Theorem 1),
    ``objective`` while column generation may still add some."""
    return record["lower"] if "lower" in record else record["objective"]


def brute_force(v: np.ndarray) -> tuple[float, set[int]]:
    best, arg = -np.inf, set()
    K = v.size
    for s in range(1, K + 1):
        for C in itertools.combinations(range(K), s):
            val = (v[list(C)].sum() - 1) / s
            if val > best + 1e-12:
                best, arg = val, set(C)
    return best, arg


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8).flatmap(
    lambda K: arrays(np.float64, (3, K), elements=st.one_of(
        st.floats(-3, 3, allow_nan=False), st.sampled_from([0.0, 0.5, 1.0])))))
def test_greedy_subset_equals_brute_force(V):
    value, masks = max_subset_value(V)
    for i in range(V.shape[0]):
        best, _ = brute_force(V[i])
        assert value[i] == pytest.approx(best, abs=1e-12)
        C = np.flatnonzero(masks[i])
        assert C.size >= 1
        # the returned subset attains the maximum
        assert (V[i, C].sum() - 1) / C.size == pytest.approx(best, abs=1e-12)


def problem_of(data, features="linear"):
    return rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(data, features=features)))


@pytest.mark.parametrize("seed,K,features", [(0, 2, "all"), (1, 3, "all"), (2, 6, "all"),
                                             (3, 4, "generate"), (4, 2, "generate")])
def test_ccg_matches_the_full_lp_on_random_data(seed, K, features):
    n, r = (60, 10) if K > 4 else (120, 30)
    form = problem_of(random_dataset(n, 4, K, seed), rc.features.RandomFourier(r, seed=seed)
                      ).canonical()
    ref = solve_mrc_lp(form)
    ccg = CCG(form, features=features, n_max=25, m_max=20, start="centroids")
    sol = ccg.run()
    assert sol.status == "optimal"
    assert abs(sol.objective - ref.objective) <= 1e-6
    assert sol.certificate.upper_bound - ref.objective <= 1e-6
    R = [restricted_value(h) for h in sol.history]
    if features == "all":
        # Theorem 1, eq. (10): the sequence R^k is non-decreasing
        assert np.all(np.diff(R) >= -1e-9)
    # the restricted LP is much smaller than the full one
    assert sol.certificate.details["final_rows"] < form.full_lp_size()["rows"]
    assert all(h["lp_time"] >= 0 and h["constr_time"] >= 0 for h in sol.history)


@pytest.mark.parametrize("name,eps1", [("haberman", 0.05), ("glass", 0.02), ("iris", 0.01),
                                       ("credit", 0.02)])
def test_ccg_with_eps1_lands_in_the_theorem_1_interval(name, eps1):
    form = problem_of(load(name)).canonical()
    R_star = solve_mrc_lp(form).objective
    sol = CCG(form, eps1=eps1, n_max=10, start="centroids").run()
    for h in sol.history:  # R* - eps_hat_1 <= R^k <= R* at every iteration (eq. 11)
        assert R_star - h["primal_violation"] - 1e-9 <= restricted_value(h) <= R_star + 1e-9
    assert sol.certificate.details["primal_violation"] < eps1
    restricted = sol.certificate.details["theorem1_interval"][0]  # R^k
    assert R_star - eps1 <= restricted <= R_star + 1e-9
    assert sol.certificate.lower_bound <= R_star + 1e-9 <= sol.certificate.upper_bound + 2e-9
    # the value reported is the returned model's worst-case risk, on R*'s upper side (R^k,
    # a lower bound, was reported as if it were R*), unless the gap is certified
    gap = sol.certificate.upper_bound - sol.certificate.lower_bound
    assert sol.objective == (restricted if gap <= 1e-6 else sol.certificate.upper_bound)
    assert sol.objective >= R_star - 1e-6


def test_many_classes_use_the_positivity_row_and_reach_the_lp_optimum():
    data = random_dataset(25, 2, 10, 7)  # full LP: 25 * 1023 rows
    form = problem_of(data).canonical()
    ccg = CCG(form, init_full_classes=8, n_max=10)
    sol = ccg.run()
    _, rows = ccg.names()
    assert rows[0] == "objective_nonneg"
    ref = solve_mrc_lp(form)
    assert abs(sol.objective - ref.objective) <= 1e-6


def test_warm_start_keeps_one_model_and_hot_starts():
    form = problem_of(load("glass")).canonical()
    models = []
    ccg = CCG(form, n_max=20)
    ccg.callback = lambda record: models.append(id(ccg.model))
    sol = ccg.run()
    assert len(set(models)) == 1 and len(sol.history) > 3
    # later iterations re-optimize from the previous basis: few simplex iterations each
    later = [h["lp_iterations"] for h in sol.history[1:]]
    assert np.mean(later) < solve_mrc_lp(form).certificate.details["iterations"]


def test_iteration_limit_is_reported_with_a_warning():
    form = problem_of(load("glass")).canonical()
    with pytest.warns(ConvergenceWarning, match="k_max"):
        sol = CCG(form, k_max=2, n_max=5).run()
    assert sol.status == "iteration_limit"
    assert len(sol.history) == 2


def _timed_out(problem: rc.Problem, time_limit: float):
    """(result, the ConvergenceWarnings' messages) of ``method="ccg"`` under ``time_limit``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(method="ccg", time_limit=time_limit)
    return result, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


@pytest.mark.parametrize("name", ["diabetes", "glass"])
def test_a_budget_spent_in_the_first_lp_says_there_is_no_point(name):
    """The audit's case: ``time_limit=1e-3`` ends in CCG's first restricted LP, before any
    iterate exists. The result has no model and says so, and what to do, where the user
    looks: the error of ``predict``, the certificate and the one warning (which said "the
    point returned is the best found", pointing to a certificate without a word on it)."""
    data = load(name)
    result, warned = _timed_out(problem_of(data), 1e-3)
    assert result.status == "time_limit" and not result.has_model
    assert "first restricted LP" in result.certificate.details["limit"]
    with pytest.raises(rc.SolverError, match="no iterate .*raise time_limit"):
        result.predict(data.X[:3])
    assert len(warned) == 1 and "no point was reached" in warned[0]


def test_a_budget_spent_after_the_interior_start_returns_its_point():
    """``start="ipm"`` (auto on binary data with 100+ components): the interior round's mu
    and its upper bound (2.2) exist when the budget ends in the simplex loop's first LP; the
    result is that model, with status ``time_limit`` (before: no model)."""
    adult = rc.datasets.load_adult()
    data = adult.take(np.random.default_rng(0).choice(adult.n, 3000, replace=False))
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(
        data, features=rc.features.RandomFourier(100, seed=0))))
    result, warned = _timed_out(problem, 1e-3)
    assert result.status == "time_limit" and result.has_model
    assert [h.get("phase") for h in result.history] == ["interior"]
    form = problem.canonical()
    assert result.certificate.upper_bound == pytest.approx(form.objective(result.mu),
                                                           rel=1e-9)
    assert result.predict(data.X[:5]).shape == (5,)
    assert len(warned) == 1


def test_a_budget_spent_in_a_later_lp_returns_the_last_lp_point(monkeypatch):
    """A later restricted LP stopped by the limit: the point of the last LP solved is
    returned with its certificate (before: no model after any number of iterations)."""
    from ratecons.backends.highs import HighsLP

    form = problem_of(load("glass")).canonical()
    solve, calls = HighsLP.solve, []

    def stopped_at_the_third(self):
        res = solve(self)
        calls.append(res)
        if len(calls) == 3:
            res.status = "time_limit"
        return res

    monkeypatch.setattr(HighsLP, "solve", stopped_at_the_third)
    with pytest.warns(ConvergenceWarning, match="best found"):
        sol = CCG(form, n_max=5).run()
    assert sol.status == "time_limit" and len(sol.history) == 2
    mu = sol.primal["mu"]
    assert sol.certificate.upper_bound == pytest.approx(form.objective(mu), rel=1e-9)
    assert sol.certificate.lower_bound == pytest.approx(calls[1].objective, rel=1e-9)


def test_bad_options_and_fixed_marginals_are_refused():
    U = rc.MomentSet(random_dataset(20, 2, 3, 0))
    form = rc.Problem(minimize=rc.minimax_risk(U)).canonical()
    with pytest.raises(SpecError, match="'eps1' parameter of ccg"):
        CCG(form, eps1=-1)
    with pytest.raises(SpecError, match="'n_max' parameter of ccg"):
        CCG(form, n_max=0)
    with pytest.raises(SpecError, match="'features' parameter of ccg"):
        CCG(form, features="some")
    fixed = rc.Problem(minimize=rc.minimax_risk(U, fixed_marginals=True))
    with pytest.raises(SpecError, match="fixed-marginals"):
        fixed.solve("ccg")
    with pytest.raises(rc.UnknownOptionError, match="unknown option"):
        rc.Problem(minimize=rc.minimax_risk(U)).solve("ccg", epsilon=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rc.Problem(minimize=rc.minimax_risk(U)).solve("ccg").status == "optimal"


def test_column_generation_with_eps2_lands_in_the_theorem_2_interval():
    form = problem_of(random_dataset(150, 4, 3, 11), rc.features.RandomFourier(40, seed=1)
                      ).canonical()
    ref = solve_mrc_lp(form)
    mu_star_l1 = np.abs(ref.primal["mu"]).sum()
    sol = CCG(form, features="generate", eps1=1e-3, eps2=1e-3, n_max=30, m_max=10).run()
    for h in sol.history:  # eq. (12): R* - eps_hat_1 <= R^k <= R* + eps_hat_2 ||mu*||_1
        assert ref.objective - h["primal_violation"] - 1e-9 <= restricted_value(h)
        assert restricted_value(h) <= ref.objective + h["dual_violation"] * mu_star_l1 + 1e-9
    assert sol.certificate.details["final_cols"] <= 2 * form.m + 1


@pytest.mark.parametrize("name,features,options", [
    ("glass", "linear", {"slack_patience": 3, "n_max": 15}),
    ("credit", "rff", {"slack_patience": 2}),
    ("iris", "linear", {"stabilization": 0.5, "n_max": 10}),
    ("haberman", "rff", {"stabilization": 0.8, "n_max": 20}),
])
def test_removal_policy_and_stabilization_match_the_lp_and_cvxpy(name, features, options):
    """Delayed removal of slack rows and in-out stabilization end at the exact R* (eps1 = 0):
    the full LP's and the CVXPY reference's value, with R^k non-decreasing."""
    from ratecons.reductions.to_cvxpy import solve_mrc_cvxpy

    fmap = "linear" if features == "linear" else rc.features.RandomFourier(30, seed=0)
    form = problem_of(load(name), fmap).canonical()
    lp, cvx = solve_mrc_lp(form), solve_mrc_cvxpy(form)
    sol = CCG(form, start="centroids", **options).run()  # the options of the simplex loop
    assert sol.status == "optimal"
    assert abs(sol.objective - lp.objective) <= 1e-6
    assert abs(sol.objective - cvx.objective) <= 1e-6
    R = np.array([restricted_value(h) for h in sol.history])
    assert np.all(np.diff(R) >= -1e-9)  # Theorem 1: only zero-multiplier rows are removed
    assert sol.history[-1]["primal_violation"] <= 1e-8  # scanned at the LP solution
    if options.get("slack_patience", 1) > 1:
        # a row is removed only after `slack_patience` consecutive solves with positive slack
        assert sum(h["removed_rows"] for h in sol.history[: options["slack_patience"] - 1]) == 0


def test_removal_and_stabilization_options_are_checked():
    form = problem_of(random_dataset(30, 2, 2, 0)).canonical()
    with pytest.raises(SpecError, match="'slack_patience' parameter of ccg"):
        CCG(form, slack_patience=0)
    with pytest.raises(SpecError, match="'stabilization' parameter of ccg"):
        CCG(form, stabilization=1.0)
