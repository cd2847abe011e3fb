"""The model at its loss's scale: the ramp's width as a variable of the chain.

The rates of Goh et al. are scale-free as the user declares them: the indicator 1[f(x) > 0] is
the same for f and s f, s > 0. Their surrogate is not: the ramp sigma(z) = clip(1/2 + z, 0, 1)
(eq. 2) has width 1 in the units of f, so a bound on a ramp rate (churn <= 0.05 against a
deployed model) counts every example within 1/2 of the threshold as partly on the wrong side,
and can only be met by scores of large magnitude. When the objective is a loss (logistic,
hinge, squared), whose value does depend on the scale of f, the chain's fixed point then pays
for the ramp's unit width in its loss: on 2,000 Adult rows, logistic loss + churn <= 0.05 + the
80% rule ended at 0.804, and the same model scaled by 0.28 (the same predictions, so the same
exact rates) has 0.409 (docs/composition_log.md, "The churn row's scale").

This reduction makes the ramp's width t a variable. With f = t g, the problem

    minimize  L(t g) + (l2 / 2) t^2 ||w_g||^2 + l1 t ||w_g||_1
    subject to  the ramp rates of g (unit width) within their bounds

is the user's problem over f with ramps of width t: ``apply`` (:func:`scaled`) multiplies the
objective's losses' margins by t (``scaled`` of :class:`~ratecons.expr.mean_loss.MeanLoss` and
:class:`~ratecons.expr.robust_loss.RobustLoss`) and the regularizer by t^2 (l1 by t), so that
every lowering and step solver of the chain runs unchanged on g; ``invert`` is the scorer t g
with ramp width t (:meth:`ratecons.result.LinearScorer.scaled`), whose deterministic
predictions, randomized rule (App. A, probability sigma(f(x) / t)) and ramp rates are those of
g.

The chain alternates (:mod:`ratecons.chain_scale`): MM at the width t to its fixed point g,
then the exact objective minimized over s > 0 at s g (:func:`~ratecons.chain_scale.best_scale`,
convex in s for these losses; the rows are unchanged), then, when that gains more than
``settings.SCALE_MIN_GAIN`` (relative), MM again at the width t s from g, at most
``settings.SCALE_ROUNDS`` times. Each round starts where the last ended, at a lower objective,
and its MM descends from there (a round that does not end below the last kept one is not
kept), so the rounds lower the objective; they stop where g is a fixed point at the width t
and t is the best scale for g. Together the width and the model approach the deterministic
problem (the ramp tends to the indicator as its width shrinks relative to the scores) from the
paper's surrogate.

It applies where the scale is the loss's alone: the objective is mean and robust losses (a rate
objective such as the error rate is scale-free but for its regularizer, whose best width is 0),
every constraint is a rate, a ratio of rates or a worst-case rate (no loss or ranking bound,
whose surrogates have a margin of their own), and the problem has ramp parts and constraints.
On Dask data too: each candidate scale of the search is a pass over the persisted scores (a
robust loss: over the features), about 30 a round.
"""

from __future__ import annotations

from dataclasses import replace

from ..expr.analysis import Analysis

__all__ = ["applies", "scaled"]


def applies(analysis: Analysis) -> str | None:
    """Why the width of the ramp stays 1 for ``analysis`` (None: it is a variable; module
    docstring)."""
    if not analysis.constraints or not analysis.needs_mm:
        return "no constraint has a ramp"
    if not all(part.under_score_scale == "loss" for _, part in analysis.objective.parts):
        return "the objective is not a sum of mean and robust losses"
    if not all(part.under_score_scale == "ramp" for row in analysis.constraints
               for _, part in row.parts):
        return "a constraint bounds a term with a margin of its own (a loss or a ranking)"
    return None


def scaled(analysis: Analysis, t: float) -> Analysis:
    """``analysis`` over g = f / t (module docstring): the objective's losses at margin scale t
    and the regularizer (l2 / 2) t^2 ||w||^2 + l1 t ||w||_1. The constraints are unchanged."""
    if t == 1.0:
        return analysis
    objective = analysis.objective
    parts = [(coef, part.scaled(t)) for coef, part in objective.parts]
    model = analysis.model
    changes = {"l2": model.l2 * t * t}
    if hasattr(model, "l1"):
        changes["l1"] = model.l1 * t
    return replace(analysis, objective=replace(objective, parts=parts),
                   model=replace(model, **changes))
