"""The data of one structured step (:mod:`.structured`): the form, a warm start and the answer.

The form is what every step of the chain shares: one score vector z = P w - b over N examples
and rows j = 0 (objective), 1..m (constraints) of hinge pieces, smooth margin-loss pieces and
robust losses (:mod:`.structured_robust`); the module docstring of :mod:`.structured` states
the step (P) and how it is solved.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..loss_functions import margin_loss
from ..scans import Rows
from .structured_robust import RobustPieces, robust_values

__all__ = ["Iterate", "ScaledForm", "SmoothPieces", "StructuredForm", "StructuredSolution",
           "WarmStart"]

@dataclass
class SmoothPieces:
    """Smooth margin-loss pieces S[j, l] loss(y_l z_{i_l}) of one loss."""

    loss: str
    index: np.ndarray  # (L,) example rows
    label: np.ndarray  # (L,) the margin factors t y, y in {-1, +1} (t: the loss's score scale)
    coef: np.ndarray  # (m+1, L), >= 0


@dataclass
class StructuredForm:
    """One convex step over the score model (module docstring), as plain data.

    Attributes
    ----------
    rows : Rows
        The examples' features P (N x p).
    fit_intercept : bool
        Whether b is a variable (else b = 0).
    l2, l1 : float
        Regularizer weights.
    hinge_index, hinge_slope, hinge_offset : ndarray, shape (K,)
        Piece k is max(0, hinge_slope[k] * z[hinge_index[k]] + hinge_offset[k]).
    hinge_coef : ndarray, shape (m+1, K)
        C >= 0.
    smooth : list of SmoothPieces
    constant : ndarray, shape (m+1,)
    bounds : ndarray, shape (m,)
    extra : int
        r free scalar variables v (the thresholds of ranking terms: Macha et al.'s t, and the
        lambda of sum_largest(z, k) = min_lambda k lambda + sum_i max(0, z_i - lambda)).
    hinge_extra : csr_matrix, shape (K, r), optional
        G: piece k is max(0, a_k z_{i_k} + c_k + G[k] v).
    row_extra : ndarray, shape (m+1, r), optional
        F: row j adds F[j] v.
    user_rows : int, optional
        The first ``user_rows`` constraint rows are the user's (their multipliers are
        returned); the others are the ranking terms' own (default: all).
    robust : list of RobustPieces
        Support functions of phi-divergence balls (:mod:`.structured_robust`): robust losses
        in the objective row, worst-case rates in any row, each over two of the free
        variables v (eta, and lam > 0).
    """

    rows: Rows
    fit_intercept: bool
    l2: float
    l1: float
    hinge_index: np.ndarray
    hinge_slope: np.ndarray
    hinge_offset: np.ndarray
    hinge_coef: np.ndarray
    smooth: list[SmoothPieces]
    constant: np.ndarray
    bounds: np.ndarray
    extra: int = 0
    hinge_extra: Any = None
    row_extra: np.ndarray | None = None
    user_rows: int | None = None
    robust: list[RobustPieces] = field(default_factory=list)

    @property
    def m(self) -> int:
        return int(self.bounds.size)

    @property
    def piecewise_linear(self) -> bool:
        """Whether every part is a hinge piece (no smooth loss, no support function of a
        robust ball): its rows are linear and its objective quadratic."""
        return not self.smooth and not self.robust

    @property
    def positive_extra(self) -> np.ndarray:
        """The free variables that must stay positive (the robust pieces' lam)."""
        return np.array([piece.lam for piece in self.robust], dtype=np.int64)

    @property
    def G(self) -> sp.csr_matrix:
        if self.hinge_extra is None:
            return sp.csr_matrix((self.hinge_index.size, self.extra))
        return sp.csr_matrix(self.hinge_extra)

    @property
    def F(self) -> np.ndarray:
        return (np.zeros((self.m + 1, self.extra)) if self.row_extra is None
                else np.asarray(self.row_extra, dtype=np.float64))

    def row_values(self, w: np.ndarray, b: float, v: np.ndarray | None = None) -> np.ndarray:
        """row_j(w, b, v) for j = 0..m, evaluated exactly (hinges as max(0, .))."""
        v = np.zeros(self.extra) if v is None else v
        z = self.rows.scores(w, b)
        values = self.constant + self.F @ v
        pieces = np.zeros(0)
        if self.hinge_index.size:
            pieces = np.maximum(0.0, self.hinge_slope * z[self.hinge_index] + self.hinge_offset
                                + self.G @ v)
            values += self.hinge_coef @ pieces
        if self.robust:
            values += robust_values(self.robust, z, pieces, v, self.m)
        for piece in self.smooth:
            loss, _ = margin_loss(piece.loss, piece.label * z[piece.index])
            values += piece.coef @ loss
        return values

    def objective(self, w: np.ndarray, b: float, v: np.ndarray | None = None) -> float:
        """Row 0 plus the regularizer at (w, b, v)."""
        reg = 0.5 * self.l2 * float(w @ w) + self.l1 * float(np.abs(w).sum())
        return float(self.row_values(w, b, v)[0]) + reg

    def digest(self) -> tuple:
        """A few bytes that tell this step from another: equal digests, the same convex
        problem. The stacked rows by identity (the lowering reuses them while they are the
        same rows), scalars by value, every array by its shape, type and a hash of its bytes
        (a sparse one in canonical form). A caller that compares steps keeps this, not the
        form: its (m + 1) floats per piece and per smooth piece, several arrays of them
        (:func:`ratecons.structured_chain.structured_step`: the last step's form stayed
        alive through the next step's solve)."""
        return _digest(self)


def _digest(value: Any) -> Any:
    """:meth:`StructuredForm.digest` of a form or of one of its parts."""
    if is_dataclass(value):
        return (type(value).__name__, *(_digest(getattr(value, f.name)) for f in fields(value)))
    if isinstance(value, list | tuple):
        return tuple(_digest(part) for part in value)
    if sp.issparse(value):
        canonical = sp.csr_matrix(value, copy=True)
        canonical.sum_duplicates()
        canonical.eliminate_zeros()
        return ("sparse", canonical.shape, _digest(canonical.data),
                _digest(canonical.indices.astype(np.int64)),
                _digest(canonical.indptr.astype(np.int64)))
    if isinstance(value, np.ndarray):
        contiguous = np.ascontiguousarray(value)
        return (value.shape, value.dtype.str,
                hashlib.blake2b(contiguous.view(np.uint8).ravel(), digest_size=20).digest())
    return value


class ScaledForm:
    """The form with every row scaled so that its largest coefficient is 1 (the rows are
    averages over thousands of examples; as sums their multipliers are of order one)."""

    def __init__(self, form: StructuredForm) -> None:
        largest = np.zeros(form.m + 1)
        for coef in [form.hinge_coef, form.F] + [s.coef for s in form.smooth]:
            if coef.size:
                largest = np.maximum(largest, np.max(np.abs(coef), axis=1))
        for piece in form.robust:
            largest[piece.row] = max(largest[piece.row], piece.coef / piece.n
                                     * float(np.max(piece.slope, initial=1.0)))
        self.kappa = 1.0 / np.where(largest > 0, largest, 1.0)
        k = self.kappa
        self.form = form
        self.C = k[:, None] * form.hinge_coef
        self.S = [k[:, None] * s.coef for s in form.smooth]
        self.F = k[:, None] * form.F
        self.const = k * form.constant
        self.bounds = k[1:] * form.bounds
        self.l2 = k[0] * form.l2
        self.l1 = k[0] * form.l1


class Iterate:
    """An iterate of the structured interior point, or a direction: primal x = (theta, u, tau),
    slacks ``s`` and multipliers ``lam`` by group (A, B, R, T+, T-, L), and the scores
    z = Q theta when known (a direction's Q d_theta, which its solve forms anyway; an iterate
    moved along it keeps z + step dz, one product with P per iteration fewer; the certificate
    is evaluated from z = Q theta afresh, :func:`.structured._run`)."""

    def __init__(self, theta: np.ndarray, u: np.ndarray, tau: np.ndarray,
                 s: dict[str, np.ndarray], lam: dict[str, np.ndarray],
                 z: np.ndarray | None = None) -> None:
        self.theta, self.u, self.tau, self.s, self.lam, self.z = theta, u, tau, s, lam, z

    def moved(self, d: Iterate, step: float, dual: float | None = None) -> Iterate:
        """The iterate moved by ``step`` along d (its multipliers by ``dual`` when given: the
        separate primal and dual steps of :func:`.structured_correctors.primal_dual_steps`)."""
        dual = step if dual is None else dual
        z = None if self.z is None or d.z is None else self.z + step * d.z
        return Iterate(self.theta + step * d.theta, self.u + step * d.u,
                       self.tau + step * d.tau, {g: self.s[g] + step * d.s[g] for g in self.s},
                       {g: self.lam[g] + dual * d.lam[g] for g in self.lam}, z)

    def exact(self) -> Iterate:
        """The same iterate with its scores dropped (evaluated afresh from theta)."""
        return Iterate(self.theta, self.u, self.tau, self.s, self.lam)


@dataclass
class WarmStart:
    """A previous step's answer to start from: (w, b, v) and the multipliers of every
    constraint row (the user's rows first, then the rows the lowering adds, such as the
    threshold row of TPR@K and TPR@tau; :meth:`StructuredSolution.warm_start`), and the
    relative gap the first iterate is centred to (None: :data:`.structured_warm.WARM_GAP`;
    :func:`.structured_warm.recentred`)."""

    w: np.ndarray
    b: float
    duals: np.ndarray
    extra: np.ndarray
    gap: float | None = None


@dataclass
class StructuredSolution:
    """The step's answer with its certificate (module docstring)."""

    status: str
    objective: float
    w: np.ndarray
    b: float
    duals: np.ndarray  # multipliers of the user's rows (>= 0), in the form's units
    extra: np.ndarray  # the free scalar variables v
    iterations: int
    rel_gap: float
    primal_residual: float
    dual_residual: float
    max_violation: float
    solve_time: float
    message: str = ""
    #: multipliers of every constraint row (the user's, then the lowering's own), form units
    row_duals: np.ndarray | None = None

    def warm_start(self, rows: int) -> WarmStart:
        """The answer as the start of the next step, a form of ``rows`` constraint rows (the
        same rows, or the plain step of the elastic step that answered): the multipliers of
        its rows, the lowering's own included (zero where the answer has none). Without the
        threshold row's multiplier of TPR@K and TPR@tau, a step with two user rows failed on
        the size and one with a single user row started that row's multiplier there."""
        duals = self.duals if self.row_duals is None else self.row_duals
        out = np.zeros(rows)
        out[:min(rows, duals.size)] = duals[:rows]
        return WarmStart(self.w, self.b, out, self.extra)

    def after(self, *earlier: StructuredSolution) -> StructuredSolution:
        """This answer, counting the iterations and time of the ``earlier`` attempts too."""
        self.iterations += sum(a.iterations for a in earlier)
        self.solve_time += sum(a.solve_time for a in earlier)
        return self
