"""Lower one step of the chain to the structured form of :mod:`ratecons.solvers.structured`.

The same rows as the CVXPY lowering (:mod:`ratecons.reductions.to_cvxpy`), as plain data over
one stacked feature matrix of the examples the step uses:

- the rate parts of every row are folded exactly as there (Problem 1 of the rows,
  :func:`~ratecons.canonical.rate_program.program_of_rows`; the bounds of eq. 4 of Goh et al. at
  the anchor, or the hinge everywhere without one; coefficients summed per example,
  :func:`~ratecons.canonical.rate_fold.fold_bound`, eqs 13-15): the hinge pieces
  max(0, 1/2 + z) and max(0, 1/2 - z);
- a mean loss is a hinge piece max(0, 1 - y z) per example (hinge) or a smooth piece
  (logistic, squared), weighted by the subset's weights;
- TPR@K and TPR@tau with the hinge surrogate (Macha et al., problems (3), (6) and (9)): the
  threshold t is a free variable (0 when the objective's ranking pins it, as in the CVXPY
  lowering), the loss (1/n+) sum max(0, 1 + t - z_i) enters the row with the term's
  coefficient, and the threshold's own constraint is a row of the step that the user did not
  write: for TopPushK, sum_largest(z, K)/K <= t as lambda + (1/K) sum max(0, z_j - lambda) <= t
  with a second free variable lambda; for Pat&Mat, (1/n~) sum_j max(0, 1 + theta (z_j - t))
  <= tau (the sum <= n~ tau of the CVXPY lowering, as a mean);
- a chi-square or KL robust loss minimized in the objective (Ghosh & Squillante, eq. 5 in dual
  form, :mod:`ratecons.solvers.structured_robust`): two free variables (eta, lam) and per
  example the perspective of phi* at its margin loss, a smooth piece (logistic, squared) or the
  epigraph of a hinge piece max(0, 1 - y z) that enters no row;
- a worst-case rate over a chi-square or KL ball (:mod:`ratecons.expr.robust`), in any row:
  c + sigma sup_q sum_x q_x sigma g_x with every indicator replaced by its bound of eq. 4 of
  Goh et al. at the anchor, as the CVXPY lowering writes it (``cvxpy_canon.worst_case`` and,
  for a rate conditional on a strict subset of the ball's support bounded alone,
  ``cvxpy_canon.conditional_bound``): per example of the ball the loss
  l_x = c_x + |h_x| u_x, with u_x the epigraph of a hinge piece max(0, 1/2 +- z) (a piece that
  enters no row) or the constant 1 where the anchor's score is past the ramp, and the same
  dual form with (eta, lam) two free variables of the row.

Lowering is by table (:data:`LOWERINGS`, term type -> function): a term without an entry is
refused by name with :class:`~ratecons.errors.NotLinearError`, never passed over.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..canonical.rate_fold import fold_bound
from ..canonical.rate_program import hinge_masks, program_of_rows
from ..errors import NotLinearError
from ..expr.analysis import Analysis
from ..expr.mean_loss import MeanLoss
from ..expr.ranking import RankingObjective, TPRAtQuantile, TPRAtTop
from ..expr.robust import WorstCaseRate
from ..expr.robust_loss import RobustLoss
from ..numerics.phi import CHI2, KL
from ..rates import RateExpr
from ..scans import Rows, stack_rows, take_rows
from ..solvers.margin_curvature import SMOOTH_LOSSES
from ..solvers.structured_form import SmoothPieces, StructuredForm
from ..solvers.structured_robust import RobustPieces

__all__ = ["LOWERINGS", "Lowering", "lower_structured", "structured_support"]

#: row coefficients of a group of pieces: row -> per-piece values (or one value for all)
RowCoef = dict[int, Any]


@dataclass
class _Group:
    """Pieces over rows ``rows`` of the dataset with id ``key``."""

    key: int
    rows: np.ndarray
    coef: RowCoef
    slope: np.ndarray | None = None  # hinge pieces
    offset: np.ndarray | None = None
    extra: dict[int, float] = field(default_factory=dict)  # free variable -> G entry
    label: np.ndarray | None = None  # smooth pieces


@dataclass
class _Robust:
    """A support function of a ball in row ``row`` over a group's losses (module docstring):
    ``factor`` / ``offset`` make a hinge group's losses offset + factor u, ``fixed`` are the
    constant losses of the ball's examples with no piece."""

    phi: str
    rho: float
    coef: float
    row: int
    loss: str
    group: _Group | None
    eta: int
    lam: int
    factor: np.ndarray | None = None
    offset: np.ndarray | None = None
    fixed: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class _Pieces:
    """The pieces of a step while it is being lowered (rows 0..m are the user's; internal
    rows, the ranking terms' own constraints, follow)."""

    m: int
    constant: np.ndarray
    hinge: list[_Group] = field(default_factory=list)
    smooth: dict[str, list[_Group]] = field(default_factory=dict)
    internal_bounds: list[float] = field(default_factory=list)
    row_extra: list[tuple[int, int, float]] = field(default_factory=list)
    extra: int = 0
    robust: list[_Robust] = field(default_factory=list)
    anchor: dict[int, np.ndarray] | None = None
    single_part: list[bool] = field(default_factory=list)  # row j has one part
    bounds: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the user rows' bounds
    row_constants: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def new_variable(self) -> int:
        self.extra += 1
        return self.extra - 1

    def new_row(self, bound: float) -> int:
        self.internal_bounds.append(float(bound))
        return self.m + len(self.internal_bounds)

    def add_hinge(self, key: int, rows: np.ndarray, slope: Any, offset: Any, coef: RowCoef,
                  extra: dict[int, float] | None = None) -> None:
        n = rows.size
        self.hinge.append(_Group(key, rows, coef, np.broadcast_to(slope, n).astype(float),
                                 np.broadcast_to(offset, n).astype(float), extra or {}))

    @property
    def total_rows(self) -> int:
        return self.m + 1 + len(self.internal_bounds)


