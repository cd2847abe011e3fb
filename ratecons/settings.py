"""Shared constants: solver status strings, default tolerances, method names."""

from __future__ import annotations

# --- statuses every Solution / Result reports -------------------------------------------------
OPTIMAL = "optimal"
OPTIMAL_INACCURATE = "optimal_inaccurate"
INFEASIBLE = "infeasible"
#: no feasible point was found and none is proved to be absent: a local search (phase one of the
#: chain) stalled, or a CVXPY backend's infeasibility certificate was inaccurate
INFEASIBLE_INACCURATE = "infeasible_inaccurate"
UNBOUNDED = "unbounded"
ITERATION_LIMIT = "iteration_limit"
TIME_LIMIT = "time_limit"
NUMERICAL_ERROR = "numerical_error"
#: the one status vocabulary of every Solution and Result; ``optimal`` only when the certificate
#: proves the requested tolerance (Ctrl-C is not a status: it raises KeyboardInterrupt)
STATUSES = (OPTIMAL, OPTIMAL_INACCURATE, INFEASIBLE, INFEASIBLE_INACCURATE, UNBOUNDED,
            ITERATION_LIMIT, TIME_LIMIT, NUMERICAL_ERROR)
#: statuses under which a result carries a usable model
SOLVED_STATUSES = (OPTIMAL, OPTIMAL_INACCURATE, ITERATION_LIMIT, TIME_LIMIT)
#: statuses of a solve that found no point meeting the constraints: ``infeasible`` with a
#: certificate that none exists, ``infeasible_inaccurate`` without one
INFEASIBLE_STATUSES = (INFEASIBLE, INFEASIBLE_INACCURATE)
#: statuses of a solve stopped by a budget rather than by its tolerance
LIMIT_STATUSES = (ITERATION_LIMIT, TIME_LIMIT)

# --- method names ------------------------------------------------------------------------------
#: the generic chain with CVXPY steps, the reference of every score-model pattern
GENERIC_METHOD = "generic"
#: the generic chain with every step a matrix LP/QP solved by HiGHS
HIGHS_METHOD = "highs"
#: the generic chain with every step solved by the structured interior point
STRUCTURED_METHOD = "structured"
#: ``auto`` sends a composition to the structured chain from this many examples (the sum of
#: its datasets' rows); below it the CVXPY steps were as fast or faster (benchmarks.composition:
#: hinge loss + FPR parity on 300 Adult rows 0.36 s against 0.28 s; from 600 rows the
#: structured chain was 1.1-4x faster on every composition it takes)
STRUCTURED_AUTO_MIN_EXAMPLES = 500
#: the widest linear model the structured step solver takes: its Newton system is dense,
#: (d + 1) x (d + 1), a few copies at once. A user's 3,000 x 50,000 sparse rows (0.1% filled,
#: error rate + the 80% rule) had the process killed for memory under 'auto' (20 GB per copy)
#: where 'mm' took 0.2 s and 1.3 GB; at d = 12,000 it peaked at 4.7 GB and took 33-40 s
STRUCTURED_MAX_FEATURES = 4096

#: the BLAS threads of a solve (:mod:`ratecons.blas_threads`): its products over the examples
#: are level-1 and level-2 work, which threads slow down on a loaded machine; None leaves BLAS's
#: own setting (for a machine with many idle cores and wide dense features)
SOLVE_BLAS_THREADS: int | None = 1
#: the BLAS threads of the one level-3 product of a solve, the weighted Gram product
#: P^T diag(c) P of a Newton system over dense rows (:meth:`ratecons.scans.Rows.gram`, by syrk),
#: once it is wide and large enough to pay for them (:data:`ratecons.scans.GRAM_THREADED_FROM`);
#: None takes every core this process may run on
GRAM_THREADS: int | None = None

# --- conic back-ends of the CVXPY reference --------------------------------------------------
CONIC_SOLVERS = ("CLARABEL", "SCS")
LP_SOLVERS = ("HIGHS",)
DEFAULT_CONIC_SOLVER = "CLARABEL"

