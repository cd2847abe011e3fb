"""The one matrix lowering of a composed problem: c, sparse A, bounds, P, at an anchor.

Given the canonical rows of :mod:`ratecons.expr.analysis` (minimize row 0 s.t. row j <= bound_j),
the feature map of the score model (:mod:`ratecons.reductions.kernelize`, psi-space w for
kernels) and an anchor (None: the hinge relaxation), it writes the same convex step that
:mod:`ratecons.reductions.to_cvxpy` builds, as a :class:`~ratecons.canonical.matrix_lp.MatrixLP`
(a QP when ``P`` is set) over the columns

- ``w[feature]`` (free; psi features ``w[psi0]`` ... for kernels) and ``b`` (free, when the
  model fits an intercept), scores z = psi(X) w - b;
- ``abs_w[feature] >= |w|`` for an l1 penalty (two rows each), P = l2 I on w for an l2 one:
  the regularizer (l2/2)||w||^2 + l1 ||w||_1;
- epigraph columns of the hinges, shared by every row that uses them (each enters the
  canonical rows with a positive coefficient, so the optimum lowers it onto its hinge):
  ``xi+[data:i] >= 1/2 + z_i`` and ``xi-[data:i] >= 1/2 - z_i``, the convex upper bounds of
  eq. (4) of Goh et al. (where the anchor's score z'_i <= 1/2, resp. >= -1/2; elsewhere the
  bound is the constant 1), ``hinge[data:i] >= 1 - y~_i z_i`` of a hinge mean loss and
  ``resid[data:i] = 1 - y~_i z_i`` of a squared one (objective only: P = 2 coef weight_i);
- per TPR@K / TPR@tau term (problem (3) of Macha et al.): the threshold ``t[label]``, the
  surrogate epigraphs ``e[label|data:i] >= 1 + t - z_i`` over the positives, and the threshold
  epigraph: ``t >= u + (1/K) sum_j v_j`` with ``v[label|data:j] >= z_j - u`` (the LP form of the
  mean of the K largest scores, min_u u + (1/K) sum_j (z_j - u)_+; TopPushK, TopMeanK, tau-FPL)
  or ``sum_j g_j <= n~ tau`` with ``g[label|data:j] >= 1 + theta (z_j - t)`` (Pat&Mat with the
  hinge). In the objective of a problem without constraints, t is fixed at 0 when the model
  fits an intercept: the ranking is shift-invariant, and b is then the threshold
  (:mod:`ratecons.reductions.to_cvxpy`).

Rows: the user's constraints first (named from their expressions), then the definitions of the
auxiliary columns (``def_<column>``). Names follow the MPS rules: printable ASCII without
spaces, unique, at most 255 characters. The objective is always minimized (the canonical sense:
a maximized user objective is negated, user value = ``sign`` * file value).

Each term type is written by its entry in :data:`LOWERINGS` (term type -> :class:`MatrixLowering`:
the function that adds its columns and rows, and why a part of that type has no LP/QP form, if
it has none). Parts with no LP/QP form raise :class:`~ratecons.errors.NotLinearError` naming the
part and what would make it one (:func:`check_representable`), and so does a term type without
an entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..canonical.matrix_lp import MatrixLP
from ..canonical.rate_program import hinge_masks
from ..errors import NotLinearError, SpecError
from ..expr.analysis import Analysis, Row
from ..expr.atom import label_of
from ..expr.mean_loss import MeanLoss
from ..expr.ranking import RankingObjective, TPRAtQuantile, TPRAtTop
from ..expr.rate import RateExpr
from ..expr.robust import WorstCaseRate
from ..expr.robust_loss import RobustLoss
from .table import entry_for

__all__ = ["LOWERINGS", "Linear", "MatrixBuilder", "MatrixLowering", "MatrixStep",
           "check_representable", "lower_matrix", "model_column_names",
           "mps_names", "anchor_of"]

#: longest row or column name an MPS file may carry
MAX_NAME = 255


@dataclass
class MatrixStep:
    """One lowered step: the matrix program and where the model's parameters live in it.

    Attributes
    ----------
    lp : MatrixLP
        minimize c x + (1/2) x P x + offset s.t. row and column bounds (module docstring).
    w_cols : ndarray
        Column indices of w (over psi for kernels).
    b_col : int or None
        Column of b (None without an intercept).
    constraint_rows : ndarray
        Rows of the user's constraints, in the order of ``analysis.constraints``.
    sign : float
        User objective = sign * (file objective) for the canonical rows.
    """

    lp: MatrixLP
    w_cols: np.ndarray
    b_col: int | None
    constraint_rows: np.ndarray
    sign: float
    notes: dict[str, str] = field(default_factory=dict)

    def parameters(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        """(w, b) from a vector of column values."""
        x = np.asarray(x, dtype=np.float64)
        return x[self.w_cols], (float(x[self.b_col]) if self.b_col is not None else 0.0)


# ---------------------------------------------------------------------------- representability
def check_representable(analysis: Analysis) -> None:
    """Raise :class:`NotLinearError` naming the first part without an LP/QP form."""
    for j, row in enumerate(analysis.rows):
        where = "the objective" if j == 0 else f"the constraint '{row.name}'"
        for _, part in row.parts:
            entry = entry_for(LOWERINGS, part, "matrix LP/QP")
            why = entry.refuses(part, where, j > 0)
            if why is None and entry.lower is None:  # pragma: no cover - entries say why
                why = f"{label_of(part)} in {where} has no LP/QP form"
            if why is not None:
                raise NotLinearError(f"not an LP or QP: {why}")


# ---------------------------------------------------------------------------- names
def _clean(name: str) -> str:
    out = "".join(ch if 33 <= ord(ch) <= 126 else "_" for ch in name.replace(" ", ""))
    return out or "_"


def mps_names(names: list[str], taken: set[str] | None = None) -> list[str]:
    """Printable ASCII without spaces, unique (``~2``, ``~3`` ... appended; also against
    ``taken``), at most 255 characters."""
    seen: set[str] = set() if taken is None else taken
    out = []
    for raw in names:
        base = _clean(raw)[:MAX_NAME]
        name, k = base, 1
        while name in seen:
            k += 1
            suffix = f"~{k}"
            name = base[:MAX_NAME - len(suffix)] + suffix
        seen.add(name)
        out.append(name)
    return out


def _feature_names(analysis: Analysis, d: int, kernel: str | None) -> list[str]:
    if kernel is not None:
        return [f"{kernel}{j}" for j in range(d)]
    names = next((ds.feature_names for ds in analysis.datasets if ds.feature_names), None)
    return list(names) if names is not None and len(names) == d else [f"x{j}" for j in range(d)]


def model_column_names(analysis: Analysis, d: int, kernel: str | None) -> list[str]:
    """The names of w (and b) as :func:`lower_matrix` writes them (the first columns);
    ``kernel``: the psi columns' prefix (:attr:`FeatureMap.column_prefix`), None for a linear
    model."""
    names = [f"w[{f}]" for f in _feature_names(analysis, d, kernel)]
    if getattr(analysis.model, "fit_intercept", True):
        names.append("b")
    return mps_names(names)


def anchor_of(analysis: Analysis, scorer: Any) -> dict[int, np.ndarray]:
    """The scores of a fitted scorer (or Result) on every dataset: an MM anchor. A Result
    without a model raises its :class:`~ratecons.errors.SolverError` (the status and what
    to do); the Result of a problem that is not over a score model (a minimax risk
    classifier's) or a scorer whose scores are not one per example is refused."""
    made_by = getattr(scorer, "problem", None)
    if made_by is not None and made_by.analysis is None:
        raise SpecError(f"the anchor must be the result of a score-model problem (rates, "
                        f"losses, TPR@K: a model s(x) = <w, psi(x)> - b); got a result of a "
                        f"{made_by.pattern.name} problem.")
    anchor = {}
    for d in analysis.datasets:
        scores = np.asarray(scorer.decision_function(d.X), dtype=np.float64)
        if scores.shape != (d.n,) or not np.all(np.isfinite(scores)):
            raise SpecError(f"the anchor's scores on {d.name!r} must be {d.n} finite numbers, "
                            f"one per example; got shape {scores.shape}.")
        anchor[id(d)] = scores
    return anchor


# ---------------------------------------------------------------------------- the builder
class MatrixBuilder:
    """Columns, rows and triplets of one step (module docstring)."""

    def __init__(self, analysis: Analysis, psi: dict[int, Any], anchor: Any,
                 kernel: str | None) -> None:
        self.analysis = analysis
        self.psi = psi
        self.anchor = anchor
        self.col_names: list[list[str]] = []
        self.col_lower: list[np.ndarray] = []
        self.col_upper: list[np.ndarray] = []
        self.n_cols = 0
        self.row_names: list[list[str]] = []
        self.row_lower: list[np.ndarray] = []
        self.row_upper: list[np.ndarray] = []
        self.n_rows = 0
        self.trip: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.cost: list[tuple[np.ndarray, np.ndarray]] = []
        self.quad: list[tuple[np.ndarray, np.ndarray]] = []
        self.offset = 0.0
        self.shared: dict[tuple[int, str, float], np.ndarray] = {}
        d = next(iter(psi.values())).shape[1]
        self.features = _feature_names(analysis, d, kernel)
        self.w_cols = self.add_cols([f"w[{f}]" for f in self.features], -np.inf, np.inf)
        fit_b = getattr(analysis.model, "fit_intercept", True)
        self.b_col = int(self.add_cols(["b"], -np.inf, np.inf)[0]) if fit_b else None

    # -------------------------------------------------------------- raw pieces
    def add_cols(self, names: list[str], lower: float, upper: float) -> np.ndarray:
        k = len(names)
        self.col_names.append(names)
        self.col_lower.append(np.full(k, lower))
        self.col_upper.append(np.full(k, upper))
        cols = np.arange(self.n_cols, self.n_cols + k)
        self.n_cols += k
        return cols

    def add_rows(self, names: list[str], lower: Any, upper: Any) -> np.ndarray:
        k = len(names)
        self.row_names.append(names)
        self.row_lower.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), (k,)).copy())
        self.row_upper.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), (k,)).copy())
        rows = np.arange(self.n_rows, self.n_rows + k)
        self.n_rows += k
        return rows

    def entries(self, rows: Any, cols: Any, vals: Any) -> None:
        rows, cols, vals = np.broadcast_arrays(np.asarray(rows), np.asarray(cols),
                                               np.asarray(vals, dtype=np.float64))
        self.trip.append((rows.ravel(), cols.ravel(), vals.ravel()))

    def scores(self, rows: np.ndarray, data: Any, index: np.ndarray, scale: np.ndarray) -> None:
        """Add scale_i * z_{index_i} to row rows_i (z = psi w - b)."""
        M = self.psi[id(data)][index]
        M = sp.coo_matrix(sp.diags(scale) @ M if sp.issparse(M) else scale[:, None] * M)
        self.entries(rows[M.row], self.w_cols[M.col], M.data)
        if self.b_col is not None:
            self.entries(rows, self.b_col, -scale)

    def tag(self, data: Any, index: np.ndarray) -> list[str]:
        return [f"{data.name}:{i}" for i in index.tolist()]

    def epigraph(self, data: Any, index: np.ndarray, kind: str,
                 margin_scale: float = 1.0) -> np.ndarray:
        """Shared columns of ``kind`` ("xi+", "xi-", "hinge", "resid") on ``index``; a loss's
        (``hinge``, ``resid``) at margin scale t = ``margin_scale``: h + t y~ z >= 1."""
        key = (id(data), kind, margin_scale)
        if key not in self.shared:
            self.shared[key] = np.full(data.n, -1, dtype=np.int64)
        colmap = self.shared[key]
        new = np.unique(index[colmap[index] < 0])
        if new.size:
            label = kind if margin_scale == 1.0 else f"{kind}@{margin_scale:.17g}"
            names = [f"{label}[{t}]" for t in self.tag(data, new)]
            lower = -np.inf if kind == "resid" else 0.0
            cols = self.add_cols(names, lower, np.inf)
            colmap[new] = cols
            if kind in ("xi+", "xi-"):  # xi -/+ z >= 1/2
                scale, rhs_lo, rhs_hi = (-1.0 if kind == "xi+" else 1.0), 0.5, np.inf
                scale = np.full(new.size, scale)
            else:  # hinge: h + t y~ z >= 1; resid: r + t y~ z = 1
                scale = margin_scale * (2.0 * data.y[new].astype(np.float64) - 1.0)
                rhs_lo, rhs_hi = 1.0, (1.0 if kind == "resid" else np.inf)
            rows = self.add_rows([f"def_{n}" for n in names], rhs_lo, rhs_hi)
            self.entries(rows, cols, 1.0)
            self.scores(rows, data, new, scale)
        return colmap[index]

    def row(self, row: Row, acc: Linear | None = None, objective: bool = False) -> Linear:
        acc = Linear(row.constant) if acc is None else acc
        for coef, part in row.parts:
            lower = entry_for(LOWERINGS, part, "matrix LP/QP").lower
            if lower is None:  # pragma: no cover - check_representable refused it first
                raise NotLinearError(f"{label_of(part)} has no LP/QP form.")
            lower(self, coef, part, acc, objective)
        return acc

    def regularizer(self, acc: Linear) -> None:
        model = self.analysis.model
        if model.l2 > 0:
            self.quad.append((self.w_cols, np.full(self.w_cols.size, float(model.l2))))
        l1 = float(getattr(model, "l1", 0.0))
        if l1 > 0:  # abs_w - w >= 0, abs_w + w >= 0
            names = [f"abs_w[{f}]" for f in self.features]
            a = self.add_cols(names, 0.0, np.inf)
            for s, tag in ((-1.0, "+"), (1.0, "-")):
                rows = self.add_rows([f"def_{n}{tag}" for n in names], 0.0, np.inf)
                self.entries(rows, a, 1.0)
                self.entries(rows, self.w_cols, s)
            acc.add(a, np.full(a.size, l1))


