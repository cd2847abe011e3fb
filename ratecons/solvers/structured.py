"""The structured step solver: one convex step of the chain over the score model, by a
primal-dual interior point whose Newton systems reduce to one weighted Gram product.

The form (:class:`StructuredForm`, built by :mod:`ratecons.reductions.to_structured`) is what
every step of the chain shares: one score vector z = P w - b over N examples (P = psi(X), p
columns), and rows j = 0 (objective), 1..m (constraints)

    row_j(w, b) = const_j + sum_k C[j, k] max(0, a_k z_{i_k} + c_k)
                          + sum_l S[j, l] loss_l(y_l z_{i_l}),

with C, S >= 0. The hinge pieces are the convex upper bounds of the ramp rates (eq. 4 of Goh
et al., folded per example as in eqs 13-15: max(0, 1/2 + z) and max(0, 1/2 - z)) and the hinge
loss max(0, 1 - y z); the smooth pieces are the logistic and squared margin losses. The step is

    minimize    row_0(w, b) + (l2/2) ||w||^2 + l1 ||w||_1
    subject to  row_j(w, b) <= bound_j,   j = 1..m                                     (P)

(Problem 3 of Goh et al. with plain losses beside the rates). Free scalar variables v may
enter the pieces and the rows linearly (the thresholds of TPR@K and TPR@tau, see
:mod:`ratecons.reductions.to_structured`). With epigraph variables
u_k >= max(0, a_k z_{i_k} + c_k + G_k v) and tau >= |w| it is a smooth convex program with
the inequalities

    (A) u_k - a_k z_{i_k} - c_k - G_k v >= 0,  (B) u_k >= 0,  (T) tau -+ w >= 0,
    (R) bound_j - const_j - C_j u - S_j loss(y z) - F_j v >= 0,

solved by a primal-dual interior point with Mehrotra's predictor-corrector (slacks s,
multipliers lam, residuals of stationarity, primal feasibility c(x) - s and complementarity
s lam - sigma mu). After the slacks and multipliers are eliminated the Newton system is
(H + J^T W J) dx = r with W = diag(lam / s). Its structure is what makes it cheap:

- the per-example blocks u_k couple only with z_{i_k} and v: eliminating them leaves the
  weight a_k^2 W_A W_B / (W_A + W_B) on example i_k (and its cross terms with v);
- the l1 blocks tau_l couple only with w_l: they leave 4 W_+ W_- / (W_+ + W_-) on w_l;
- the smooth losses add their curvature S_j loss'' (weighted by the row multipliers) on z;
- the m constraint rows stay in the system through their multipliers y = W_R J_R dx, which
  makes it a quasi-definite system of size p + 1 + r + m (an earlier Woodbury elimination of
  the rows lost the free variables' accuracy as the pieces' weights went to zero).

So each iteration costs one weighted Gram product Q^T diag(d) Q over the examples
(Q = [P, -1]; O(N p^2), :meth:`ratecons.scans.Rows.gram_and_products`: P^T diag(d) P and P^T d
in one pass), one LU factorization of the small system, and O(N (m + 2)) vector work -- as
:mod:`.top_ipm` and :mod:`.mrc_ipm` do for their problems. Nothing N x N is formed and no
Python loop runs over the examples.

Robust losses (chi-square and KL balls) enter the objective in the dual form of eq. (5) of
Ghosh & Squillante with two free variables (eta, lam) and per-example perspective terms
(:mod:`.structured_robust`); lam >= 0 is the inequality group (L). The loop is Mehrotra's
predictor-corrector with Gondzio's centrality correctors (:mod:`.structured_correctors`). On a
step without smooth or robust parts (linear rows, a quadratic objective: rates, the hinge
loss, TPR@K) the primal and the dual variables take separate step lengths, as
:mod:`.top_ipm` does (:func:`.structured_correctors.primal_dual_steps`): at the degenerate
optimum of a TPR@K step (the negatives tied at the sum_largest row's threshold, positives at
the hinge's kink) one slack or one multiplier blocked the common step at 0.05-0.3 in every
iteration and mu fell by 5-30% an iteration.

The answer carries its certificate: the relative duality gap |lam^T c(x)| / max(1, |f|)
(the Lagrangian gap; equal to f - g(lam) when stationarity holds), both in the form's units
(not the scaled rows'), the relative stationarity and feasibility residuals, and the status
``optimal`` only when all three are below the tolerance.
"""

from __future__ import annotations

import time

import numpy as np