# --- default tolerances ----------------------------------------------------------------------
#: the fixed-point tolerance of majorization-minimization (Alg 1): a run is ``optimal`` when the
#: convex step at the returned point improves its objective f by at most this, relative to
#: max(1, |f|) (``certificate.details["last_relative_decrease"]``), so that the step exported
#: at the result (``export_mps(at=result)``) reproduces its objective to this tolerance
MM_RELATIVE_TOL = 1e-6
#: the most convex steps of majorization-minimization after the start (repair steps included)
MM_MAX_ITERATIONS = 100
#: relative decrease of phase 1's merit below which a stage of phase 1 ends
PHASE1_RELATIVE_TOL = 1e-4
#: cap on phase 1 (the search for a feasible start when the hinge relaxation is infeasible,
#: ``phase_one.find_feasible_start``): its own loop, not capped by
#: ``max_iterations`` (on 300 diabetes rows with four constraints it needed 22 steps to stall)
PHASE1_MAX_ITERATIONS = 100
#: weight of the total violation in phase 1's first stage (the exact penalty objective +
#: weight * violation; the specialized solver's default V_max of its multipliers, docs/mm.md)
PHASE1_PENALTY = 100.0
#: feasibility tolerance used when reporting a constraint as satisfied
FEASIBILITY_TOL = 1e-6
#: a certified lower bound at most this far (relative to max(1, |upper|)) above the upper bound
#: is two computations' rounding of one optimum (log 2 + 1 ulp against log 2), and a
#: certificate reports it as the upper bound itself (:func:`ratecons.solvers.tracker.
#: rounded_lower`); a larger excess is left as it is, for a reader to see
ROUNDING_TOL = 1e-12
#: ``auto``'s cost model for rate problems (:mod:`ratecons.patterns.rate_auto`): the coefficients
#: (K0, K1, K2, K3) of log10(time(mm) / time(cvxpy)) = K0 + K1 log10(nonzero terms)
#: + K2 log10(l2 x largest dataset) + K3 [more than one constraint], fitted by least squares on
#: ``python -m benchmarks.auto_grid`` (sparse and dense frames, 500 to 34,189 rows, 1-3
#: constraints; docs/mm.md "When auto picks mm"); ``auto`` picks ``mm`` where it is below 0
MM_COST_MODEL = (3.23, -0.745, -0.259, 0.620)
#: (K0, K1, K2) of log10(time(mm) / time(structured)) = K0 + K1 log10(nonzero terms)
#: + K2 log10(l2 x largest dataset) with ONE constraint (the structured chain: Alg 1 with every
#: bound by the structured interior point), from the same grid with ``structured`` timed beside
#: ``mm`` (48 instances, 2026-11-28, after Alg 2's warm single multiplier made one-constraint
#: ``mm`` about twice as fast): least squares on the 24 solved one-constraint instances
#: (residual sd 0.30 in log10), with K0 moved from 1.039 to 0.99, the middle of the interval
#: 0.96-1.02 on which ``auto`` took the fastest method on every instance of that run (at 1.039:
#: 1.84x on one near-tie). ``mm`` wins there on large or strongly regularized data (the whole
#: Adult split with the 80% rule at l2 = 1e-3: 1.02 s against 3.06 s). With two or more
#: constraints there is no model but a rule (:meth:`ratecons.patterns.rate_constraints.
#: RatePattern.choose`): the structured chain, since ``mm`` was slower on all 16 such
#: instances (1.5-37x; the whole split at l2 = 1e-2: 12.1 s against 2.2 s, where the earlier
#: constraint term of 0.55 still chose ``mm``), and again on all 24 of the 2026-11-29 grid
#: (1.4-60x; docs/mm.md)
MM_STRUCTURED_COST_MODEL = (0.99, -0.110, -0.462)