class Linear:
    """A linear expression being accumulated: columns, coefficients and a constant."""

    def __init__(self, constant: float = 0.0) -> None:
        self.constant = float(constant)
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []

    def add(self, cols: np.ndarray, vals: np.ndarray) -> None:
        self.cols.append(np.asarray(cols))
        self.vals.append(np.asarray(vals, dtype=np.float64))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(self.cols), np.concatenate(self.vals)


def _rate(builder: MatrixBuilder, coef: float, expr: RateExpr, acc: Linear, objective: bool
          ) -> None:
    """coef * expr: each s_p(D) by its bound of eq. (4) (``xi+`` / ``xi-`` columns, the
    constant 1 where the anchor is beyond the ramp)."""
    acc.constant += coef * expr.constant
    for subset, c in expr.terms.values():
        cc = coef * c
        index, omega = subset.index, subset.weights
        if builder.anchor is None:
            mask = np.ones(index.size, dtype=bool)
        else:
            z0 = builder.anchor[id(subset.data)][index]
            mask = hinge_masks(z0)[0 if cc > 0 else 1]
        if cc < 0:
            acc.constant += cc
        acc.constant += abs(cc) * float(omega[~mask].sum())
        if mask.any():
            cols = builder.epigraph(subset.data, index[mask], "xi+" if cc > 0 else "xi-")
            acc.add(cols, abs(cc) * omega[mask])


