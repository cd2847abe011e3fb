"""Warnings point at the user's line: raised deep inside a solve (solvers, patterns, the
generic chain) or while building data, each names this test file, through
``ratecons.caller.user_stacklevel``."""

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.caller import user_stacklevel
from ratecons.errors import DataWarning
from ratecons.sklearn import TopKClassifier


def _data(n: int = 120, d: int = 3, seed: int = 4) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(int)
    return rc.Dataset(X, y, name="toy")


def _badly_scaled() -> None:
    rc.Dataset(np.array([[1.0, 2e7], [0.0, 1.0]]), [0, 1])


def _dro_stopped() -> None:
    ball = rc.PhiDivergenceBall(_data(), phi="chi2", rho=0.1, strict=False)
    problem = rc.Problem(minimize=rc.robust_loss(ball, loss="logistic"),
                         model=rc.LinearModel(l2=1e-3))
    problem.solve("lbfgs", max_iterations=1)


def _dual_ca_stopped() -> None:
    problem = rc.Problem(maximize=rc.tpr_at_top(_data(), k=4), model=rc.LinearModel(l2=1e-3))
    problem.solve("dual_ca", tol=1e-12, max_epochs=2)


def _trivial_top_push_estimator() -> None:
    X = np.random.default_rng(0).normal(size=(60, 3))  # labels unrelated to the features
    TopKClassifier(l2=1e3).fit(X, np.repeat([0, 1], 30))


@pytest.mark.parametrize("trigger, category", [
    (_badly_scaled, DataWarning),
    (_dro_stopped, rc.ConvergenceWarning),
    (_dual_ca_stopped, rc.ConvergenceWarning),
    (_trivial_top_push_estimator, rc.TrivialOptimumWarning),
])
def test_warning_names_the_callers_file(trigger, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger()
    ours = [w for w in caught if issubclass(w.category, category)]
    assert ours, [str(w.message) for w in caught]
    for w in ours:
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message))


def test_stacklevel_outside_the_package_is_one():
    # called from here (outside ratecons), the warning is attributed to this very line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("here", UserWarning, stacklevel=user_stacklevel())
    assert user_stacklevel() == 1
    assert caught[0].filename == __file__