def _mean_loss(pieces: _Pieces, j: int, coef: float, part: MeanLoss, objective: bool) -> None:
    s = part.subset
    label = part.margin_factors()  # t y~: a hinge's slope, a smooth piece's margin factor
    weights = coef * s.weights
    if part.loss == "hinge":
        pieces.add_hinge(id(s.data), s.index, -label, 1.0, {j: weights})
    else:
        pieces.smooth.setdefault(part.loss, []).append(
            _Group(id(s.data), s.index, {j: weights}, label=label))


def _folded(pieces: _Pieces, j: int, coef: float, part: RateExpr, objective: bool) -> None:
    """Rates are folded for all rows at once (:func:`_fold_rates`)."""


def _ranking_support(part: RankingObjective) -> str | None:
    if part.surrogate != "hinge":
        return (f"the structured step solver takes {part.name} with the hinge surrogate only "
                f"(got {part.surrogate!r})")
    return None


def _ranking(pieces: _Pieces, j: int, coef: float, part: RankingObjective,
             objective: bool) -> None:
    if coef > 0:  # pragma: no cover - the composition rules refuse a convex use of it
        raise NotLinearError(f"{part.name} enters a row with coefficient {coef:g} > 0")
    data = part.data
    y = np.asarray(data.y)
    among = np.arange(data.n) if part.among == "all" else np.flatnonzero(y == 0)
    positives = np.flatnonzero(y == 1)
    key = id(data)
    t = None if objective else pieces.new_variable()
    on_t = {} if t is None else {t: 1.0}
    if part.family == "toppushk":
        k = int(part.k)
        lam = pieces.new_variable()
        row = pieces.new_row(0.0)
        pieces.add_hinge(key, among, 1.0, 0.0, {row: 1.0 / k}, {lam: -1.0})
        pieces.row_extra.append((row, lam, 1.0))
        if t is not None:
            pieces.row_extra.append((row, t, -1.0))
    else:
        # the row as a mean over the n~ examples, (1/n~) sum_j max(...) <= tau: its
        # multiplier is then of the same order on a row sample as on all rows, as the rate
        # rows' are (the chain's warm start from a sample carries it; as the sum
        # sum_j max(...) <= n~ tau its multiplier was n / n_sample times too large there)
        theta = float(part.theta)
        row = pieces.new_row(float(part.tau))
        pieces.add_hinge(key, among, theta, 1.0, {row: 1.0 / among.size},
                         {} if t is None else {t: -theta})
    pieces.constant[j] += coef
    pieces.add_hinge(key, positives, -1.0, 1.0, {j: -coef / positives.size}, on_t)


