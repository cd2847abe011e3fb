"""Cutting planes around SDCA: over the bias b (Alg 3) and over the multipliers v (Alg 2).

Goh et al. (2016) solve Problem 3 through its Lagrangian (eq. 6)

    max_{v in V} F(v),   F(v) = min_{w, b} Psi(w, b, v)                       (eqs 6-7)

inside out. For fixed v, ``minimize_over_b`` runs Algorithm 3: a cutting plane over b whose cuts
are the SDCA dual values D(xi; b_t) + slope (b - b_t) (valid lower bounds on min_w Psi for every
b, since the SVM dual is linear in b), with the 1-D center-of-mass CutChooser of App. F.2.2
(Definition 4) or the minimization-based one of App. F.2.1 (Definition 3). It returns (w, b) and a
certified lower bound l_t on F(v) with u_t - l_t <= eps_t.

``maximize_over_v`` runs Algorithm 2 on V = [0, V_max]^m: the cuts u_s + <g_s, v - v_s> are the
(exact, linear in v) Lagrangians of the iterates, h_t is their minimum, U_t = max_V h_t comes
from an LP solved with HiGHS, L_t = max_s l_s. CutChoosers: maximization-based (App. E.1,
Definition 1: v_t = argmax h_t, eps_t = (U_t - L_t)/2), any m; center of mass (App. E.2,
Definition 2: the centroid (v_t, z_t) of the superlevel hypograph, eps_t = (z_t - L_t)/2), m = 1.
Shallow cuts: each inner solve is only asked for accuracy eps_t.

Primal recovery (our addition, needed to return a point that satisfies the constraints rather
than only a multiplier): the LP duals mu of the U_t problem weight the iterates,
(w, b) = sum_s mu_s (w_s, b_s). By convexity its objective is at most U_t and each constraint
exceeds gamma_j by at most sum_s mu_s g_{s,j}, which is <= 0 unless v_j sits at V_max.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import limits
from ..backends.highs import HighsLP, solve_lp
from ..caller import user_stacklevel
from ..canonical.matrix_lp import MatrixLP
from ..canonical.rate_fold import FoldedBound
from ..errors import ConvergenceWarning, SolverError, SpecError, parameter_error
from .sdca import require_l2, sdca, sdca_work

__all__ = [
    "BiasResult",
    "MultiplierResult",
    "SDCAState",
    "center_of_mass_1d",
    "maximize_over_v",
    "minimize_over_b",
    "probe_step",
]

logger = logging.getLogger(__name__)

B_CHOOSERS = ("center_of_mass", "minimization")
V_CHOOSERS = ("maximization", "center_of_mass")


# ---------------------------------------------------------------------------- 1-D geometry
def probe_step(moved: float, least: float, most: float = math.inf) -> float:
    """The first probe of a warm 1-D cutting plane: twice the distance its point moved in the
    previous run, within [``least``, ``most``]. Consecutive MM bounds differ in a few examples'
    pieces, so the optimum moves by about as much as it moved last time and a bracket of that
    size is found in one or two probes (Alg 3's bias, and Alg 2's single multiplier:
    :func:`ratecons.solvers.rate_bound.warm_start_of`)."""
    return float(np.clip(2.0 * moved, least, most))


def _envelope_pieces(slopes: np.ndarray, intercepts: np.ndarray, lo: float, hi: float,
                     level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints of h(x) = max_s(slopes_s x + intercepts_s) on [lo, hi] (and of h = level).

    Returns the sorted points p_0 = lo < ... < p_r = hi and the values h(p_k); h is linear
    between consecutive points.
    """
    pts = [np.array([lo, hi])]
    if slopes.size > 1:
        i, j = np.triu_indices(slopes.size, 1)
        ds = slopes[i] - slopes[j]
        ok = np.abs(ds) > 1e-300
        x = (intercepts[j[ok]] - intercepts[i[ok]]) / ds[ok]
        pts.append(x)
    if level is not None:
        ok = np.abs(slopes) > 1e-300
        pts.append((level - intercepts[ok]) / slopes[ok])
    p = np.concatenate(pts)
    p = np.unique(p[np.isfinite(p) & (p >= lo) & (p <= hi)])
    h = np.max(np.outer(p, slopes) + intercepts, axis=1)
    return p, h


