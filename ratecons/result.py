"""Results: the fitted model, the solver's status and certificate, and reports.

:class:`Result` is shared by every family; a family adds what is specific to it (a rate report,
the MRC coefficients mu, worst-case weights) in a subclass.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import scipy.sparse as sp

from .data import Dataset
from .errors import DataError, SolverError
from .settings import SOLVED_STATUSES
from .solution import Certificate, Solution, _jsonable

__all__ = ["Result", "LinearScorer", "features_of", "ramp"]


def ramp(z: np.ndarray) -> np.ndarray:
    """sigma(z) = clip(1/2 + z, 0, 1): the ramp of Goh et al., eq. (2)."""
    return np.clip(0.5 + np.asarray(z, dtype=np.float64), 0.0, 1.0)


def features_of(X: Any, d: int | None = None) -> Any:
    """Features from a Dataset or a matrix, checked against the model's dimension ``d``."""
    if isinstance(X, Dataset):
        X = X.X
    elif not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X.reshape(1, -1)
    if d is not None and X.shape[1] != d:
        raise DataError(f"the model was fitted on {d} features; got data with {X.shape[1]}.")
    return X


class LinearScorer:
    """f(x) = <w, x> - b with deterministic and randomized (App. A) predictions."""

    def __init__(self, w: np.ndarray, b: float) -> None:
        self.w = np.asarray(w, dtype=np.float64)
        self.b = float(b)

    def decision_function(self, X: Any) -> np.ndarray:
        X = features_of(X, self.w.size)
        return np.asarray(X @ self.w).ravel() - self.b

    def predict(self, X: Any, randomized: bool = False, seed: int | None = None) -> np.ndarray:
        """Deterministic: 1 where f(x) > 0. Randomized (App. A of Goh et al.): 1 with
        probability sigma(f(x)), the ramp of eq. (2)."""
        z = self.decision_function(X)
        if not randomized:
            return (z > 0).astype(np.int8)
        rng = np.random.default_rng(seed)
        return (rng.random(z.size) < ramp(z)).astype(np.int8)


class Result:
    """A solved problem: fitted model, status, objective, certificate and history.

    Attributes
    ----------
    objective : float
        The objective in the user's sense (maximization problems report the maximum).
    status : str
        "optimal", "infeasible", "iteration_limit", ...
    method : str
        The method that produced the result (``auto`` resolved).
    reasons : list of str
        Why that method was chosen.
    certificate : Certificate
    history : list of dict
    """

    def __init__(
        self,
        problem: Any,
        method: str,
        solution: Solution,
        scorer: Any = None,
        objective: float | None = None,
    ) -> None:
        self.problem = problem
        self.method = method
        self.solution = solution
        self.status: str = solution.status
        self.objective: float = solution.objective if objective is None else objective
        self.certificate: Certificate = solution.certificate
        self.history: list[dict[str, Any]] = solution.history
        self.solve_time: float = solution.solve_time
        self.reasons: list[str] = []
        self.scorer = scorer

    # ------------------------------------------------------------------ the fitted model
    @property
    def has_model(self) -> bool:
        return self.scorer is not None and self.status in SOLVED_STATUSES

    def _require_model(self) -> Any:
        if not self.has_model:
            raise SolverError(
                f"no model to use: the solve ended with status {self.status!r}. "
                + ("Relax the targets or check them with problem.describe()."
                   if self.status == "infeasible" else "See result.certificate.")
            )
        return self.scorer

    @property
    def w(self) -> np.ndarray:
        return self._require_model().w

    @property
    def b(self) -> float:
        return self._require_model().b

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of the fitted model on a Dataset or feature matrix."""
        return self._require_model().decision_function(X)

    def predict(self, X: Any, randomized: bool = False, seed: int | None = None) -> np.ndarray:
        """Predictions; ``randomized=True`` uses the randomized rule where the paper defines one."""
        return self._require_model().predict(X, randomized=randomized, seed=seed)

    # ------------------------------------------------------------------ reporting
    def summary(self) -> dict[str, Any]:
        """Plain-data summary (status, method, objective, certificate, timings)."""
        return {
            "status": self.status,
            "method": self.method,
            "reasons": self.reasons,
            "objective": self.objective,
            "solve_time": self.solve_time,
            "solver": self.solution.solver,
            "certificate": self.certificate.to_dict(),
            "iterations": len(self.history),
        }

    def to_json(self, **kwargs: Any) -> str:
        """JSON with the summary, the fitted parameters and the training report."""
        out = self.summary()
        out.update(self._json_extras())
        return json.dumps(_jsonable(out), indent=kwargs.pop("indent", 2), **kwargs)

    def _json_extras(self) -> dict[str, Any]:
        if isinstance(self.scorer, LinearScorer) and self.has_model:
            return {"w": self.scorer.w, "b": self.scorer.b}
        return {}

    def __repr__(self) -> str:
        return (
            f"Result(status={self.status!r}, method={self.method!r}, "
            f"objective={self.objective:.6g})"
        )
