"""When and how the chain on all rows uses a row sample's model (issue 29,
:mod:`ratecons.sample_start`).

Checked here: the rule that decides from the sample's own run whether its model starts the
chain (its MM gain over its hinge relaxation against ``settings.SAMPLE_START_MIN_GAIN``) on an
instance where the sample's MM took a step but gained little (no: the chain runs as without a
sample), one where its hinge relaxation is its fixed point and one where MM moved it far
(yes); the first MM step
solved at a sample model that misses a row on all rows, instead of a second sample solve;
the sample's run as a start only (loose MM tolerance, no repair), through the one wrapper of
both chains; the default sample's size on the whole Adult split's row count.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ratecons as rc
from ratecons import generic, sample_start, settings
from ratecons.sample_start import sample_size
from tests.sample_start_helpers import logistic_rule, two_groups


def _recall_floor(D: rc.Dataset, floor: float) -> rc.Problem:
    return rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3),
                      subject_to=[rc.recall(D) >= floor])


class _Spy:
    """Counts the sample runs of :func:`ratecons.sample_start.start_from_sample` and keeps
    each run's certificate details."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs: list[dict] = []
        original = sample_start.start_from_sample

        def spied(analysis, value, solve):
            def solve_and_keep(sample):
                solution, extra = solve(sample)
                self.runs.append(dict(solution.certificate.details))
                return solution, extra
            return original(analysis, value, solve_and_keep)

        monkeypatch.setattr(sample_start, "start_from_sample", spied)


def test_a_sample_whose_mm_gained_little_is_not_the_start():
    """The sample's MM took a step but lowered its hinge relaxation's objective by only 4.3e-3
    (recall >= 0.75): the chain on all rows starts from its own hinge relaxation, the same
    run as without a sample (the code before the rule started from the sample's model)."""
    problem = _recall_floor(two_groups(3000, seed=0), 0.75)
    on = problem.solve("structured", sample_start=1000)
    off = problem.solve("structured", sample_start=False)
    used = on.certificate.details["sample_start"]
    assert used["mm_iterations"] > 1 and 0.0 < used["gain"] < settings.SAMPLE_START_MIN_GAIN
    assert used["used"].startswith("no: its MM steps lowered its hinge relaxation's objective")
    assert on.history[0]["stage"] == "hinge"
    assert on.certificate.details["mm_iterations"] == off.certificate.details["mm_iterations"]
    assert on.objective == off.objective and on.status == off.status == "optimal"


def test_a_sample_whose_hinge_relaxation_is_its_fixed_point_is_the_start():
    """One MM step on the sample (recall >= 0.6, met by the hinge relaxation): gain 0, and
    its model starts the chain (on 200,000 synthetic rows a warm MM step from it took fewer
    interior-point iterations than the cold hinge relaxation on all rows: 36 against 42)."""
    result = _recall_floor(two_groups(3000, seed=0), 0.6).solve("structured",
                                                               sample_start=1000)
    used = result.certificate.details["sample_start"]
    assert used["mm_iterations"] == 1 and used["gain"] == 0.0
    assert used["used"] == "as the start of MM" and result.history[0]["stage"] == "sample"
    assert result.status == "optimal"


def test_a_sample_that_mm_moved_far_from_its_hinge_relaxation_is_the_start():
    problem = logistic_rule(two_groups(3000, seed=1))
    result = problem.solve("structured", sample_start=1000)
    used = result.certificate.details["sample_start"]
    assert used["gain"] > settings.SAMPLE_START_MIN_GAIN  # measured 0.066
    assert used["used"] == "as the start of MM"
    assert result.history[0]["stage"] == "sample"
    assert result.status == "optimal" and result.report().all_satisfied


