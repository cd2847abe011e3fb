"""Subgradient methods for 0-1 MRCs (thesis ch. 3) against brute force and the CVXPY oracle.

The reference optimum of (2.5) and (2.2) is the package's CVXPY lowering
(:func:`ratecons.reductions.to_cvxpy.solve_mrc_cvxpy`, every label subset enumerated, HiGHS) on
the package's canonical form (``rc.MomentSet`` with psi = [1, z-scored x], lambda0 = 0.3).
Tolerances: the solvers must land within 1e-2 of the optimum with their documented defaults
(the thesis's accuracy target, ch. 4); every objective they report is an exact evaluation
(>= optimum - 1e-7) and every lower bound is <= optimum + 1e-7.
"""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import ratecons as rc
from ratecons.canonical.mrc import MRCForm, all_subset_masks
from ratecons.errors import ConvergenceWarning, DataError, SpecError, UnknownOptionError
from ratecons.reductions.to_cvxpy import solve_mrc_cvxpy
from ratecons.settings import ITERATION_LIMIT, OPTIMAL
from ratecons.solvers import mrc_dual_bound, mrc_phi
from ratecons.solvers import subgradient as sg
from tests.mrc_helpers import random_dataset
from tests.shared_data import load

DATASETS = ["haberman", "iris", "glass", "random"]


class Instance:
    """The package's canonical MRC data in the argument order of the subgradient solvers."""

    def __init__(self, data: rc.Dataset) -> None:
        U = rc.MomentSet(data, lambda0=0.3)
        self.form = MRCForm(U.psi, U.n_classes, U.y, U.tau, U.lam)
        self.psi, self.n_classes, self.y, self.tau, self.lam = (
            U.psi, U.n_classes, U.y, U.tau, U.lam)

    def args(self):
        return self.psi, self.n_classes, self.y, self.tau, self.lam


def random_instance(n: int, d: int, n_classes: int, seed: int) -> Instance:
    return Instance(random_dataset(n, d, n_classes, seed))


@functools.cache
def instance(name: str) -> Instance:
    if name == "random":
        return random_instance(300, 4, 4, seed=3)
    if name == "small":
        return random_instance(100, 3, 3, seed=4)
    return Instance(load(name))


def reference(inst: Instance, fixed_marginals: bool, formulation: str = "subsets") -> float:
    """Optimum of (2.5) / (2.2) from the package's CVXPY lowering (HiGHS: an exact LP)."""
    form = MRCForm(inst.psi, inst.n_classes, inst.y, inst.tau, inst.lam,
                   fixed_marginals=fixed_marginals)
    sol = solve_mrc_cvxpy(form, solver="HIGHS", formulation=formulation)
    assert sol.status == OPTIMAL, sol.status
    return sol.objective


@functools.cache
def optimum(name: str, fixed_marginals: bool) -> float:
    return reference(instance(name), fixed_marginals)


def phi_brute_force(mu: np.ndarray, psi: np.ndarray, n_classes: int) -> np.ndarray:
    """phi(mu, x_i) of (2.6) by enumerating all 2^|Y| - 1 label subsets."""
    scores = psi @ mu.reshape(n_classes, -1).T
    masks = all_subset_masks(n_classes)
    sizes = masks.sum(axis=1)
    return np.max((scores @ masks.T - 1.0) / sizes, axis=1)