def envelope_min(slopes: np.ndarray, intercepts: np.ndarray, lo: float,
                 hi: float) -> tuple[float, float]:
    """(argmin, min) of the convex piecewise-linear max of lines over [lo, hi]."""
    p, h = _envelope_pieces(slopes, intercepts, lo, hi)
    k = int(np.argmin(h))
    return float(p[k]), float(h[k])


def center_of_mass_1d(slopes: np.ndarray, intercepts: np.ndarray, lo: float, hi: float,
                      level: float) -> tuple[float, float, float]:
    """Centroid of {(x, z): lo <= x <= hi, h(x) <= z <= level}, h = max_s(slopes_s x + c_s).

    The CutChooser of Definition 4 (App. F.2.2): exact integration over the linear pieces of h
    (Simpson's rule is exact for the quadratic integrands). Returns (x_c, z_c, area); for an
    empty or degenerate region the argmin of h and its value with area 0.
    """
    slopes = np.asarray(slopes, dtype=np.float64)
    intercepts = np.asarray(intercepts, dtype=np.float64)
    p, h = _envelope_pieces(slopes, intercepts, lo, hi, level)
    left, right = p[:-1], p[1:]
    mid = 0.5 * (left + right)
    hm = np.max(np.outer(mid, slopes) + intercepts, axis=1)
    fl, fm, fr = level - h[:-1], level - hm, level - h[1:]
    keep = (fm > 0) & (right > left)
    if not np.any(keep):
        k = int(np.argmin(h))
        return float(p[k]), float(h[k]), 0.0
    width = (right - left)[keep]
    fl, fm, fr = fl[keep], fm[keep], fr[keep]
    left, mid, right = left[keep], mid[keep], right[keep]
    area = float(np.sum(width * (fl + 4 * fm + fr) / 6))
    if not area > 0:
        k = int(np.argmin(h))
        return float(p[k]), float(h[k]), 0.0
    mx = float(np.sum(width * (left * fl + 4 * mid * fm + right * fr) / 6)) / area
    # integral of (level^2 - h^2)/2 = integral of f (2 level - f)/2 with f = level - h
    gl, gm, gr = fl * (2 * level - fl) / 2, fm * (2 * level - fm) / 2, fr * (2 * level - fr) / 2
    mz = float(np.sum(width * (gl + 4 * gm + gr) / 6)) / area
    return mx, mz, area


# ---------------------------------------------------------------------------- SDCA state
@dataclass
class SDCAState:
    """Work arrays reused by every SDCA call of one Problem-3 solve (warm starts).

    ``xi`` persists across b, v and (through the solution's duals) MM iterations: the dual box
    [-b_x(v), a_x(v)] moves with v, and SDCA clips xi into it before starting. ``u_exact``:
    the work array u holds sum_x xi_x x (true after the first SDCA call, which computes it),
    so later calls update it by the clipped coordinates only. ``b_step`` is the distance the
    bias moved in the last Alg 3 call (the probe step of the next one). ``epoch_budget`` caps
    the SDCA epochs of all calls together (the solve's ``max_epochs``): once spent, Alg 3 and
    Alg 2 stop at their next check with the best point so far.
    """

    xi: np.ndarray
    work: tuple[np.ndarray, np.ndarray, np.ndarray]
    seed: int = 0
    epochs: int = 0
    calls: int = 0
    u_exact: bool = False
    b_step: float = 0.05
    epoch_budget: float = math.inf

    def epochs_left(self) -> float:
        """Epochs the budget still allows (``inf`` without one)."""
        return max(self.epoch_budget - self.epochs, 0.0)

    def out_of_budget(self) -> bool:
        """Whether the solve's time limit or this state's epoch budget is used up."""
        return self.epochs_left() <= 0 or limits.active().expired()

    @classmethod
    def fresh(cls, bound: FoldedBound, xi: np.ndarray | None = None,
              seed: int = 0) -> SDCAState:
        n = bound.design.n
        x0 = np.zeros(n) if xi is None or np.shape(xi) != (n,) else np.array(xi, dtype=float)
        return cls(x0, sdca_work(bound.design), seed)


# ---------------------------------------------------------------------------- Alg 3
@dataclass
class BiasResult:
    """Outcome of Algorithm 3 at fixed v.

    ``upper`` = Psi(w, b, v) at the returned point, ``lower`` = L'_t <= min_{b, w} Psi; both
    include the constant terms of Psi.
    """

    w: np.ndarray
    b: float
    upper: float
    lower: float
    iterations: int
    converged: bool
    history: list[dict] = field(default_factory=list)


