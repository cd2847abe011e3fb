"""ratecons: declare what a classifier must achieve and get a trained, verified model."""

from . import datasets
from .data import Dataset, Subset
from .errors import (
    ConvergenceWarning,
    DataError,
    EmptySubsetError,
    InfeasibleError,
    LabelError,
    NotLinearError,
    RateconsError,
    SolverError,
    SpecError,
    UnknownOptionError,
)
from .estimator import RateConstrainedClassifier
from .models import KernelModel, LinearModel
from .phi_divergence import Phi, PhiDivergenceBall, robust_loss  # robust learning (DRO family)
from .problem import Problem
from .rates import (
    Constraint,
    RateExpr,
    RatioExpr,
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
from .verify import verify

# isort: split
# --- ranking at the top (TopPushK and Pat&Mat families) ---------------------------------------
from . import metrics
from .ranking import tpr_at_quantile, tpr_at_top

# --- minimax risk classifiers (issue 4): moment sets, the minimax-risk objective, MPS export
from . import features
from .lowering.mps import export_mps
from .moments import MomentSet, minimax_risk

__version__ = "0.1.0"

__all__ = [
    "Constraint",
    "ConvergenceWarning",
    "DataError",
    "Dataset",
    "EmptySubsetError",
    "InfeasibleError",
    "KernelModel",
    "LabelError",
    "LinearModel",
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
    "SpecError",
    "Subset",
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
    "f1_score",
    "false_negative_rate",
    "false_negatives",
    "false_positive_rate",
    "false_positives",
    "features",
    "losses",
    "metrics",
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
]
