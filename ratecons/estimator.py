"""A scikit-learn compatible estimator for rate-constrained linear classification.

>>> clf = rc.RateConstrainedClassifier(
...     constraints=lambda D: [rc.positive_rate(D.group("sex", "Female"))
...                            >= 0.8 * rc.positive_rate(D.group("sex", "Male"))],
...     l2=1e-3)
>>> clf.fit(X, y, groups={"sex": sex}).predict(X_test)

It follows scikit-learn's conventions without depending on it: the constructor only stores its
parameters, ``fit`` validates and solves, learned attributes end in ``_``, and ``get_params`` /
``set_params`` make it usable in pipelines and grid searches. ``decision_function`` is
X @ coef_ + intercept_ (so ``intercept_ = -b`` in the paper's f(x) = <w, x> - b).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import rates
from .data import Dataset
from .errors import SolverError, SpecError
from .models import LinearModel
from .problem import Problem
from .result import Result

__all__ = ["RateConstrainedClassifier"]

_OBJECTIVES: dict[str, Callable[[Dataset], rates.RateExpr]] = {
    "error_rate": rates.error_rate,
    "false_negative_rate": rates.false_negative_rate,
    "false_positive_rate": rates.false_positive_rate,
}


class RateConstrainedClassifier:
    """Minimize a rate on the training data subject to rate constraints built from it.

    Parameters
    ----------
    constraints : callable, optional
        ``constraints(train_dataset) -> list of constraints``; called in ``fit``.
    objective : {"error_rate", "false_negative_rate", "false_positive_rate"} or callable
        The rate to minimize, or ``objective(train_dataset) -> rate expression``.
    l2, l1 : float
        Regularization of the linear model (see :class:`ratecons.LinearModel`).
    method : str
        Solver method (``"auto"`` by default).
    options : dict, optional
        Method options passed to ``solve``.
    """

    def __init__(
        self,
        constraints: Callable[[Dataset], list] | None = None,
        objective: str | Callable[[Dataset], rates.RateExpr] = "error_rate",
        l2: float = 1e-3,
        l1: float = 0.0,
        method: str = "auto",
        options: dict[str, Any] | None = None,
    ) -> None:
        self.constraints = constraints
        self.objective = objective
        self.l2 = l2
        self.l1 = l1
        self.method = method
        self.options = options

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in
                ("constraints", "objective", "l2", "l1", "method", "options")}

    def set_params(self, **params: Any) -> RateConstrainedClassifier:
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise SpecError(f"unknown parameter {key!r} of RateConstrainedClassifier; "
                                f"valid: {sorted(valid)}.")
            setattr(self, key, value)
        return self

    def fit(self, X: Any, y: Any, groups: dict[str, Any] | None = None, baseline: Any = None,
            sample_weight: Any = None) -> RateConstrainedClassifier:
        """Build the training Dataset, the problem, and solve it; raises if no model results."""
        data = Dataset(X, y, groups=groups, baseline=baseline, weights=sample_weight,
                       name="train")
        if isinstance(self.objective, str):
            if self.objective not in _OBJECTIVES:
                raise SpecError(f"The 'objective' parameter of RateConstrainedClassifier must be "
                                f"one of {sorted(_OBJECTIVES)} or a callable. Got "
                                f"{self.objective!r} instead.")
            objective = _OBJECTIVES[self.objective](data)
        else:
            objective = self.objective(data)
        problem = Problem(minimize=objective,
                          subject_to=self.constraints(data) if self.constraints else [],
                          model=LinearModel(l2=self.l2, l1=self.l1))
        result: Result = problem.solve(method=self.method, **(self.options or {}))
        if not result.has_model:
            raise SolverError(f"fit failed: the solve ended with status {result.status!r} "
                              f"({result.certificate.details.get('message', '')})")
        self.result_ = result
        self.coef_ = result.w.copy()
        self.intercept_ = -result.b
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = data.d
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "result_"):
            raise SpecError("this RateConstrainedClassifier is not fitted yet; call fit first.")

    def decision_function(self, X: Any) -> np.ndarray:
        self._check_fitted()
        return self.result_.decision_function(X)

    def predict(self, X: Any) -> np.ndarray:
        self._check_fitted()
        return self.result_.predict(X).astype(np.int64)

    def score(self, X: Any, y: Any) -> float:
        """Accuracy (scikit-learn's default classifier score)."""
        y = Dataset(np.zeros((len(y), 1)), y).y
        return float(np.mean(self.predict(X) == y))
