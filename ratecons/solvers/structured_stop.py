"""When the structured interior point (:mod:`.structured`) stops short of its tolerance: a
run whose gap and residuals stopped falling (:func:`stalled`), or a certified run that found
no better iterate for a few iterations (:data:`CERTIFIED_STALL`); and when a run at its
iteration limit goes on (:func:`converging`)."""

from __future__ import annotations

__all__ = ["BLOCKED_MESSAGE", "CERTIFIED_STALL", "EXTRA_ITERATIONS", "STALL_AFTER", "STALL_WINDOW",
           "converging", "stalled", "warm_blocked"]

#: the loop stops (``numerical_error``) when none of the gap and the residuals fell below
#: STALL_FACTOR times its best within the last STALL_WINDOW iterations (:func:`stalled`): on
#: infeasible steps (tightened by the chain's repairs) 100 iterations were spent for nothing
STALL_WINDOW = 12
STALL_FACTOR = 0.5
#: ... checked from this iteration on: a warm start begins near the optimum's primal point and
#: its merit first rises while the iterates centre (checked from the start, the rule ended
#: warm-started hinge-loss steps on 200,000 rows after 13 iterations)
STALL_AFTER = 24
#: once the best iterate is certified (merit <= :data:`.structured_answer.CERTIFIED_TOL`), this many
#: iterations without a better one end the loop: at the degenerate optimum of a TPR@K step on
#: the whole Adult split (every negative tied at the threshold) the multipliers' directions grew
#: without bound below a gap of 4e-8 and the dual residual jumped to 0.3; the 12 iterations of
#: :data:`STALL_WINDOW` after the best were spent for nothing
CERTIFIED_STALL = 3


def stalled(parts: list[tuple[float, float, float]]) -> bool:
    """Whether none of the gap and the residuals fell below :data:`STALL_FACTOR` times its best
    before the last :data:`STALL_WINDOW` iterations (from :data:`STALL_AFTER` on), each alone:
    a cold elastic step on the Adult split held its gap at 2 while the primal residual fell
    from 0.9 to 0.08 in 12 iterations; as one merit (their largest) the run ended there."""
    if len(parts) <= STALL_AFTER:
        return False
    return all(min(q[i] for q in parts[-STALL_WINDOW:])
               > STALL_FACTOR * min(q[i] for q in parts[:-STALL_WINDOW]) for i in range(3))


#: a warm start whose first WARM_BLOCKED[0] steps are all shorter than WARM_BLOCKED[1] is given
#: up (:func:`warm_blocked`; the chain then starts the step cold): on the warm elastic steps of
#: logistic + churn + 80% rule on the whole Adult split the multipliers blocked every step at
#: 0.02-0.05 from the start (dual residual 7.5e-2 at a mu_0 of 2.4e-3), and with the stall rule
#: watching each measure alone those runs went on for 80-94 iterations before the cold start
WARM_BLOCKED = (8, 0.1)
#: the message of a run given up by that rule (:func:`.structured_warm.recentred` starts it again)
BLOCKED_MESSAGE = f"warm start blocked (every step < {WARM_BLOCKED[1]})"


def warm_blocked(warm: bool, steps: list[float]) -> bool:
    """Whether a warm-started run's first steps were all blocked (:data:`WARM_BLOCKED`)."""
    count, short = WARM_BLOCKED
    return warm and len(steps) == count and max(steps) < short


#: a run at its iteration limit whose merit (the largest of the gap and the residuals) fell
#: to at most CONVERGING[1] times its value CONVERGING[0] iterations before is converging
#: (:func:`converging`) and gets EXTRA_ITERATIONS more, once. On the whole Adult split
#: (logistic + churn + 80% rule) every cold MM step crawled for 80 iterations (10-40 pieces
#: leaving their hinge blocked the common step at 0.04-0.07), then converged: at the limit of
#: 100 the merit had fallen from 0.25 to 0.14 in 10 iterations, the step was 0.39, and the
#: cold retry started again from the beginning (201, 197, 196 iterations on three captured
#: steps; extended, 123, 122, 118 to the same values within the tolerance)
CONVERGING = (10, 0.75)
EXTRA_ITERATIONS = 50


def converging(parts: list[tuple[float, float, float]]) -> bool:
    """Whether the merit fell to :data:`CONVERGING` [1] times its value
    :data:`CONVERGING` [0] iterations before (``parts``: (gap, primal, dual residual) by
    iteration)."""
    window, factor = CONVERGING
    return len(parts) > window and max(parts[-1]) <= factor * max(parts[-1 - window])
