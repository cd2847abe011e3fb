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
# --- minimax risk classifiers (issue 4): moment sets, the minimax-risk objective, MPS export
from . import features
from .lowering.mps import export_mps
from .moments import MomentSet, minimax_risk

__version__ = "0.1.0"

__all__ = [
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
    # minimax risk classifiers
    "MomentSet",
    "export_mps",
    "features",
    "minimax_risk",
]