def _robust_loss(pieces: _Pieces, j: int, coef: float, part: RobustLoss,
                 objective: bool) -> None:
    """coef * R (eq. 5 of Ghosh & Squillante in dual form, :mod:`..solvers.structured_robust`)
    over the ball's margin losses, with its (eta, lam) two new free variables."""
    if j != 0 or coef <= 0:  # pragma: no cover - structured_support refuses these first
        raise NotLinearError(f"{part.name} enters row {j} with coefficient {coef:g}; the "
                             "structured step takes robust losses minimized in the objective")
    s = part.ball.support
    label = part.margin_factors()  # t y~ (a hinge's slope)
    group = _Group(id(s.data), s.index, {}, label=label)
    if part.loss == "hinge":
        group.slope, group.offset = -label, np.ones(s.n)
        pieces.hinge.append(group)
    eta, lam = pieces.new_variable(), pieces.new_variable()
    pieces.robust.append(_Robust(part.ball.phi.name, part.ball.rho, coef, j, part.loss, group,
                                 eta, lam))


def _ball_support(part: Any) -> str | None:
    if not any(part.ball.phi is phi for phi in (CHI2, KL)):
        return (f"the structured step solver takes the chi-square and KL balls only (got "
                f"phi={part.ball.phi.name!r} in {part.name})")
    return None


def _worst_case(pieces: _Pieces, j: int, coef: float, part: WorstCaseRate,
                objective: bool) -> None:
    """coef * worst_case(r, U) in row j (module docstring): the losses l_x = c_x + |h_x| u_x
    of ``indicator_losses`` (eq. 4 of Goh et al. at the anchor) under the support function of
    U in dual form, with two new free variables (eta, lam)."""
    sigma = 1.0 if coef > 0 else -1.0
    if part.conditional:
        if j == 0 or pieces.single_part[j] is not True:
            raise part.conditional_error("minimized, maximized or beside other terms, such a "
                                         "ratio has no exact convex form")
        # bound + |coef| S(l) <= bound, l of bound_losses at k (cvxpy_canon.conditional_bound)
        bound = float(pieces.bounds[j - 1])
        const, h = part.bound_losses(sigma, (bound - pieces.row_constants[j]) / coef)
        pieces.constant[j] += bound - pieces.row_constants[j]
    else:
        const, h = np.zeros(part.ball.support.n), sigma * part.coefficients
        pieces.constant[j] += coef * part.expr.constant
    support = part.ball.support
    z0 = pieces.anchor[id(support.data)][support.index] if pieces.anchor is not None else None
    # u+ of eq. 4 where h > 0 (a hinge while the anchor's score is <= 1/2), u- where h < 0
    if z0 is None:
        on_piece = h != 0
    else:
        upper, lower = hinge_masks(z0)
        on_piece = ((h > 0) & upper) | ((h < 0) & lower)
    base = const + np.minimum(h, 0.0)  # h u+ where h > 0, h - h u- = h + |h| u- where h < 0
    at = np.flatnonzero(on_piece)
    group = None
    if at.size:
        pieces.add_hinge(id(support.data), support.index[at], np.sign(h[at]), 0.5, {})
        group = pieces.hinge[-1]
    fixed = np.delete(base + np.abs(h), at)  # the bound is the constant 1 there
    eta, lam = pieces.new_variable(), pieces.new_variable()
    pieces.robust.append(_Robust(part.ball.phi.name, part.ball.rho, abs(coef), j, "hinge",
                                 group, eta, lam, np.abs(h[at]), base[at], fixed))


