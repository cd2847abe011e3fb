"""MM again from the best feasible constant model, when the chain's answer is worse than it.

Majorization-minimization (Alg 1 of Goh et al.) converges to a local fixed point of the ramp
problem (Problem 2), which can be worse than a model that needs no training: on 2,000 Adult
rows, error rate with exact demographic parity, the chain's certified fixed point was the
all-positive model (error 0.7605), while the all-negative model (0.2395) meets both rows.

Alg 1 decreases its objective from any point that meets its rows, so a run started at the
best feasible constant score c (w = 0, b = -c; :func:`ratecons.degenerate.
best_feasible_constant`) ends no worse than that constant on the ramp objective. Where every
part of the problem is a rate (its value at a constant depends on the sign of c only, so the
constant is found from one evaluation per sign and the ramp equals the indicator at c = +-1),
:func:`from_constant_if_better` runs the chain once more from that constant when the first
answer is worse, and keeps the better of the two by what the user reads: a model that meets
every constraint on the training data before one that misses one, then the lower exact
objective. ``certificate.details["constant_restart"]`` records both runs. The rate pattern's
methods (``mm``, ``cvxpy``) do the same from the constant's (w, b) as Alg 1's first anchor
(:func:`ratecons.patterns.rate_constraints.solve_ramp`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dask_types import is_dask
from .degenerate import OBJECTIVE_TOL, ConstantScore, best_feasible_constant, comparison_value
from .expr.analysis import Analysis
from .sample_start import Chain, SampleStart
from .settings import FEASIBILITY_TOL
from .solution import Solution

__all__ = ["constant_to_try", "from_constant_if_better", "keep_restart"]

#: a chain's answer: its Solution, the user's scorer (None: no model) and its last step
Answer = tuple[Solution, Any, Any]


def _rates_only(analysis: Analysis) -> bool:
    """Every part of every row is a rate (or a worst-case rate): constant scores are
    evaluated by their sign (:class:`ratecons.degenerate.ConstantScore`)."""
    return all(getattr(part, "curvature", "rate") == "rate"
               for row in analysis.rows for _, part in row.parts)


def _standing(analysis: Analysis, scorer: Any) -> tuple[bool, float]:
    """(misses a constraint on the training data, exact objective): the lesser is better."""
    missed = max((comparison_value(row, scorer) - row.bound for row in analysis.constraints),
                 default=0.0)
    return bool(missed > FEASIBILITY_TOL), comparison_value(analysis.objective, scorer)


def constant_to_try(form: Analysis, scorer: Any) -> tuple[float, ConstantScore] | None:
    """The best feasible constant (canonical objective, model) when ``scorer``'s exact
    objective is worse than it on a problem of rates only, in memory; else None."""
    if (scorer is None or not form.needs_mm or not _rates_only(form)
            or any(is_dask(d.X) for d in form.datasets)):
        return None
    found = best_feasible_constant(form)
    if found is None or _standing(form, scorer)[1] <= found[0] + OBJECTIVE_TOL:
        return None
    return found


def keep_restart(form: Analysis, first: Any, again: Any, found: tuple[float, ConstantScore],
                 status: str) -> tuple[bool, dict[str, Any]]:
    """Whether the restart's scorer ``again`` (None: no model) stands better than ``first``'s,
    and the record of both runs for ``certificate.details["constant_restart"]``."""
    before = _standing(form, first)
    after = None if again is None else _standing(form, again)
    kept = after is not None and after < before
    to_user = form.objective.to_user
    return kept, {"constant": found[1].name, "constant_objective": to_user(found[0]),
                  "first_objective": to_user(before[1]),
                  "restart_objective": float("nan") if after is None else to_user(after[1]),
                  "restart_status": status, "kept": kept}


def from_constant_if_better(form: Analysis, chain: Chain, first: Answer) -> Answer:
    """``first`` (the chain's answer on ``form``), or the chain's answer from the best
    feasible constant when ``first`` is worse than that constant and the restart's answer
    stands better (module docstring)."""
    solution, scorer, _ = first
    found = constant_to_try(form, scorer)
    if found is None:
        return first
    start = SampleStart.of_model(np.zeros_like(solution.primal["w"]), -found[1].score,
                                 form.n_examples, "optimal", found[0], len(form.constraints),
                                 "constant")
    again = chain(form, start, False)
    kept, record = keep_restart(form, scorer, again[1], found, again[0].status)
    answer = again if kept else first
    answer[0].certificate.details["constant_restart"] = record
    return answer
