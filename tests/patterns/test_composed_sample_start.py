"""The chain's start from a row sample (issues 29 and 33, :mod:`ratecons.sample_start`).

Above a row threshold the structured and CVXPY chains solve the same declarations on every
k-th row first and start MM on all rows from that model. Checked here: the sample's rows and
subsets are the declared ones among every k-th row; the start is used and saves MM steps and
interior-point iterations on an instance where the sample is large enough; the answer is
still certified on all rows (the last step's anchor is the full data's, and the step solved
again at it reproduces its value); a sample model that misses a row on all rows is tightened
on the sample first; ``plan()`` says it; bad option values raise a clear error.
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.errors import SpecError
from ratecons.sample_start import sample_rows, sample_size, sampled_analysis
from tests.sample_start_helpers import logistic_rule, two_groups
from tests.shared_data import load


def test_sample_rows_are_every_kth_global_row():
    assert sample_rows(10, 3).tolist() == [0, 4, 8]  # k = ceil(10 / 3) = 4
    assert sample_rows(9, 3).tolist() == [0, 3, 6]
    assert sample_rows(5, 10).tolist() == [0, 1, 2, 3, 4]


def test_the_sample_holds_the_declared_subsets_among_its_rows():
    D = two_groups(1000)
    sampled, rows = sampled_analysis(logistic_rule(D).analysis, 300)
    taken = sample_rows(1000, 300)  # k = 4
    assert rows == taken.size == 250
    [sample] = sampled.datasets
    np.testing.assert_array_equal(sample.X, D.X[taken])
    np.testing.assert_array_equal(sample.y, D.y[taken])
    women = np.flatnonzero(D.groups["g"][taken] == "F")
    [(_, part)] = sampled.constraints[0].rate_parts
    indices = sorted(subset.index.tolist() for subset, _ in part.terms.values())
    assert women.tolist() in indices
    # the same declaration with the same bound, its rates means over the sample
    assert sampled.constraints[0].bound == logistic_rule(D).analysis.constraints[0].bound


def _parity(n: int = 20_000, d: int = 20, seed: int = 0) -> tuple[rc.Dataset, rc.Problem]:
    """Hinge loss + FPR parity on the dense synthetic rows of ``benchmarks.composition``."""
    rng = np.random.default_rng(seed)
    group = rng.random(n) < 0.4
    X = rng.normal(size=(n, d))
    X[:, 0] -= np.where(group, 1.0, 0.0)
    y = (X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": np.where(group, "a", "b")})
    a, b = D.group("g", "a"), D.group("g", "b")
    return D, rc.Problem(minimize=rc.hinge_loss(D), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.false_positive_rate(a) - rc.false_positive_rate(b)
                                     <= 0.02])


def test_the_start_saves_steps_and_the_answer_is_certified_on_all_rows():
    D, problem = _parity()
    off = problem.solve("structured", sample_start=False)
    on = problem.solve("structured", sample_start=5_000)
    used = on.certificate.details["sample_start"]
    assert used["used"] == "as the start of MM" and used["rows"] == 5_000
    assert "sample_start" not in off.certificate.details
    assert on.status == off.status == "optimal"
    # fewer MM steps and interior-point iterations on all rows than from the hinge relaxation
    # (measured: 3 -> 2 steps, 117 -> 35 iterations)
    assert on.certificate.details["mm_iterations"] < off.certificate.details["mm_iterations"]
    assert (2 * on.certificate.details["interior_iterations"]
            < off.certificate.details["interior_iterations"])
    # the certificate is the full data's: the last step's anchor scores every row, and that
    # step solved again reproduces its optimal value; the deterministic model meets the rule
    anchor = on.last_step.anchor
    assert [z.shape for z in anchor.values()] == [(D.n,)]
    again = problem.solve("structured", only_step=on.last_step)
    assert abs(again.last_step.bound_objective - on.last_step.bound_objective) <= 1e-6
    assert on.certificate.max_violation <= settings.FEASIBILITY_TOL
    assert on.report().all_satisfied
    # here both starts end at the same fixed point (MM's fixed points are local in general)
    assert abs(on.objective - off.objective) <= 1e-8


def test_a_missed_row_is_tightened_on_the_sample_first():
    """A 100-row sample's model misses the 80% rule on all 3,000 rows (seed 0); the sample is
    solved again with the rule tightened by twice the miss, and MM starts from that model."""
    problem = logistic_rule(two_groups(3000, seed=0))
    result = problem.solve("structured", sample_start=100)
    used = result.certificate.details["sample_start"]
    assert used["used"] == "as the start of MM"
    assert used["tightened_by"][0] > 0.0
    assert result.status == "optimal" and result.report().all_satisfied


def test_phase_one_repairs_a_sample_model_that_misses_a_row(monkeypatch):
    """Without the tightening on the sample, phase one starts from the sample's scores on
    all rows and MM from the feasible point it finds."""
    monkeypatch.setattr(settings, "SAMPLE_START_TIGHTENINGS", 0)
    result = logistic_rule(two_groups(3000, seed=0)).solve("structured", sample_start=100)
    details = result.certificate.details
    assert details["sample_start"]["used"].startswith("as the anchor of phase one")
    assert details["phase1_after"] == "sample start" and details["phase1_iterations"] >= 1
    assert result.status == "optimal" and result.report().all_satisfied


def test_the_cvxpy_chain_takes_the_same_start():
    problem = logistic_rule(two_groups(1500, seed=1))
    structured = problem.solve("structured", sample_start=500)
    reference = problem.solve("cvxpy", sample_start=500)
    for result in (structured, reference):
        assert result.certificate.details["sample_start"]["rows"] == 500
        assert result.status == "optimal"
    assert abs(structured.objective - reference.objective) <= 1e-4


def test_plan_says_when_the_chain_starts_from_a_sample(monkeypatch):
    problem = logistic_rule(two_groups(3000))
    assert not any("sample" in r for r in problem.plan("structured").reasons)
    monkeypatch.setattr(settings, "SAMPLE_START_MIN_ROWS", 2000)
    monkeypatch.setattr(settings, "SAMPLE_START_ROWS", 1000)
    said = [r for r in problem.plan("structured").reasons if "sample" in r]
    assert said and said[0].startswith("starts from a solve on a 429-row sample")  # 3000 / 7
    monkeypatch.setattr(settings, "SAMPLE_START_EVERY", 2)  # 1,500 rows, at most 1,000
    said = [r for r in problem.plan("structured").reasons if "sample" in r]
    assert said and said[0].startswith("starts from a solve on a 1,000-row sample")
    assert "unless the sample's MM took steps but lowered its hinge relaxation's" in said[0]
    assert "1,500-row sample" in "\n".join(problem.plan("cvxpy", sample_start=1500).reasons)
    assert not any("sample" in r for r in problem.plan("structured", sample_start=False).reasons)


@pytest.mark.parametrize("bad", [-1, 50, 1.5, "yes", [100]])
def test_bad_sample_start_values_raise(bad):
    problem = logistic_rule(two_groups(600))
    with pytest.raises(SpecError, match="'sample_start' parameter of method 'structured'"):
        problem.solve("structured", sample_start=bad)
    with pytest.raises(SpecError, match="'sample_start' parameter of method 'cvxpy'"):
        problem.plan("cvxpy", sample_start=bad)


def test_a_subset_with_no_row_in_the_sample_keeps_the_default_start():
    D = two_groups(1000)
    odd = D.where(np.arange(D.n) % 2 == 1, name="odd rows")  # the sample (k = 2) has none
    problem = rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(odd) >= 0.5])
    result = problem.solve("structured", sample_start=500)
    used = result.certificate.details["sample_start"]["used"]
    assert used.startswith("no: ") and "odd rows" in used
    assert result.status == "optimal"


def test_tpr_at_k_is_sampled_at_the_same_share_and_not_in_a_constraint():
    D = two_groups(1000)
    rule = rc.positive_rate(D.group("g", "F")) >= 0.8 * rc.positive_rate(D.group("g", "M"))
    at_k = rc.Problem(maximize=rc.tpr_at_top(D, k=20), subject_to=[rule],
                      model=rc.LinearModel(l2=1e-2))
    at_tau = rc.Problem(maximize=rc.tpr_at_quantile(D, tau=0.05), subject_to=[rule],
                        model=rc.LinearModel(l2=1e-2))
    k_row = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.tpr_at_top(D, k=20) >= 0.5],
                       model=rc.LinearModel(l2=1e-2))
    assert sample_size(at_k.analysis, 500) == 500
    assert sample_size(at_tau.analysis, 500) == 500
    assert sample_size(k_row.analysis, 500) is None  # a counted K in a row: no sample
    # the objective's K keeps its share of the examples its threshold is among (k / n_tilde)
    full = at_k.analysis.objective.source
    sampled = sampled_analysis(at_k.analysis, 500)[0].objective.source
    assert sampled.k == max(1, round(20 * sampled.n_tilde / full.n_tilde))
    assert sampled.n_tilde < full.n_tilde and sampled.k < 20


def test_tpr_at_k_from_a_sample_agrees_with_the_cvxpy_chain_and_without_it():
    # 4,000 synthetic rows, K = 40 (1%), the 80% rule, a 1,000-row sample (K = 10 there):
    # the structured and CVXPY chains from the same sample, and the structured chain without
    # one, reach the same fixed point (200,000 rows: 46 s -> 8.4 s, docs/composition_log.md)
    rng = np.random.default_rng(0)
    shifted = rng.random(4000) < 0.4
    X = rng.normal(size=(4000, 8))
    X[:, 0] -= np.where(shifted, 1.0, 0.0)
    y = (X @ rng.normal(size=8) + 0.5 * rng.normal(size=4000) > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": np.where(shifted, "a", "b")})
    rule = rc.positive_rate(D.group("g", "a")) >= 0.8 * rc.positive_rate(D.group("g", "b"))
    problem = rc.Problem(maximize=rc.tpr_at_top(D, k=40), subject_to=[rule],
                         model=rc.LinearModel(l2=1e-3))
    structured = problem.solve("structured", sample_start=1000)
    reference = problem.solve("cvxpy", sample_start=1000)
    alone = problem.solve("structured", sample_start=False)
    for result in (structured, reference):
        assert result.certificate.details["sample_start"]["used"] == "as the start of MM"
    for result in (structured, reference, alone):
        assert result.status == "optimal" and "degenerate" not in result.certificate.details
    assert structured.objective == pytest.approx(reference.objective, abs=1e-6)
    assert structured.objective == pytest.approx(alone.objective, abs=1e-6)
    assert structured.objective > 0.5  # TPR@K of 65%, not the constant model's 0


def test_on_adult_the_structured_and_cvxpy_chains_agree_from_the_same_sample():
    """Real data: 2,000 Adult rows, logistic loss + 80% rule, both chains from one 500-row
    sample; the same start and the same steps give the same fixed point (1e-4, #29)."""
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    train = train.take(np.random.default_rng(0).choice(train.n, 2000, replace=False))
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    problem = rc.Problem(minimize=rc.logistic_loss(train), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])
    structured = problem.solve("structured", sample_start=500)
    reference = problem.solve("cvxpy", sample_start=500)
    for result in (structured, reference):
        assert result.certificate.details["sample_start"]["rows"] == 500
        assert result.status == "optimal" and result.report().all_satisfied
    assert abs(structured.objective - reference.objective) <= 1e-4 * max(1.0, abs(
        reference.objective))