def _mean_loss(builder: MatrixBuilder, coef: float, part: MeanLoss, acc: Linear,
               objective: bool) -> None:
    """coef * the mean loss: ``hinge`` epigraph columns, or ``resid`` columns in P (squared)."""
    s = part.subset
    if part.loss == "hinge":
        acc.add(builder.epigraph(s.data, s.index, "hinge", part.scale), coef * s.weights)
    else:  # squared, objective only (check_representable)
        cols = builder.epigraph(s.data, s.index, "resid", part.scale)
        builder.quad.append((cols, 2.0 * coef * s.weights))


def _ranking(builder: MatrixBuilder, coef: float, part: RankingObjective, acc: Linear,
             objective: bool) -> None:
    """coef * (1 - L), L = (1/n_+) sum_i l(t - z_i) (module docstring); coef < 0. In the
    objective, with an intercept and no constraint, t is fixed at 0 so that b is the
    threshold."""
    data, label = part.data, part.label
    a = -coef
    acc.constant += coef
    y = data.y
    pos = np.flatnonzero(y == 1)
    among = np.arange(data.n) if part.among == "all" else np.flatnonzero(y == 0)
    free = not (objective and builder.b_col is not None and not builder.analysis.constraints)
    t = int(builder.add_cols([f"t[{label}]"], -np.inf if free else 0.0,
                          np.inf if free else 0.0)[0])
    e = builder.add_cols([f"e[{label}|{x}]" for x in builder.tag(data, pos)], 0.0, np.inf)
    rows = builder.add_rows([f"def_e[{label}|{x}]" for x in builder.tag(data, pos)], 1.0, np.inf)
    builder.entries(rows, e, 1.0)  # e_i - t + z_i >= 1
    builder.entries(rows, t, -1.0)
    builder.scores(rows, data, pos, np.ones(pos.size))
    if part.surrogate == "hinge":
        acc.add(e, np.full(pos.size, a / pos.size))
    else:  # quadratic hinge in the objective (check_representable)
        builder.quad.append((e, np.full(pos.size, 2.0 * a / pos.size)))
    names = builder.tag(data, among)
    if part.family == "toppushk":  # t - u - (1/K) sum v >= 0, v_j + u - z_j >= 0
        k = int(part.k)
        u = int(builder.add_cols([f"u[{label}]"], -np.inf, np.inf)[0])
        v = builder.add_cols([f"v[{label}|{x}]" for x in names], 0.0, np.inf)
        vrows = builder.add_rows([f"def_v[{label}|{x}]" for x in names], 0.0, np.inf)
        builder.entries(vrows, v, 1.0)
        builder.entries(vrows, u, 1.0)
        builder.scores(vrows, data, among, -np.ones(among.size))
        thr = builder.add_rows([f"thr[{label}]"], 0.0, np.inf)
        builder.entries(thr, [t, u], [1.0, -1.0])
        builder.entries(thr, v, -1.0 / k)
    else:  # Pat&Mat: g_j - theta z_j + theta t >= 1, sum g <= n~ tau
        theta = float(part.theta)
        g = builder.add_cols([f"g[{label}|{x}]" for x in names], 0.0, np.inf)
        grows = builder.add_rows([f"def_g[{label}|{x}]" for x in names], 1.0, np.inf)
        builder.entries(grows, g, 1.0)
        builder.entries(grows, t, theta)
        builder.scores(grows, data, among, np.full(among.size, -theta))
        thr = builder.add_rows([f"thr[{label}]"], -np.inf, among.size * float(part.tau))
        builder.entries(thr, g, 1.0)


