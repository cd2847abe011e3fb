"""The rate program: Problem 1 of Goh et al. (2016) as plain data.

    minimize   sum_i alpha_i^(0) s_p(D_i) + beta_i^(0) s_n(D_i) + (l2/2)||w||^2 + l1 ||w||_1
    subject to sum_i alpha_i^(j) s_p(D_i) + beta_i^(j) s_n(D_i) <= gamma^(j),  j = 1..m

with every alpha, beta >= 0. A user expression sum_i c_i s_p(D_i) + c is brought to this form
with s_p + s_n = 1: a negative c_i becomes beta_i = -c_i and adds c_i to the constant. The
constants are recorded (``constant``), so the user's value of row j is
``constant[j] + sum_i alpha[j, i] s_p(D_i) + beta[j, i] s_n(D_i)``; for a maximized objective
the program minimizes the negated expression and ``objective_sign`` is -1.

Each D_i (a :class:`RateBlock`) is a set of rows of one feature matrix with weights summing to 1
(1/|D_i| each for unweighted data), so s_p(D_i) = sum_x weight_x 1(<w,x> - b > 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import Features

__all__ = ["TIE_TOL", "RateBlock", "RateProgram", "RateRow", "hinge_masks", "hinge_ties",
           "program_of_rows", "weighted_sum"]


def weighted_sum(weights: np.ndarray, values: np.ndarray) -> float:
    """sum_x weights_x values_x without BLAS: a threaded OpenBLAS ``ddot`` (what ``@`` calls
    for two 1-D arrays) took ~8 ms instead of ~0.01 ms for 26k entries on a loaded 2-core
    machine, which made evaluating the rates of Adult cost more than a pass over its rows."""
    return float(np.einsum("i,i->", weights, values))


def hinge_masks(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which examples take the hinge in the bounds of eq. (4) of Goh et al. at anchor scores z'.

    Returns ``(upper, lower)`` boolean masks: the bound u+ on sigma(z) is the hinge
    max(0, 1/2 + z) where ``upper`` (z' <= 1/2) and the constant 1 elsewhere; the bound u- on
    1 - sigma(z) is max(0, 1/2 - z) where ``lower`` (z' >= -1/2) and 1 elsewhere. Either is
    an upper bound of the ramp everywhere; these are the ones tight at the anchor (at the
    switch point itself, z' = 1/2 for u+ and -1/2 for u-, both are). The one rule of every
    lowering (the rate program's masks; the CVXPY, matrix and structured lowerings of
    worst-case rates).

    The rule is exact, with no tolerance around the kinks, although steps whose objective is
    piecewise linear put many examples on a kink (50-60 of 1,000 Adult rows at every MM step of
    error rate + 80% rule) and the step solvers return those scores only to 1e-5..1e-4, so that
    two chains put a few of them on either side (issue #29). Snapping the scores within a
    tolerance tol of a kink onto it was measured and not kept: for the bound to stay an upper
    bound, a snapped example off the kink by d <= tol exceeds its ramp at the anchor by d, so
    a constraint row tight at the anchor is exceeded there by up to tol times the weight of
    such examples (at tol = 1e-3 about 3e-6 on 1,000 Adult rows, above the steps' 1e-8), which
    made a step infeasible (logistic + churn + 80% rule), while the chains agreed to 1e-4 on
    all measured instances only with tol = 1e-3 (docs/composition_log.md, "Examples on the ramp's
    kinks").
    """
    return z <= 0.5, z >= -0.5


#: how close to a switch point of eq. (4) an anchor score counts as a tie (:func:`hinge_ties`):
#: the step solvers place the examples pinned there to 1e-12 (the structured interior point)
#: and 1e-9..1e-5 (CLARABEL at a relative gap of 1e-6)
TIE_TOL = 1e-6


