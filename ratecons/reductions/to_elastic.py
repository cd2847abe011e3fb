"""The elastic step of phase one in the structured form (:mod:`ratecons.solvers.structured`).

Phase one (:func:`ratecons.phase_one.find_feasible_start`) solves, at each anchor, the step of
the chain with a slack s_j >= 0 on every constraint row the user wrote,

    minimize    row_0(w, b) + reg(w) + penalty * sum_j s_j        (stage 1, the exact penalty)
                or sum_j s_j + nu reg(w)                          (stage 2, the violation)
    subject to  row_j(w, b) <= bound_j + s_j,   s_j >= 0,

the CVXPY lowering's ``lower_step(..., elastic=True, penalty=...)``. The structured form
already has what this needs (no change to the step solver): each slack is a free scalar
variable sigma_j of the form (as the thresholds of TPR@K are) entering the objective row and
row j linearly through F, and s_j >= 0 is one more row of the form (-sigma_j <= 0). The slack
is s_j = c_j sigma_j, c_j the largest coefficient of row j: row j keeps the scale the step
solver gives the plain step (:class:`~ratecons.solvers.structured_form.ScaledForm`), and
sigma_j is of the order of the row's own terms in those units. (A unit of c_0 / penalty, which
kept the objective row's scale too, made sigma_j of order 1e4 on diabetes's recall floor, and
stage 1 stalled at a relative gap of 0.64.)

Stage 2 drops the objective before lowering (:func:`objective_free`): the objective's parts,
its robust pieces and its ranking terms' own rows and variables never enter the step (they
cannot change the smallest violation); the regularizer stays with the weight
nu = ``settings.PHASE1_NORM_WEIGHT``, as in the CVXPY lowering, so that the step has a bounded
optimal face.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..expr.analysis import Analysis
from ..solvers.structured_form import ScaledForm, SmoothPieces, StructuredForm

__all__ = ["elastic_form", "objective_free"]


def objective_free(analysis: Analysis) -> Analysis:
    """``analysis`` with an objective of no parts (stage 2 of phase one: the violation alone);
    the constraint rows and the model are the same objects."""
    empty = replace(analysis.objective, parts=[], constant=0.0)
    return replace(analysis, objective=empty)


def _grown(coef: np.ndarray, rows: int) -> np.ndarray:
    """``coef`` (rows 0..m of the form) with ``rows`` zero rows below (the slacks' rows)."""
    return np.vstack([coef, np.zeros((rows, coef.shape[1]))])


def elastic_form(form: StructuredForm, penalty: float | None) -> StructuredForm:
    """The elastic step (module docstring) of the lowered step ``form``.

    Parameters
    ----------
    form : StructuredForm
        The plain step, lowered with the bounds in force (for stage 2, from
        :func:`objective_free`).
    penalty : float or None
        The weight of the total slack beside the objective (stage 1), or None: the total slack
        alone (stage 2; the regularizer weighted by ``settings.PHASE1_NORM_WEIGHT``).

    Returns
    -------
    StructuredForm
        With ``extra`` grown by one slack variable per user row (after the form's own free
        variables, in row order) and one row per slack after the form's rows; every row's
        multiplier is returned (``user_rows`` None), the user's first.
    """
    user = form.m if form.user_rows is None else form.user_rows
    kappa = ScaledForm(form).kappa  # 1 / the largest coefficient of every row
    largest = 1.0 / kappa
    unit = largest[1:1 + user]
    r = form.extra
    slack = r + np.arange(user)
    total = form.m + 1 + user
    F = np.zeros((total, r + user))
    F[:form.m + 1, :r] = form.F
    F[0, slack] = unit if penalty is None else float(penalty) * unit
    F[1 + np.arange(user), slack] = -unit
    F[form.m + 1 + np.arange(user), slack] = -1.0  # s_j >= 0
    G = sp.hstack([form.G, sp.csr_matrix((form.hinge_index.size, user))], format="csr")
    smooth = [SmoothPieces(piece.loss, piece.index, piece.label, _grown(piece.coef, user))
              for piece in form.smooth]
    out = replace(form, hinge_coef=_grown(form.hinge_coef, user), smooth=smooth,
                  constant=np.concatenate([form.constant, np.zeros(user)]),
                  bounds=np.concatenate([form.bounds, np.zeros(user)]), extra=r + user,
                  hinge_extra=G, row_extra=F, user_rows=None)
    if penalty is None:
        out = replace(out, l2=settings.PHASE1_NORM_WEIGHT * form.l2,
                      l1=settings.PHASE1_NORM_WEIGHT * form.l1)
    return out

