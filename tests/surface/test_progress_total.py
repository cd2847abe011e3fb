"""The progress bar shows a total (and so a percentage and an ETA) when the solve has an
iteration cap, and counts the method's iterations against it."""

import re

import numpy as np

import ratecons as rc
from ratecons.testing import fairness_problem


def _last_bar(err: str) -> str:
    return [line for line in re.split(r"[\r\n]", err) if "ratecons" in line][-1]


def _robust_problem() -> rc.Problem:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    data = rc.Dataset(X, (X[:, 0] + rng.normal(size=200) > 0).astype(int))
    return rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(data, rho=0.1)))


def _check_total(capsys, events, total):
    bar = _last_bar(capsys.readouterr().err)
    last = max(e["iteration"] for e in events if isinstance(e.get("iteration"), int))
    assert f"{last}/{total}" in bar and "%" in bar, bar


def test_bar_has_the_iteration_cap_as_total(capsys):
    events = []
    fairness_problem(n=120, seed=2).solve(method="mm", verbose=True, callback=events.append,
                                          max_iterations=40)
    _check_total(capsys, events, 40)


def test_cap_of_a_robust_method(capsys):
    events = []
    _robust_problem().solve(method="lbfgs", verbose=True, callback=events.append,
                            max_iterations=500)
    _check_total(capsys, events, 500)


def test_bar_without_a_cap_counts_events(capsys):
    fairness_problem(n=120, seed=2).solve(method="mm", verbose=True)
    assert "/" not in _last_bar(capsys.readouterr().err).split("it")[0]