def _bias_interval(bound: FoldedBound, a: np.ndarray, bc: np.ndarray, upper: float,
                   offset: float) -> tuple[float, float]:
    """B = [-r, r] with r = 1/2 + X_max sqrt(2 (u - offset) / lambda) (cf. App. C, Lemma 1):
    (lambda/2)||w*||^2 <= min Psi - offset <= u - offset, and an optimal b exists with
    |b| <= 1/2 + max_x |<w*, x>|."""
    active = (a > 0) | (bc > 0)
    xmax = math.sqrt(float(np.max(bound.design.sq_norms[active], initial=0.0)))
    r = 0.5 + xmax * math.sqrt(max(2.0 * (upper - offset) / bound.l2, 0.0))
    return -r, r


def _next_bias(slopes: np.ndarray, icpts: np.ndarray, interval: tuple[float, float],
               evaluated: list[float], step: float, chooser: str, eps: float, best_u: float,
               lower: float) -> tuple[float, float, float, float]:
    """The next bias b_t of Algorithm 3, the SDCA gap it is solved to and its dual target, and
    the bracketing step after it: ``(b_t, tol, target, step)``.

    A cut whose lower bound at b_t exceeds ``target`` is deep: it removes the centroid
    (Definition 4) or the minimizer of h'_t with everything above U'_t (Definition 3), so SDCA
    may stop there before reaching its gap target.
    """
    lo, hi = interval
    real = slopes[1:]
    if real.size and (np.all(real > 0) or np.all(real < 0)) and step < hi - lo:
        # bracketing: while every cut slopes the same way, step downhill from the farthest
        # point evaluated, with a step growing 4x, until a cut slopes the other way (any
        # cut is valid, so this only orders the evaluations; B is often very loose)
        far = min(evaluated) if real[0] > 0 else max(evaluated)
        bt = float(np.clip(far - math.copysign(step, real[0]), lo, hi))
        return bt, eps, best_u, step * 4.0
    if chooser == "center_of_mass":
        bt, zt, _ = center_of_mass_1d(slopes, icpts, lo, hi, best_u)
        return bt, (best_u - zt) / 2, zt, step
    bt, _ = envelope_min(slopes, icpts, lo, hi)
    return bt, (best_u - lower) / 2, best_u, step


