"""The chain's message names every constraint the deterministic model misses (a user's
``method="highs", time_limit=1`` on Pima missed recall >= 0.8 and the ratio rule, and the
message named only the ratio, the larger miss; ``indicator_violations`` and ``report()`` had
both). The misses are injected at the chain's seam (which rows a model misses), so the
message is checked on any machine."""

from __future__ import annotations

import warnings

import numpy as np

import ratecons as rc
from ratecons import generic
from tests.shared_data import standardized


def test_every_missed_constraint_is_named(monkeypatch):
    D = standardized("diabetes")
    a, b = D.positives, D.negatives
    problem = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-3), subject_to=[
        rc.recall(D) >= 0.8, rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)])
    monkeypatch.setattr(generic, "missed_rows", lambda analysis, table: np.array([0.0052, 0.0313]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve("structured", max_iterations=1)
    message = result.certificate.details["message"]
    first, second = (row.name for row in problem.analysis.constraints)
    assert f"misses '{first}' by 0.0052 and '{second}' by 0.0313 on the training data" in message
    assert result.status == "iteration_limit"