#: continuations of an MM run after the exact bias repair moved its certified fixed point's bias
#: (issue 32, :func:`ratecons.patterns.rate_constraints.make_deterministic`): Alg 1 re-run from
#: the repaired model at most this many times; a model still off its fixed point after them is
#: returned with status ``iteration_limit``, never ``optimal``
BIAS_CONTINUATION_ROUNDS = 4
#: ``auto`` solves a robust hinge loss without l2 (which ``lbfgs`` cannot certify) by the
#: structured chain instead of the CVXPY reference from this many examples: structured / cvxpy
#: time 0.05-0.99 on 15 instances of 2,000-20,000 rows (Adult samples, letter, Gaussian;
#: chi2 and KL, rho 0.1 and 1), 0.40-1.22 below 1,000 rows (docs/robust.md)
DRO_STRUCTURED_MIN_EXAMPLES = 2000
#: ``auto``'s ``lbfgs`` on a chi-square or KL robust loss over data in memory runs at most this
#: many iterations; uncertified by then, ``auto`` goes on with the structured chain (and if that
#: ends uncertified, with ``lbfgs`` from where it stopped). L-BFGS's iterations grow with the
#: condition number of the weighted Gram matrix, the interior point's hardly do: on 45
#: instances (Adult, usenet2, letter, satellite, Gaussian and random sparse; chi2 and KL,
#: logistic and hinge, l2 1e-3 and 1e-4) L-BFGS took 6-29 iterations where it was the faster
#: (well-scaled data) and 62-1,000 on one-hot features, where the interior point took 0.05-0.5
#: of its time (docs/robust.md, "Which is faster")
DRO_AUTO_LBFGS_ITERATIONS = 40
#: ... and with the hinge loss, whose kink phase costs L-BFGS iterations on well-scaled data
#: too: 44-52 on the hinge instances of ``benchmarks.dro``'s grid (Gaussian 4,096 x 20 and
#: 1,000 x 10, Adult's 14 numeric columns), where L-BFGS was 0.5-2.4x the interior point's
#: time, and 160-1,000 on one-hot and binary-word data (a budget of 40 sent those grid
#: instances to the interior point, 1.9-3.7x slower there)
DRO_AUTO_LBFGS_HINGE_ITERATIONS = 60
#: ... both from this many examples; below it, DRO_AUTO_LBFGS_SMALL_ITERATIONS. On a few
#: thousand rows an interior-point iteration costs 5-10 L-BFGS iterations (its fixed cost per
#: iteration, 2-3 ms, against L-BFGS's 0.2-0.5 ms): on usenet2 (1,500 rows) L-BFGS's 62-145
#: iterations with the logistic loss took 0.4-0.6 of the interior point's time, and a budget of
#: 40 made ``auto`` 2.5-4.1x slower; its hinge runs (961-1,000 iterations, 1.3-2.2 s against
#: 0.14 s) still switch early
DRO_AUTO_LBFGS_LARGE_FROM = 10_000
DRO_AUTO_LBFGS_SMALL_ITERATIONS = 150
#: stage 2 of phase 1 (``phase_one.find_feasible_start``) minimizes the total violation plus this
#: times the regularizer: with the violation alone the step's optimal face is unbounded in w
#: (every model scaled up meets the hinge rows as well), and the structured interior point,
#: which goes to that face's centre, returned a start of ramp objective 8.8e5 (2,000 Adult
#: rows, logistic loss + churn + 80% rule; MM then spent its first step coming back)
PHASE1_NORM_WEIGHT = 1e-2
#: phase 1 searches for a point that meets every surrogate row with this much to spare (the
#: rows' bounds lowered by it), so that the first MM step has an interior: at a start right on
#: the rows' boundary the structured interior point could not certify the MM steps (2,000
#: Adult rows, logistic loss + churn + 80% rule) and the chain fell back to CLARABEL steps; a
#: start that meets the rows only without the margin is still taken when phase 1 stalls
PHASE1_MARGIN = 1e-4
#: phase 1's exact penalty grows by PHASE1_PENALTY_GROWTH, up to PHASE1_PENALTY_MAX, whenever a
#: step lowers the total violation by less than PHASE1_CRAWL of itself (or the merit stalls),
#: before stage 2 (``phase_one.find_feasible_start``): below the rows' multipliers (160 and 54 at
#: the first MM step on 2,000 Adult rows, logistic loss + churn + 80% rule) the penalty's
#: minimizer is infeasible and MM crawled towards it, 1-2% of the violation a step, for 20 steps
PHASE1_PENALTY_GROWTH = 10.0
PHASE1_PENALTY_MAX = 1e4
PHASE1_CRAWL = 0.1