@pytest.mark.slow
def test_tpr_at_k_from_a_sample_agrees_with_the_cvxpy_chain_on_satellite():
    # real data (satellite, 6,435 rows, standardized; label: class above the median class;
    # group a: the rows above the first feature's median), K = 1% of the negatives, the 80%
    # rule, a 1,000-row sample
    raw = load("satellite")
    X = np.asarray(raw.X, dtype=float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (np.asarray(raw.y) > np.median(raw.y)).astype(int)
    D = rc.Dataset(X, y, groups={"g": np.where(X[:, 0] > np.median(X[:, 0]), "a", "b")},
                   name="satellite")
    rule = rc.positive_rate(D.group("g", "a")) >= 0.8 * rc.positive_rate(D.group("g", "b"))
    problem = rc.Problem(maximize=rc.tpr_at_top(D, k=int(0.01 * np.sum(y == 0))),
                         subject_to=[rule], model=rc.LinearModel(l2=1e-3))
    structured = problem.solve("structured", sample_start=1000)
    reference = problem.solve("cvxpy", sample_start=1000)
    for result in (structured, reference):
        assert result.certificate.details["sample_start"]["used"] == "as the start of MM"
        assert result.status == "optimal" and "degenerate" not in result.certificate.details
    assert structured.objective == pytest.approx(reference.objective, abs=1e-6)
    assert structured.objective > 0.4  # TPR@K of 48%
