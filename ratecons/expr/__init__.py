"""Atoms over the one score model, their sums and constraints, and the composition analysis.

See :mod:`ratecons.expr.atom` (terms, sums, constraints), :mod:`ratecons.expr.rate` (rates and
ratios), :mod:`ratecons.expr.mean_loss` (plain margin losses), :mod:`ratecons.expr.ranking`
(TPR@K and TPR@tau), :mod:`ratecons.expr.ball` (phi-divergence balls),
:mod:`ratecons.expr.robust_loss` (the robust loss over a ball), :mod:`ratecons.expr.robust`
(worst-case rates over uncertainty sets) and :mod:`ratecons.expr.analysis` (the curvature
rules, checked before anything is solved).
"""