# --- the chain's start from a row sample (:mod:`ratecons.sample_start`) -----------------------
#: the structured and CVXPY chains first solve the problem on a row sample when a dataset of
#: the problem has more rows than this (``sample_start=None``, the default). Measured with
#: every 7th row (docs/composition_log.md, 2026-11-27): on the whole Adult split (34,189 rows)
#: 10 of 15 linear rows 1.2-1.9x faster, none slower than the sample's own time; on 15,000 and
#: 8,000 rows (samples of 2,143 and 1,143 rows, the rates' estimates too rough) the rows were
#: 0.8-1.9x and 0.8-1.3x, so the default stays off there
SAMPLE_START_MIN_ROWS = 30_000
#: the default sample's rows per dataset: n / SAMPLE_START_EVERY of the largest dataset's n
#: rows, at most SAMPLE_START_ROWS (every k-th row, k = ceil(n / rows))
SAMPLE_START_EVERY = 7
SAMPLE_START_ROWS = 20_000
#: the smallest sample ``sample_start=n`` takes
SAMPLE_START_MIN_SAMPLE = 100
#: times a sample's model that misses a surrogate row on all rows is solved again on the
#: sample with the row tightened, before phase one starts from it on all rows
SAMPLE_START_TIGHTENINGS = 2
#: the sample's own MM run stops at this relative decrease (not the certificate's
#: MM_RELATIVE_TOL), without the deterministic repair: its model is only a start, about 1e-3
#: (relative) from the full data's fixed point at 5,000 rows. Whole Adult split, 4,885-row
#: sample, 12 rows, against 1e-6 with the repair: the sample's MM steps 3-10 instead of 3-21;
#: the steps on all rows the same on 8 rows, 24 -> 17 on one, 13 -> 16, 16 -> 19 and 4 -> 5 on
#: three (docs/composition_log.md, 2026-11-27)
SAMPLE_START_TOL = 1e-4
#: the chain on all rows does not start from the sample's model when the sample's MM took
#: steps but lowered its hinge relaxation's surrogate objective by less than this (relative).
#: Whole Adult split: error + churn's sample (structured chain) gained 6.3e-3 and the chain
#: took 15 MM steps from its model against 9 from the hinge relaxation (15,000 rows: 9.2e-3,
#: 15 against 7); of the twelve rows that gained more (the least 1.4e-2) one took more steps
#: (23 against 21, with fewer interior-point iterations). A sample whose hinge relaxation was
#: its fixed point (gain 0) stays a start: 36 against 42 and 24 against 30 interior-point
#: iterations on 200,000 synthetic rows, about as many on the whole split
SAMPLE_START_MIN_GAIN = 1e-2
#: the chain solves again at the loss's scale (:mod:`ratecons.chain_scale`) when rescaling its
#: fixed point lowers the exact objective by more than this (relative). On 2,000 Adult rows the
#: logistic rows of the composition grid gain 1e-5 to 2.6e-4 (none solved again), logistic loss
#: + churn + 80% rule 0.49 (docs/composition_log.md, "The churn row's scale")
SCALE_MIN_GAIN = 1e-3
#: at most this many solves at a new scale after the first (:mod:`ratecons.chain_scale`)
SCALE_ROUNDS = 4
#: the tolerance on log s of the search for the loss's best scale (bounded Brent)
SCALE_SEARCH_TOL = 1e-4