@dataclass(frozen=True)
class Lowering:
    """How one part type enters the structured form: ``lower(pieces, row j, coefficient,
    part, pinned threshold)`` and ``refuses(part)`` (why a part of that type cannot be
    lowered, or None)."""

    lower: Callable[[_Pieces, int, float, Any, bool], None]
    refuses: Callable[[Any], str | None] = lambda part: None
    objective_only: bool = False


#: part type -> its :class:`Lowering`
LOWERINGS: dict[type, Lowering] = {
    RateExpr: Lowering(_folded),
    MeanLoss: Lowering(_mean_loss),
    TPRAtTop: Lowering(_ranking, _ranking_support),
    TPRAtQuantile: Lowering(_ranking, _ranking_support),
    RobustLoss: Lowering(_robust_loss, _ball_support, objective_only=True),
    WorstCaseRate: Lowering(_worst_case, _ball_support),
}


def structured_support(analysis: Analysis) -> str | None:
    """None when every part of ``analysis`` has a structured lowering and its linear model is
    at most ``settings.STRUCTURED_MAX_FEATURES`` wide, else why not."""
    d = analysis.datasets[0].d if analysis.datasets else 0
    if not hasattr(analysis.model, "kernel") and d > settings.STRUCTURED_MAX_FEATURES:
        gib = 8.0 * (d + 1) ** 2 / 2**30
        return (f"the structured step solver's Newton system is dense, (d + 1) x (d + 1) = "
                f"{d + 1:,}^2 doubles ({gib:.3g} GiB a copy) for d = {d:,} features, above "
                f"its {settings.STRUCTURED_MAX_FEATURES:,}: wide data go to 'mm' (sparse "
                "SDCA) or 'cvxpy'")
    for j, row in enumerate(analysis.rows):
        for coef, part in row.parts:
            entry = LOWERINGS.get(type(part))
            if entry is None:
                return (f"the structured step solver has no lowering for {part.name} "
                        f"({type(part).__name__}); it takes rates, mean losses (hinge, "
                        f"{', '.join(SMOOTH_LOSSES)}), TPR@K and TPR@tau (hinge surrogate), "
                        "chi-square and KL robust losses in the objective and worst-case "
                        "rates, l1 and l2")
            reason = entry.refuses(part)
            if reason is not None:
                return reason
            if entry.objective_only and (j != 0 or coef <= 0):
                return (f"the structured step solver takes {part.name} only as a minimized "
                        "objective term")
    return None


def _rate_program(analysis: Analysis, psi: dict[int, Any], cache: dict[str, Any]
                  ) -> tuple[Any, list[Any]] | None:
    """The rate program of the rows over psi and its datasets in source order (None without
    rates); kept in ``cache`` for the run, so that its stacked examples
    (:func:`~ratecons.canonical.rate_fold.example_design`, cached per program) are built once,
    not at every step (1.5 s a step on 34,189 rows with 500 kernel features)."""
    if "program" not in cache:
        rows = analysis.rate_rows()
        sources: list[Any] = []

        def features(data: Any) -> Any:
            sources.append(data)
            return psi[id(data)]

        cache["program"] = (
            (program_of_rows(rows, features, [row.name for row in analysis.rows]), sources)
            if any(terms for terms, _, _ in rows) else None)
    return cache["program"]