_GENERIC = "method='generic' (CVXPY, conic) solves it as it is"


def _takes_all(part: Any, where: str, bounded: bool) -> str | None:
    return None


def _mean_loss_refuses(part: MeanLoss, where: str, bounded: bool) -> str | None:
    label = label_of(part)
    if part.loss == "logistic":
        return (f"{label} in {where}: the logistic loss is smooth but not piecewise linear or "
                f"quadratic, so it has no LP/QP form. Use rc.hinge_loss(...) (an LP) or "
                f"rc.mean_loss(..., 'squared') in the objective (a QP); {_GENERIC}.")
    if part.loss == "squared" and bounded:
        return (f"{label} bounded in {where}: a bound on a squared loss is a quadratic "
                f"constraint (a QCQP, not a QP). Move it into the objective or use the hinge "
                f"loss; {_GENERIC}.")
    return None


def _conic_refuses(part: Any, where: str, bounded: bool) -> str | None:
    phi = part.ball.phi.name
    cone = ("a second-order cone: its support function eta + sqrt((1 + rho)/N) "
            "||(l - eta)_+||_2 has a 2-norm" if phi == "chi2" else
            "an exponential cone (its support function has exp terms)")
    return (f"{label_of(part)} in {where}: the {phi} ball makes it {cone}, which is neither an "
            f"LP nor a QP. Bound the plain rate or loss instead (rc.recall(D) >= ..., "
            f"rc.hinge_loss(D)), or {_GENERIC}.")


