"""The generic chain's last-resort repair: the threshold search over the intercept.

A mass of equal scores (many examples alike in the features a model uses) is a fraction to the
ramp and all-or-nothing to the indicator; no tightening of the ramp bound fixes that, a move of
the intercept past the mass does.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.chain_points import ScoreTable, missed_rows, threshold_search
from ratecons.reductions.kernelize import kernelize
from ratecons.reductions.to_cvxpy import ConvexStep


def _setup(scores: np.ndarray, cap: float):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(scores.size, 3))
    y = np.where(np.arange(scores.size) % 2 == 0, 1, -1)
    data = rc.Dataset(X, y, name="mass")
    problem = rc.Problem(minimize=rc.error_rate(data),
                         subject_to=[rc.positive_rate(data) <= cap],
                         model=rc.LinearModel(l2=1e-3))
    analysis = problem.analysis
    fmap = kernelize(analysis.model, analysis.datasets, 500, 0)
    step = ConvexStep("optimal", 0.0, np.zeros(3), 0.0)
    table = ScoreTable({id(data.X): scores}, fmap.invert(step.w, step.b))
    return analysis, fmap, step, table


def test_a_mass_of_equal_scores_is_passed_by_the_smallest_move():
    # 40% of the examples at one score just above 0 and 10% above it: 50% flagged, cap 30%
    scores = np.concatenate([np.full(40, 0.05), np.linspace(-2.0, -0.1, 50),
                             np.linspace(0.5, 2.0, 10)])
    analysis, fmap, step, table = _setup(scores, cap=0.3)
    assert abs(missed_rows(analysis, table)[0] - 0.2) < 1e-12
    shift = threshold_search(analysis, table, fmap, step)
    # the nearest intercept that meets the cap lies between the mass and the next score up
    assert 0.05 < shift < 0.5
    moved = ScoreTable({key: z - shift for key, z in table.scores.items()}, None)
    assert missed_rows(analysis, moved).max() == 0.0
    assert np.mean(scores - shift > 0) == 0.1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=4, max_size=60),
       st.floats(0.05, 0.95))
def test_the_search_returns_a_move_that_meets_the_constraint_or_none(values, cap):
    scores = np.round(np.array(values), 2)  # ties: masses of equal scores
    analysis, fmap, step, table = _setup(scores, cap=cap)
    shift = threshold_search(analysis, table, fmap, step)
    if np.unique(scores).size < 2:
        assert shift is None
        return
    # moving past the largest score flags nobody, which meets any cap: a move always exists
    assert shift is not None
    assert np.mean(scores - shift > 0) <= cap + 1e-12
    # and no candidate nearer to 0 meets it (the search takes the smallest move it tries)
    distinct = np.unique(scores)
    cuts = np.concatenate([[distinct[0] - 1], 0.5 * (distinct[:-1] + distinct[1:]),
                           [distinct[-1] + 1]])
    nearer = cuts[np.abs(cuts) < abs(shift)]
    assert all(np.mean(scores - c > 0) > cap for c in nearer)
