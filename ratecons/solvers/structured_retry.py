"""The cold retry of the structured interior point (:mod:`.structured`): a cold call whose
runs end uncertified (``numerical_error``: stalled or blocked; ``iteration_limit``) and
that is not proved infeasible (:mod:`.structured_infeasible`) is run once more from the
cold start on the plain path with the adaptive corrector budget
(:class:`.structured_correctors.CorrectorBudget`) and :data:`RETRY_ITERATIONS` iterations
of its own, within the same deadline.

Only as a retry: every step certified by its first runs takes the same iterations to the
same numbers as without it. The two 200,000-row stalls of ``benchmarks.composition``
(hinge + 80% rule's second MM step, 305,769 pieces; TPR@K + 80% rule's first, 357,335) end
certified by it, where the plain runs had ended at a gap of 3.4e-4 and 3.75e-2. (A run still
converging at its limit now goes on first, :func:`.structured_stop.converging`: the hinge
step's 50,000-row subsample is certified so in 119 iterations, 182 through the retry.)
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .. import settings
from .structured_form import StructuredSolution

__all__ = ["RETRY_ITERATIONS", "cold_retry"]

#: the retry's own interior-point iterations (the captured 200,000-row steps: 99 and 100)
RETRY_ITERATIONS = 150
#: the statuses of a cold call that are retried
_RETRIED = (settings.NUMERICAL_ERROR, settings.ITERATION_LIMIT)
#: the statuses of a retry that replace the first answer
_ENDS = (settings.OPTIMAL, settings.INFEASIBLE, settings.TIME_LIMIT)


def cold_retry(answer: StructuredSolution, cold: bool, deadline: float | None,
               retry: Callable[[], StructuredSolution]) -> StructuredSolution:
    """``answer`` of a call, or of ``retry()`` run after it.

    Parameters
    ----------
    answer : StructuredSolution
        What the call's runs returned.
    cold : bool
        Whether the call was cold under the default iteration allowance (a warm call that
        fails is started cold by its caller,
        :func:`ratecons.structured_fallback.warm_then_cold`, and retried there).
    deadline : float or None
        The solve's deadline (``time.perf_counter()`` seconds): past it, no retry.
    retry : callable
        The cold run with the adaptive corrector budget.

    Returns
    -------
    StructuredSolution
        The retry's answer when it ends certified, infeasible or at the time limit (its
        message says it was a retry), else ``answer`` with the retry's message appended;
        either counts both attempts' iterations and time.
    """
    if not cold or answer.status not in _RETRIED or (
            deadline is not None and time.perf_counter() > deadline):
        return answer
    again = retry().after(answer)
    first = f"{answer.status} ({answer.message})"
    if again.status in _ENDS:
        again.message = ("a cold retry with the adaptive corrector budget after "
                         f"{first}" + (f": {again.message}" if again.message else ""))
        return again
    answer.iterations, answer.solve_time = again.iterations, again.solve_time
    answer.message = (f"{answer.message}; a cold retry with the adaptive corrector budget "
                      f"ended {again.status} ({again.message})")
    return answer
