"""Every robust-learning method honours the common limits with the shared status words, under
the one cap name ``max_iterations`` (the former ``max_iter`` is refused, naming it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.patterns.dro import PATTERN as DRO
from ratecons.solvers.dro_stochastic import STOCHASTIC_METHODS
from ratecons.solvers.tracker import STOP_STATUS

RNG = np.random.default_rng(3)
X = RNG.normal(size=(400, 4))
Y = (X @ np.array([1.0, -0.5, 0.3, 0.0]) + RNG.normal(size=400) > 0).astype(int)
#: the gradient methods (the structured chain's limits are the chain's: tests/patterns/test_limits)
LOOPS = [name for name, spec in DRO.methods().items()
         if not spec.is_reference and name != settings.STRUCTURED_METHOD]


def _problem(l2: float = 1e-2) -> rc.Problem:
    ball = rc.PhiDivergenceBall(rc.Dataset(X, Y), phi="chi2", rho=0.1)
    return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=l2))


def _solve(method: str, **options) -> rc.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _problem().solve(method=method, seed=0, **options)


def test_the_table_lists_every_gradient_method_of_the_pattern():
    assert set(LOOPS) == {"lbfgs", *STOCHASTIC_METHODS}
    assert all("max_iterations" in DRO.methods()[m].options for m in LOOPS)
    assert not any("max_iter" in DRO.methods()[m].options for m in DRO.methods())


@pytest.mark.parametrize("method", LOOPS)
def test_max_iterations_stops_with_the_shared_status_word(method):
    result = _solve(method, max_iterations=1, tol=1e-12)
    assert result.status == settings.ITERATION_LIMIT == STOP_STATUS["iteration_limit"]
    assert result.certificate.details["stop"] == "iteration_limit"
    assert result.certificate.details["iterations"] == 1
    assert result.certificate.gap > 0  # the certificate of the best point so far


@pytest.mark.parametrize("method", LOOPS)
def test_time_limit_stops_with_the_shared_status_word(method):
    result = _solve(method, time_limit=1e-9, tol=1e-12)
    assert result.status == settings.TIME_LIMIT == STOP_STATUS["time_limit"]
    assert result.certificate.details["stop"] == "time_limit"


@pytest.mark.parametrize("method", [*LOOPS, "cvxpy"])
def test_the_former_max_iter_is_refused_naming_max_iterations(method):
    with pytest.raises(rc.UnknownOptionError, match="'max_iter' is now 'max_iterations'"):
        _problem().solve(method=method, max_iter=5)


def test_a_limit_warns_and_names_max_iterations():
    with pytest.warns(rc.ConvergenceWarning, match="iteration_limit.*raise max_iterations"):
        _problem().solve(method="lbfgs", max_iterations=1)