def _fold_rates(analysis: Analysis, psi: dict[int, Any], anchor: Any,
                pieces: _Pieces, cache: dict[str, Any]) -> None:
    """Add the folded rate pieces and the rates' constants."""
    found = _rate_program(analysis, psi, cache)
    if found is None:
        return
    program, sources = found
    masks = (program.bound_masks() if anchor is None
             else program.masks_at_scores([anchor[id(data)] for data in sources]))
    bound = fold_bound(program, masks)
    design = bound.design
    for sign, coef in ((+1.0, bound.A), (-1.0, bound.B)):
        used = np.flatnonzero(np.any(coef != 0, axis=0))
        for s, data in enumerate(sources):
            at = used[design.source[used] == s]
            if at.size:
                pieces.add_hinge(id(data), design.row[at], sign, 0.5,
                                 {j: coef[j, at] for j in range(coef.shape[0])
                                  if np.any(coef[j, at])})
    pieces.constant += program.constant + bound.const


def _stack(psi: dict[int, Any], groups: list[_Group], cache: dict[str, Any]
           ) -> tuple[Rows, dict[int, int], dict[int, np.ndarray]]:
    """One feature matrix of the rows every group uses, each (dataset, row) once; the last
    step's when it used the same rows (``cache``: an MM step's rows change only where the
    anchor moved examples across a ramp's end, and the copy, with the dense copy
    :class:`~ratecons.scans.Rows` keeps of sparse features, is made once)."""
    size: dict[int, int] = {}  # rows marked per dataset (Dask row counts may be unknown)
    for g in groups:
        size[g.key] = max(size.get(g.key, 0), int(g.rows.max(initial=-1)) + 1)
    marks = {key: np.zeros(n, dtype=bool) for key, n in size.items()}
    for g in groups:
        marks[g.key][g.rows] = True
    used = {key: np.flatnonzero(mark) for key, mark in marks.items()}
    offsets, start = {}, 0
    for key, rows in used.items():
        offsets[key] = start
        start += rows.size
    last = cache.get("stacked")
    marked = {key: _row_digest(rows) for key, rows in used.items()}
    if last is not None and last[0] == marked:
        return last[1], offsets, used
    blocks = [take_rows(psi[key], rows) for key, rows in used.items()]
    stacked = Rows(stack_rows(blocks) if blocks
                   else np.zeros((0, next(iter(psi.values())).shape[1])))
    cache["stacked"] = (marked, stacked)  # the rows' digests: N integers fewer kept
    return stacked, offsets, used


def _row_digest(rows: np.ndarray) -> tuple[int, bytes]:
    """The rows a dataset gives the stacked features (int64 indices), as their count and a
    hash of them: what :func:`_stack` keeps over the steps to tell the same rows again."""
    return rows.size, hashlib.blake2b(np.ascontiguousarray(rows, dtype=np.int64).view(
        np.uint8), digest_size=20).digest()


def _coef_matrix(groups: list[_Group], total_rows: int) -> np.ndarray:
    sizes = [g.rows.size for g in groups]
    out = np.zeros((total_rows, sum(sizes)))
    start = 0
    for g, n in zip(groups, sizes, strict=True):
        for j, values in g.coef.items():
            out[j, start:start + n] = values
        start += n
    return out


