"""`ratecons demo` on the full Adult data: the 80% rule met on train, nearly met on test."""

import pytest

from ratecons.cli import run_demo


@pytest.mark.slow
def test_demo_reaches_the_fairness_target_on_test_data():
    out = run_demo(quiet=True)
    fair, free = out["constrained"], out["unconstrained"]
    assert fair["status"] == "optimal" and fair["method"] == "mm"
    # the deterministic model meets the 80% rule on the training data (issue 16)
    assert fair["train_report_satisfied"] and fair["train_ratio"] >= 0.8
    assert fair["test_ratio"] >= 0.75  # the constraint is 0.8 on the training split
    assert free["test_ratio"] <= 0.35  # a plain linear classifier is far from it
    assert fair["test_error"] <= 0.16 and free["test_error"] <= 0.15
