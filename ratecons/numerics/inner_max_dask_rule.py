"""The worst-case weights' rule of the inner maximization (problem (4), App. A.1 of Ghosh &
Squillante) on Dask data, for any phi: the one place that picks the dual search.

Chi-square and KL have one-dimensional dual searches (:func:`ratecons.numerics.inner_max_dask.
rule_on`: the bracketing passes for chi-square, whose summary carries the partitions' quantiles,
batched Newton passes for KL); any other phi has the damped Newton search on the two duals
(:func:`ratecons.numerics.inner_max_dask_phi.phi_rule`). The robust loss's evaluations
(:mod:`ratecons.solvers.dro_dask`), its value in the reports (:mod:`ratecons.dask_robust`) and
the worst-case rates (:mod:`ratecons.dask_worst_case`) all call :func:`worst_case_rule` or
:func:`summarized_rule`; a search may start from the rule found at a nearby point (``start``:
its beta for KL, its (alpha, lambda) for another phi).
"""

from __future__ import annotations

from typing import Any

from .inner_max_dask import (
    LossSummary,
    Values,
    WeightRule,
    persisted_summary,
    rule_on,
    summary_of,
)
from .inner_max_dask_phi import PhiRule, phi_rule
from .phi import CHI2, KL, Phi

__all__ = ["summarized_rule", "worst_case_rule"]


def _rule_for(state: Any, values: Values, phi: Phi, rho: float, summ: LossSummary,
              start: WeightRule | None = None) -> WeightRule:
    """The worst-case weights' rule over the persisted ``state`` (module docstring), from the
    values' summary ``summ`` (with quantiles for chi-square: :func:`_quantiles_for`)."""
    if phi in (CHI2, KL):
        beta0 = start.beta if start is not None and start.kind == "kl" else None
        return rule_on(state, values, phi, rho, summ, beta0)
    duals = (start.alpha, start.lam) if isinstance(start, PhiRule) else None
    return phi_rule(state, values, phi, rho, summ, duals)


def _quantiles_for(phi: Phi) -> bool:
    """Whether the summary must carry the partitions' quantiles (chi-square's bracketing)."""
    return phi is CHI2


def worst_case_rule(margins: Any, loss: Values, phi: Phi, rho: float,
                    start: WeightRule | None = None) -> tuple[Any, WeightRule, LossSummary]:
    """The lazy ``margins`` persisted on the workers with their losses' summary (one pass over
    the features), the worst-case weights' rule (:func:`_rule_for`) and the summary."""
    state, summ = persisted_summary(margins, loss, _quantiles_for(phi))
    return state, _rule_for(state, loss, phi, rho, summ, start), summ


def summarized_rule(state: Any, values: Values, phi: Phi, rho: float
                    ) -> tuple[WeightRule, LossSummary]:
    """The rule over values of an already persisted ``state``: a summary pass over it, then
    :func:`_rule_for`."""
    summ = summary_of(state, values, _quantiles_for(phi))
    return _rule_for(state, values, phi, rho, summ), summ
