"""Plain margin losses averaged over a dataset: convex terms to minimize or bound above.

``rc.mean_loss(D, loss)`` is (1 / |D|) sum_{x in D} weight_x l(m_x) with the margin
m_x = y~_x f(x), y~ = 2y - 1 in {-1, +1} and f(x) = <w, psi(x)> - b. The losses are those of
:data:`ratecons.loss_functions.MARGIN_LOSSES` (the one table of losses): logistic
log(1 + exp(-m)), hinge max(0, 1 - m) and squared (1 - m)^2. Their exact value and their
surrogate are the same function, so the report shows one number in both columns.

A mean loss may carry a score scale t > 0 (``scale``, default 1): (1 / |D|) sum weight_x
l(t m_x), the loss of the model with scores t f. The user never writes one; the chain's
reduction to a model at its loss's scale (:mod:`ratecons.reductions.score_scale`) does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np

from ..data import Dataset, Subset, as_subset
from ..errors import parameter_error
from ..loss_functions import MARGIN_LOSSES, margin_loss
from .atom import Term

__all__ = ["MeanLoss", "mean_loss", "hinge_loss", "logistic_loss"]


class MeanLoss(Term):
    """The weighted mean of a margin loss over a labelled subset (module docstring)."""

    curvature = "convex"
    kind = "loss"
    under_score_scale = "loss"

    def __init__(self, subset: Subset, loss: str, owner: str = "mean_loss",
                 scale: float = 1.0) -> None:
        if loss not in MARGIN_LOSSES:
            raise parameter_error("loss", owner, f"one of {tuple(MARGIN_LOSSES)}", loss)
        subset.data.require_labels(owner, binary=True)
        self.subset = subset.require_nonempty(owner)
        self.loss = loss
        self.scale = float(scale)

    @property
    def name(self) -> str:
        scale = "" if self.scale == 1.0 else f", scale={self.scale:.6g}"
        return f"mean_loss({self.subset.name}, {self.loss!r}{scale})"

    def scaled(self, t: float) -> MeanLoss:
        """The same mean loss at t times its score scale (module docstring)."""
        return MeanLoss(self.subset, self.loss, scale=t * self.scale)

    @property
    def datasets(self) -> list[Dataset]:
        return [self.subset.data]

    @property
    def range(self) -> tuple[float, float]:
        """Every margin loss is >= 0: a bound below 0 is refused when the constraint is
        built."""
        return 0.0, np.inf

    def signed_labels(self) -> np.ndarray:
        """y~ in {-1, +1} on the subset's rows."""
        return 2.0 * self.subset.y.astype(np.float64) - 1.0

    def margin_factors(self) -> np.ndarray:
        """t y~ on the subset's rows: the margins are t y~ f(x) (module docstring)."""
        return self.scale * self.signed_labels()

    def value(self, scorer: Any) -> float:
        z = scorer.decision_function(self.subset.data.X)[self.subset.index]
        values, _ = margin_loss(self.loss, self.margin_factors() * z)
        return float(self.subset.weights @ values)

    surrogate_value = value

    def value_at_constant(self, score: float) -> float:
        """The value when every example scores ``score`` (w = 0): W+ l(score) + W- l(-score),
        with W+ and W- the subset's weight on its positives and its negatives."""
        (at_positive, at_negative), _ = margin_loss(
            self.loss, self.scale * np.array([score, -score]))
        return self.positive_weight * at_positive + (1.0 - self.positive_weight) * at_negative

    @cached_property
    def positive_weight(self) -> float:
        """W+: the subset's (normalized) weight on its positives."""
        return float(self.subset.weights @ self.subset.y.astype(np.float64))

    def rebind(self, rebind: Callable[[Subset], Subset]) -> MeanLoss:
        return MeanLoss(rebind(self.subset), self.loss, scale=self.scale)


def mean_loss(data: Dataset | Subset, loss: str = "logistic") -> MeanLoss:
    """The mean margin loss over ``data`` (a convex term; needs binary labels).

    Parameters
    ----------
    data : Dataset or Subset
    loss : {"logistic", "hinge", "squared"}

    Examples
    --------
    >>> problem = rc.Problem(minimize=rc.mean_loss(train, "logistic"),
    ...                      subject_to=[rc.recall(train) >= 0.8])
    """
    return MeanLoss(as_subset(data, "mean_loss"), loss)


def hinge_loss(data: Dataset | Subset) -> MeanLoss:
    """Mean hinge loss max(0, 1 - y~ f(x)) over ``data``."""
    return MeanLoss(as_subset(data, "hinge_loss"), "hinge", "hinge_loss")


def logistic_loss(data: Dataset | Subset) -> MeanLoss:
    """Mean logistic loss log(1 + exp(-y~ f(x))) over ``data``."""
    return MeanLoss(as_subset(data, "logistic_loss"), "logistic", "logistic_loss")
