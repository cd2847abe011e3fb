"""Solvers of the phi-divergence DRO program (Ghosh & Squillante, sections 2-4, appendix A.1).

The DRO solvers by concern; this module names their public functions in one place:

- :mod:`~ratecons.solvers.dro_eval`: the exact objective F(theta) = R(theta) + (l2/2)||w||^2
  and its gradient (6) by the IM procedure of appendix A.1 (:func:`evaluate`,
  :func:`full_objective`, :func:`subset_gradient`); the inner maximization itself is
  :func:`ratecons.numerics.inner_max.inner_maximize`;
- :mod:`~ratecons.solvers.dro_certificate`: the certified lower bound at the worst-case weights
  (:func:`lower_bound`, with the Newton-corrected dual when l2 = 0) and the one builder of a DRO
  Solution and its status;
- :mod:`~ratecons.solvers.dro_lbfgs`: the deterministic default ``lbfgs``
  (:func:`solve_dro_lbfgs`), L-BFGS on F stopped by the certified gap;
- :mod:`~ratecons.solvers.dro_stochastic`: iteration (3) with the estimators of ``fsg``,
  ``pssg``, ``gssg`` (Algorithm 1, eqs. 7-8) and ``sgd`` (:func:`solve_dro`, dispatched by the
  table :data:`~ratecons.solvers.dro_stochastic.STOCHASTIC_METHODS`).
"""

from __future__ import annotations

from ..numerics.inner_max import inner_maximize
from .dro_certificate import lower_bound
from .dro_eval import evaluate, full_objective, subset_gradient
from .dro_lbfgs import solve_dro_lbfgs
from .dro_point import Evaluation
from .dro_stochastic import (
    DEFAULT_R,
    METHODS,
    eta,
    gssg_estimate,
    gssg_levels,
    solve_dro,
)

__all__ = [
    "subset_gradient",
    "full_objective",
    "eta",
    "gssg_levels",
    "gssg_estimate",
    "inner_maximize",
    "solve_dro",
    "solve_dro_lbfgs",
    "evaluate",
    "lower_bound",
    "Evaluation",
    "METHODS",
    "DEFAULT_R",
]
