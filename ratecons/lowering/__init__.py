"""CVXPY references of the canonical forms a pattern's solver works on, where the generic lowering
(:mod:`ratecons.reductions.to_cvxpy`) is not the same problem: Problem 3 of a rate program at a
given anchor, solved with its multipliers (:mod:`.rate_cvxpy`); and the minimax-risk LP, which is
not a score model (:mod:`.mrc_cvxpy`). Ranking at the top has no module here: its reference is
the generic chain itself, with kernel models kernelized exactly over every training point."""
