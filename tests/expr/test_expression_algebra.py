"""The one expression algebra of ``ratecons.expr`` (issue 30): every atom is a Term, every
comparison gives the one Constraint class, and terms answer one protocol (curvature, datasets,
range, evaluate, rebind) that the analysis reads without switching on their types."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ratecons as rc
from ratecons.expr.analysis import analyse
from ratecons.expr.atom import Constraint, Sum, Term
from ratecons.report import make_rebinder
from ratecons.result import LinearScorer
from ratecons.testing import small_composition_data


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(200, baseline=True)


@pytest.fixture(scope="module")
def scorer(data) -> LinearScorer:
    return LinearScorer(np.array([1.0, 0.4, -0.2]), 0.1)


def _terms(data: rc.Dataset) -> dict[str, Term]:
    ball = rc.PhiDivergenceBall(data.positives, phi="chi2", rho=0.1)
    return {
        "rate": rc.error_rate(data),
        "ratio": rc.precision(data),
        "tpr_at_top": rc.tpr_at_top(data, k=5),
        "mean_loss": rc.hinge_loss(data),
        "robust_loss": rc.robust_loss(rc.PhiDivergenceBall(data, phi="kl", rho=0.05)),
        "worst_case": rc.worst_case(rc.recall(data), ball),
        "minimax_risk": rc.minimax_risk(rc.MomentSet(data)),
    }


def test_every_atom_is_a_term_with_a_curvature(data):
    curvature = {name: term.curvature for name, term in _terms(data).items()}
    assert all(isinstance(t, Term) for t in _terms(data).values())
    assert curvature == {"rate": "rate", "ratio": "ratio", "tpr_at_top": "concave",
                         "mean_loss": "convex", "robust_loss": "convex",
                         "worst_case": "rate", "minimax_risk": "convex"}


def test_evaluate_is_the_exact_or_the_surrogate_value(data, scorer):
    terms = _terms(data)
    for name in ("rate", "ratio"):
        term = terms[name]
        assert term.evaluate(scorer, "exact") == term.value(scorer, "indicator")
        assert term.evaluate(scorer, "surrogate") == term.value(scorer, "ramp")
        assert term.surrogate_value(scorer) == term.value(scorer, "ramp")
    for name in ("tpr_at_top", "mean_loss", "robust_loss"):
        term = terms[name]
        assert term.evaluate(scorer, "exact") == term.value(scorer)
        assert term.evaluate(scorer, "surrogate") == term.surrogate_value(scorer)
    # a worst case takes the reweighting that hurts its row: the max for a positive
    # coefficient, the min for a negative one (a floor)
    worst = terms["worst_case"]
    high, low = worst.evaluate(scorer, "exact", 1.0), worst.evaluate(scorer, "exact", -1.0)
    plain = rc.recall(data).value(scorer)
    assert low <= plain <= high and low < high
    assert low == worst.value(scorer)


def test_every_comparison_is_one_constraint_class_reading_as_written(data):
    women, men = data.group("g", "a"), data.group("g", "b")
    made = {
        "rate": rc.recall(data) >= 0.6,
        "two rates": rc.positive_rate(women) >= 0.8 * rc.positive_rate(men),
        "ratio": rc.precision(data) >= 0.7,
        "term": rc.tpr_at_top(data, k=5) >= 0.5,
        "rate vs term": rc.recall(data) >= rc.tpr_at_top(data, k=5),
        "sum": rc.hinge_loss(data) + 0.5 * rc.error_rate(data) <= 0.9,
    }
    assert all(isinstance(c, rc.Constraint) and type(c) is Constraint for c in made.values())
    assert {k: c.rates_only for k, c in made.items()} == {
        "rate": True, "two rates": True, "ratio": True, "term": False, "rate vs term": False,
        "sum": False}
    assert made["rate vs term"].name == "recall(syn[+]) >= tpr_at_top(syn, k=5)"
    assert made["ratio"].name == "precision(syn[all]) >= 0.7"
    assert made["two rates"].name == "positive_rate(syn[g=a]) >= 0.8*(positive_rate(syn[g=b]))"
    # the rates of a sum merge into one linear rate expression, placed first (TFCO)
    total = rc.error_rate(data) + rc.hinge_loss(data) + rc.recall(data)
    assert isinstance(total, Sum) and [type(p).__name__ for _, p in total.parts] == [
        "RateExpr", "MeanLoss"]


def test_a_bound_outside_the_range_is_infeasible_at_once(data):
    with pytest.raises(rc.InfeasibleError, match="takes values in"):
        _ = rc.recall(data) >= 1.2
    with pytest.raises(rc.InfeasibleError, match="takes values in"):
        _ = rc.recall(data) - rc.positive_rate(data) >= 1.5
    # a loss is >= 0: a sum with one is bounded below (a user's hinge_loss <= -1 was solved
    # and ended infeasible), unbounded above: no early verdict on that side
    with pytest.raises(rc.InfeasibleError, match="takes values at least 0"):
        _ = rc.hinge_loss(data) + rc.recall(data) <= -3.0
    assert (rc.hinge_loss(data) + rc.recall(data) >= 30.0).rates_only is False


REFUSED = {
    "add": lambda term, rate: term + 1,
    "scale": lambda term, rate: 2 * term,
    "compare with a rate": lambda term, rate: term <= rate,
    "beside a rate": lambda term, rate: rate + term,
}


@pytest.mark.parametrize("use", list(REFUSED))
def test_ratios_and_minimax_risk_refuse_combination(data, use):
    terms = _terms(data)
    rate = rc.error_rate(data)
    with pytest.raises(rc.NotLinearError, match="ratio metric"):
        REFUSED[use](terms["ratio"], rate)
    with pytest.raises(rc.SpecError, match="objective of its own"):
        REFUSED[use](terms["minimax_risk"], rate)
    with pytest.raises(rc.SpecError, match="objective of its own"):
        _ = terms["minimax_risk"] <= 0.3


def test_a_ratio_objective_is_refused_by_the_analysis(data):
    with pytest.raises(rc.NotLinearError, match="ratio metric.*objective"):
        analyse(rc.precision(data), "maximize", [], rc.LinearModel())


def test_constraints_rebind_to_held_out_data_and_pickle(data, scorer):
    train, test = data.split(0.5, seed=1)
    cons = [rc.tpr_at_top(train, k=3) + rc.recall(train.group("g", "a")) >= 0.7,
            rc.precision(train) >= 0.6,
            rc.tpr_at_top(train, k=3) >= rc.recall(train),
            # differences and sums of rates keep their names ("a - b", not "a + -1*(b)")
            rc.positive_rate(train.group("g", "a")) - rc.positive_rate(train.group("g", "b"))
            <= 0.05,
            rc.error_rate(train) + rc.positive_rate(train) - 0.5 <= 1.0]
    rebind, _ = make_rebinder([train], test)
    for con in cons:
        again = pickle.loads(pickle.dumps(con))
        assert type(again) is Constraint and again.name == con.name
        assert again.rates_only == con.rates_only
        held_out = con.rebind(rebind)
        assert type(held_out) is Constraint and held_out.rates_only == con.rates_only
        assert held_out.name == con.name.replace(train.name, test.name)
    # the rebound rows evaluate on the held-out rows
    rows = analyse(rc.error_rate(test), "minimize", [c.rebind(rebind) for c in cons],
                   rc.LinearModel()).constraints
    expected = rc.tpr_at_top(test, k=3).value(scorer) - rc.recall(test).value(scorer)
    assert rows[2].user_value(scorer, "exact") == pytest.approx(expected, abs=1e-12)


def test_describe_parenthesizes_a_negated_difference(data):
    """describe() printed the >= row recall(+) - positive_rate(all) >= -0.1 as
    "-1 * recall(+) - positive_rate(all)" (read: -recall - rate) with the bound "<= -0"."""
    problem = rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-2),
                         subject_to=[rc.recall(data) - rc.positive_rate(data) >= -0.1,
                                     rc.recall(data) >= rc.positive_rate(data)])
    text = problem.describe()
    assert "-1 * (recall(" in text and "<= -0" not in text, text
