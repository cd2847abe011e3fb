"""The structured interior point for the MRC LP (4) and CCG's interior start (start="ipm").

References: the full LP on HiGHS (``solve_mrc_lp``) and the CVXPY statement of (2.2)
(``solve_mrc_cvxpy``); the structured products are checked against F built row by row.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.backends.highs import HighsLP
from ratecons.canonical.mrc import all_subset_masks, subset_rhs, subset_rows
from ratecons.errors import ConvergenceWarning, SpecError
from ratecons.reductions.to_cvxpy import solve_mrc_cvxpy
from ratecons.solvers import ccg as ccg_module
from ratecons.solvers.ccg import CCG
from ratecons.solvers.mrc_ipm import StructuredRows, dual_lower_bound, solve_rows_ipm
from ratecons.solvers.mrc_lp import solve_mrc_lp
from tests.mrc_helpers import random_dataset
from tests.shared_data import load


def form_of(data, features="linear", one_hot=True, **moments):
    U = rc.MomentSet(data, features=features, one_hot=one_hot, **moments)
    return rc.Problem(minimize=rc.minimax_risk(U)).canonical()


def full_rows(form) -> StructuredRows:
    subsets = all_subset_masks(form.n_classes)
    masks = np.tile(subsets, (form.n, 1))
    inst = np.repeat(np.arange(form.n), subsets.shape[0])
    return StructuredRows(form.psi, inst, form.subset_weights(masks), subset_rhs(masks))


CASES = {
    "binary one-hot rff": (lambda: form_of(random_dataset(150, 4, 2, 0),
                                           rc.features.RandomFourier(30, seed=0))),
    "binary compact": (lambda: form_of(random_dataset(150, 4, 2, 1), one_hot=False)),
    "3 classes relu": (lambda: form_of(random_dataset(120, 3, 3, 2),
                                       rc.features.RandomReLU(20, seed=1))),
    "5 classes linear": (lambda: form_of(random_dataset(60, 3, 5, 3))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_structured_products_equal_the_rows_of_lp4(case):
    """gram, times and transpose_times against F from subset_rows, on row subsets too:
    binary one-hot and 3 classes take the per-subset syrk path, compact (3 subsets, L = 1)
    and 5 classes (31 subsets > 25 label pairs) the per-pair path."""
    form = CASES[case]()
    rows = full_rows(form)
    rng = np.random.default_rng(0)
    for take in (np.arange(rows.b.size), np.sort(rng.choice(rows.b.size, 40, replace=False))):
        part = rows.take(take)
        F = subset_rows(form.psi, part.source, np.asarray(
            all_subset_masks(form.n_classes)[take % form.n_subsets]), form.label_map)[0]
        F = F.toarray()
        d = rng.exponential(size=take.size)
        mu = rng.normal(size=form.m)
        np.testing.assert_allclose(part.gram(d), F.T @ (d[:, None] * F), rtol=1e-10,
                                   atol=1e-10)
        np.testing.assert_allclose(part.times(mu), F @ mu, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(part.transpose_times(d), F.T @ d, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_interior_point_solves_the_full_lp(case):
    """Without constraint reduction the interior point reaches the full LP's optimum; with
    it (the default), the value is that of a relaxation: never above R*."""
    form = CASES[case]()
    ref = solve_mrc_lp(form).objective
    exact = solve_rows_ipm(full_rows(form), form.tau, form.lam, reduce=0.0)
    assert exact.status == "converged"
    assert abs(exact.objective - ref) <= 1e-7
    assert form.objective(exact.mu) - ref <= 1e-7
    assert np.all(exact.alpha >= 0) and np.all(exact.slack >= -1e-7)
    reduced = solve_rows_ipm(full_rows(form), form.tau, form.lam)
    assert reduced.status == "converged"
    assert reduced.objective <= ref + 1e-7
    assert np.all(reduced.alpha[np.setdiff1d(np.arange(reduced.alpha.size), reduced.live)] == 0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-6, 1.0))
def test_dual_lower_bound_never_exceeds_the_optimum(seed, scale):
    """Weak duality for any alpha >= 0 (scaled to the simplex), however infeasible for (6),
    with the upper bound R(mu) >= lambda^T |mu*| as the norm bound."""
    form = CASES["binary one-hot rff"]()
    rows = full_rows(form)
    ref = solve_mrc_lp(form).objective
    rng = np.random.default_rng(seed)
    ipm = solve_rows_ipm(rows, form.tau, form.lam, reduce=0.0)
    alpha = np.maximum(ipm.alpha + scale * rng.exponential(size=ipm.alpha.size)
                       * (rng.random(ipm.alpha.size) < 0.1), 0.0)
    upper = form.objective(ipm.mu)
    assert dual_lower_bound(rows, alpha, form.tau, form.lam, upper) <= ref + 1e-9


def test_dual_lower_bound_is_tight_at_the_interior_solution():
    form = CASES["binary one-hot rff"]()
    rows = full_rows(form)
    ref = solve_mrc_lp(form).objective
    ipm = solve_rows_ipm(rows, form.tau, form.lam)
    upper = form.objective(ipm.mu)
    lower = dual_lower_bound(rows, ipm.alpha, form.tau, form.lam, upper)
    assert lower <= ref + 1e-9 <= upper + 2e-9
    assert upper - lower <= 1e-6
    # a component with lambda_j = 0 that alpha violates leaves no finite bound
    lam = form.lam.copy()
    g = np.abs(rows.transpose_times(ipm.alpha / ipm.alpha.sum()) - form.tau)
    lam[np.argmax(g)] = 0.0
    assert dual_lower_bound(rows, ipm.alpha, form.tau, lam, upper) == -np.inf


def _check_against_references(form, sol):
    lp = solve_mrc_lp(form).objective
    cvx = solve_mrc_cvxpy(form).objective
    assert sol.status == "optimal"
    assert abs(sol.objective - lp) <= 1e-6 and abs(sol.objective - cvx) <= 1e-6
    cert = sol.certificate
    assert cert.gap <= 1e-6
    assert cert.lower_bound <= lp + 1e-9 <= cert.upper_bound + 2e-9
    assert cert.max_violation <= 1e-8
    assert form.objective(sol.primal["mu"]) == pytest.approx(cert.upper_bound, abs=1e-12)


@pytest.mark.parametrize("name,features,one_hot", [
    ("haberman", "rff", True), ("credit", "linear", False), ("adult", "rff", True),
    ("synthetic", "relu", True),
])
def test_interior_start_matches_the_references(name, features, one_hot):
    """CCG with start="ipm" (auto's choice for binary data with dense rows) against the full
    LP and CVXPY, on real data (adult: 1,500 rows) and synthetic data."""
    if name == "synthetic":
        data = random_dataset(400, 6, 2, 5)
    else:
        data = load(name)
        if name == "adult":
            data = data.take(np.random.default_rng(0).permutation(data.n)[:1500])
    fmap = {"linear": "linear", "rff": rc.features.RandomFourier(40, seed=0),
            "relu": rc.features.RandomReLU(30, seed=0)}[features]
    form = form_of(data, fmap, one_hot=one_hot)
    ccg = CCG(form, start="ipm")
    sol = ccg.run()
    _check_against_references(form, sol)
    assert sol.history[0]["phase"] == "interior"
    if features == "relu":
        # ReLU units dead on one class give lambda_j = 0 = tau_j with F_j != 0: the dual
        # bound needs F_j^T alpha = 0 exactly, which an interior point does not deliver, so
        # the simplex loop certifies
        assert np.any(form.lam == 0)
        assert sol.solver == "ccg/highs-simplex"
    else:
        assert sol.solver == "ccg/interior-point"
        assert sol.certificate.details["phase"] == "interior"
        # the certified rows are in the live model (for export_mps(restricted=True))
        assert ccg.model.n_rows > 2 * form.n_subsets
        # the multipliers refer to the live model's rows, as on the simplex path: nearly a
        # point of the simplex whose dual value -b^T alpha is R*
        alpha = sol.dual["alpha"]
        assert alpha.shape == (ccg.model.n_rows,) and alpha.min() >= 0
        assert alpha.sum() == pytest.approx(1.0, abs=1e-6)
        assert -subset_rhs(ccg._rows.masks) @ alpha == pytest.approx(sol.objective, abs=1e-5)


def test_crossover_fallback_when_the_dual_bound_is_unavailable():
    """With tau not the sample mean the dual bound does not apply: the interior solution
    seeds the simplex loop (rows and a guessed basis), which certifies as Alg. 1 does."""
    data = random_dataset(300, 5, 2, 8)
    base = form_of(data, rc.features.RandomFourier(25, seed=2))
    tau = base.tau + 1e-3 * np.random.default_rng(0).normal(size=base.m)
    form = form_of(data, rc.features.RandomFourier(25, seed=2), tau=tau)
    sol = CCG(form, start="ipm").run()
    assert sol.solver == "ccg/highs-simplex"
    assert sol.history[0]["phase"] == "interior"
    _check_against_references(form, sol)
    cold = CCG(form, start="centroids").run()
    simplex = [h["lp_iterations"] for h in sol.history if "phase" not in h]
    assert sum(simplex) < sum(h["lp_iterations"] for h in cold.history)


def test_crossover_basis_is_optimal_at_an_exact_start(monkeypatch):
    """Forcing the fallback on the issue's kind of instance (dense features, binary):
    from the interior solution's rows and basis the first simplex solve needs few pivots."""
    form = form_of(random_dataset(800, 8, 2, 4), rc.features.RandomFourier(60, seed=0))
    monkeypatch.setattr(ccg_module, "dual_lower_bound", lambda *a, **k: -np.inf)
    sol = CCG(form, start="ipm").run()
    _check_against_references(form, sol)
    first = next(h for h in sol.history if "phase" not in h)
    full = solve_mrc_lp(form, solver="simplex", formulation="primal")
    assert first["lp_iterations"] < 0.2 * full.certificate.details["iterations"]


def test_auto_start_and_bad_start_options():
    binary = form_of(random_dataset(80, 3, 2, 0))
    # auto: the interior start for binary data with at least IPM_START_MIN_COMPONENTS
    # components of mu (dense rows), the centroids below
    assert binary.m < ccg_module.IPM_START_MIN_COMPONENTS
    assert CCG(binary).run().solver == "ccg/highs-simplex"
    assert CCG(binary, start="ipm").run().solver == "ccg/interior-point"
    dense = form_of(random_dataset(80, 3, 2, 0), rc.features.RandomFourier(50, seed=0))
    assert dense.m >= ccg_module.IPM_START_MIN_COMPONENTS
    assert CCG(dense).run().solver == "ccg/interior-point"
    assert CCG(dense, start="centroids").run().solver == "ccg/highs-simplex"
    three = form_of(random_dataset(80, 3, 3, 0))
    assert CCG(three).run().solver == "ccg/highs-simplex"  # auto: binary only
    assert CCG(three, start="ipm").run().status == "optimal"
    with pytest.raises(SpecError, match="'start' parameter of ccg"):
        CCG(binary, start="interior")
    with pytest.raises(SpecError, match="start='ipm' needs features='all'"):
        CCG(binary, start="ipm", features="generate")
    with pytest.raises(SpecError, match="init_full_classes"):
        CCG(three, start="ipm", init_full_classes=2)
    # through the Problem API
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(random_dataset(80, 3, 2, 0))))
    assert problem.solve("ccg", start="centroids").status == "optimal"


