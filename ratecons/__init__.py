"""ratecons: declare what a classifier must achieve and get a trained, verified model.

``import ratecons`` loads only what declaring a problem needs; the heavy parts (the embedded
datasets, feature maps, metrics, MPS export, verification, trade-off sweeps, the scikit-learn
estimators, plots, and every solver with CVXPY or numba behind it) load on first use (PEP 562
``__getattr__``).
"""

import importlib
from typing import Any

from .data import Dataset, Subset
from .errors import (
    ApproximationWarning,
    ConvergenceWarning,
    CurvatureError,
    DataError,
    EmptySubsetError,
    InfeasibleError,
    LabelError,
    NotLinearError,
    RateconsError,
    SlowMethodWarning,
    SolverError,
    SpecError,
    TrivialOptimumWarning,
    UnknownOptionError,
)
from .expr.atom import Constraint
from .expr.mean_loss import hinge_loss, logistic_loss, mean_loss
from .expr.rate import RateExpr, RatioExpr
from .expr.robust import worst_case
from .models import KernelModel, LinearModel
from .moments import MomentSet, minimax_risk
from .numerics.phi import Phi
from .phi_divergence import PhiDivergenceBall, robust_loss
from .problem import Problem
from .ranking import tpr_at_quantile, tpr_at_top
from .rates import (
    accuracy,
    changes,
    churn_rate,
    coverage,
    demographic_parity,
    demographic_parity_ratio,
    egregious_examples,
    equal_opportunity,
    equal_opportunity_ratio,
    equalized_odds,
    error_rate,
    errors,
    f1_score,
    false_negative_rate,
    false_negatives,
    false_positive_rate,
    false_positives,
    losses,
    negative_rate,
    positive_rate,
    positive_rate_ratio,
    precision,
    recall,
    true_negative_rate,
    true_negatives,
    true_positive_rate,
    true_positives,
    win_change_ratio,
    win_loss_ratio,
    wins,
)
from .result import Result
from .verify import verify  # eager: the submodule of the same name would shadow a lazy one

__version__ = "0.1.0"

#: submodules loaded on first attribute access
_LAZY_MODULES = ("datasets", "features", "metrics", "plot", "sklearn")
#: names loaded on first access, from their module
_LAZY_NAMES = {
    "export_mps": "ratecons.matrix_chain",
    "read_solution": "ratecons.matrix_chain",
    "sweep": "ratecons.frontier",
    "RateConstrainedClassifier": "ratecons.sklearn",
    "MinimaxRiskClassifier": "ratecons.sklearn",
    "TopKClassifier": "ratecons.sklearn",
    "RobustClassifier": "ratecons.sklearn",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        return importlib.import_module(f"ratecons.{name}")
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ratecons' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ApproximationWarning",
    "Constraint",
    "ConvergenceWarning",
    "SlowMethodWarning",
    "TrivialOptimumWarning",
    "CurvatureError",
    "DataError",
    "Dataset",
    "EmptySubsetError",
    "InfeasibleError",
    "KernelModel",
    "LabelError",
    "LinearModel",
    "MinimaxRiskClassifier",
    "MomentSet",
    "NotLinearError",
    "Phi",
    "PhiDivergenceBall",
    "Problem",
    "RateConstrainedClassifier",
    "RateExpr",
    "RateconsError",
    "RatioExpr",
    "Result",
    "SolverError",
    "RobustClassifier",
    "SpecError",
    "Subset",
    "sweep",
    "TopKClassifier",
    "UnknownOptionError",
    "accuracy",
    "changes",
    "churn_rate",
    "coverage",
    "datasets",
    "demographic_parity",
    "demographic_parity_ratio",
    "egregious_examples",
    "equal_opportunity",
    "equal_opportunity_ratio",
    "equalized_odds",
    "error_rate",
    "errors",
    "export_mps",
    "read_solution",
    "f1_score",
    "false_negative_rate",
    "false_negatives",
    "false_positive_rate",
    "false_positives",
    "features",
    "losses",
    "metrics",
    "mean_loss",
    "hinge_loss",
    "logistic_loss",
    "minimax_risk",
    "negative_rate",
    "positive_rate",
    "positive_rate_ratio",
    "precision",
    "recall",
    "robust_loss",
    "tpr_at_quantile",
    "tpr_at_top",
    "true_negative_rate",
    "true_negatives",
    "true_positive_rate",
    "true_positives",
    "verify",
    "win_change_ratio",
    "win_loss_ratio",
    "wins",
    "worst_case",
]
