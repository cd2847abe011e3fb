"""Dual coordinate ascent for the TopPushK and Pat&Mat families (Section 3.4, Algorithm 2).

Each iteration picks a random coordinate k, computes for every other coordinate l the optimal
step of the update rule (16a) (two alphas), (16b) (an alpha and a beta) or (16c) (two betas) in
closed form (Props 3.7-3.9 for the hinge, B.1-B.3 for the quadratic hinge, B.4-B.9 for
Pat&Mat), keeps the pair with the largest increase of the dual objective and updates
alpha, beta, the dual scores s = K v (eq. 15) incrementally (two kernel columns) and, for
Pat&Mat, delta by (39) or (42) (the compiled loop: :mod:`ratecons.solvers.top_dual_kernels`).
The start is the projection of a random point onto the feasible set
(:mod:`ratecons.solvers.top_projections`).

Kernel models: the kernel matrix is precomputed when it fits in ``max_kernel_bytes`` and
otherwise computed by rows inside the compiled loop. Linear models (``rc.LinearModel``) never
form the m x m matrix: K = Q Q^T with Q = S P (eq. 14), w = Q^T v, s = Q w, so each epoch
picks a working set W (every beta > 0 and the most violating coordinates,
:func:`_decomposition_set`) and optimizes the dual on it with the other coordinates fixed,
then recomputes w and s in O(m d). By default (``block_solver="exact"``) the block's QP is
solved to optimality (:mod:`ratecons.solvers.top_block`, block coordinate ascent from v = 0,
W also holding every free alpha); with ``block_solver="pairs"`` the epoch forms Q_W Q_W^T in
O(|W|^2 d) and runs the compiled pairwise updates on it, from a feasible point with K nonzero
betas (:func:`_sparse_start`) so that W stays small. The pairwise steps converge slowly on
the rank-d kernel of a linear model (docs/ranking.md); the exact blocks do not have that
problem.

After every epoch (kernel models: a/2 iterations on a working set of a coordinates; linear
models: 2a) the scores are recomputed exactly and the primal objective (6)/(9) at w(v) and
the dual objective (7a)/(10a) give a duality gap; the run stops at a relative gap ``tol``.

This module drives the epochs; the run's bounds, limits and events are kept by
:class:`ratecons.solvers.tracker.Tracker`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

from ..canonical.top import TopForm
from ..errors import parameter_error
from ..solution import Solution
from .top_block import restore_feasibility, solve_block
from .top_dual_kernels import epochs
from .top_projections import project_patmat_hinge, project_simplex_pair, project_toppushk
from .tracker import Tracker, iteration_cap

__all__ = ["solve_top_dual"]

logger = logging.getLogger(__name__)

def _exact_scores(form: TopForm, v: np.ndarray, Kmat: np.ndarray | None, P: Any,
                  block_bytes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """s = K v recomputed from scratch (and w for linear models), against drift."""
    sg = form.signs
    if form.linear_model:
        w = np.asarray(P.T @ (sg * v)).ravel()
        return sg * np.asarray(P @ w).ravel(), w
    supp = np.flatnonzero(v)
    if Kmat is not None:
        return Kmat[:, supp] @ v[supp], None
    out = np.empty(form.m)
    rows = max(1, block_bytes // (8 * max(supp.size, 1)))
    for start in range(0, form.m, rows):
        idx = np.arange(start, min(form.m, start + rows))
        out[idx] = form.signed_block(idx, supp) @ v[supp]
    return out, None


def _working_set(form: TopForm, v: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
    """Shrinking (as in LIBSVM): the working set of the next epoch.

    With h_i = y_i dD/dv_i (y = +1 for alpha, -1 for beta), a rule (16) moves one coordinate
    up and one down with first-order gain h_up - h_down. A coordinate at a fixed bound that
    can only move down (beta = 0, alpha = C) is left out when h_i >= max{h : can move up};
    one that can only move up (alpha = 0) when h_i <= min{h : can move down}. Betas above 0
    always stay (their cap sum(alpha)/K moves). The duality gap is always computed on the
    full problem, so a wrong guess only costs an epoch.
    """
    n = form.n_pos
    alpha, beta = v[:n], v[n:]
    h_a, h_b = _gradients(form, v, s, delta)
    hinge = form.surrogate == "hinge"
    up_a = alpha < form.C if hinge else np.ones(n, dtype=bool)
    m_up = max(float(np.max(h_a[up_a], initial=-np.inf)),
               float(np.max(h_b[beta > 0], initial=-np.inf)))
    cap = _beta_cap(form, alpha)
    down_b = beta < cap
    m_down = min(float(np.min(h_a[alpha > 0], initial=np.inf)),
                 float(np.min(h_b[down_b], initial=np.inf)))
    keep_b = (beta > 0) | (h_b < m_up)
    keep_a = ~(((alpha <= 0) & (h_a <= m_down))
               | (hinge & (alpha >= form.C) & (h_a >= m_up)))
    if keep_a.sum() < 1:
        keep_a[np.argmax(h_a)] = True
    if keep_b.sum() < 2:
        keep_b[np.argsort(h_b)[:2]] = True
    return np.concatenate([np.flatnonzero(keep_a), n + np.flatnonzero(keep_b)])


def _gradients(form: TopForm, v: np.ndarray, s: np.ndarray, delta: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """h_i = y_i dD/dv_i for the alphas (y = +1) and the betas (y = -1) of the dual (7)/(10)."""
    n = form.n_pos
    alpha, beta = v[:n], v[n:]
    h_a = 1.0 - s[:n]
    h_b = s[n:].copy()
    if form.surrogate == "quadratic_hinge":
        h_a -= alpha / (2.0 * form.C)
    if form.family == "patmat":
        h_b -= 1.0 / form.theta
        if form.surrogate == "quadratic_hinge" and delta > 0:
            h_b += beta / (2.0 * delta * form.theta**2)
    return h_a, h_b


def _beta_cap(form: TopForm, alpha: np.ndarray) -> float:
    """The cap sum(alpha)/K of the betas in (7c) (inf when there is none)."""
    return alpha.sum() / form.K if (form.family == "toppushk" and form.K > 1) else np.inf


def _decomposition_set(form: TopForm, v: np.ndarray, s: np.ndarray, delta: float,
                       size: int, keep_free: bool = False) -> np.ndarray:
    """Working set of the linear-model path: every beta > 0 (the coordinates outside the set
    keep their values, and only betas at 0 can stay fixed without constraining the cap
    sum(alpha)/K or delta) plus the ``size / 2`` coordinates that can move "up" (y-space)
    with the largest h and the ``size / 2`` that can move "down" with the smallest h (the
    maximal violating pairs of SMO, as in SVMlight's decomposition). ``keep_free`` also keeps
    every alpha strictly inside its bounds (the exact block solver: an optimum with more free
    alphas than the set holds would otherwise be out of reach) and offers betas at 0 even
    when the cap is 0 (the block raises it with its alphas)."""
    n = form.n_pos
    alpha, beta = v[:n], v[n:]
    h_a, h_b = _gradients(form, v, s, delta)
    up = alpha < form.C if form.surrogate == "hinge" else np.ones(n, dtype=bool)
    up_idx = np.flatnonzero(up)
    free_b = np.flatnonzero((beta <= 0.0) & ((beta < _beta_cap(form, alpha)) | keep_free))
    down_a = np.flatnonzero(alpha > 0.0)
    half = max(1, size // 2)
    pick = [n + np.flatnonzero(beta > 0.0)]
    groups = [(up_idx, -h_a[up_idx], half)]
    if keep_free:  # alphas and betas ranked apart: the caps' multipliers shift their h apart
        pick.append(np.flatnonzero((alpha > 0.0) & up))
        # at least twice as many betas as the threshold needs can move: K of them under
        # the cap sum(alpha)/K; more than n~ tau for Pat&Mat, whose dual gains from delta
        # only then (sum beta / theta - delta n~ tau with beta <= delta theta)
        need = (int(form.K) if form.family == "toppushk"
                else int(np.ceil(form.n_tilde * float(form.tau))))
        n_b = max(1, half // 2, 2 * need)
        groups += [(down_a, h_a[down_a], max(1, half // 2)), (n + free_b, h_b[free_b], n_b)]
    else:
        groups.append((np.concatenate([down_a, n + free_b]),
                       np.concatenate([h_a[down_a], h_b[free_b]]), half))
    for idx, key, count in groups:
        if idx.size > count:
            idx = idx[np.argpartition(key, count - 1)[:count]]
        pick.append(idx)
    act = np.unique(np.concatenate(pick))
    if np.count_nonzero(act < n) == 0:
        act = np.union1d(act, [int(np.argmax(h_a))])
    return act


def _scaled_primal(form: TopForm, s: np.ndarray, wnorm2: float) -> tuple[float, float]:
    """The best upper bound on (6)/(9) along the ray of w(v): min over c in [0, 2] of the
    primal at c w(v) (scores c s, threshold t(c s), ||c w||^2), and its c.

    At the optimum c = 1, but before it the primal at w(v) lags the dual (the threshold is a
    nonsmooth function of the scores) while a shorter or longer w is often much better; c = 0
    is w = 0, the candidate of a trivial optimum. Every c gives a valid upper bound, so the
    certificate stays sound whatever c the bounded Brent search returns.
    """
    n = form.n_pos

    def primal(c: float) -> float:
        return form.primal_c(c * s[:n], -c * s[n:], c * c * wnorm2)

    found = minimize_scalar(primal, bounds=(0.0, 2.0), method="bounded",
                            options={"xatol": 1e-10})
    return min([(primal(1.0), 1.0), (primal(0.0), 0.0), (float(found.fun), float(found.x))])


def _sparse_start(form: TopForm, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    """A feasible start of the linear-model path whose betas are few: every alpha = C/2 and
    the mass n_+ C/2 spread evenly over K random betas (TopPushK family: all on the cap
    sum(alpha)/K) or over ceil(tau n~) of them (Pat&Mat family, delta by (39)/(42))."""
    n, nt = form.n_pos, form.n_tilde
    alpha = np.full(n, 0.5 * form.C)
    count = int(form.K) if form.family == "toppushk" else int(np.ceil(form.tau * nt))
    count = min(max(count, 1), nt)
    beta = np.zeros(nt)
    beta[rng.choice(nt, count, replace=False)] = alpha.sum() / count
    delta = form.optimal_delta(beta) if form.family == "patmat" else 0.0
    return alpha, beta, delta


def _initial_point(form: TopForm, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, float]:
    n, nt, C = form.n_pos, form.n_tilde, form.C
    alpha0 = rng.uniform(0.0, C, n)
    beta0 = rng.uniform(0.0, C * n / nt, nt)
    if form.family == "toppushk":
        c1 = C if form.surrogate == "hinge" else np.inf
        alpha, beta = project_toppushk(alpha0, beta0, c1, int(form.K))
        return alpha, beta, 0.0
    if form.surrogate == "hinge":
        delta0 = float(beta0.max()) / form.theta
        alpha, beta, delta = project_patmat_hinge(alpha0, beta0, delta0, C, form.theta)
        return alpha, beta, max(delta, form.optimal_delta(beta))
    alpha, beta = project_simplex_pair(alpha0, beta0)
    return alpha, beta, form.optimal_delta(beta)


def solve_top_dual(
    form: TopForm,
    *,
    tol: float = 1e-6,
    max_iterations: int | None = None,
    max_epochs: int | None = None,
    time_limit: float | None = None,
    seed: int | None = 0,
    max_kernel_bytes: int = 2**30,
    check_feasibility: bool = False,
    selection: str = "greedy",
    group_moves: bool = True,
    shrinking: bool = True,
    working_set_size: int | None = None,
    block_solver: str = "exact",
    callback: Callable[[dict[str, Any]], None] | None = None,
) -> Solution:
    """Algorithm 2 on the dual (7) or (10) of ``form``.

    Parameters
    ----------
    tol : float
        Stop when (primal - dual) / primal <= tol (objectives (6)/(9) and (7a)/(10a)).
    max_iterations, max_epochs : int, optional
        Limit on epochs (default 2000; ``max_epochs`` is this method's own name for the cap,
        give one of them); an epoch is a/2 iterations on a working set of a coordinates (each
        iteration updates two coordinates; fewer when kernel columns are computed by rows, so
        that ``time_limit`` is checked often enough), followed by an exact recomputation of the
        scores and of the duality gap.
    time_limit : float, optional
        Wall-clock limit in seconds (the active :mod:`ratecons.limits` apply too).
    seed : int, optional
        Seeds the random start and the random coordinates k.
    max_kernel_bytes : int
        Precompute the m x m kernel matrix when it fits in this many bytes; otherwise kernel
        columns are computed in the compiled loop.
    check_feasibility : bool
        Check every constraint after every update (for tests); the largest violation is
        reported in ``certificate.details["max_violation_any_step"]``.
    selection : {"greedy", "random"}
        How the first coordinate k of an iteration is picked: at random (Algorithm 2 as
        published) or, in turn, the most violating "up" coordinate, the most violating
        "down" coordinate (the first-order working-set rule of SMO) and a random one; the
        second coordinate is always the best l.
    group_moves : bool
        Also try the moves of :func:`_cap_move` (TopPushK family, K >= 2) and
        :func:`_tie_move` (Pat&Mat, hinge) that shift a whole group of betas; without them
        (``False``, Algorithm 2 as published) the ascent can stall with a duality gap.
    shrinking : bool
        Kernel models: run each epoch on a working set without the betas stuck at 0
        (:func:`_working_set`). Linear models always use :func:`_decomposition_set`.
    working_set_size : int, optional
        Linear models: coordinates picked by :func:`_decomposition_set` per epoch (besides
        the betas > 0; default max(400, m / 50)); the epoch runs 2a iterations (a = |W|) on
        the block Q_W Q_W^T of the kernel matrix, so its cost is O(a^2 d + m d) and no m x m
        matrix is formed.
    block_solver : {"exact", "pairs"}
        Linear models: how an epoch optimizes its working set. ``"exact"`` (default) solves
        the block's QP to optimality (:func:`ratecons.solvers.top_block.solve_block`: block
        coordinate ascent, as SVMlight with its inner QP solver); ``"pairs"`` runs 2a of
        Algorithm 2's pairwise updates on it, which stall on low-rank linear kernels (see
        docs/ranking.md).
    callback : callable, optional
        Receives one event per epoch (:data:`ratecons.solvers.tracker.EVENT_KEYS`: the
        epoch as ``iteration``, the primal (6)/(9) as ``upper``, the dual (7a)/(10a) as
        ``lower``, their ``gap``; ``relative_gap``, ``iterations``, ``active``).
    """
    _check_options(selection, working_set_size, block_solver, tol)
    cap, cap_name = iteration_cap("dual_ca", 2000, max_iterations, max_epochs=max_epochs)
    tracker = Tracker("dual coordinate ascent (Alg 2)", max_iterations=cap, cap_name=cap_name,
                      time_limit=time_limit, tol=tol, relative=True, callback=callback)
    run = _DualRun.start(form, np.random.default_rng(seed), max_kernel_bytes,
                         linear_exact=block_solver == "exact", working_set_size=working_set_size,
                         check_feasibility=check_feasibility)
    options = (selection == "greedy", group_moves, shrinking)
    primal = dual = gap = np.nan
    previous_gap = np.inf
    scale = 1.0
    for epoch in range(1, cap + 1):
        act = run.working_set(epoch, shrinking)
        if run.exact_blocks:
            run.exact_epoch(act)
        else:
            run.pairwise_epoch(act, *options[:2])
        primal, scale, dual, gap = run.bounds()
        tracker.lower, tracker.upper = form.lam * dual, form.lam * primal
        stop = tracker.check(epoch)
        tracker.record(epoch, upper=tracker.upper, lower=tracker.lower, gap=tracker.gap,
                       relative_gap=gap, iterations=run.iterations, active=act.size)
        if stop:
            break
        if run.exact_blocks and gap > 0.5 * previous_gap:
            run.ws_size = min(2 * run.ws_size, form.m)  # the gap did not halve: larger blocks
        previous_gap = gap
    if run.linear and not run.exact_blocks:  # w and the objectives without the rounding
        run.s, run.w = run.exact_scores()
        primal, scale, dual, gap = run.bounds()
    return run.solution(tracker, primal, scale, dual, gap)


def _check_options(selection: str, working_set_size: int | None, block_solver: str,
                   tol: float) -> None:
    if selection not in ("greedy", "random"):
        raise parameter_error("selection", "dual_ca", "'greedy' or 'random'", selection)
    if working_set_size is not None and (isinstance(working_set_size, bool)
                                         or not isinstance(working_set_size, (int, np.integer))
                                         or working_set_size < 2):
        raise parameter_error("working_set_size", "dual_ca", "an int >= 2 (or None)",
                              working_set_size)
    if block_solver not in ("exact", "pairs"):
        raise parameter_error("block_solver", "dual_ca", "'exact' or 'pairs'", block_solver)
    if not tol > 0:
        raise parameter_error("tol", "dual_ca", "a float > 0", tol)


@dataclass
class _DualRun:
    """The state of one run of :func:`solve_top_dual`: the kernel (a precomputed matrix, the
    points to compute columns from, or Q = S P for linear models), the dual point
    v = (alpha, beta), its scores s = K v (and w for linear models), state = [delta,
    sum beta^2], stats = [max violation seen, accepted steps]."""

    form: TopForm
    rng: np.random.Generator
    max_kernel_bytes: int
    linear: bool
    use_matrix: bool
    exact_blocks: bool
    check_feasibility: bool
    Kmat: np.ndarray | None
    P: Any
    Q: Any
    P_dense: np.ndarray
    sqn: np.ndarray
    diag: np.ndarray
    v: np.ndarray
    s: np.ndarray
    w: np.ndarray | None
    state: np.ndarray
    ws_size: int
    stats: np.ndarray = field(default_factory=lambda: np.zeros(2))
    iterations: int = 0

    @classmethod
    def start(cls, form: TopForm, rng: np.random.Generator, max_kernel_bytes: int, *,
              linear_exact: bool, working_set_size: int | None,
              check_feasibility: bool) -> _DualRun:
        """The kernel's representation and the starting point (v = 0 for the exact blocks,
        else :func:`_sparse_start` / :func:`_initial_point`)."""
        linear = form.linear_model and form.gram is None
        use_matrix = not linear and form.gram_bytes <= max_kernel_bytes
        P: Any = np.zeros((1, 1))
        Q: Any = None
        if linear or not use_matrix:
            if form.gram is not None:
                raise MemoryError(f"the precomputed {form.m} x {form.m} kernel matrix does not "
                                  f"fit in max_kernel_bytes={max_kernel_bytes}.")
            P = form.points()
        if linear:  # rows of S P: the working-set blocks of K are Q_W Q_W^T (eq. 14)
            Q = ((sp.diags(form.signs) @ P).tocsr() if sp.issparse(P)
                 else form.signs[:, None] * P)
        Kmat = form.signed_gram() if use_matrix else None
        P_dense = (np.zeros((1, 1)) if use_matrix or linear
                   else (P.toarray() if sp.issparse(P) else np.ascontiguousarray(P)))
        sqn = (np.einsum("ij,ij->i", P_dense, P_dense) if P_dense.shape[0] > 1
               else np.zeros(1))
        exact_blocks = linear and linear_exact
        if exact_blocks:  # v = 0 is feasible; the first block moves it
            alpha, beta, delta = np.zeros(form.n_pos), np.zeros(form.n_tilde), 0.0
        else:
            alpha, beta, delta = (_sparse_start if linear else _initial_point)(form, rng)
        ws_size = (max(400, form.m // 50) if working_set_size is None
                   else int(working_set_size))
        run = cls(form, rng, max_kernel_bytes, linear, use_matrix, exact_blocks,
                  check_feasibility, Kmat, P, Q, P_dense, sqn, form.diagonal(),
                  np.concatenate([alpha, beta]), np.zeros(form.m), None,
                  np.array([delta, float(beta @ beta)]), ws_size)
        run.s, run.w = run.exact_scores()
        return run

    @property
    def delta(self) -> float | None:
        return self.state[0] if self.form.family == "patmat" else None

    def exact_scores(self) -> tuple[np.ndarray, np.ndarray | None]:
        return _exact_scores(self.form, self.v, self.Kmat, self.P, self.max_kernel_bytes)

    def working_set(self, epoch: int, shrinking: bool) -> np.ndarray:
        """The coordinates of this epoch (:func:`_decomposition_set` for linear models,
        :func:`_working_set` when shrinking kernel models, else all)."""
        if self.linear:
            return _decomposition_set(self.form, self.v, self.s, self.state[0], self.ws_size,
                                      keep_free=self.exact_blocks)
        if shrinking and epoch > 1:
            return _working_set(self.form, self.v, self.s, self.state[0])
        return np.arange(self.form.m)

    def exact_epoch(self, act: np.ndarray) -> None:
        """Linear models, ``block_solver="exact"``: the block's QP solved to optimality
        (:func:`ratecons.solvers.top_block.solve_block`)."""
        form, v, n = self.form, self.v, self.form.n_pos
        na = int(np.searchsorted(act, n))
        a_off = float(v[:n].sum() - v[act[:na]].sum())
        b_off = float(v[n:].sum() - v[act[na:]].sum())
        v_act, block_status = solve_block(form, self.Q[act], v[act], na, self.w, a_off, b_off)
        if block_status in ("Solved", "AlmostSolved") and np.all(np.isfinite(v_act)):
            v[act] = v_act  # otherwise the block keeps its values; W grows
            self.v = v = restore_feasibility(form, v)
        if form.family == "patmat":
            self.state[0] = form.optimal_delta(v[n:])
        if self.check_feasibility:
            self.stats[0] = max(self.stats[0], form.dual_violation(v, self.delta))
        self.s, self.w = self.exact_scores()
        self.iterations += 1

    def pairwise_epoch(self, act: np.ndarray, greedy: bool, group_moves: bool) -> None:
        """Algorithm 2's pairwise updates on the working set ``act`` (compiled,
        :func:`_epochs`), on the block Q_W Q_W^T of a linear model or on the kernel."""
        form, v, n = self.form, self.v, self.form.n_pos
        n_active = act.size
        na = int(np.searchsorted(act, n))
        alpha, beta = v[act[:na]].copy(), v[act[na:]].copy()
        a_off = float(v[:n].sum() - alpha.sum())
        chunk = max(1, n_active // 2)
        if self.linear:  # the block of K on the working set, O(a^2 d)
            Qa = self.Q[act]
            block = Qa @ Qa.T
            block = block.toarray() if sp.issparse(block) else np.asarray(block)
            loop_idx, loop_mat, loop_use = np.arange(n_active), block, True
            chunk = 2 * n_active
        else:
            loop_idx, loop_use = act, self.use_matrix
            loop_mat = self.Kmat if self.Kmat is not None else np.zeros((1, 1))
        if not loop_use:  # columns cost O(a d): keep epochs short enough for time_limit
            chunk = max(1, min(chunk, int(2e8 // max(1, n_active * self.P_dense.shape[1]))))
        spec = form.kernel
        patmat = form.family == "patmat"
        epochs(chunk, int(self.rng.integers(2**31 - 1)), alpha, beta, self.state,
                self.s[act].copy(), self.diag[act], form.C,
                int(form.K) if form.K is not None else 1, form.surrogate == "hinge", patmat,
                form.theta, form.n_tilde * float(form.tau) if patmat else 0.0, loop_idx,
                loop_mat, loop_use, self.P_dense, self.sqn, form.signs,
                spec.code if spec.code < 3 else 0, spec.gamma, spec.degree, spec.coef0,
                self.check_feasibility, greedy, group_moves, a_off, self.stats)
        self.iterations += chunk
        if self.linear:  # w += Q_W^T (v_W' - v_W), s = Q w: O(a d + m d), one data pass
            self.w = self.w + np.asarray(
                Qa.T @ (np.concatenate([alpha, beta]) - v[act])).ravel()
            self.s = np.asarray(self.Q @ self.w).ravel()
        v[act[:na]] = alpha
        v[act[na:]] = beta
        if not self.linear:
            self.s, self.w = self.exact_scores()

    def bounds(self) -> tuple[float, float, float, float]:
        """The primal (6)/(9) (for linear models the best along the ray of w(v),
        :func:`_scaled_primal`) with its scale, the dual (7a)/(10a) and the relative gap."""
        form = self.form
        if self.linear:
            primal, scale = _scaled_primal(form, self.s, float(self.v @ self.s))
        else:
            primal, scale = form.primal_from_dual_scores(self.v, self.s), 1.0
        dual = form.dual_c(self.v, self.s, self.delta)
        return primal, scale, dual, (primal - dual) / max(abs(primal), 1e-300)

    def solution(self, tracker: Tracker, primal: float, scale: float, dual: float,
                 gap: float) -> Solution:
        """The Solution at the last point (for linear models the model is c w(v), the upper
        bound's point)."""
        form, n, lam = self.form, self.form.n_pos, self.form.lam
        s, w = (scale * self.s, scale * self.w) if self.linear else (self.s, self.w)
        details = {"epochs": tracker.iterations, "iterations": self.iterations,
                   "relative_gap": gap, "primal_scale": scale,
                   "kernel_matrix": ("working-set blocks (linear)" if self.linear
                                     else "precomputed" if self.use_matrix
                                     else "computed by rows"),
                   "accepted_steps": int(self.stats[1]), "C": form.C}
        if self.check_feasibility:
            details["max_violation_any_step"] = float(self.stats[0])
        primal_vars: dict[str, Any] = {"alpha": self.v[:n], "beta": self.v[n:],
                                       "t": form.threshold_from_scores(-s[n:]), "scores": s}
        if form.family == "patmat":
            primal_vars["delta"] = float(self.state[0])
        if w is not None:
            primal_vars["w"] = w
        return tracker.solution(
            primal_vars, objective=lam * primal, lower=lam * dual, upper=lam * primal,
            gap=lam * (primal - dual), max_violation=form.dual_violation(self.v, self.delta),
            details=details, advice=f"Relative duality gap {gap:.3g} > tol={tracker.tol:g}.")