def _ranking_refuses(part: RankingObjective, where: str, bounded: bool) -> str | None:
    quad = part.surrogate != "hinge"
    if quad and part.family != "toppushk":
        return (f"{label_of(part)} in {where}: Pat&Mat with the quadratic hinge puts a "
                f"quadratic constraint on its threshold (a QCQP). Use surrogate='hinge' (an LP), "
                f"or {_GENERIC}.")
    if quad and bounded:
        return (f"{label_of(part)} bounded in {where}: with the quadratic hinge the bound is a "
                f"quadratic constraint (a QCQP). Use surrogate='hinge' (an LP), or {_GENERIC}.")
    return None


@dataclass(frozen=True)
class MatrixLowering:
    """How one term type enters the matrix program.

    Attributes
    ----------
    lower : callable or None
        ``lower(builder, coef, part, acc, objective)`` adds ``coef * part`` to the linear
        expression ``acc`` (:class:`Linear`) of its row, with the columns and rows it needs
        (``builder``: :class:`MatrixBuilder`; ``objective``: the part is in the objective row);
        None for a term with no LP/QP form.
    refuses : callable
        ``refuses(part, where, bounded) -> reason or None``: why this part, in ``where`` (the
        objective or a named constraint; ``bounded`` for a constraint), has no LP/QP form.
    """

    lower: Callable[[MatrixBuilder, float, Any, Linear, bool], None] | None
    refuses: Callable[[Any, str, bool], str | None] = _takes_all