from .. import settings
from .interior import single_blas_thread
from .structured_answer import CERTIFIED_TOL, run_answer
from .structured_centre import (
    expected_inactive,
    group_weights,
    piece_weights,
    weighted_mu,
    weighted_start,
)
from .structured_correctors import (
    CorrectorBudget,
    boundary_steps,
    centrality_correctors,
    halve_at_most,
    predictor_blockers,
    predictor_sigma,
    primal_dual_steps,
    warm_predictor_blockers,
)
from .structured_form import Iterate, ScaledForm, StructuredForm, StructuredSolution, WarmStart
from .structured_infeasible import infeasible_message, violation_proof
from .structured_kernels import (
    gather_product,
    scatter_product,
)
from .structured_newton import NewtonSystem
from .structured_retry import RETRY_ITERATIONS, cold_retry
from .structured_robust import RobustRows, RobustTerms, halved_lams, robust_start, robust_terms
from .structured_smooth import smooth_terms
from .structured_stop import (
    BLOCKED_MESSAGE,
    CERTIFIED_STALL,
    EXTRA_ITERATIONS,
    STALL_WINDOW,
    converging,
    stalled,
    warm_blocked,
)
from .structured_warm import warm_iterate
from .thin_products import FreeColumns, rows_transpose_times

__all__ = ["solve_structured", "DEFAULT_TOL", "CERTIFIED_TOL"]

#: fraction of the step to the boundary taken
STEP_FRACTION = 0.99
#: relative tolerance of the certificate for status ``optimal`` (gap and both residuals)
DEFAULT_TOL = 1e-8
#: below this merit (largest of gap and residuals) every direction gets one round of iterative
#: refinement: without it the rounding of the reduced system held the dual residual near 1e-8
#: on Adult steps, with it the runs reach 1e-10. Also after any iteration in which the dual
#: residual grew, the rounding of unrefined directions showing (with exact directions it falls
#: by the dual step): on the first (cold) MM step of TPR@K + 80% rule at 50,000 synthetic rows
#: the dual residual rose from 1e-6 to 9e-4 as the gap fell from 2e-3 to 3e-5, the merit stayed
#: above 1e-4 and no direction was refined; the run stalled uncertified (merit 2.6e-6) and the
#: retry took 94 more iterations (48 in all with the rule). The rule first asked for the gap
#: and the primal residual below 1e-4 as well; on TPR@K (k = n/50, l2 = 1e-3) over the whole
#: Adult split the dual residual on the threshold's free variable grew from 2.4e-5 to 4.4e-3
#: while the gap fell from 1.2e-3 to 1.2e-4, the run reached a gap of 1e-8 with the residual
#: at 1.7e-4, stalled, and the weighted run after it took 146 iterations in all (2.5-2.8 s);
#: without that condition 54 (1.0-1.2 s), the same objective to 2e-12. The rows of the
#: whole-split grid and four rows at 200,000 rows kept their iterations (the robust KL rows
#: within one). Refining on every iteration below 1e-4 in the gap and the primal residual took
#: the same iterations there but 13-15% more time on TPR@tau NP + recall + parity at 200,000
#: rows (91 iterations both)
REFINE_BELOW = 1e-4
#: a predictor step (to the boundary) shorter than this gets no second-order correction: at a
#: chi-square robust loss's start (w = 0, every loss equal) the predictor reached 0.02 and the
#: corrected direction sent lam from 1 to 1.7e3, from where the loop never came back
CORRECT_FROM_STEP = 0.1
#: the robust pieces' (eta, lam) get this times the merit (capped at 1) times their weight on
#: the diagonal of the Newton system (a proximal term that vanishes at the optimum): at w = 0
#: every loss is equal, R is linear along a ray of (eta, lam) towards lam = 0, and undamped
#: Newton steps drove lam to 1e-26 on a KL robust loss; objective rows only (.structured_robust)
ROBUST_DAMPING = 1.0
#: with a support function in a constraint row, while the primal residual is above
#: FEASIBILITY_FIRST times the gap, sigma is at least FEASIBILITY_SIGMA: otherwise the slacks
#: collapsed before the row was met (a chi-square worst-case 80% rule on 2,000 Adult rows, the
#: hinge relaxation: gap 7e-5, primal residual 7e-2, no progress; with the rule, optimal in 32
#: iterations)
FEASIBILITY_FIRST = 10.0
FEASIBILITY_SIGMA = 0.5
#: a step shorter than this ends the loop (the best iterate is returned with its measures)
MIN_STEP = 1e-8
#: interior-point iterations before the status is ``iteration_limit``
DEFAULT_MAX_ITERATIONS = 100
#: an iteration whose merit is at least SINGLE_GRAM_ABOVE, on at least SINGLE_GRAM_COLUMNS
#: dense columns, gets its Gram product in single precision (summed in double over blocks,
#: :meth:`ratecons.scans.Rows.gram_and_products`; the certificate always comes from the exact
#: residuals): the product's relative error (~1e-7 per block) moves a direction far less
#: than the iterate is from the optimum there; below it the directions are refined
#: (:data:`REFINE_BELOW`) against a double product. 500 Nystrom features on the Adult split:
#: 96 against 165 ms per product; kernel error rate + 80% rule there, the same 189 iterations
#: and objective at 1e-2 and 1e-4, 50.0 against 43.8 s (one run each, load 2-4); on 10,000
#: rows the same 166 iterations and objective at 1e-2, 1e-3 and 1e-4
SINGLE_GRAM_ABOVE = REFINE_BELOW
SINGLE_GRAM_COLUMNS = 256


