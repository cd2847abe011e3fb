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
from .phi_divergence import Phi, PhiDivergenceBall, robust_loss  # robust learning (DRO family)
from .problem import Problem
from .result import Result
from .verify import verify

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
    # robust learning (phi-divergence DRO family)
    "Phi",
    "PhiDivergenceBall",
    "robust_loss",
]
