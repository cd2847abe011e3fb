"""Numbers that compare a result with its reference, shared by every pattern's ``compare``.

:func:`ratecons.verify` reports them side by side; one definition keeps the patterns' rows
comparable (the same ``objective_rel_gap`` for every pattern).
"""

from __future__ import annotations

import math

__all__ = ["objective_rel_gap"]


def objective_rel_gap(value: float, reference: float) -> float | None:
    """|value - reference| / max(1, |reference|): the objective gap ``verify`` checks against
    its ``rtol``; None when either objective is not finite (no solution to compare)."""
    if not (math.isfinite(value) and math.isfinite(reference)):
        return None
    return abs(value - reference) / max(1.0, abs(reference))
