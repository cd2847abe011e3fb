"""Which methods solve a problem whose data live in Dask, and the one check that refuses others.

A method runs on Dask-backed features (:mod:`ratecons.dask_data`) when every pass it makes over
the examples goes through the scans (:class:`ratecons.scans.DaskRows`) or through products
that Dask reduces over partitions (X w, X^T c), so that only p-sized and p x p results travel:

- ``structured``: the generic chain with the structured interior point (its Newton systems
  are one weighted Gram product each);
- ``lbfgs`` of the robust-learning pattern: the exact objective, gradient (6), inner
  maximization and certificate are reductions over partitions with the margins and weights
  kept there (:mod:`ratecons.solvers.dro_dask`; chi-square and KL balls with the logistic,
  squared and hinge losses; a custom phi brings the margins to the client);
- ``ccg`` of the minimax-risk pattern (LP (4)): the moment estimates, the centroid start, the
  separation scans and the upper bound (2.2) are reductions over partitions, and only the most
  violated rows of each partition travel (:mod:`ratecons.solvers.mrc_dask`).

The others need the examples in one process (SDCA and the cutting planes visit rows one at a
time; CVXPY and HiGHS take the whole matrix; the stochastic DRO methods sample rows; MRC's
full LP, subgradient methods and fixed marginals (2.5), and the ranking duals build their forms
in memory) and refuse a Dask dataset, naming these.
"""

from __future__ import annotations

from typing import Any

from . import settings
from .errors import SpecError

__all__ = ["DASK_METHODS", "check_dask_method", "check_dask_problem", "dask_method",
           "dask_partitions", "refuse_dask"]

#: the methods that run with Dask-backed features (module docstring)
DASK_METHODS = (settings.STRUCTURED_METHOD, "lbfgs", "ccg")


def _datasets(problem: Any) -> list[Any]:
    if problem.analysis is not None:
        return list(problem.analysis.datasets)
    data = getattr(getattr(problem.objective, "U", None), "data", None)
    return [] if data is None else [data]


def dask_partitions(problem: Any) -> int | None:
    """The number of partitions of the problem's Dask features, None when in memory."""
    parts = [len(d.X.chunks[0]) for d in _datasets(problem) if getattr(d, "in_dask", False)]
    return sum(parts) if parts else None


def refuse_dask(data: Any, what: str) -> None:
    """Refuse Dask-backed ``data`` for ``what``, a construction that needs the examples in
    memory (before any method is chosen), naming what runs on Dask instead."""
    if getattr(data, "in_dask", False):
        raise SpecError(
            f"{what} needs the examples in one process, and dataset {data.name!r} lives in "
            f"Dask. On Dask data, use the methods {', '.join(repr(m) for m in DASK_METHODS)} "
            "(rates, losses and ranking terms over rc.LinearModel; rc.robust_loss; "
            "rc.minimax_risk), or gather "
            "the data yourself (rc.Dataset(X.compute(), ...)) if it fits in memory.")


def check_dask_problem(problem: Any) -> None:
    """Refuse the parts of a problem no Dask method takes: kernel models (their feature map
    is fitted on the examples in memory)."""
    kernel = getattr(problem.model, "kernel", None)
    if kernel is not None:
        for data in _datasets(problem):
            refuse_dask(data, f"a KernelModel (kernel={kernel!r})")


def check_dask_method(name: str) -> None:
    """Refuse a method that cannot run on Dask-backed data, naming the ones that can."""
    if name not in DASK_METHODS:
        raise SpecError(
            f"method {name!r} needs the examples in one process, and this problem's data "
            f"live in Dask. Methods that run on Dask partitions: "
            f"{', '.join(repr(m) for m in DASK_METHODS)} (method='structured' for rates, "
            "losses and ranking terms; method='lbfgs' for rc.robust_loss; method='ccg' for "
            "rc.minimax_risk). Or gather the data "
            "yourself (rc.Dataset(X.compute(), ...)) if it fits in memory.")


def dask_method(problem: Any, method: str) -> str:
    """``method``, with ``"auto"`` replaced by the Dask method that takes the problem."""
    if method != "auto":
        return method
    for name in ("lbfgs", "ccg"):  # the robust-learning and minimax-risk patterns
        if name in problem.pattern.methods():
            return name
    if problem.analysis is not None:
        from .reductions.to_structured import structured_support

        reason = structured_support(problem.analysis)
        if reason is None:
            return settings.STRUCTURED_METHOD
    else:
        reason = f"a {problem.pattern.name} problem has no method that reads Dask partitions"
    raise SpecError(
        f"no method runs this problem on its Dask data: {reason}. Methods that run on Dask "
        f"partitions: {', '.join(repr(m) for m in DASK_METHODS)} (module ratecons.dask_methods); "
        "gather the data (rc.Dataset(X.compute(), ...)) if it fits in memory.")
