"""Lower one step of the chain to the structured form of :mod:`ratecons.solvers.structured`.

The same rows as the CVXPY lowering (:mod:`ratecons.reductions.to_cvxpy`), as plain data over
one stacked feature matrix of the examples the step uses:

- the rate parts of every row are folded exactly as there (Problem 1 of the rows,
  :func:`~ratecons.canonical.rate_program.program_of_rows`; the bounds of eq. 4 of Goh et al. at
  the anchor, or the hinge everywhere without one; coefficients summed per example,
  :func:`~ratecons.canonical.rate_fold.fold_bound`, eqs 13-15): the hinge pieces
  max(0, 1/2 + z) and max(0, 1/2 - z);
- a mean loss is a hinge piece max(0, 1 - y z) per example (hinge) or a smooth piece
  (logistic, squared), weighted by the subset's weights.

Lowering is by table (:data:`LOWERINGS`, term type -> function): a term without an entry is
refused by name with :class:`~ratecons.errors.NotLinearError`, never passed over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..canonical.rate_fold import fold_bound
from ..canonical.rate_program import program_of_rows
from ..errors import NotLinearError
from ..expr.analysis import Analysis
from ..expr.mean_loss import MeanLoss
from ..rates import RateExpr
from ..scans import Rows
from ..solvers.structured import SMOOTH_LOSSES, SmoothPieces, StructuredForm

__all__ = ["LOWERINGS", "lower_structured", "structured_support"]


@dataclass
class _Pieces:
    """The pieces of a step while it is being lowered, over (dataset id, row) examples."""

    m: int
    hinge: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list)  # (dataset id, rows, slope, offset, coef (m+1, k))
    smooth: dict[str, list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = field(
        default_factory=dict)  # loss -> [(dataset id, rows, label, coef (m+1, l))]

    def row_coef(self, j: int, values: np.ndarray) -> np.ndarray:
        """(m+1, len(values)) with ``values`` on row j."""
        coef = np.zeros((self.m + 1, values.size))
        coef[j] = values
        return coef


def _mean_loss(pieces: _Pieces, j: int, coef: float, part: MeanLoss) -> None:
    s = part.subset
    label = part.signed_labels()
    weights = coef * s.weights
    if part.loss == "hinge":
        pieces.hinge.append((id(s.data), s.index, -label, np.ones(s.n),
                             pieces.row_coef(j, weights)))
    else:
        pieces.smooth.setdefault(part.loss, []).append(
            (id(s.data), s.index, label, pieces.row_coef(j, weights)))


#: term type -> its lowering ``(pieces, row j, coefficient, term) -> None``
LOWERINGS: dict[type, Callable[[_Pieces, int, float, Any], None]] = {MeanLoss: _mean_loss}


def structured_support(analysis: Analysis) -> str | None:
    """None when every part of ``analysis`` has a structured lowering, else why not."""
    for row in analysis.rows:
        for _, part in row.parts:
            if isinstance(part, RateExpr):
                continue
            if type(part) not in LOWERINGS:
                return (f"the structured step solver has no lowering for {part.name} "
                        f"({type(part).__name__}); it takes rates, mean losses (hinge, "
                        f"{', '.join(SMOOTH_LOSSES)}), l1 and l2")
    return None


def _fold_rates(analysis: Analysis, psi: dict[int, Any], anchor: Any,
                pieces: _Pieces) -> np.ndarray:
    """Add the folded rate pieces; return the rates' constants per row."""
    rows = analysis.rate_rows()
    if not any(terms for terms, _, _ in rows):
        return np.zeros(pieces.m + 1)
    sources: list[Any] = []

    def features(data: Any) -> Any:
        sources.append(data)
        return psi[id(data)]

    program = program_of_rows(rows, features, [row.name for row in analysis.rows])
    masks = (program.bound_masks() if anchor is None
             else program.masks_at_scores([anchor[id(data)] for data in sources]))
    bound = fold_bound(program, masks)
    design = bound.design
    for sign, coef in ((+1.0, bound.A), (-1.0, bound.B)):
        used = np.flatnonzero(np.any(coef != 0, axis=0))
        for s, data in enumerate(sources):
            at = used[design.source[used] == s]
            if at.size:
                pieces.hinge.append((id(data), design.row[at], np.full(at.size, sign),
                                     np.full(at.size, 0.5), coef[:, at]))
    return program.constant + bound.const


def lower_structured(analysis: Analysis, psi: dict[int, Any],
                     anchor: dict[int, np.ndarray] | None, bounds: np.ndarray
                     ) -> StructuredForm:
    """The step at ``anchor`` (None: the hinge relaxation) with row bounds ``bounds``."""
    reason = structured_support(analysis)
    if reason is not None:
        raise NotLinearError(reason + ". Use method='cvxpy' for this problem.")
    m = len(analysis.constraints)
    pieces = _Pieces(m)
    constant = _fold_rates(analysis, psi, anchor, pieces)
    for j, row in enumerate(analysis.rows):
        constant[j] += row.constant
        for coef, part in row.parts:
            if not isinstance(part, RateExpr):
                LOWERINGS[type(part)](pieces, j, coef, part)
    # stack the rows each dataset contributes, once each
    entries = [(key, rows) for key, rows, *_ in pieces.hinge]
    entries += [(key, rows) for group in pieces.smooth.values() for key, rows, *_ in group]
    used: dict[int, np.ndarray] = {}
    for key, rows in entries:
        used[key] = np.union1d(used.get(key, np.zeros(0, np.int64)), rows)
    offsets, blocks, start = {}, [], 0
    for key, rows in used.items():
        offsets[key] = start
        start += rows.size
        blocks.append(psi[key][rows])
    sparse = any(sp.issparse(block) for block in blocks)
    if not blocks:
        P: Any = np.zeros((0, next(iter(psi.values())).shape[1]))
    elif sparse:
        P = sp.vstack([sp.csr_matrix(block) for block in blocks], format="csr")
    else:
        P = np.vstack([np.asarray(block) for block in blocks])

    def position(key: int, rows: np.ndarray) -> np.ndarray:
        return offsets[key] + np.searchsorted(used[key], rows)

    def joined(items: list[np.ndarray], width: int = 1) -> np.ndarray:
        return np.concatenate(items, axis=-1) if items else np.zeros((m + 1, 0) if width > 1
                                                                     else 0)

    hinge_index = joined([position(k, r) for k, r, *_ in pieces.hinge]).astype(np.int64)
    smooth = [SmoothPieces(loss, joined([position(k, r) for k, r, *_ in group]).astype(np.int64),
                           joined([lab for *_, lab, _ in group]),
                           joined([c for *_, c in group], 2))
              for loss, group in pieces.smooth.items()]
    model = analysis.model
    return StructuredForm(
        rows=Rows(P), fit_intercept=bool(getattr(model, "fit_intercept", True)),
        l2=float(getattr(model, "l2", 0.0)), l1=float(getattr(model, "l1", 0.0)),
        hinge_index=hinge_index,
        hinge_slope=joined([s for _, _, s, _, _ in pieces.hinge]),
        hinge_offset=joined([o for _, _, _, o, _ in pieces.hinge]),
        hinge_coef=joined([c for *_, c in pieces.hinge], 2),
        smooth=smooth, constant=constant, bounds=np.asarray(bounds, dtype=np.float64),
        names=[row.name for row in analysis.rows])
