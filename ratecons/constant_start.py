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
objective. ``certificate.details["constant_restart"]`` records both runs, and only the answer
returned shows its limit warnings. The rate pattern's methods (``mm``, ``cvxpy``) do the same
from the constant's (w, b) as Alg 1's first anchor
(:func:`ratecons.patterns.rate_constraints.solve_ramp`); :func:`better_of_two_runs` is the one
rule of both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .dask_types import is_dask
from .degenerate import OBJECTIVE_TOL, ConstantScore, best_feasible_constant, comparison_value
from .expr.analysis import Analysis
from .sample_start import Chain, SampleStart
from .settings import FEASIBILITY_TOL
from .solution import Solution
from .solvers.tracker import HeldWarnings

__all__ = ["better_of_two_runs", "constant_to_try", "from_constant_if_better"]

#: a chain's answer: its Solution, the user's scorer (None: no model) and its last step
Answer = tuple[Solution, Any, Any]
#: one run's answer, whatever the method returns (a chain's :data:`Answer`, a Result)
Run = TypeVar("Run")


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


def _worse_than_constant(form: Analysis, scorer: Any
                         ) -> tuple[tuple[float, ConstantScore], tuple[bool, float]] | None:
    """The best feasible constant (canonical objective, model) and ``scorer``'s standing when
    ``scorer``'s exact objective is worse than that constant's on a problem of rates only, in
    memory; else None."""
    if (scorer is None or not form.needs_mm or not _rates_only(form)
            or any(is_dask(d.X) for d in form.datasets)):
        return None
    found = best_feasible_constant(form)
    if found is None:
        return None
    standing = _standing(form, scorer)
    return None if standing[1] <= found[0] + OBJECTIVE_TOL else (found, standing)


def constant_to_try(form: Analysis, scorer: Any) -> tuple[float, ConstantScore] | None:
    """The best feasible constant (canonical objective, model) when ``scorer``'s exact
    objective is worse than it on a problem of rates only, in memory; else None."""
    worse = _worse_than_constant(form, scorer)
    return None if worse is None else worse[0]


def better_of_two_runs(form: Analysis, first: Callable[[], Run],
                       again: Callable[[Run, tuple[float, ConstantScore]], Run],
                       scorer: Callable[[Run], Any], status: Callable[[Run], str],
                       details: Callable[[Run], dict]) -> Run:
    """``first()``'s answer, or ``again(answer, found)``'s (the same method from the best
    feasible constant: ``found`` is its canonical objective and model) when ``first()``'s is
    worse than that constant and the restart's stands better (module docstring).
    ``scorer``, ``status`` and ``details`` read an answer's model (None: no model), status
    and ``certificate.details``, where ``"constant_restart"`` records both runs. Only
    the answer returned shows its limit warnings
    (:class:`~ratecons.solvers.tracker.HeldWarnings`)."""
    with HeldWarnings() as held_first:
        answer = first()
    worse = _worse_than_constant(form, scorer(answer))
    if worse is None:
        held_first.replay(limit_warnings=True)
        return answer
    found, before = worse
    with HeldWarnings() as held_again:
        other = again(answer, found)
    model = scorer(other)
    after = None if model is None else _standing(form, model)
    kept = after is not None and after < before
    held_first.replay(limit_warnings=not kept)
    held_again.replay(limit_warnings=kept)
    to_user = form.objective.to_user
    chosen = other if kept else answer
    details(chosen)["constant_restart"] = {
        "constant": found[1].name, "constant_objective": to_user(found[0]),
        "first_objective": to_user(before[1]),
        "restart_objective": float("nan") if after is None else to_user(after[1]),
        "restart_status": status(other), "kept": kept}
    return chosen


def from_constant_if_better(form: Analysis, chain: Chain,
                            first: Callable[[], Answer]) -> Answer:
    """The chain's answer ``first()`` on ``form``, or the chain's answer from the best
    feasible constant when ``first()``'s is worse than that constant and the restart's answer
    stands better (:func:`better_of_two_runs`)."""

    def from_constant(answer: Answer, found: tuple[float, ConstantScore]) -> Answer:
        return chain(form, SampleStart.of_model(
            np.zeros_like(answer[0].primal["w"]), -found[1].score, form.n_examples, "optimal",
            found[0], len(form.constraints), "constant"), False)

    return better_of_two_runs(form, first, from_constant, scorer=lambda a: a[1],
                              status=lambda a: a[0].status,
                              details=lambda a: a[0].certificate.details)
