"""How a structured step is solved when its first attempt fails: a warm start from the last
certified step (centred again when it was blocked), then a cold start, then the CVXPY
reference step.

The chain's MM steps (:func:`ratecons.structured_chain.structured_step`) and phase one's elastic
steps (:func:`ratecons.structured_phase_one.structured_elastic_step`) both start the structured
interior point (:func:`~ratecons.solvers.structured.solve_structured`) warm from the last certified
answer; a warm start of a step with smooth parts given up as blocked runs once more from the same
point centred deeper in the interior (:func:`~ratecons.solvers.structured_warm.recentred`); a warm
start that ends without a certificate (a stall, a numerical error; not the time limit, nor a Farkas
ray proving the step infeasible, which does not depend on the start) is solved again from the cold
start (itself retried once with the adaptive corrector budget,
:mod:`ratecons.solvers.structured_retry`), and a step still uncertified is handed to its CVXPY
lowering (:func:`~ratecons.reductions.to_cvxpy.solve_step`), so the structured chain never ends
worse than ``method="cvxpy"``. The step's ``message`` says which solved it.
"""

from __future__ import annotations

from collections.abc import Callable

from . import settings
from .reductions.to_cvxpy import ConvexStep
from .solvers.structured import solve_structured
from .solvers.structured_form import StructuredForm, StructuredSolution, WarmStart
from .solvers.structured_stop import BLOCKED_MESSAGE
from .solvers.structured_warm import recentred

__all__ = ["by_reference", "certified", "warm_then_cold"]

#: the statuses a structured answer is kept with (no further attempt)
_KEPT = (settings.OPTIMAL, settings.TIME_LIMIT)


def certified(answer: StructuredSolution) -> bool:
    """Whether the answer ends the ladder: certified, or stopped by the time limit."""
    return answer.status in _KEPT


def warm_then_cold(form: StructuredForm, tol: float, deadline: float | None,
                   warm: WarmStart | None) -> StructuredSolution:
    """``form`` solved from ``warm`` (None: the cold start), from ``warm`` recentred when that
    run was blocked on a step with smooth parts, and again from the cold start when the warm
    starts end uncertified and not proved infeasible (its Farkas ray,
    :mod:`ratecons.solvers.structured_infeasible`, holds whatever the start: a cold re-solve
    would prove it again); the answer counts every attempt's iterations and time.

    Parameters
    ----------
    form : StructuredForm
        The lowered step.
    tol : float
        The relative gap and residual tolerance.
    deadline : float or None
        The solve's deadline (``time.perf_counter()`` seconds).
    warm : WarmStart or None
        The last certified answer of the same shape, or None.
    """
    answer = solve_structured(form, tol=tol, deadline=deadline, warm=warm)
    if warm is not None and form.smooth and answer.message == BLOCKED_MESSAGE:
        answer = solve_structured(form, tol=tol, deadline=deadline,
                                  warm=recentred(warm)).after(answer)
    if warm is None or certified(answer) or answer.status == settings.INFEASIBLE:
        return answer
    return solve_structured(form, tol=tol, deadline=deadline).after(answer)


def by_reference(answer: StructuredSolution, reference: Callable[[], ConvexStep],
                 step: str = "step") -> ConvexStep:
    """The CVXPY ``step`` (``reference()``) for a structured ``answer`` left uncertified,
    its message saying why."""
    fallback = reference()
    fallback.message = (f"structured {step}: {answer.status} ({answer.message}); solved by "
                        f"the CVXPY {step} instead. " + fallback.message)
    return fallback
