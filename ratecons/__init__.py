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
from .models import KernelModel, LinearModel
from .problem import Problem
from .result import Result
from .verify import verify

# isort: split
# --- ranking at the top (TopPushK and Pat&Mat families) ---------------------------------------
from . import metrics
from .ranking import tpr_at_quantile, tpr_at_top

__version__ = "0.1.0"

__all__ = [
    # ranking at the top
    "metrics",
    "tpr_at_quantile",
    "tpr_at_top",
    # core
    "ConvergenceWarning",
    "DataError",
    "Dataset",
    "EmptySubsetError",
    "InfeasibleError",
    "KernelModel",
    "LabelError",
    "LinearModel",
    "NotLinearError",
    "Problem",
    "RateconsError",
    "Result",
    "SolverError",
    "SpecError",
    "Subset",
    "UnknownOptionError",
    "datasets",
    "verify",
]