def test_set_basis_checks_its_size():
    form = form_of(random_dataset(40, 2, 2, 0))
    ccg = CCG(form, start="centroids")
    ccg._initial()
    with pytest.raises(ValueError, match="a basis needs"):
        ccg.model.set_basis(np.ones(3, dtype=bool), np.ones(2, dtype=bool))
    assert isinstance(ccg.model, HighsLP)


def test_restricted_export_after_an_interior_certificate(tmp_path):
    """export_mps(restricted=True) on a binary problem writes the rows the interior start
    certified; HiGHS re-solves the file to R*."""
    from ratecons.backends.mps import solve_mps

    U = rc.MomentSet(random_dataset(300, 4, 2, 3), features=rc.features.RandomFourier(20, seed=0))
    problem = rc.Problem(minimize=rc.minimax_risk(U))
    R = problem.solve("lp").objective
    info = rc.export_mps(problem, tmp_path / "restricted.mps", restricted=True)
    assert info["rows"] < 300 * 3
    assert abs(solve_mps(tmp_path / "restricted.mps").objective - R) <= 1e-7


def test_dual_lower_bound_meets_one_signed_zero_lambda_columns_exactly():
    """ReLU units that are zero on one class give lambda_j = 0 = tau_j with F_j >= 0: the
    bound zeroes alpha on those columns' rows and stays finite and below R*."""
    form = form_of(random_dataset(400, 6, 2, 5), rc.features.RandomReLU(30, seed=0))
    assert np.any((form.lam == 0) & (form.tau == 0))
    rows = full_rows(form)
    ref = solve_mrc_lp(form).objective
    ipm = solve_rows_ipm(rows, form.tau, form.lam, reduce=0.0)
    upper = form.objective(ipm.mu)
    lower = dual_lower_bound(rows, ipm.alpha, form.tau, form.lam, upper)
    assert np.isfinite(lower) and lower <= ref + 1e-9 and ref - lower <= 1e-3


def test_time_limit_stops_the_interior_point():
    form = form_of(random_dataset(300, 4, 2, 1), rc.features.RandomFourier(20, seed=0))
    rows = full_rows(form)
    res = solve_rows_ipm(rows, form.tau, form.lam, deadline=0.0)
    assert res.status == "time_limit"
    with pytest.warns(ConvergenceWarning, match="time_limit"):
        sol = CCG(form, time_limit=1e-9).run()
    assert sol.status == "time_limit"