class _IPM(NewtonSystem):
    """The interior point of :func:`solve_structured` (module docstring; its Newton system:
    :class:`.structured_newton.NewtonSystem`)."""

    def __init__(self, form: StructuredForm, weighted: np.ndarray | None = None,
                 adaptive: bool = False, scaled: ScaledForm | None = None) -> None:
        self.form = form
        #: the scaled rows (``scaled``: the caller's of the same form, not made twice: they
        #: hold (m + 1) floats per piece and per smooth piece)
        self.sc = ScaledForm(form) if scaled is None else scaled
        self.rows = form.rows
        self.p = form.rows.p
        self.fit_b = form.fit_intercept
        self.K = form.hinge_index.size
        self.m = form.m
        self.use_l1, self.p1 = form.l1 > 0, self.p + (1 if self.fit_b else 0)
        self.r = form.extra
        self.G = FreeColumns(form.G)  # G on the free variables (:class:`FreeColumns`)
        #: whether a smooth loss enters a constraint row (else d c_R / dz = 0 and the
        #: directions skip their products with it, :class:`.structured_newton.NewtonSystem`)
        self.smooth_rows = any(bool(np.any(S[1:])) for S in self.sc.S)
        self.positive = self.p1 + form.positive_extra  # theta entries kept > 0
        #: the ball lam of every support function in a constraint row (:func:`halve_at_most`)
        self.curved_lam = np.array([self.p1 + p.lam for p in form.robust if p.row > 0],
                                   dtype=np.int64)
        self.halved_lam = halved_lams(form.robust, self.p1)  # every ball's (:func:`halved_lams`)
        #: separate primal and dual steps: linear rows, quadratic objective
        #: (:func:`.structured_correctors.primal_dual_steps`)
        self.separate = form.piecewise_linear
        #: pairs left out of the predictor's step, below which step (:func:`predictor_blockers`)
        self.blockers = predictor_blockers(self.sc.C[0], self.separate, form.robust, weighted)
        #: the weighted path s lam = omega mu of the rows ``weighted`` (structured_centre)
        self.omega = (np.ones(self.K) if weighted is None
                      else piece_weights(self.sc.C, form.robust, self.K, weighted))
        self.weights: dict[str, np.ndarray] = {}  # by group, set by :meth:`start`
        #: correctors per iteration: fixed, or adaptive on a cold retry (.structured_retry)
        self.budget = CorrectorBudget() if adaptive else None

    # ---------------------------------------------------------------- scores and pieces
    def w_b(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        return theta[:self.p], (float(theta[self.p]) if self.fit_b else 0.0)

    def scores(self, theta: np.ndarray) -> np.ndarray:
        w, b = self.w_b(theta)
        return self.rows.scores(w, b)

    def q_transpose(self, V: np.ndarray | None, top: np.ndarray | None = None,
                    total: np.ndarray | None = None) -> np.ndarray:
        """Q^T V for Q = [P, -1]: per-example values V (N,) or (N, r) to theta space (``top``:
        P^T V when a pass formed it already; ``total``: V's intercept row
        (:meth:`intercept_row`) when V was let go before, V then None)."""
        top = self.rows.transpose_apply(V) if top is None else top
        if not self.fit_b:
            return top
        return np.concatenate([top, self.intercept_row(V) if total is None else total], axis=0)

    @staticmethod
    def intercept_row(V: np.ndarray) -> np.ndarray:
        """-sum_i V_i (shape (1,) or (1, r)): the intercept's row of Q^T V."""
        return -np.sum(V, axis=0, keepdims=True)

    def theta_of(self, z_part: np.ndarray | None, v_part: np.ndarray,
                 top: np.ndarray | None = None, total: np.ndarray | None = None) -> np.ndarray:
        """A theta-space vector (or matrix) from per-example values (through Q^T; ``top``,
        ``total``: their P^T product and intercept row if formed, :meth:`q_transpose`) and
        values on the free variables v."""
        return np.concatenate([self.q_transpose(z_part, top, total), v_part], axis=0)

    def pieces(self, z: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """a_k z_{i_k} + G[k] v (without the offsets), or the same for directions."""
        f = self.form
        out = (gather_product(f.hinge_slope, z, f.hinge_index) if z.ndim == 1
               else f.hinge_slope[:, None] * z[f.hinge_index])
        return out + self.G.times(theta[self.p1:]) if self.r else out

    def q_apply(self, T: np.ndarray) -> np.ndarray:
        """Q T for theta-space T (p1,) or (p1, r)."""
        out = self.rows.apply(T[:self.p])
        return out - T[self.p] if self.fit_b else out

    # ---------------------------------------------------------------- residuals
    def evaluate(self, x: Iterate, pending: bool = False) -> dict[str, object]:
        """Constraint values c(x), objective, gradient pieces and residuals at x (``pending``:
        without the stationarity residual, whose per-example columns are left in
        ``ev["pending"]`` for a pass over the examples that forms their product with P^T,
        :meth:`stationarity`)."""
        sc, f = self.sc, self.form
        z = x.z = self.scores(x.theta) if x.z is None else x.z
        w, _ = self.w_b(x.theta)
        lam_R = x.lam["R"]
        weights = np.concatenate([[1.0], lam_R])
        grad, curv, slopes, smooth_values = smooth_terms(self, z, weights)
        v = x.theta[self.p1:]
        rob, rob_rows = self.robust_at(z, x.u, v, lam_R)
        Cu, Fv = sc.C[1:], sc.F[1:]  # -(d c_R / du), -(d c_R / dv)
        if rob is not None:
            Cu, Fv = Cu + rob_rows.on_u, Fv + rob_rows.on_v
            grad += rob.g_z
            curv += rob.h_z
        hz = self.pieces(z, x.theta) if self.K else np.zeros(0)
        c = {"A": x.u - hz - f.hinge_offset, "B": x.u.copy(),
             "R": sc.bounds - sc.const[1:] - sc.C[1:] @ x.u - smooth_values[1:]
             - sc.F[1:] @ v - (0.0 if rob is None else rob_rows.values)}
        if self.use_l1:
            c["T+"], c["T-"] = x.tau - w, x.tau + w
        if rob is not None:
            c["L"] = x.theta[self.positive]  # (L) lam >= 0 of every robust piece
        objective = (sc.const[0] + sc.C[0] @ x.u + smooth_values[0] + sc.F[0] @ v
                     + 0.5 * sc.l2 * float(w @ w) + sc.l1 * float(np.sum(x.tau))
                     + (rob.value if rob is not None else 0.0))
        # stationarity: grad f - J^T lam
        zr = grad.copy()
        if self.K:
            zr += scatter_product(f.hinge_index, x.lam["A"], f.hinge_slope, self.rows.n)
        # the size of the terms that stationarity balances, for the relative residual
        terms = np.abs(grad)
        if self.K:
            terms += scatter_product(f.hinge_index, np.abs(x.lam["A"]), np.abs(f.hinge_slope),
                                     self.rows.n)
        r_u = sc.C[0] - x.lam["A"] - x.lam["B"] + rows_transpose_times(sc.C[1:], lam_R)
        if rob is not None:
            r_u += rob.g_u
        r_tau = (sc.l1 - x.lam["T+"] - x.lam["T-"]) if self.use_l1 else np.zeros(0)
        ev = {"c": c, "objective": objective, "curv": curv, "slopes": slopes, "robust": rob,
              "Cu": Cu, "Fv": Fv, "r_u": r_u, "r_tau": r_tau,
              "pending": np.column_stack([zr, terms])}
        return ev if pending else self.stationarity(x, ev)

    def stationarity(self, x: Iterate, ev: dict, top: np.ndarray | None = None
                     ) -> dict[str, object]:
        """``ev`` of :meth:`evaluate` completed with the stationarity residual on theta and
        the residuals' scale, from its pending per-example columns (``top``: their product
        with P^T when a pass formed it, else one pass here for the two)."""
        sc, rob, lam_R = self.sc, ev["robust"], x.lam["R"]
        w, _ = self.w_b(x.theta)
        both = self.q_transpose(ev.pop("pending", None), top, ev.pop("pending_total", None))
        r_theta = np.concatenate([both[:, 0], sc.F[0] + self.G.transpose_times(x.lam["A"])
                                  + sc.F[1:].T @ lam_R])
        r_theta[:self.p] += sc.l2 * w
        if self.use_l1:
            r_theta[:self.p] += x.lam["T+"] - x.lam["T-"]
        if rob is not None:
            r_theta[self.p1:] += rob.g_v
            r_theta[self.positive] -= x.lam["L"]
        scale_theta = np.abs(both[:, 1]).max(initial=0.0)
        scale = 1.0 + max(scale_theta, sc.l2 * float(np.abs(w).max(initial=0.0)),
                          float(np.abs(sc.C[0]).max(initial=0.0)),
                          float(np.abs(x.lam["A"]).max(initial=0.0)),
                          float(np.abs(x.lam["B"]).max(initial=0.0)), sc.l1,
                          float(np.abs(sc.F).max(initial=0.0)),
                          0.0 if rob is None else float(np.abs(rob.g_v).max(initial=0.0)))
        ev.update(r_theta=r_theta, dual_scale=scale)
        return ev

    def robust_at(self, z: np.ndarray, u: np.ndarray, v: np.ndarray, lam_R: np.ndarray
                  ) -> tuple[RobustTerms | None, RobustRows | None]:
        """The robust pieces' Lagrangian terms (a constraint row's weighted by its multiplier
        ``lam_R``) and the constraint rows' robust parts at (z, u, v), in the scaled rows."""
        if not self.form.robust:
            return None, None
        return robust_terms(self.form.robust, self.sc.kappa, np.concatenate([[1.0], lam_R]),
                            z, u, v, self.K)

    # ---------------------------------------------------------------- the loop
    def start(self, warm: WarmStart | None = None) -> Iterate:
        """The first iterate: w = 0 with unit slacks and multipliers (omega on weighted
        pieces, :mod:`.structured_centre`, and then 1 / slack on the rows), or (``warm``) the
        previous step's (w, b) and row multipliers, with every epigraph variable just above
        its piece and the piece multipliers split by which side of the hinge is active,
        pushed into the interior (:func:`.structured_warm.warm_iterate`), its predictor's
        blockers those of a warm run (:func:`.structured_correctors.warm_predictor_blockers`)."""
        f = self.form
        groups = (["A", "B", "R"] + (["T+", "T-"] if self.use_l1 else [])
                  + (["L"] if f.robust else []))
        sizes = {"A": self.K, "B": self.K, "R": self.m, "T+": self.p, "T-": self.p,
                 "L": self.positive.size}
        self.weights = group_weights(self.omega, {g: sizes[g] for g in groups})
        if warm is None:
            theta = np.zeros(self.p1 + self.r)
            u = np.maximum(0.0, f.hinge_offset) + 1.0
            tau = np.ones(self.p) if self.use_l1 else np.zeros(0)
            if f.robust:
                theta[self.p1:] = robust_start(f.robust, self.scores(theta), u,
                                               theta[self.p1:])
            x = Iterate(theta, u, tau, {}, {g: self.weights[g].copy() for g in groups})
            ev = self.evaluate(x)
            x.s = {g: np.maximum(ev["c"][g], 1.0) for g in groups}
            if np.any(self.omega < 1.0):  # the rows' products at 1 too (inactive rows)
                x.lam["R"] = 1.0 / x.s["R"]
            return x
        self.blockers = warm_predictor_blockers(self.blockers, self.K, bool(f.smooth))
        return warm_iterate(self, warm, groups)

    def step_length(self, x: Iterate, d: Iterate, ev: dict, merit: float
                    ) -> tuple[float, float]:
        """(primal, dual) steps: :data:`STEP_FRACTION` of the step to the boundary along d, at
        most 1, and at most halfway to 0 for every ball's lam
        (:func:`halved_lams`); separate on a step without smooth or robust parts while the
        dual residual stays within ``merit``
        (:func:`.structured_correctors.primal_dual_steps`), else one common step."""
        if self.separate:
            return primal_dual_steps(self, x, d, ev, STEP_FRACTION, merit)
        step = min(1.0, STEP_FRACTION * boundary_steps(x, d, self.positive, False)[0])
        step = halve_at_most(x.theta[self.halved_lam], d.theta[self.halved_lam], step)
        return step, step

    def measures(self, x: Iterate, ev: dict) -> tuple[float, float, float, float]:
        """(relative gap, relative primal residual, relative dual residual, mu)."""
        comp = sum(float(x.s[g] @ x.lam[g]) for g in x.s)
        lag_gap = abs(sum(float(x.lam[g] @ ev["c"][g]) for g in x.s))
        # relative to max(1, |f|) in the form's units (the scaled objective is kappa_0 f):
        # with max(1, kappa_0 |f|) a TPR@K step (kappa_0 = n_+, f* ~ 0) was held to an
        # absolute gap of 1e-8 / n_+, and its gap stayed at 1-2 while the objective went to 0
        rel_gap = max(comp, lag_gap) / max(float(self.sc.kappa[0]), abs(ev["objective"]))
        pres = max((float(np.max(np.abs(ev["c"][g] - x.s[g]), initial=0.0)) for g in x.s),
                   default=0.0) / (1.0 + float(np.max(np.abs(self.sc.bounds), initial=0.0)))
        dres = max(float(np.max(np.abs(ev["r_theta"]), initial=0.0)),
                   float(np.max(np.abs(ev["r_u"]), initial=0.0)),
                   float(np.max(np.abs(ev["r_tau"]), initial=0.0))) / ev["dual_scale"]
        return rel_gap, pres, dres, weighted_mu(x.s, x.lam, self.weights)


def solve_structured(form: StructuredForm, *, tol: float = DEFAULT_TOL,
                     max_iterations: int = DEFAULT_MAX_ITERATIONS,
                     deadline: float | None = None,
                     warm: WarmStart | None = None) -> StructuredSolution:
    """Solve the step (P) of the module docstring by the structured interior point.

    Parameters
    ----------
    form : StructuredForm
    tol : float
        Relative tolerance of the gap and of both residuals at which the loop stops with status
        ``optimal``; a run that stalls before it is ``optimal`` when its best iterate is within
        :data:`CERTIFIED_TOL` (1e-6), else ``numerical_error``.
    max_iterations : int
        Interior-point iterations before status ``iteration_limit``; a run still converging
        there (:func:`.structured_stop.converging`) gets :data:`.structured_stop.EXTRA_ITERATIONS`
        more, once.
    deadline : float, optional
        ``time.perf_counter()`` value after which the loop stops (status ``time_limit``).
    warm : WarmStart, optional
        Start from a previous step's answer (:meth:`_IPM.start`).

    Returns
    -------
    StructuredSolution
        With the certificate (relative gap, residuals, violation of the exact rows).
    """
    return single_blas_thread(_solve)(form, tol, max_iterations, deadline, warm)


def _solve(form: StructuredForm, tol: float, max_iterations: int, deadline: float | None,
           warm: WarmStart | None) -> StructuredSolution:
    """The runs of :func:`_attempts`; a cold call they leave uncertified and not proved
    infeasible is run once more cold with the adaptive corrector budget
    (:func:`.structured_retry.cold_retry`), unless its caller set a smaller allowance than
    :data:`DEFAULT_MAX_ITERATIONS` (a limit, not a stall)."""
    cold = warm is None and max_iterations >= DEFAULT_MAX_ITERATIONS
    return cold_retry(_attempts(form, tol, max_iterations, deadline, warm), cold,
                      deadline, lambda: _run(form, _IPM(form, adaptive=True), tol,
                                             RETRY_ITERATIONS, deadline, None))


def _attempts(form: StructuredForm, tol: float, max_iterations: int, deadline: float | None,
              warm: WarmStart | None) -> StructuredSolution:
    """The runs of one call, in order, until one is certified (or ends otherwise than
    ``numerical_error`` on the plain path): cold on the weighted path
    (:mod:`.structured_centre`) when a warm start says every row is inactive
    (:func:`weighted_start`); from ``warm`` on the plain path; then, on a cold call whose
    plain run stalled, cold on the weighted path of every row (if some piece enters rows
    only). On a step with smooth or robust parts the weighted run of the first kind comes
    after the plain warm one, not before. A warm call that stalls returns, and its caller's
    cold start (:func:`ratecons.structured_fallback.warm_then_cold`) runs both cold paths.
    Run after a failed warm start as well, the weighted run came twice: on the whole Adult
    split (logistic + churn + 80% rule, 12 failed warm starts) 2,083 interior-point
    iterations in 127 s, without the repeat 1,397 in 103 s, to the same fixed point.

    Smooth or robust parts: the cold weighted start was measured on piecewise-linear steps
    (:data:`.structured_centre.WEIGHTED_START_FROM`). On 200,000 synthetic rows, where every
    MM step on all rows has its 80% rule inactive (109,000 pieces in the row), robust
    chi-square hinge loss + 80% rule took 66 and 69 iterations cold there and 20 and 21 from
    the warm start on the plain path (14.4 s -> 5.7 s); robust KL loss + 80% rule 32 -> 18
    over its two steps, logistic loss + 80% rule 30 -> 24, + recall floor 23 -> 13, + churn +
    80% rule 30 -> 21, robust chi-square loss + recall floor 26 -> 18, every objective the same
    to 1e-8; hinge loss + 80% rule keeps its cold weighted start (21 and 22; warm on the plain
    path, see WEIGHTED_START_FROM). A warm start on the weighted path was blocked on every one
    of those steps (8 iterations).

    One exception: a warm call whose start says every user row is inactive while the rows the
    lowering adds (the thresholds of TPR@K and TPR@tau) are not, and whose warm run fails,
    runs cold on the weighted path of the user rows before it returns (the caller's cold
    start has no multipliers to tell which rows are inactive, and runs the plain path). On the
    whole Adult split, TPR@tau NP + recall + parity's first MM step on all rows, warm from the
    row sample's answer, was blocked (8 iterations) and its plain cold start took 67; the
    weighted one, 41 (the same fixed point)."""
    scaled, every = ScaledForm(form), np.ones(form.m, dtype=bool)
    weighted = not any(p.row for p in form.robust) and bool(np.any(piece_weights(
        scaled.C, form.robust, form.hinge_index.size, every) < 1.0))  # worst-case rows: no gain
    inactive = expected_inactive(None if warm is None else warm.duals, scaled.kappa)
    runs: list[tuple[np.ndarray | None, WarmStart | None]] = [(None, warm)]
    if weighted and weighted_start(scaled.C, form.robust, inactive):
        # cold on the weighted path first, or after the plain warm start on a step with
        # smooth or robust parts (docstring: 200,000 rows)
        runs.insert(0 if form.piecewise_linear else len(runs), (inactive, None))
    spent: list[StructuredSolution] = []  # the runs so far
    user = form.m if form.user_rows is None else form.user_rows
    ranking_rows = (weighted and warm is not None and inactive is not None and user < form.m
                    and bool(inactive[:user].all()) and not inactive[user:].any())
    last = ([(every, None)] if weighted and warm is None and not runs[:-1]
            else [(inactive, None)] if ranking_rows and not runs[:-1] else [])
    for rows, start in runs + last:
        if last and rows is last[0][0] and spent[-1].status != settings.NUMERICAL_ERROR:
            break
        budget = max(1, max_iterations - sum(a.iterations for a in spent))
        answer = _run(form, _IPM(form, rows, scaled=scaled), tol, budget, deadline,
                      start).after(*spent)
        if answer.status in (settings.OPTIMAL, settings.TIME_LIMIT, settings.INFEASIBLE) or (
                rows is None and answer.status != settings.NUMERICAL_ERROR):
            return answer
        spent.append(answer)
    plain = next(a for a, (rows, _) in zip(spent, runs, strict=False) if rows is None)
    plain.iterations, plain.solve_time = spent[-1].iterations, spent[-1].solve_time
    return violation_proof(form, plain, lambda violation: _run(  # (.structured_infeasible)
        violation, _IPM(violation), tol, max_iterations, deadline, None), warm is None) or plain


def _evaluated(ipm: _IPM, x: Iterate) -> dict:
    """The residuals at x (:meth:`_IPM.evaluate`) and, on rows whose every pass is a round
    trip over partitions (``rows.remote``: Dask), what the iteration's one pass formed
    (``ev["formed"]``, which :func:`_newton_step` takes out). There the Gram product is made
    before the iterate is measured, in one pass with the stationarity residual's product
    with P^T, the rows' Jacobian's and the predictor's right-hand side's
    (:meth:`_IPM.gram_pass`): one pass where there were four (the Gram product of a run's
    last iterate, which needs none, is the price). Formed for the step: (the weights of
    :meth:`_IPM.weights_at`, the Gram product, its column, the rows' P^T product) for
    :meth:`_IPM.factored`, and the predictor's :meth:`_IPM.right_side`."""
    if not ipm.rows.remote:
        return ipm.evaluate(x)
    ev = ipm.evaluate(x, pending=True)
    system = ipm.weights_at(x, ev)
    right = ipm.right_side(x, ev, system, {g: x.s[g] * x.lam[g] for g in x.s})
    # the stationarity columns go to the pass (which lets them go once sent) and only their
    # intercept row stays (:meth:`_IPM.stationarity`)
    ev["pending_total"] = ipm.intercept_row(ev["pending"])
    G, col, rows_top, top = ipm.gram_pass(system, [ev.pop("pending"), ipm.solve_column(right)])
    right["top"] = top[:, 2]
    ev["formed"] = [system, G, col, rows_top, right]
    return ipm.stationarity(x, ev, top[:, :2])


def _corrector_rhs(ipm: _IPM, x: Iterate, ev: dict, system: dict, right: dict | None,
                   mu: float, rel_gap: float, pres: float
                   ) -> tuple[dict[str, np.ndarray], float]:
    """The predictor (affine-scaling) direction and from it the corrector's complementarity
    residuals r_c and centring sigma mu (``right``: the predictor's :meth:`_IPM.right_side`
    when a pass formed it, taken out of its list by the caller). The predictor and its
    right side live only here."""
    affine = ipm.direction(x, ev, system, {g: x.s[g] * x.lam[g] for g in x.s}, False, right)
    del right
    # centring from the predictor past its few blocking pairs (:func:`predictor_sigma`),
    # and the second-order term only where the predictor gets some way: a blocked
    # predictor's products ds dlam are huge and its corrector leaves the region where the
    # Newton model holds (the robust pieces' start: every loss equal, R linear in (eta, lam))
    sigma, a_aff = predictor_sigma(x, affine, ipm.weights, mu, boundary_steps(
        x, affine, ipm.positive, ipm.separate), *ipm.blockers)
    if ipm.curved_lam.size and pres > FEASIBILITY_FIRST * rel_gap:
        sigma = max(sigma, FEASIBILITY_SIGMA)
    second = 1.0 if a_aff >= CORRECT_FROM_STEP else 0.0
    centring = sigma * mu
    return {g: x.s[g] * x.lam[g] + second * affine.s[g] * affine.lam[g]
            - centring * ipm.weights[g] for g in x.s}, centring


def _newton_step(ipm: _IPM, x: Iterate, ev: dict, merit: float, rel_gap: float, pres: float,
                 mu: float, refine: bool) -> tuple[Iterate, float] | str:
    """One step of Mehrotra's predictor-corrector from x (``ev``: of :func:`_evaluated`, whose
    pass's products it takes out): the next iterate and the step taken, or why there is none
    (status ``numerical_error``). Its directions, right sides and reduced system live only
    here, and each is dropped once used: held by the loop, they came on top of the next
    iterate's evaluation and pass over the examples (docs/cluster.md, the client's memory)."""
    formed = ev.pop("formed", None)
    try:
        damping = ROBUST_DAMPING * min(1.0, merit)
        system = ipm.factor(x, ev, damping, single=(
            merit >= SINGLE_GRAM_ABOVE and ipm.p >= SINGLE_GRAM_COLUMNS)
        ) if formed is None else ipm.factored(*formed[:4], damping)
    except (np.linalg.LinAlgError, ValueError) as exc:
        return f"reduced system not definite: {exc}"
    # Mehrotra predictor-corrector, its directions refined when ``refine``
    d = centrality_correctors(ipm, x, ev, system, *_corrector_rhs(
        ipm, x, ev, system, None if formed is None else formed.pop(), mu, rel_gap, pres),
        refine, mu)
    del formed, system
    primal, dual = ipm.step_length(x, d, ev, merit)
    step = min(primal, dual)
    if not np.isfinite(step) or step < MIN_STEP:
        return f"stalled (step {step:.1e})"
    return x.moved(d, primal, dual), step


def _run(form: StructuredForm, ipm: _IPM, tol: float, max_iterations: int,
         deadline: float | None, warm: WarmStart | None) -> StructuredSolution:
    started = time.perf_counter()
    x = ipm.start(warm)
    status, message = settings.ITERATION_LIMIT, ""
    best: tuple[float, Iterate] | None = None
    parts: list[tuple[float, float, float]] = []  # (gap, primal, dual residual) by iteration
    steps: list[float] = []
    limit, iterations = max_iterations, 0
    while True:
        iterations += 1
        ev = _evaluated(ipm, x)
        rel_gap, pres, dres, mu = ipm.measures(x, ev)
        merit = max(rel_gap, pres, dres)
        if best is None or merit < best[0]:  # without its scores, which the answer makes
            best = (merit, x.exact())  # afresh (run_answer): N floats fewer once x moves on
        if merit <= tol:
            status = settings.OPTIMAL
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = settings.TIME_LIMIT
            break
        if message := infeasible_message(ipm, x, pres, tol):  # (.structured_infeasible)
            status = settings.INFEASIBLE
            break
        parts.append((rel_gap, pres, dres))
        certified = best[0] <= CERTIFIED_TOL and min(
            max(q) for q in parts[-CERTIFIED_STALL:]) > best[0]
        if certified or stalled(parts):
            status = settings.NUMERICAL_ERROR
            message = (f"no progress in {CERTIFIED_STALL if certified else STALL_WINDOW} "
                       "iterations (infeasible or badly conditioned step)")
            break
        # refined below REFINE_BELOW, and whenever the dual residual grew over the last
        # iteration (the unrefined directions' rounding: REFINE_BELOW)
        refine = merit < REFINE_BELOW or (len(parts) > 1 and dres > parts[-2][2])
        moved = _newton_step(ipm, x, ev, merit, rel_gap, pres, mu, refine)
        del ev  # not held through the next iterate's evaluation and pass
        if isinstance(moved, str):
            status, message = settings.NUMERICAL_ERROR, moved
            break
        x, step = moved
        steps.append(step)
        if warm_blocked(warm is not None, steps):
            status, message = settings.NUMERICAL_ERROR, BLOCKED_MESSAGE
            break
        if iterations >= limit:
            if limit == max_iterations and EXTRA_ITERATIONS and converging(parts):
                limit += EXTRA_ITERATIONS
                continue
            ev = ipm.evaluate(x)
            merit = max(ipm.measures(x, ev)[:3])
            if best is None or merit < best[0]:
                best = (merit, x)
            break
    if status not in (settings.OPTIMAL, settings.INFEASIBLE) and best is not None:
        x = best[1]
    return run_answer(form, ipm, x, status, message, tol, iterations, started)