def run_quietly(fn, *args, **kwargs):
    """Run a solver; a ConvergenceWarning must come exactly with status iteration_limit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = fn(*args, **kwargs)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert warned == (sol.status == ITERATION_LIMIT)
    return sol


def check_solution(sol, inst, best: float, fixed_marginals: bool, tol: float = 1e-2):
    mu = sol.primal["mu"]
    assert mu.shape == (inst.n_classes * inst.psi.shape[1],)
    objective = mrc_phi.fixed_marginals_objective if fixed_marginals else mrc_phi.minimax_objective
    # the reported objective is the exact value at mu, hence an upper bound on the optimum
    assert sol.objective == pytest.approx(objective(mu, *inst.args()[:2], inst.tau, inst.lam),
                                          abs=1e-12)
    assert sol.objective >= best - 1e-7
    assert sol.objective - best <= tol
    cert = sol.certificate
    if cert.lower_bound is not None:
        assert cert.lower_bound <= best + 1e-7  # a certified lower bound never exceeds R*
        assert cert.gap == pytest.approx(sol.objective - cert.lower_bound)
    if sol.status == OPTIMAL:
        assert cert.gap <= cert.details.get("tol", 1e-3) + 1e-12
    bests = [h["upper"] for h in sol.history]
    assert bests and all(b2 <= b1 for b1, b2 in itertools.pairwise(bests))


# ------------------------------------------------------------------------------------------
# phi and its subgradient
# ------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6).flatmap(
    lambda k: arrays(np.float64, (5, k), elements=st.floats(-5, 5, allow_subnormal=False))))
def test_sorted_prefix_max_equals_brute_force(scores):
    n_classes = scores.shape[1]
    values, weights = mrc_phi.sorted_prefix_max(scores)
    subsets = [c for s in range(1, n_classes + 1)
               for c in itertools.combinations(range(n_classes), s)]
    brute = np.array([[(row[list(c)].sum() - 1) / len(c) for c in subsets] for row in scores])
    np.testing.assert_allclose(values, brute.max(axis=1), atol=1e-12)
    # the weights are uniform on a maximizing subset: they reproduce the value
    k = (weights > 0).sum(axis=1)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    np.testing.assert_allclose((weights * scores).sum(axis=1) - 1.0 / k, values, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_phi_matches_brute_force_on_features(n_classes, seed):
    rng = np.random.default_rng(seed)
    psi = np.hstack([np.ones((7, 1)), rng.normal(size=(7, 3))])
    mu = rng.normal(scale=2.0, size=n_classes * 4)
    np.testing.assert_allclose(mrc_phi.phi(mu, psi, n_classes),
                               phi_brute_force(mu, psi, n_classes), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**31 - 1))
def test_subgradient_inequality(n_classes, seed):
    """f(mu') >= f(mu) + g . (mu' - mu) for phi(., x_i) and for the objective of (2.5)."""
    rng = np.random.default_rng(seed)
    inst = random_instance(20, 3, n_classes, seed)
    m = n_classes * inst.psi.shape[1]
    mu = rng.normal(size=m) * rng.integers(0, 2, size=m)  # some exact zeros (|mu| kinks)
    other = rng.normal(scale=3.0, size=m)
    values, grads = mrc_phi.phi_subgradient(mu, inst.psi, n_classes)
    after = mrc_phi.phi(other, inst.psi, n_classes)
    assert np.all(after >= values + grads @ (other - mu) - 1e-9)
    g = -inst.tau + inst.lam * np.sign(mu) + grads.mean(axis=0)
    f = mrc_phi.fixed_marginals_objective
    assert f(other, *inst.args()[:2], inst.tau, inst.lam) >= \
        f(mu, *inst.args()[:2], inst.tau, inst.lam) + g @ (other - mu) - 1e-9


def test_subgradient_matches_finite_differences():
    """At a generic point phi is differentiable and the subgradient is its gradient."""
    rng = np.random.default_rng(0)
    inst = random_instance(30, 3, 4, 1)
    mu = rng.normal(size=4 * inst.psi.shape[1])
    values, grads = mrc_phi.phi_subgradient(mu, inst.psi, 4)
    eps = 1e-6
    numeric = np.empty_like(grads)
    for j in range(mu.size):
        step = np.zeros_like(mu)
        step[j] = eps
        up, down = mrc_phi.phi(mu + step, inst.psi, 4), mrc_phi.phi(mu - step, inst.psi, 4)
        numeric[:, j] = (up - down) / (2 * eps)
    np.testing.assert_allclose(numeric, grads, atol=1e-6)


@pytest.mark.parametrize("name", ["iris", "small"])
def test_compact_reference_matches_subset_enumeration(name):
    """The compact CVXPY formulation (used by the benchmark) equals the all-subsets one."""
    inst = instance(name)
    assert reference(inst, True, "compact") == pytest.approx(optimum(name, True), abs=1e-7)
    assert reference(inst, False, "compact") == pytest.approx(optimum(name, False), abs=1e-7)
    with pytest.raises(UnknownOptionError, match="formulation"):
        solve_mrc_cvxpy(inst.form, formulation="dual")


@pytest.mark.parametrize("fixed_marginals", [True, False])
def test_active_set_bound_is_valid_anywhere(fixed_marginals):
    """The active-set LP bound is a lower bound at any point and tolerance, tight at mu*."""
    inst = instance("small")
    best = optimum("small", fixed_marginals)
    inputs = mrc_phi.check_inputs(*inst.args(), "test")
    solved = run_quietly(sg.fixed_marginals_subgradient if fixed_marginals
                         else sg.constrained_subgradient, *inst.args(), tol=0.0)
    center = solved.primal["mu"].reshape(inst.n_classes, -1)
    rng = np.random.default_rng(0)
    finite = 0
    for scale in (0.0, 0.01, 0.1, 1.0):
        coef = center + rng.normal(scale=scale, size=center.shape)
        for eps in (0.01, 0.1, 1.0, 10.0):
            bound = mrc_dual_bound.active_set_bound(inputs, coef, fixed_marginals, eps)
            assert bound <= best + 1e-7
            finite += np.isfinite(bound)
    assert finite > 0
    tight = max(mrc_dual_bound.active_set_bound(inputs, center, fixed_marginals, eps)
                for eps in mrc_dual_bound.POLISH_EPS)
    assert best - 1e-3 <= tight <= best + 1e-7


def test_lower_bounds_are_certified():
    inst = instance("random")
    best_fm, best_mm = optimum("random", True), optimum("random", False)
    n = inst.psi.shape[0]
    empirical = np.zeros((n, inst.n_classes))
    empirical[np.arange(n), inst.y] = 1.0
    assert mrc_dual_bound.fixed_marginals_lower_bound(empirical, inst.psi, inst.y, inst.tau,
                                          inst.lam) == pytest.approx(0.0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        cond = rng.dirichlet(np.ones(inst.n_classes), size=n)
        assert mrc_dual_bound.fixed_marginals_lower_bound(cond, inst.psi, inst.y, inst.tau,
                                              inst.lam) <= best_fm + 1e-9
        joint = rng.dirichlet(np.ones(n * inst.n_classes)).reshape(n, inst.n_classes)
        assert mrc_dual_bound.minimax_lower_bound(joint, inst.psi, inst.y, inst.tau,
                                      inst.lam) <= best_mm + 1e-9
    # an anchor that violates the moment constraints gives no bound
    assert mrc_dual_bound.fixed_marginals_lower_bound(empirical, inst.psi, inst.y, inst.tau + 1.0,
                                          inst.lam) == -np.inf


# ------------------------------------------------------------------------------------------
# solvers against the CVXPY optimum
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("method", ["classic", "stochastic"])
def test_fixed_marginals_reaches_optimum(name, method):
    inst = instance(name)
    sol = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), method=method, seed=0)
    check_solution(sol, inst, optimum(name, True), fixed_marginals=True)
    if method == "classic":  # the defaults certify tol = 1e-3 on these data
        assert sol.status == OPTIMAL and sol.certificate.gap <= 1e-3
        assert sol.objective - optimum(name, True) <= 1e-3 + 1e-9


@pytest.mark.parametrize("name", DATASETS)
def test_constrained_reaches_optimum(name):
    inst = instance(name)
    sol = run_quietly(sg.constrained_subgradient, *inst.args())
    check_solution(sol, inst, optimum(name, False), fixed_marginals=False)
    nu = sol.primal["nu"][0]
    assert nu == pytest.approx(mrc_phi.phi(sol.primal["mu"], inst.psi, inst.n_classes).max())


@pytest.mark.parametrize("step", sorted(sg.STEP_RULES))
@pytest.mark.parametrize("iterate", ["best", "average"])
def test_every_step_rule_and_iterate(step, iterate):
    inst = instance("small")
    best = optimum("small", True)
    for method in ("classic", "stochastic"):
        if method == "stochastic" and step == "constant_length":
            continue  # normalized stochastic steps are biased (documented); checked below
        sol = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), method=method,
                          step=step, iterate=iterate, seed=1)
        check_solution(sol, inst, best, fixed_marginals=True)
    sol = run_quietly(sg.constrained_subgradient, *inst.args(), step=step, iterate=iterate)
    check_solution(sol, inst, optimum("small", False), fixed_marginals=False)


def test_stochastic_variants_and_determinism():
    inst = instance("random")
    best = optimum("random", True)
    for sampling, batch in (("cyclic", 1), ("random", 8), ("shuffle", 16)):
        kw = dict(method="stochastic", sampling=sampling, batch_size=batch, seed=5)
        a = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), **kw)
        check_solution(a, inst, best, fixed_marginals=True)
        # the iterates depend on the seed only (the gap test, whose bound LPs get a share of
        # the wall time, can stop runs at different iterations: fix the iteration count)
        fixed = dict(kw, max_iterations=3000, tol=0.0)
        b = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), **fixed)
        c = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), **fixed)
        np.testing.assert_array_equal(b.primal["mu"], c.primal["mu"])
    sol = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), method="stochastic",
                      step="constant_length", seed=0)
    assert sol.objective >= best - 1e-7


@pytest.mark.parametrize("step", sorted(sg.STEP_RULES))
def test_full_batch_stochastic_step_is_a_classic_step(step):
    """With batch_size = n the numba stochastic kernel takes exactly the classic steps."""
    inst = instance("small")
    n = inst.psi.shape[0]
    common = dict(step=step, step_params=sg.DEFAULT_STEP_PARAMS["classic"][step],
                  iterate="best", max_iterations=6, tol=0.0, check_every=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        classic = sg.fixed_marginals_subgradient(*inst.args(), method="classic", **common)
        stoch = sg.fixed_marginals_subgradient(*inst.args(), method="stochastic",
                                               batch_size=n, sampling="cyclic", **common)
    # classic entry k holds f(x_(k-1)) (before its step); stochastic entry j holds f(x_j)
    f_classic = np.array([h["objective"] for h in classic.history])
    f_stoch = np.array([h["objective"] for h in stoch.history])
    np.testing.assert_allclose(f_stoch[:5], f_classic[1:6], rtol=0, atol=1e-12)
    assert len(set(np.round(f_classic, 12))) > 1  # the iterates do move


def test_gap_certificate_and_stopping_rules():
    inst = instance("haberman")
    best = optimum("haberman", True)
    sol = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), tol=1e-3)
    assert sol.status == OPTIMAL and sol.certificate.details["stopped_by"] == "gap"
    assert sol.certificate.gap <= 1e-3
    assert sol.objective - best <= 1e-3 + 1e-9  # certified: the gap bounds the true error
    with pytest.warns(ConvergenceWarning, match="max_iterations=5"):
        short = sg.fixed_marginals_subgradient(*inst.args(), max_iterations=5)
    assert short.status == ITERATION_LIMIT and short.certificate.details["iterations"] == 5
    # the history ends at the certificate's bound (the final active-set bound), as plotted
    for run in (short, sol):
        last = run.history[-1]
        assert last["lower"] == run.certificate.lower_bound
        assert last["upper"] == run.certificate.upper_bound
        assert last["gap"] == run.certificate.gap
    with pytest.warns(ConvergenceWarning, match="improvement_tol"):
        imp = sg.fixed_marginals_subgradient(*inst.args(), tol=0.0, improvement_tol=1e-1)
    assert imp.certificate.details["stopped_by"] == "stalled"
    seen = []
    run_quietly(sg.constrained_subgradient, *inst.args(), max_iterations=300, callback=seen.append)
    assert len(seen) == 300 and seen[-1]["iteration"] == 300 and "gap" in seen[-1]


def test_warm_start_keeps_quality():
    inst = instance("iris")
    first = run_quietly(sg.fixed_marginals_subgradient, *inst.args())
    again = run_quietly(sg.fixed_marginals_subgradient, *inst.args(), mu0=first.primal["mu"],
                        max_iterations=50)
    assert again.objective <= first.objective + 1e-12


def test_bad_inputs_raise_clear_errors():
    inst = instance("random")
    psi, k, y, tau, lam = inst.args()
    f = sg.fixed_marginals_subgradient
    with pytest.raises(DataError, match="psi has NaN"):
        f(np.where(psi > 1, np.nan, psi), k, y, tau, lam)
    with pytest.raises(DataError, match="y must have shape"):
        f(psi, k, y[:-1], tau, lam)
    with pytest.raises(DataError, match="class codes"):
        f(psi, k, y + 10, tau, lam)
    with pytest.raises(DataError, match="tau must have"):
        f(psi, k, y, tau[:-1], lam)
    with pytest.raises(DataError, match="lam must be >= 0"):
        f(psi, k, y, tau, -lam)
    with pytest.raises(SpecError, match="'n_classes' parameter"):
        f(psi, 1, y, tau, lam)
    with pytest.raises(SpecError, match="'step' parameter"):
        f(psi, k, y, tau, lam, step="polyak")
    with pytest.raises(SpecError, match="'step_params' parameter"):
        f(psi, k, y, tau, lam, step="constant", step_params={"gamma": 1.0})
    with pytest.raises(SpecError, match="'method' parameter"):
        f(psi, k, y, tau, lam, method="newton")
    with pytest.raises(SpecError, match="'batch_size' parameter"):
        f(psi, k, y, tau, lam, method="stochastic", batch_size=0)
    with pytest.raises(SpecError, match="'iterate' parameter"):
        sg.constrained_subgradient(psi, k, y, tau, lam, iterate="last")
    with pytest.raises(DataError, match="mu must have"):
        mrc_phi.phi(np.zeros(3), psi, k)


def test_a_spent_time_budget_polishes_the_certificate_once(monkeypatch):
    """A user's time_limit=0.01 took 0.74-1.7 s: the loop looked at the clock every 100
    iterations only, and the active-set LPs of the certificate (Algorithm 6) ran at that
    checkpoint and again at the finish, on the same best point. The loop now stops at the
    first iteration past the budget and the finish reuses the checkpoint's polish."""
    calls = []
    real = mrc_dual_bound.active_set_bound

    def counted(inputs, coef, fixed_marginals, eps):
        calls.append(np.array(coef, copy=True))
        return real(inputs, coef, fixed_marginals, eps)

    monkeypatch.setattr(mrc_dual_bound, "active_set_bound", counted)
    data = random_dataset(300, 5, 3, seed=4)
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(data, lambda0=0.05)))
    with pytest.warns(ConvergenceWarning, match="time_limit"):
        result = problem.solve("subgradient", time_limit=1e-9)
    assert result.status == "time_limit"
    assert len(result.history) < 100  # stopped within one iteration, not at the checkpoint
    assert len({c.tobytes() for c in calls}) == 1  # one point polished (at a few tolerances)
    assert len(calls) <= len(mrc_dual_bound.POLISH_EPS)  # polished once: 8 LPs before