def lower_structured(analysis: Analysis, psi: dict[int, Any],
                     anchor: dict[int, np.ndarray] | None, bounds: np.ndarray,
                     cache: dict[str, Any] | None = None) -> StructuredForm:
    """The step at ``anchor`` (None: the hinge relaxation) with row bounds ``bounds``.

    ``cache``: a dict the caller keeps over the steps of one run (the same ``psi``), in which
    the rate program and the last stacked feature rows are kept (:func:`_rate_program`,
    :func:`_stack`)."""
    cache = {} if cache is None else cache
    if cache.get("psi") is not psi:
        cache.clear()
        cache["psi"] = psi  # held, so that its id is not reused while cached
    reason = structured_support(analysis)
    if reason is not None:
        raise NotLinearError(reason + ". Use method='cvxpy' for this problem.")
    m = len(analysis.constraints)
    pieces = _Pieces(m, np.zeros(m + 1), anchor=anchor,
                     bounds=np.asarray(bounds, dtype=np.float64),
                     row_constants=np.array([row.constant for row in analysis.rows]),
                     single_part=[len(row.parts) == 1 for row in analysis.rows])
    _fold_rates(analysis, psi, anchor, pieces, cache)
    fit_b = bool(getattr(analysis.model, "fit_intercept", True))
    for j, row in enumerate(analysis.rows):
        pieces.constant[j] += row.constant
        for coef, part in row.parts:
            # the objective's ranking threshold is pinned at 0 when nothing else sets b
            pinned = j == 0 and fit_b and not analysis.constraints
            LOWERINGS[type(part)].lower(pieces, j, coef, part, pinned)
    smooth_groups = [g for group in pieces.smooth.values() for g in group]
    robust_smooth = [r.group for r in pieces.robust
                     if r.group is not None and r.group.slope is None]
    stacked, offsets, used = _stack(psi, pieces.hinge + smooth_groups + robust_smooth, cache)

    def position(g: _Group) -> np.ndarray:
        return offsets[g.key] + np.searchsorted(used[g.key], g.rows)

    def joined(arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(arrays) if arrays else np.zeros(0)

    total = pieces.total_rows
    hinge = pieces.hinge
    K = sum(g.rows.size for g in hinge)
    rows_, cols_, vals_ = [], [], []
    start = 0
    for g in hinge:
        for var, value in g.extra.items():
            rows_.append(np.arange(start, start + g.rows.size))
            cols_.append(np.full(g.rows.size, var))
            vals_.append(np.full(g.rows.size, value))
        start += g.rows.size
    G = sp.csr_matrix((joined(vals_), (joined(rows_).astype(np.int64),
                                       joined(cols_).astype(np.int64))),
                      shape=(K, pieces.extra))
    F = np.zeros((total, pieces.extra))
    for row, var, value in pieces.row_extra:
        F[row, var] += value
    constant = np.concatenate([pieces.constant, np.zeros(len(pieces.internal_bounds))])
    smooth = [SmoothPieces(loss, joined([position(g) for g in group]).astype(np.int64),
                           joined([g.label for g in group]), _coef_matrix(group, total))
              for loss, group in pieces.smooth.items()]
    model = analysis.model
    robust = _robust_pieces(pieces, position)
    return StructuredForm(
        rows=stacked, fit_intercept=fit_b,
        l2=float(getattr(model, "l2", 0.0)), l1=float(getattr(model, "l1", 0.0)),
        hinge_index=joined([position(g) for g in hinge]).astype(np.int64),
        hinge_slope=joined([g.slope for g in hinge]),
        hinge_offset=joined([g.offset for g in hinge]),
        hinge_coef=_coef_matrix(hinge, total),
        smooth=smooth, constant=constant,
        bounds=np.concatenate([np.asarray(bounds, dtype=np.float64), pieces.internal_bounds]),
        extra=pieces.extra, hinge_extra=G, row_extra=F, user_rows=m, robust=robust)


def _robust_pieces(pieces: _Pieces, position: Callable[[_Group], np.ndarray]
                   ) -> list[RobustPieces]:
    """The support functions' pieces: hinge ones point at their hinge pieces k, smooth ones at
    their rows of the stacked features."""
    starts = np.cumsum([0] + [g.rows.size for g in pieces.hinge])
    out = []
    for rob in pieces.robust:
        group = rob.group
        if group is None:
            index, label = np.zeros(0, np.int64), np.zeros(0)
        elif group.slope is not None:
            k = next(i for i, g in enumerate(pieces.hinge) if g is group)
            index = np.arange(starts[k], starts[k + 1])
            label = np.zeros(index.size) if group.label is None else group.label
        else:
            index, label = position(group).astype(np.int64), group.label
        out.append(RobustPieces(rob.phi, rob.rho, float(rob.coef), rob.loss, index, label,
                                rob.eta, rob.lam, rob.row, rob.factor, rob.offset, rob.fixed))
    return out
