"""The CLARABEL reference of a structured step form (hinge and smooth pieces, l1, l2, free
variables in the pieces and the rows; no robust pieces), built from the form itself: for the
captured and the small forms of the tests (the chain's own CVXPY step needs the problem); and
a captured step form rebuilt from its stored arrays."""

from __future__ import annotations

from pathlib import Path

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ratecons.scans import Rows
from ratecons.solvers.structured import CERTIFIED_TOL
from ratecons.solvers.structured_form import SmoothPieces, StructuredForm, StructuredSolution

__all__ = ["assert_certified", "form_reference", "stored_step"]


def assert_certified(answer: StructuredSolution) -> None:
    """The structured step's answer is ``optimal`` with its gap and both residuals within
    :data:`ratecons.solvers.structured.CERTIFIED_TOL`."""
    assert answer.status == "optimal", answer.message
    assert max(answer.rel_gap, answer.primal_residual, answer.dual_residual) <= CERTIFIED_TOL


def stored_step(path: Path, X: np.ndarray | sp.spmatrix, loss: str = "logistic") -> StructuredForm:
    """A step form captured from the chain: its arrays from the ``.npz`` at ``path`` (l2,
    hinge pieces, constants, bounds, the free variables' G (as COO triplets) and F, and the
    smooth pieces of ``loss`` when stored), its features ``X`` (the rows it was captured on:
    the stored arrays hold no features)."""
    a = np.load(path)
    G = sp.csr_matrix((a["G_data"], (a["G_row"].astype(np.int64), a["G_col"].astype(np.int64))),
                      shape=(a["hinge_index"].size, a["row_extra"].shape[1]))
    smooth = ([SmoothPieces(loss, a["smooth_index"].astype(np.int64), a["smooth_label"],
                            a["smooth_coef"])] if "smooth_index" in a else [])
    return StructuredForm(Rows(X), True, float(a["l2"]), 0.0, a["hinge_index"].astype(np.int64),
                          a["hinge_slope"], a["hinge_offset"], a["hinge_coef"], smooth,
                          a["constant"], a["bounds"], extra=a["row_extra"].shape[1],
                          hinge_extra=G, row_extra=a["row_extra"])


def _smooth(loss: str, margins: cp.Expression) -> cp.Expression:
    if loss == "logistic":
        return cp.logistic(-margins)
    if loss == "squared_hinge":
        return cp.square(cp.pos(1 - margins))
    raise ValueError(f"no CVXPY form of the smooth loss {loss!r} here")


def form_reference(form: StructuredForm, solver: str = "CLARABEL") -> tuple[str, float,
                                                                            np.ndarray]:
    """(status, objective, row values) of the form's step (P) by ``solver`` at tight
    tolerances."""
    if form.robust:
        raise ValueError("form_reference has no robust pieces; use the chain's CVXPY step")
    P = form.rows.P
    P = P.toarray() if sp.issparse(P) else np.asarray(P)
    n, p = P.shape
    w = cp.Variable(p)
    b = cp.Variable() if form.fit_intercept else 0.0
    v = cp.Variable(form.extra) if form.extra else None
    z = P @ w - b
    rows = [form.constant[j] + (form.F[j] @ v if v is not None else 0.0)
            for j in range(form.m + 1)]
    if form.hinge_index.size:
        arg = cp.multiply(form.hinge_slope, z[form.hinge_index]) + form.hinge_offset
        if v is not None:
            arg = arg + form.G @ v
        pieces = cp.pos(arg)
        for j in range(form.m + 1):
            if np.any(form.hinge_coef[j]):
                rows[j] = rows[j] + form.hinge_coef[j] @ pieces
    for piece in form.smooth:
        loss = _smooth(piece.loss, cp.multiply(piece.label, z[piece.index]))
        for j in range(form.m + 1):
            if np.any(piece.coef[j]):
                rows[j] = rows[j] + piece.coef[j] @ loss
    objective = rows[0] + 0.5 * form.l2 * cp.sum_squares(w) + form.l1 * cp.norm1(w)
    constraints = [rows[j] <= form.bounds[j - 1] for j in range(1, form.m + 1)]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    tight = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10) if solver == "CLARABEL" \
        else {}
    problem.solve(solver=solver, **tight)
    values = np.array([float(np.asarray(r.value)) if hasattr(r, "value") else float(r)
                       for r in rows]) if problem.status == "optimal" else np.full(form.m + 1,
                                                                                   np.nan)
    return problem.status, float(problem.value), values