_RANKING = MatrixLowering(_ranking, _ranking_refuses)
#: term type -> its :class:`MatrixLowering` (CVXPY's CANON_METHODS; refused by name without one)
LOWERINGS: dict[type, MatrixLowering] = {
    RateExpr: MatrixLowering(_rate),
    MeanLoss: MatrixLowering(_mean_loss, _mean_loss_refuses),
    TPRAtTop: _RANKING,
    TPRAtQuantile: _RANKING,
    WorstCaseRate: MatrixLowering(None, _conic_refuses),
    RobustLoss: MatrixLowering(None, _conic_refuses),
}


def lower_matrix(analysis: Analysis, psi: dict[int, Any],
                 anchor: dict[int, np.ndarray] | None, bounds: np.ndarray | None = None,
                 kernel: str | None = None, name: str = "ratecons") -> MatrixStep:
    """The step at ``anchor`` (None: the hinge relaxation) with constraint bounds ``bounds``
    (default: the analysis' own) as a matrix program (module docstring).

    Parameters
    ----------
    analysis : Analysis
    psi : dict
        id(dataset) -> psi(X) (the feature map applied to every dataset of the problem).
    anchor : dict or None
        id(dataset) -> the anchor's scores (:func:`anchor_of`).
    bounds : ndarray, optional
    kernel : str, optional
        The prefix of w's names when w lives in a kernel's psi space (``psi``: ``w[psi0]``...;
        :attr:`~ratecons.reductions.kernelize.FeatureMap.column_prefix`); default ``psi`` for
        a kernel model, the features' names for a linear one.
    name : str
        The program's name (the MPS NAME line).
    """
    check_representable(analysis)
    if bounds is None:
        bounds = np.array([row.bound for row in analysis.constraints])
    kernel = ("psi" if analysis.kernel else None) if kernel is None else kernel
    builder = MatrixBuilder(analysis, psi, anchor, kernel)
    objective = Linear()
    builder.regularizer(objective)  # abs_w next to w and b
    objective.constant = analysis.objective.constant
    builder.row(analysis.objective, objective, objective=True)
    constraint_rows = []
    for row, bound in zip(analysis.constraints, bounds):
        acc = builder.row(row)
        r = builder.add_rows([row.name], -np.inf, float(bound) - acc.constant)
        cols, vals = acc.arrays()
        builder.entries(np.full(cols.size, r[0]), cols, vals)
        constraint_rows.append(int(r[0]))
    n, m = builder.n_cols, builder.n_rows
    c = np.zeros(n)
    cols, vals = objective.arrays()
    np.add.at(c, cols, vals)
    if builder.trip:
        r, cc, v = (np.concatenate(x) for x in zip(*builder.trip))
    else:  # pragma: no cover - every problem has at least w's columns and a part
        r, cc, v = np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    A = sp.csr_matrix((v, (r, cc)), shape=(m, n))
    A.sum_duplicates()
    P = None
    if builder.quad:
        qc, qv = (np.concatenate(x) for x in zip(*builder.quad))
        P = sp.csr_matrix((qv, (qc, qc)), shape=(n, n))
    col_names = mps_names([x for block in builder.col_names for x in block])
    taken: set[str] = set()
    row_names = mps_names([x for block in builder.row_names for x in block], taken)
    lp = MatrixLP(
        c=c, A=A,
        row_lower=np.concatenate(builder.row_lower) if m else np.zeros(0),
        row_upper=np.concatenate(builder.row_upper) if m else np.zeros(0),
        col_lower=np.concatenate(builder.col_lower), col_upper=np.concatenate(builder.col_upper),
        offset=objective.constant, col_names=col_names, row_names=row_names,
        name=mps_names([name])[0], P=P,
        notes={"objective": analysis.objective.name,
               "sense": "minimize (canonical); user objective = "
                        + ("file objective" if analysis.objective.sign > 0
                           else "-(file objective)"),
               "anchor": ("the convex problem itself (no ramp part to majorize)"
                          if not analysis.needs_mm
                          else "hinge relaxation" if anchor is None
                          else "MM step at an anchor")})
    return MatrixStep(lp, builder.w_cols, builder.b_col, np.array(constraint_rows, dtype=np.int64),
                      analysis.objective.sign, dict(lp.notes))
