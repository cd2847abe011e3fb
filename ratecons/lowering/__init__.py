"""CVXPY references of the canonical forms a pattern's solver works on, where the generic lowering
(:mod:`ratecons.reductions.to_cvxpy`) is not the same problem: the exact kernel dual (7)/(10)
of ranking at the top over all n training points, which the generic chain replaces by a Nystrom
map above a few hundred points (:mod:`.top_cvxpy`)."""