def minimize_over_b(bound: FoldedBound, v: np.ndarray, eps: float, state: SDCAState, *,
                    upper_hint: float = math.inf, b_start: float | None = None,
                    chooser: str = "center_of_mass", max_iterations: int = 200,
                    max_epochs: int = 2000) -> BiasResult:
    """Algorithm 3 (App. F.2): min over b in B of min_w Psi(w, b, v) to within ``eps``.

    Parameters
    ----------
    bound : FoldedBound
    v : ndarray, shape (m,)
        Fixed multipliers.
    eps : float
        Target U'_t - L'_t.
    state : SDCAState
        Dual variables and work arrays (warm start, updated in place).
    upper_hint : float
        u~'_0 of line 2: an upper bound on min Psi known to the caller (h_t(v_t) in Alg 2).
    b_start : float, optional
        Warm start: the first bias evaluated (else the CutChooser's first choice). While all
        cuts slope the same way, the next bias is a growing step (from ``state.b_step``)
        downhill of them, which brackets the minimizer far faster than the loose interval B
        would (any cut is valid, so this changes speed only).
    chooser : {"center_of_mass", "minimization"}
        Definition 4 (with the u'_0 increase of line 2) or Definition 3.
    """
    require_l2(bound.l2)
    if chooser not in B_CHOOSERS:
        raise parameter_error("b_chooser", "method 'mm'", f"one of {B_CHOOSERS}", chooser)
    v = np.asarray(v, dtype=np.float64)
    a, bc = bound.loss_coefficients(v)
    offset = float(bound.const[0] - v @ bound.gamma_check)
    hist: list[dict] = []

    def run(bias: float, tol: float, target: float = math.inf):
        res = sdca(bound.design, a, bc, bound.l2, bias, state.xi, tol=max(tol, 1e-13),
                   dual_target=target - offset,
                   max_epochs=int(min(max_epochs, state.epochs_left())),
                   seed=state.seed + state.calls, work=state.work, u_exact=state.u_exact)
        state.calls += 1
        state.u_exact = True
        state.epochs += res.epochs
        return res

    if not bound.fit_intercept:
        res = run(0.0, eps)
        return BiasResult(res.w, 0.0, res.primal + offset, res.dual + offset, 1, res.converged,
                          [{"b": 0.0, "upper": res.primal + offset, "lower": res.dual + offset,
                            "epochs": res.epochs}])

    u_tilde = min(upper_hint, offset + 0.5 * float(a.sum() + bc.sum()))  # Psi(0, 0, v)
    lo, hi = _bias_interval(bound, a, bc, u_tilde, offset)
    # line 1-2: the flat cut l'_0 = offset (hinges >= 0) and, for Definition 4, u'_0 = 2u~ - l'_0
    slopes, icpts = [0.0], [offset]
    u0 = 2 * u_tilde - offset if chooser == "center_of_mass" else u_tilde
    best_u, best_w, best_b = u0, None, 0.0
    lower = offset
    converged = False
    evaluated: list[float] = []
    step = state.b_step if b_start is not None else 0.1 * (hi - lo)
    t = 0
    for t in range(1, max_iterations + 1):
        if best_w is not None and state.out_of_budget():
            break
        s_arr, c_arr = np.array(slopes), np.array(icpts)
        _, lower = envelope_min(s_arr, c_arr, lo, hi)
        if best_w is not None and best_u - lower <= eps:
            converged = True
            break
        if t == 1 and b_start is not None:
            bt, tol, target = float(np.clip(b_start, lo, hi)), eps, math.inf
        else:
            bt, tol, target, step = _next_bias(s_arr, c_arr, (lo, hi), evaluated, step,
                                               chooser, eps, best_u, lower)
        res = run(bt, tol, target)
        evaluated.append(bt)
        u_t, l_t = res.primal + offset, res.dual + offset
        slopes.append(res.slope)
        icpts.append(l_t - res.slope * bt)
        if u_t < best_u or best_w is None:
            best_u, best_w, best_b = u_t, res.w, bt
        hist.append({"b": bt, "upper": u_t, "lower": l_t, "sdca_gap": res.gap,
                     "epochs": res.epochs})
    else:
        _, lower = envelope_min(np.array(slopes), np.array(icpts), lo, hi)
        converged = best_u - lower <= eps
    if b_start is not None:
        state.b_step = probe_step(abs(best_b - b_start), 1e-2)
    return BiasResult(best_w, best_b, best_u, lower, t, converged, hist)


# ---------------------------------------------------------------------------- Alg 2
@dataclass
class MultiplierResult:
    """Outcome of Algorithm 2 on V = [0, V_max]^m.

    Attributes
    ----------
    w, b : the recovered primal point (LP-dual average of the iterates)
    v : ndarray
        The multipliers of the iterate with the largest lower bound l_s (line 6).
    lower, upper : float
        L_t <= max_V F <= U_t.
    converged : bool
        U_t - L_t <= eps.
    at_bound : ndarray of bool
        Multipliers of the U_t maximizer sitting at V_max.
    history : list of dict
        Per iteration: v_t, eps_t, l_t, u_t, L_t, U_t (a certified bound on max_V F when
        ``certified``: the box [0, box]^m has grown enough), inner iterations, SDCA epochs.
    """

    w: np.ndarray
    b: float
    v: np.ndarray
    lower: float
    upper: float
    iterations: int
    converged: bool
    at_bound: np.ndarray
    weights: np.ndarray
    history: list[dict] = field(default_factory=list)


