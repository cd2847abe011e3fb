"""The elastic step of phase one in the structured form (:mod:`ratecons.solvers.structured`).

Phase one (:func:`ratecons.generic.find_feasible_start`) solves, at each anchor, the step of
the chain with a slack s_j >= 0 on every constraint row the user wrote,

    minimize    row_0(w, b) + reg(w) + penalty * sum_j s_j        (stage 1, the exact penalty)
                or sum_j s_j + nu reg(w)                          (stage 2, the violation)
    subject to  row_j(w, b) <= bound_j + s_j,   s_j >= 0,

the CVXPY lowering's ``lower_step(..., elastic=True, penalty=...)``. The structured form
already has what this needs (no change to the step solver): each slack is a free scalar
variable sigma_j of the form (as the thresholds of TPR@K are) entering the objective row and
row j linearly through F, and s_j >= 0 is one more row of the form (-sigma_j <= 0). The slack
is s_j = a_j sigma_j with a_j = min(c_j, c_0 / penalty), c_j the largest coefficient of row j
(c_j in stage 2): then the slack's coefficients are no larger than the row's own, so the step
solver scales every row as it scales the plain step (:class:`~ratecons.solvers.structured_form.
ScaledForm`), and its multipliers keep their order one.

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

__all__ = ["elastic_form", "objective_free", "slack_values"]


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
    unit = (largest[1:1 + user] if penalty is None
            else np.minimum(largest[1:1 + user], largest[0] / float(penalty)))
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


def slack_values(form: StructuredForm, extra: np.ndarray, user: int) -> np.ndarray:
    """The slacks s_j (in the rows' units) of the elastic ``form``'s free variables ``extra``
    (the last ``user`` of them)."""
    F = form.F
    rows = 1 + np.arange(user)
    cols = form.extra - user + np.arange(user)
    return -F[rows, cols] * extra[cols]