def test_a_sample_model_missing_a_row_anchors_the_first_step_without_a_second_sample_solve(
        monkeypatch):
    """The 1,000-row sample's model misses the 80% rule's surrogate on all 3,000 rows (seed 0):
    the first MM step is solved at it and its answer starts MM; the sample is solved once (the
    code before solved it again with the rule tightened)."""
    spy = _Spy(monkeypatch)
    problem = logistic_rule(two_groups(3000, seed=0))
    result = problem.solve("structured", sample_start=1000)
    used = result.certificate.details["sample_start"]
    assert used["used"].startswith("as the anchor of the first MM step")
    assert used["tightened_by"] == [0.0] and len(spy.runs) == 1
    assert result.status == "optimal" and result.report().all_satisfied
    # the history shows the sample's model (no step on all rows produced it: no bound), then
    # the step solved at it as MM's first (before, that step was the sample's event)
    sample, first = result.history[:2]
    assert (sample["stage"], sample["iteration"], first["stage"], first["iteration"]) == (
        "sample", 0, "mm", 1)
    assert math.isnan(sample["bound_objective"]) and first["bound_objective"] > 0.0
    assert sample["objective"] != first["objective"]
    assert result.certificate.max_violation <= settings.FEASIBILITY_TOL
    # the certificate is the full data's: the last step solved again reproduces its value
    again = problem.solve("structured", only_step=result.last_step)
    assert abs(again.last_step.bound_objective - result.last_step.bound_objective) <= 1e-6
    # MM's fixed points are local: from the hinge relaxation 2.5e-4 lower here
    reference = problem.solve("structured", sample_start=False)
    assert abs(result.objective - reference.objective) <= 1e-3


@pytest.mark.parametrize("method", ["structured", "cvxpy"])
def test_both_chains_run_the_sample_as_a_start_only(monkeypatch, method):
    """The one wrapper of both chains (:func:`~ratecons.sample_start.chain_from_sample`) runs
    the sample once, to ``settings.SAMPLE_START_TOL`` and without the repair."""
    spy = _Spy(monkeypatch)
    result = logistic_rule(two_groups(3000, seed=1)).solve(method, sample_start=1000)
    [sample_run] = spy.runs
    assert sample_run["tol"] == settings.SAMPLE_START_TOL
    assert sample_run["repair_rounds"] == 0 and "threshold_shift" not in sample_run
    assert result.certificate.details["tol"] == settings.MM_RELATIVE_TOL
    assert result.certificate.details["sample_start"]["rows"] == 1000
    assert result.status == "optimal"


def test_the_whole_adult_split_samples_every_seventh_row_by_default():
    """At 34,189 rows the default samples 4,885 rows (the code before: none below 100,000);
    below settings.SAMPLE_START_MIN_ROWS none; at 200,000 rows at most 20,000."""
    def default(n: int) -> int | None:
        return sample_size(logistic_rule(two_groups(n)).analysis, None)

    assert default(34_189) == 4_885
    assert default(29_000) is None
    assert default(200_000) == settings.SAMPLE_START_ROWS


def test_the_first_step_from_a_sample_model_counts_its_anchors_ties(monkeypatch):
    """Error rate + churn (ties of eq. 4 recur on its path): every MM step on all rows, the
    one solved at the sample's model included, has its anchor checked for ties, and
    ``tied_anchors`` counts the tied ones (before, that first anchor was not checked)."""
    checked: list[tuple[int, int]] = []
    original = generic.tied_examples

    def spied(sides, table):
        ties = original(sides, table)
        checked.append((sum(np.size(z) for z in table.scores.values()), ties))
        return ties

    monkeypatch.setattr(generic, "tied_examples", spied)
    D = two_groups(3000, seed=2)
    D = D.with_baseline((D.X[:, 0] > 0).astype(int))
    result = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-3),
                        subject_to=[rc.churn_rate(D) <= 0.05]).solve("structured",
                                                                      sample_start=1000)
    details = result.certificate.details
    assert details["sample_start"]["used"].startswith("as the anchor of the first MM step")
    anchors = [ties for rows, ties in checked if rows == D.n][:-1]  # the last: the result's
    assert len(anchors) == details["mm_iterations"]
    assert details["tied_anchors"] == sum(ties > 0 for ties in anchors) > 0
    assert anchors[0] > 0  # the sample's model sits at a tie (measured: 1 example)