class _UpperModel:
    """The LP max z s.t. z <= u_s + <g_s, v - v_s>, v in [0, V_max]^m, kept in HiGHS."""

    def __init__(self, m: int, v_max: float) -> None:
        self.m = m
        self.v_max = v_max
        self.lp: HighsLP | None = None
        self.slopes: list[np.ndarray] = []
        self.offsets: list[float] = []

    def h(self, v: np.ndarray) -> float:
        """h_t(v) = min_s u_s + <g_s, v - v_s>."""
        return float(np.min(np.array(self.slopes) @ v + np.array(self.offsets)))

    def add_cut(self, v_s: np.ndarray, u_s: float, g_s: np.ndarray) -> None:
        self._add_row(np.array(g_s, dtype=float), float(u_s - g_s @ v_s))

    def with_box(self, v_max: float) -> _UpperModel:
        """The same cuts on the box [0, v_max]^m (a fresh LP)."""
        other = _UpperModel(self.m, v_max)
        for g, c in zip(self.slopes, self.offsets, strict=True):
            other._add_row(g, c)
        return other

    def _add_row(self, g_s: np.ndarray, offset: float) -> None:
        row = sp.csr_matrix(np.concatenate([-g_s, [1.0]])[None, :])
        rhs = np.array([offset])
        self.slopes.append(g_s)
        self.offsets.append(offset)
        if self.lp is None:
            c = np.zeros(self.m + 1)
            c[-1] = 1.0
            lp = MatrixLP(c, row, np.array([-np.inf]), rhs,
                          np.concatenate([np.zeros(self.m), [-np.inf]]),
                          np.concatenate([np.full(self.m, self.v_max), [np.inf]]),
                          maximize=True, name="cutting_plane_U_t")
            self.lp = HighsLP(lp, budgeted=False)
        else:
            self.lp.add_rows(row, np.array([-np.inf]), rhs)

    def argmax_within(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """argmax of h_t over the box [lo, hi] (the trust region of the maximization rule)."""
        A = sp.csr_matrix(np.column_stack([-np.array(self.slopes), np.ones(len(self.slopes))]))
        c = np.zeros(self.m + 1)
        c[-1] = 1.0
        lp = MatrixLP(c, A, np.full(A.shape[0], -np.inf), np.array(self.offsets),
                      np.concatenate([lo, [-np.inf]]), np.concatenate([hi, [np.inf]]),
                      maximize=True, name="cutting_plane_trust_region")
        res = solve_lp(lp, budgeted=False)
        if res.status != "optimal":
            raise SolverError(f"HiGHS could not solve the trust-region LP of Alg 2: "
                              f"{res.raw_status}")
        return res.x[: self.m]

    def solved_in_growing_box(self, box: float, v_max: float
                              ) -> tuple[_UpperModel, float, tuple, bool]:
        """Solve the U_t LP; when its maximizer touches the upper faces of the box
        [0, box]^m below V_max, double the box (up to V_max) and solve again. Returns the
        model in force, its box, ``(argmax v, U_t, mu)`` and whether U_t certifies max_V F
        (the maximizer of h_t is off the box's upper faces, or the box is V itself)."""
        model, found = self, self.solve()
        if box < v_max and np.any(found[0] >= box * (1 - 1e-9)):
            box = min(v_max, 2.0 * box)
            model = self.with_box(box)
            found = model.solve()
        certified = box >= v_max or not np.any(found[0] >= box * (1 - 1e-9))
        return model, box, found, certified

    def solve(self) -> tuple[np.ndarray, float, np.ndarray]:
        """(argmax v, U_t, mu) with mu >= 0 summing to 1: the dual weights of the cuts."""
        res = self.lp.solve()
        if res.status != "optimal":
            raise SolverError(f"HiGHS could not solve the U_t LP of Alg 2: {res.raw_status}")
        mu = np.maximum(-res.row_dual, 0.0)
        total = mu.sum()
        mu = mu / total if total > 0 else np.full(mu.size, 1.0 / mu.size)
        return res.x[: self.m], float(res.objective), mu


def _warn_at_v_max(at_bound: np.ndarray, v_max: float) -> None:
    warnings.warn(
        f"a Lagrange multiplier reached V_max = {v_max:g} (constraints "
        f"{(np.flatnonzero(at_bound) + 1).tolist()}): the constraint may be unattainable under "
        "this convex bound, or V_max is too small (raise v_max).",
        ConvergenceWarning, stacklevel=user_stacklevel())


def _v_chooser(m: int, v_max: float, epsilon: float, chooser: str) -> str:
    """The CutChooser over v that ``chooser`` names (``"auto"``: center of mass when m = 1),
    after checking the options of Algorithm 2."""
    if not (isinstance(v_max, (int, float)) and v_max > 0 and math.isfinite(v_max)):
        raise parameter_error("v_max", "method 'mm'", "a finite float > 0", v_max)
    if not epsilon > 0:
        raise parameter_error("epsilon", "method 'mm'", "a float > 0", epsilon)
    if chooser == "auto":
        chooser = "center_of_mass" if m == 1 else "maximization"
    if chooser not in V_CHOOSERS:
        raise parameter_error("v_chooser", "method 'mm'", f"one of {V_CHOOSERS} or 'auto'",
                              chooser)
    if chooser == "center_of_mass" and m != 1:
        raise SpecError("the center-of-mass CutChooser over v (App. E.2) is implemented for "
                        f"m = 1 constraint only; this problem has m = {m}. Use "
                        "v_chooser='maximization'.")
    return chooser


class _Cuts:
    """The iterates of Algorithm 2 (multipliers v_s, lower bounds l_s, inner solutions
    (w_s, b_s)) and the U_t LP of their cuts over the box [0, box]^m, grown towards V_max."""

    def __init__(self, m: int, box: float) -> None:
        self.vs: list[np.ndarray] = []
        self.ls: list[float] = []
        self.ws: list[np.ndarray] = []
        self.bs: list[float] = []
        self.box = box
        self.model = _UpperModel(m, box)

    def add(self, bound: FoldedBound, v_t: np.ndarray, r: BiasResult,
            v_max: float) -> tuple[float, float, tuple, bool]:
        """Add the cut of Alg 3's answer ``r`` at ``v_t``: ``(u_t, l_t, (argmax v, U_t, mu),
        certified)`` (see :meth:`_UpperModel.solved_in_growing_box`)."""
        u_t, g_t = bound.lagrangian(r.w, r.b, v_t)
        l_t = min(r.lower, u_t)
        self.vs.append(v_t.copy())
        self.ls.append(l_t)
        self.ws.append(r.w)
        self.bs.append(r.b)
        self.model.add_cut(v_t, u_t, g_t)
        self.model, self.box, found, certified = self.model.solved_in_growing_box(self.box,
                                                                                  v_max)
        return u_t, l_t, found, certified


class _NextMultipliers:
    """Where Algorithm 2 evaluates F next, and to what accuracy eps_t: the CutChooser, with a
    trust region (maximization rule) or a bracketing step (m = 1) from a warm start."""

    def __init__(self, chooser: str, v_start: np.ndarray, epsilon: float,
                 eps_first: float, unit: float = 1.0, v_step: float | None = None) -> None:
        self.chooser, self.epsilon, self.eps_first = chooser, epsilon, eps_first
        default = max(0.25 * float(v_start[0]), 0.02 * unit) if v_start.size == 1 else None
        self.v_step = default if v_step is None or default is None else v_step
        self.radius = max(0.5 * float(np.max(v_start, initial=0.0)), 0.05)

    def __call__(self, t: int, cuts: _Cuts, v_arg: np.ndarray, lower: float,
                 upper: float) -> tuple[np.ndarray, float]:
        """``(v_{t+1}, eps_{t+1})`` after iteration ``t`` (the iterates and their ``cuts``,
        the maximizer ``v_arg`` of h_t over the box, L_t and U_t)."""
        model, box, vs, ls = cuts.model, cuts.box, cuts.vs, cuts.ls
        if self.chooser == "maximization":
            # Definition 1, but after a step that raised L_t the argmax is taken within a
            # trust region around the best multipliers so far (its radius doubling): the plain
            # rule jumps to corners of V, whose SVMs are the slowest to solve. After any other
            # step it is the plain rule, which keeps Kelley's convergence. U_t stays over V.
            if t > 1 and ls[-1] >= lower:
                self.radius *= 2.0
                centre = vs[-1]
                v_t = model.argmax_within(np.maximum(centre - self.radius, 0.0),
                                          np.minimum(centre + self.radius, box))
            else:
                v_t = v_arg.copy()
            return v_t, (upper - lower) / 2
        g_all = np.array([g[0] for g in model.slopes])
        if self.v_step is not None and (np.all(g_all > 0) or np.all(g_all < 0)):
            # warm start, m = 1: while every cut slopes the same way, step uphill from the
            # farthest multiplier evaluated (step growing 4x) to bracket the maximizer before
            # the centroid rule takes over (any cut is valid: this only orders evaluations)
            far = max(v[0] for v in vs) if g_all[0] > 0 else min(v[0] for v in vs)
            v_t = np.array([float(np.clip(far + math.copysign(self.v_step, g_all[0]), 0.0,
                                          box))])
            self.v_step *= 4.0
            # a probe must re-optimize (w, b) to tell on which side the maximizer lies: with
            # the loose (U_t - L_t)/2 of an uncertified box SDCA would return the previous
            # (w, b), i.e. the same cut, and the bracket would run off to V_max
            return v_t, min((upper - lower) / 2, self.eps_first)
        # superlevel hypograph {L <= z <= h(v)} is the sublevel epigraph of -h below -L
        vt, zt, _ = center_of_mass_1d(-np.array(model.slopes)[:, 0],
                                      -np.array(model.offsets), 0.0, box, -lower)
        return np.array([vt]), max((-zt - lower) / 2, self.epsilon / 4)


def multiplier_unit(bound: FoldedBound) -> float:
    """The scale of Alg 2's first box and first bracketing step: 1, or less for constraint
    rows in counts. A row's multiplier v weighs it against the objective row by the rows'
    sizes (the sums of their hinge coefficients |A| + |B|, eq. 16): rows of rates are about
    the objective's size, but a ratio multiplied through (App. B: precision >= 0.75 is
    #TP - 0.75 (#TP + #FP) >= 0) or a count of Table 2 is |D| times larger, and its v* as many
    times smaller. On the whole Adult split a precision floor's v* is about 1e-5: the fixed
    first box [0, 1] and bracket step 0.02 sent Alg 2 to v = 0.02, whose SVM took 100,000 to
    250,000 SDCA epochs (2-20 s a bound). Rows within 10 times the objective's size keep 1."""
    size = np.abs(bound.A).sum(axis=1) + np.abs(bound.B).sum(axis=1)
    if bound.m == 0 or size[0] <= 0.0:
        return 1.0
    return float(min(1.0, 10.0 * size[0] / max(float(size[1:].max()), 1e-300)))


def _first_accuracy(bound: FoldedBound, v_t: np.ndarray, epsilon: float, warm: bool,
                    chooser: str) -> tuple[float, float]:
    """``(eps_first, eps_1)``: the moderate accuracy of a first cut (no cut yet:
    max(epsilon, 1e-3 of Psi(0, 0, v_1)), also the bracketing probes' cap) and the accuracy
    the first evaluation is solved to.

    A warm single multiplier (the previous MM bound's v*) is usually within a few per cent of
    this bound's maximizer, so its cut is solved to the target gap ``epsilon`` at once: with the
    loose first gap, U_t - L_t stayed at that cut's SDCA gap and Alg 2 came back to evaluate
    next to v_start (3-8 evaluations a bound on the Adult demo, 2-4 after). Not for the
    maximization rule (m > 1), whose next multipliers are far from v_start whatever the first
    cut (13.2 -> 17.6 s on the full Adult split, two constraints, l2 = 1e-2)."""
    a0, b0c = bound.loss_coefficients(v_t)
    eps_first = max(epsilon, 1e-3 * 0.5 * float(a0.sum() + b0c.sum()))
    return eps_first, (epsilon if warm and chooser == "center_of_mass" else eps_first)


def maximize_over_v(bound: FoldedBound, *, v_max: float = 100.0, epsilon: float = 1e-5,
                    chooser: str = "auto", b_chooser: str = "center_of_mass",
                    v_start: np.ndarray | None = None, b_start: float | None = None,
                    v_step: float | None = None, state: SDCAState | None = None,
                    max_iterations: int = 100, max_b_iterations: int = 200,
                    max_epochs: int = 2000, seed: int = 0,
                    callback: Callable[[dict], None] | None = None,
                    warn_at_v_max: bool = True) -> MultiplierResult:
    """Algorithm 2: maximize F(v) = min_{w,b} Psi(w, b, v) over V = [0, v_max]^m.

    Parameters
    ----------
    bound : FoldedBound
    v_max : float
        V_max of V = [0, V_max]^m (App. C); a multiplier at V_max triggers a warning.
    epsilon : float
        Stop when U_t - L_t <= epsilon (absolute, in objective units).
    chooser : {"auto", "maximization", "center_of_mass"}
        CutChooser of App. E.1 (any m) or E.2 (m = 1); "auto" = center of mass when m = 1.
    b_chooser : {"center_of_mass", "minimization"}
        CutChooser of Algorithm 3.
    v_start, b_start : optional warm starts of v_1 and the first bias.
    v_step : float, optional
        The first bracketing step from a warm ``v_start`` (m = 1); default: v_start / 4, at
        least 0.02 of :func:`multiplier_unit`; rate_bound.warm_start_of: the last move.
    state : SDCAState, optional
        Dual variables to warm-start SDCA with (updated in place).
    warn_at_v_max : bool
        Whether a multiplier at V_max raises a ConvergenceWarning (off for a caller that acts on
        ``at_bound`` itself).
    """
    require_l2(bound.l2)
    m = bound.m
    chooser = _v_chooser(m, v_max, epsilon, chooser)
    state = state or SDCAState.fresh(bound, seed=seed)
    start = time.perf_counter()
    hist: list[dict] = []

    def inner(v: np.ndarray, eps_t: float, hint: float, b0: float | None) -> BiasResult:
        return minimize_over_b(bound, v, eps_t, state, upper_hint=hint, b_start=b0,
                               chooser=b_chooser, max_iterations=max_b_iterations,
                               max_epochs=max_epochs)

    if m == 0:  # no multipliers: Algorithm 3 alone
        r = inner(np.zeros(0), epsilon, math.inf, b_start)
        return MultiplierResult(r.w, r.b, np.zeros(0), r.lower, r.upper, 1, r.converged,
                                np.zeros(0, bool), np.ones(1), [{
                                    "iteration": 1, "lower": r.lower, "upper": r.upper,
                                    "b_iterations": r.iterations,
                                    "time": time.perf_counter() - start}])

    v_t = np.zeros(m) if v_start is None else np.clip(np.asarray(v_start, float), 0, v_max)
    # the box grows from a small one (doubling while the maximizer of h_t touches its
    # upper faces) up to V_max: h_t is concave, so once its maximizer over the box is off those
    # faces it is its maximizer over V too and U_t stays a certified bound. This keeps the
    # first cuts away from huge multipliers, whose SVMs are the slowest to solve.
    unit = multiplier_unit(bound)
    cuts = _Cuts(m, float(min(v_max, max(unit, 4.0 * float(np.max(v_t, initial=0.0))))))
    eps_first, eps_t = _first_accuracy(bound, v_t, epsilon, v_start is not None, chooser)
    next_v = _NextMultipliers(chooser, v_t, epsilon, eps_first, unit,
                              None if v_start is None else v_step)
    hint = math.inf
    b_prev = 0.0 if b_start is None else b_start
    lower, upper = -math.inf, math.inf
    v_arg = v_t
    mu = np.ones(1)
    converged = False
    t = 0
    for t in range(1, max_iterations + 1):
        if t > 1 and state.out_of_budget():
            break
        r = inner(v_t, eps_t, hint, b_prev)
        b_prev = r.b
        u_t, l_t, (v_arg, upper, mu), certified = cuts.add(bound, v_t, r, v_max)
        lower = max(cuts.ls)
        rec = {"iteration": t, "v": v_t.copy(), "eps_t": eps_t, "l_t": l_t, "u_t": u_t,
               "lower": lower, "upper": upper, "certified": certified, "box": cuts.box,
               "b": r.b,               "b_iterations": r.iterations,
               "sdca_epochs": state.epochs, "time": time.perf_counter() - start}
        hist.append(rec)
        logger.debug("Alg 2 iteration %d: L=%.8g U=%.8g v=%s", t, lower, upper, v_t)
        if callback is not None:
            callback(dict(rec, stage="multipliers"))
        if certified and upper - lower <= epsilon:
            converged = True
            break
        v_t, eps_t = next_v(t, cuts, v_arg, lower, upper)
        hint = cuts.model.h(v_t)
    w = np.sum([mu_s * w_s for mu_s, w_s in zip(mu, cuts.ws, strict=True)], axis=0)
    b = float(mu @ np.array(cuts.bs))
    at_bound = v_arg >= v_max * (1 - 1e-9)
    if warn_at_v_max and np.any(at_bound):
        _warn_at_v_max(at_bound, v_max)
    if not converged and not state.out_of_budget():  # a budget stop is reported by status
        warnings.warn(f"cutting plane over v stopped after {t} iterations with U - L = "
                      f"{upper - lower:.3g} > epsilon = {epsilon:g}.", ConvergenceWarning,
                      stacklevel=user_stacklevel())
    v_best = cuts.vs[int(np.argmax(cuts.ls))]
    return MultiplierResult(w, b, v_best, lower, upper, t, converged, at_bound, mu, hist)