def hinge_ties(z: np.ndarray, upper: np.ndarray, lower: np.ndarray,
               tol: float = TIE_TOL) -> np.ndarray:
    """Which examples are at a tie of :func:`hinge_masks` at anchor scores z': those with a
    u+ bound (``upper``) within ``tol`` of its switch point 1/2, or with a u- bound
    (``lower``) within ``tol`` of -1/2. There both bounds of eq. (4) are tight (to ``tol``),
    so Alg 1 may take either, and the step solver's rounding picks one. Ties recur: an example
    with a u+ bound in one row and a u- bound in another (churn against the baseline beside a
    group's positive rate) is pinned at the kink -1/2 of its u+ hinge, the switch point of its
    u- bound (issue #29; :func:`ratecons.chain_points.tied_examples`)."""
    return (upper & (np.abs(z - 0.5) <= tol)) | (lower & (np.abs(z + 0.5) <= tol))


@dataclass
class RateBlock:
    """One dataset D_i of Problem 1: rows ``index`` of ``sources[source]`` with ``weights``."""

    name: str
    source: int
    index: np.ndarray
    weights: np.ndarray

    @property
    def n(self) -> int:
        return int(self.index.size)


@dataclass
class RateProgram:
    """Problem 1 (see module docstring). Row 0 of ``alpha``/``beta``/``constant`` is the
    objective; rows 1..m the constraints, whose bounds are ``gamma`` (length m)."""

    sources: list[Features]
    source_names: list[str]
    blocks: list[RateBlock]
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    constant: np.ndarray
    row_names: list[str]
    objective_sign: float = 1.0
    l2: float = 0.0
    l1: float = 0.0
    fit_intercept: bool = True
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ sizes
    @property
    def k(self) -> int:
        """Number of datasets D_i."""
        return len(self.blocks)

    @property
    def m(self) -> int:
        """Number of constraints."""
        return int(self.gamma.size)

    @property
    def d(self) -> int:
        return int(self.sources[0].shape[1])

    @property
    def n_total(self) -> int:
        """n = sum_i |D_i| (examples in several D_i count once per D_i), as in App. F.1."""
        return int(sum(b.n for b in self.blocks))

    @property
    def is_lp(self) -> bool:
        """The hinge relaxation and the Problem-3 bounds are LPs when there is no l2 term."""
        return self.l2 == 0.0

    # ------------------------------------------------------------------ evaluation
    def block_scores(self, w: np.ndarray, b: float) -> list[np.ndarray]:
        """z = <w, x> - b on every block (computed once per source)."""
        per_source = [np.asarray(X @ w).ravel() - b for X in self.sources]
        return [per_source[blk.source][blk.index] for blk in self.blocks]

    def rates(self, w: np.ndarray, b: float, kind: str = "indicator") -> np.ndarray:
        """Positive rates of every block, shape (k,): indicator s_p (eq. 1), ramp r_p (eq. 3),
        or hinge max(0, 1/2 + z) (its convex upper bound)."""
        return self.rates_at_scores(self.block_scores(w, b), kind)

    def rates_at_scores(self, scores: list[np.ndarray], kind: str = "indicator") -> np.ndarray:
        """:meth:`rates` at the scores z of every block (:meth:`block_scores`), so that one
        product X w serves several kinds of rates and the bound masks of one point."""
        out = np.empty(self.k)
        for i, (blk, z) in enumerate(zip(self.blocks, scores)):
            if kind == "indicator":
                v = (z > 0).astype(np.float64)
            elif kind == "ramp":
                v = np.clip(0.5 + z, 0.0, 1.0)
            else:
                raise ValueError(kind)
            out[i] = weighted_sum(blk.weights, v)
        return out

    def row_values(self, w: np.ndarray, b: float, kind: str = "indicator") -> np.ndarray:
        """Value of every row in canonical form: alpha @ s_p + beta @ s_n, shape (m+1,)."""
        return self.rows_at_scores(self.block_scores(w, b), kind)

    def rows_at_scores(self, scores: list[np.ndarray], kind: str = "indicator") -> np.ndarray:
        """:meth:`row_values` at the scores z of every block (:meth:`block_scores`)."""
        sp_ = self.rates_at_scores(scores, kind)
        return self.alpha @ sp_ + self.beta @ (1.0 - sp_)

    def bound_masks(
        self, w_anchor: np.ndarray | None = None, b_anchor: float = 0.0
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Which examples use the hinge in the convex upper bounds of eq. (4) at an anchor.

        Returns, per block, ``(hinge_p, hinge_n)`` boolean masks: the bound on sigma(z) is the
        hinge max(0, 1/2 + z) where z' = <w',x> - b' <= 1/2 and the constant 1 elsewhere; the
        bound on 1 - sigma(z) is max(0, 1/2 - z) where z' >= -1/2 and 1 elsewhere. Without an
        anchor every bound is the hinge: the *hinge relaxation* of Problem 2.
        """
        if w_anchor is None:
            return [(np.ones(blk.n, bool), np.ones(blk.n, bool)) for blk in self.blocks]
        return self.masks_at_block_scores(self.block_scores(w_anchor, b_anchor))

    def masks_at_scores(self, scores: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`bound_masks` at an anchor given by its scores z' on every source (one
        array per entry of ``sources``) instead of (w', b')."""
        return self.masks_at_block_scores([scores[blk.source][blk.index]
                                           for blk in self.blocks])

    @staticmethod
    def masks_at_block_scores(scores: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`bound_masks` at an anchor given by its scores z' on every block
        (:meth:`block_scores`)."""
        return [hinge_masks(z) for z in scores]

    def bound_sides(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per source, which examples have a u+ bound of eq. (4) (a block with alpha > 0) and
        which a u- bound (beta > 0) in some row: the input of :func:`hinge_ties`."""
        sides = [(np.zeros(X.shape[0], dtype=bool), np.zeros(X.shape[0], dtype=bool))
                 for X in self.sources]
        upper, lower = np.any(self.alpha != 0.0, axis=0), np.any(self.beta != 0.0, axis=0)
        for i, blk in enumerate(self.blocks):
            sides[blk.source][0][blk.index] |= upper[i]
            sides[blk.source][1][blk.index] |= lower[i]
        return sides

    def bound_row_values(
        self, w: np.ndarray, b: float, masks: list[tuple[np.ndarray, np.ndarray]]
    ) -> np.ndarray:
        """Rows of Problem 3 (eq. 5) at (w, b) for the bounds selected by ``masks``."""
        up = np.empty(self.k)
        un = np.empty(self.k)
        for i, (blk, z, (mp, mn)) in enumerate(zip(self.blocks, self.block_scores(w, b), masks)):
            up[i] = weighted_sum(blk.weights, np.where(mp, np.maximum(0.0, 0.5 + z), 1.0))
            un[i] = weighted_sum(blk.weights, np.where(mn, np.maximum(0.0, 0.5 - z), 1.0))
        return self.alpha @ up + self.beta @ un

    def to_user(self, canonical_objective: float) -> float:
        """A canonical (minimized) objective value in the user's sense: E + reg minimized,
        E - reg maximized (the one inversion of the rewrite to Problem 1)."""
        return self.objective_sign * (canonical_objective + self.constant[0])

    def regularizer(self, w: np.ndarray) -> float:
        return 0.5 * self.l2 * float(w @ w) + self.l1 * float(np.abs(w).sum())

    def objective(self, w: np.ndarray, b: float, kind: str = "ramp") -> float:
        """Canonical objective (row 0 plus regularizer), minimized by every solver."""
        return float(self.row_values(w, b, kind)[0]) + self.regularizer(w)

    def violations(self, w: np.ndarray, b: float, kind: str = "ramp") -> np.ndarray:
        """max(0, row_j - gamma_j) for j = 1..m."""
        return np.maximum(0.0, self.row_values(w, b, kind)[1:] - self.gamma)

    # ------------------------------------------------------------------ display
    def summary(self) -> str:
        nnz = sum(X.nnz if sp.issparse(X) else X.size for X in self.sources)
        return (
            f"rate program (Problem 1): k={self.k} datasets, m={self.m} constraints, "
            f"d={self.d} features, n={self.n_total} example-terms, "
            f"{'sparse' if any(sp.issparse(X) for X in self.sources) else 'dense'} "
            f"({nnz} stored feature values), l2={self.l2:g}, l1={self.l1:g}"
        )

    def describe(self) -> str:
        """The coefficient table of Problem 1, one column per dataset D_i."""
        lines = [self.summary(), ""]
        lines.append("datasets:")
        for i, blk in enumerate(self.blocks):
            lines.append(f"  D{i + 1}: {blk.name} (|D|={blk.n})")
        head = f"{'row':<4}{'':>12}" + "".join(f"{'D' + str(i + 1):>12}" for i in range(self.k))
        lines += ["", head + f"{'bound':>12}{'constant':>12}"]
        for j in range(self.m + 1):
            label = "obj" if j == 0 else f"c{j}"
            bound = "" if j == 0 else f"{self.gamma[j - 1]:12.6g}"
            for coef, sym in ((self.alpha, "alpha (s_p)"), (self.beta, "beta (s_n)")):
                cells = "".join(f"{coef[j, i]:12.6g}" for i in range(self.k))
                const = f"{self.constant[j]:12.6g}" if sym.startswith("alpha") else ""
                tail = bound if sym.startswith("alpha") else ""
                lines.append(f"{label:<4}{sym:>12}{cells}{tail:>12}{const}")
                label = ""
            lines.append(f"     = {self.row_names[j]}")
        if self.objective_sign < 0:
            lines.append("(the objective is maximized: row 0 holds its negation)")
        lines += self.notes
        return "\n".join(lines)


#: one row of Problem 1 before the s_p + s_n = 1 rewrite: ``(terms, constant, bound)`` for
#: ``constant + sum coef s_p(subset) <= bound`` (row 0 is minimized; its bound is ignored);
#: ``terms`` maps a key to ``(subset, coef)``, the subset having ``data``, ``index``,
#: ``weights`` and ``name`` (a :class:`ratecons.rates.Subset`)
RateRow = tuple[Mapping[Any, tuple[Any, float]], float, float]


def program_of_rows(rows: Sequence[RateRow], features: Callable[[Any], Features],
                    row_names: list[str], **options: Any) -> RateProgram:
    """Problem 1 of rows written over positive rates (module docstring).

    Every distinct subset becomes a block D_i over the feature matrix ``features(data)`` of its
    dataset; a negative coefficient c of s_p(D_i) becomes beta_i = -c and adds c to the row's
    constant (s_p + s_n = 1), so that alpha, beta >= 0; gamma_j = bound_j - constant_j.
    ``options`` are the remaining fields of :class:`RateProgram` (``objective_sign``, ``l2``,
    ``l1``, ``fit_intercept``, ``notes``).
    """
    sources: list[Features] = []
    source_names: list[str] = []
    source_pos: dict[int, int] = {}
    blocks: list[RateBlock] = []
    block_pos: dict[Any, int] = {}
    for terms, _, _ in rows:
        for key, (subset, _) in terms.items():
            if key in block_pos:
                continue
            data = subset.data
            if id(data) not in source_pos:
                source_pos[id(data)] = len(sources)
                sources.append(features(data))
                source_names.append(data.name)
            block_pos[key] = len(blocks)
            blocks.append(RateBlock(subset.name, source_pos[id(data)], subset.index,
                                    subset.weights))
    k, m = len(blocks), len(rows) - 1
    alpha, beta = np.zeros((m + 1, k)), np.zeros((m + 1, k))
    constant, gamma = np.zeros(m + 1), np.zeros(m)
    for j, (terms, const, bound) in enumerate(rows):
        for key, (_, c) in terms.items():
            i = block_pos[key]
            if c > 0:
                alpha[j, i] += c
            else:  # c s_p = c - c s_n with -c > 0  (s_p + s_n = 1)
                beta[j, i] -= c
                const += c
        constant[j] = const
        if j > 0:
            gamma[j - 1] = bound - const
    return RateProgram(sources=sources, source_names=source_names, blocks=blocks, alpha=alpha,
                       beta=beta, gamma=gamma, constant=constant, row_names=row_names,
                       **options)
