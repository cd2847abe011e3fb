"""A stalled phase one's advice works (a user check): on standardized haberman, recall >= 0.3
and precision >= 0.63 ended ``infeasible`` by every method, while the model of the looser
precision >= 0.5 meets both. The message now says to start from a looser target's model, and
that start reaches a model meeting both."""

from __future__ import annotations

import warnings

import numpy as np

import ratecons as rc
from tests.shared_data import standardized


def _problem(D: rc.Dataset, precision: float) -> rc.Problem:
    return rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-3),
                      subject_to=[rc.recall(D) >= 0.3, rc.precision(D) >= precision])


def test_a_looser_targets_model_starts_what_phase_one_could_not():
    D = standardized("haberman")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loose = _problem(D, 0.5).solve(verbose=False)
        stalled = _problem(D, 0.63).solve("structured", verbose=False)
        started = _problem(D, 0.63).solve("mm", warm_start=loose, verbose=False)
    if stalled.status == "infeasible_inaccurate":  # (a better search may find it one day)
        message = stalled.certificate.details["message"]
        assert "warm_start=that_result" in message
        assert "Standardized features" not in message  # they are: no advice to standardize
    assert started.status == "optimal"
    predicted = started.decision_function(D.X) > 0
    positives = np.asarray(D.y) == 1
    assert predicted[positives].mean() >= 0.3
    assert predicted[positives].sum() >= 0.63 * predicted.sum()
