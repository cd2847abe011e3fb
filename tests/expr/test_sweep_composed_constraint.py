"""rc.sweep over a constraint that is not on rates alone (a worst-case rate): the default
fairness quantity is refused with a clear error, and with ``fairness=`` the sweep runs, with no
re-use of a neighbour's model (its feasibility is not measured by a rate's value)."""

import pytest

import ratecons as rc
from ratecons.testing import synthetic_groups


@pytest.fixture(scope="module")
def setup():
    train = synthetic_groups(n=200, seed=3)
    a = train.group("g", "a")
    base = rc.Problem(minimize=rc.error_rate(train), model=rc.LinearModel(l2=1e-2))

    def coverage(t: float) -> rc.Constraint:
        return rc.worst_case(rc.positive_rate(a), rc.PhiDivergenceBall(a, phi="kl", rho=0.2)) >= t

    return base, a, coverage


def test_default_fairness_of_a_worst_case_constraint_is_refused(setup):
    base, _, coverage = setup
    with pytest.raises(rc.SpecError, match="pass fairness=.*worst_case"):
        rc.sweep(base, coverage, [0.3], method="cvxpy")


def test_sweep_of_a_worst_case_constraint_with_fairness(setup):
    base, a, coverage = setup
    frontier = rc.sweep(base, coverage, [0.3, 0.5], method="cvxpy",
                        fairness=rc.positive_rate(a))
    for point in frontier.points:
        assert point.status == "optimal" and not point.model_from  # each solved on its own
        achieved = point.result.report().rows[1]  # the worst-case constraint's row
        assert achieved.indicator >= point.target - 1e-9
        assert point.train_fairness == pytest.approx(
            rc.positive_rate(a).value(point.result.scorer))
        assert point.train_fairness >= achieved.indicator - 1e-9  # worst case <= nominal
