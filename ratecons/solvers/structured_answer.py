"""The answer of one run of the structured interior point (:mod:`.structured`): the iterate
the run ends at, its certificate evaluated from the scores afresh, the status that
certificate supports, and the rows' multipliers in the form's units."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import settings
from .structured_form import Iterate, StructuredForm, StructuredSolution

__all__ = ["CERTIFIED_TOL", "run_answer"]

#: the certificate's tolerance: a run that stalls short of ``tol`` (rounding in the reduced
#: Newton systems) is still ``optimal`` when its best iterate's gap and residuals are below this
CERTIFIED_TOL = 1e-6


def run_answer(form: StructuredForm, ipm: Any, x: Iterate, status: str, message: str,
               tol: float, iterations: int, started: float) -> StructuredSolution:
    """The answer of a run that stopped at ``x`` with ``status``.

    The certificate (relative gap, primal and dual residuals, :meth:`.structured._IPM.measures`)
    is evaluated at ``x`` with its scores Q theta computed afresh (:meth:`Iterate.exact`): a
    run stopped short of ``tol`` (``numerical_error``, ``iteration_limit``) is ``optimal`` when
    that certificate is within :data:`CERTIFIED_TOL`, and an ``optimal`` run whose updated
    scores drifted from P w - b beyond it is not.

    Parameters
    ----------
    form : StructuredForm
        The step that was solved.
    ipm : structured._IPM
        The interior point that ran.
    x : Iterate
        Its last iterate, or its best one when the run did not end certified or infeasible.
    status, message : str
        How the loop stopped.
    tol : float
        The run's tolerance.
    iterations : int
        The iterations it took.
    started : float
        ``time.perf_counter()`` at its start.

    Returns
    -------
    StructuredSolution
        (w, b, v), the user's rows' multipliers (a Farkas ray's, summing to 1, when
        ``infeasible``), the certificate and the violation of the exact rows.
    """
    x = x.exact()  # the certificate from the scores Q theta afresh (Iterate)
    ev = ipm.evaluate(x)
    rel_gap, pres, dres, _ = ipm.measures(x, ev)
    exact_merit = max(rel_gap, pres, dres)
    if status in (settings.NUMERICAL_ERROR, settings.ITERATION_LIMIT) and (
            exact_merit <= CERTIFIED_TOL):  # an MM step on the Adult split: 100 its, gap 7e-9
        status, message = settings.OPTIMAL, (f"stopped short of {tol:.0e}: "
                                             f"{message or f'{iterations} iterations'}")
    elif status == settings.OPTIMAL and exact_merit > max(tol, CERTIFIED_TOL):
        status, message = settings.NUMERICAL_ERROR, "the updated scores drifted from P w - b"
    w, b = ipm.w_b(x.theta)
    v = x.theta[ipm.p1:].copy()
    violation = float(np.max(form.row_values(w, b, v)[1:] - form.bounds, initial=0.0))
    kappa = ipm.sc.kappa
    user = form.m if form.user_rows is None else form.user_rows
    rows = x.lam["R"] * kappa[1:] / kappa[0] if form.m else np.zeros(0)
    duals = rows[:user]
    if status == settings.INFEASIBLE:  # the Farkas ray's row multipliers, summing to 1
        duals = duals / np.sum(rows)
    if status != settings.OPTIMAL and not message:
        message = (f"stopped with relative gap {rel_gap:.2e}, primal residual {pres:.2e}, "
                   f"dual residual {dres:.2e} (tolerance {tol:.0e})")
    return StructuredSolution(status, form.objective(w, b, v), w.copy(), b, duals, v, iterations,
                              rel_gap, pres, dres, max(0.0, violation),
                              time.perf_counter() - started, message, row_duals=rows)
