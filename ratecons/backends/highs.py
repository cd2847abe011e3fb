"""The one adapter that owns highspy: load a :class:`MatrixLP`, solve, edit, read results.

A :class:`MatrixLP` with a quadratic term ``P`` is passed as a HiGHS QP (its Hessian).

Dual sign convention of ratecons (fixed here, once): for a *minimization*, ``row_dual[i]`` is
the derivative of the optimal value with respect to the active bound of row i, as HiGHS reports
it: >= 0 at an active lower bound and <= 0 at an active upper bound. For a maximization HiGHS
reverses these signs; :class:`LPResult` undoes that so the convention above always holds with
respect to the *minimization* of -c @ x. Reduced costs (``col_dual``) follow the same rule.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .. import limits, settings
from ..canonical.matrix_lp import MatrixLP
from ..errors import SolverError, UnknownOptionError
from ..interrupts import call_interruptibly
from .atomic_file import atomic_path

__all__ = ["HighsLP", "LPResult", "silence_banner", "solve_lp"]

_BANNER_SILENCED = False


def _highspy():
    import highspy  # local import: this module is the only one that touches highspy

    silence_banner()  # before this module's first solver object
    return highspy


def silence_banner() -> None:
    """HiGHS prints a two-line banner on standard output when the process creates its first
    solver object, before any option can turn output off (also when CVXPY creates it). Create
    that first object here with file descriptor 1 pointed at /dev/null, once per process."""
    global _BANNER_SILENCED
    if _BANNER_SILENCED:
        return
    _BANNER_SILENCED = True
    import highspy as hp

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            hp.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _status_map() -> dict:
    hs = _highspy().HighsModelStatus
    return {
        hs.kOptimal: settings.OPTIMAL,
        hs.kInfeasible: settings.INFEASIBLE,
        hs.kUnbounded: settings.UNBOUNDED,
        hs.kUnboundedOrInfeasible: settings.INFEASIBLE,
        hs.kTimeLimit: settings.TIME_LIMIT,
        hs.kIterationLimit: settings.ITERATION_LIMIT,
    }


def _floats(values: np.ndarray | list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _entries(matrix: sp.csr_matrix | sp.csc_matrix) -> tuple[int, np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """The entries of the rows (CSR) or columns (CSC) being added, as HiGHS's ``addRows`` /
    ``addCols`` take them: count, starts, indices (int32) and values."""
    return (int(matrix.nnz), matrix.indptr[:-1].astype(np.int32),
            matrix.indices.astype(np.int32), matrix.data)


@dataclass
class LPResult:
    """Solution of a :class:`MatrixLP` (objective includes the offset)."""

    status: str
    objective: float
    x: np.ndarray
    row_value: np.ndarray
    row_dual: np.ndarray
    col_dual: np.ndarray
    iterations: int
    solve_time: float
    raw_status: str = ""
    info: dict = field(default_factory=dict)


class HighsLP:
    """A HiGHS model kept alive between solves, so rows and columns can be added and the next
    ``solve()`` hot-starts from the previous basis (simplex only).

    Parameters
    ----------
    lp : MatrixLP
    solver : {"simplex", "ipm", "choose"}
        HiGHS' ``solver`` option; only simplex warm-starts after edits.
    time_limit : float, optional
    options : dict, optional
        Further HiGHS options (name -> value); unknown names raise.
    budgeted : bool, default True
        Whether the solve's limits (:mod:`ratecons.limits`: the time left, the backend
        iteration cap) apply. The small auxiliary LPs that a method's own loop solves at each
        iteration pass False: that loop checks the budget itself.
    """

    SOLVERS = ("simplex", "ipm", "choose")

    def __init__(
        self,
        lp: MatrixLP,
        solver: str = "simplex",
        time_limit: float | None = None,
        options: dict | None = None,
        budgeted: bool = True,
    ) -> None:
        hp = _highspy()
        if solver not in self.SOLVERS:
            raise UnknownOptionError(f"unknown HiGHS solver {solver!r}; use one of {self.SOLVERS}.")
        self.maximize = lp.maximize
        self.n_cols = lp.n_cols
        self.n_rows = lp.n_rows
        self.quadratic = lp.P is not None
        self.offset = lp.offset
        self._h = hp.Highs()
        self._h.setOptionValue("output_flag", False)
        self._h.setOptionValue("solver", solver)
        self._h.HandleUserInterrupt = True  # cancelSolve() stops run() (interrupt callback)
        self.time_limit = time_limit
        self.budgeted = budgeted
        cap = limits.active().backend_iterations if budgeted else None
        if cap is not None:
            for option in ("simplex_iteration_limit", "ipm_iteration_limit"):
                self._h.setOptionValue(option, int(cap))
        for key, value in (options or {}).items():
            if self._h.setOptionValue(key, value) != hp.HighsStatus.kOk:
                raise UnknownOptionError(f"HiGHS rejected option {key}={value!r}.")
        if lp.P is None:
            self._h.passModel(self._to_highs(lp))
        else:
            model = hp.HighsModel()
            model.lp_ = self._to_highs(lp)
            model.hessian_ = _hessian(lp.P)
            self._h.passModel(model)

    @staticmethod
    def _to_highs(lp: MatrixLP):
        hp = _highspy()
        A = sp.csc_matrix(lp.A)
        h = hp.HighsLp()
        h.num_col_, h.num_row_ = lp.n_cols, lp.n_rows
        h.col_cost_ = lp.c
        h.col_lower_, h.col_upper_ = lp.col_lower, lp.col_upper
        h.row_lower_, h.row_upper_ = lp.row_lower, lp.row_upper
        h.offset_ = lp.offset
        h.sense_ = hp.ObjSense.kMaximize if lp.maximize else hp.ObjSense.kMinimize
        h.a_matrix_.format_ = hp.MatrixFormat.kColwise
        h.a_matrix_.start_ = A.indptr.astype(np.int32)
        h.a_matrix_.index_ = A.indices.astype(np.int32)
        h.a_matrix_.value_ = A.data
        if lp.col_names is not None:
            h.col_names_ = list(lp.col_names)
        if lp.row_names is not None:
            h.row_names_ = list(lp.row_names)
        return h

    @property
    def highs(self):
        """The underlying ``highspy.Highs`` (for MPS export and basis transfer)."""
        return self._h

    def add_rows(self, A_rows: sp.spmatrix, lower: np.ndarray, upper: np.ndarray) -> None:
        """Append rows ``lower <= A_rows @ x <= upper`` (A_rows has ``n_cols`` columns)."""
        R = sp.csr_matrix(A_rows, dtype=np.float64)
        if R.shape[0]:
            self._h.addRows(R.shape[0], _floats(lower), _floats(upper), *_entries(R))
            self.n_rows += R.shape[0]

    def add_cols(
        self, cost: np.ndarray, lower: np.ndarray, upper: np.ndarray, A_cols: sp.spmatrix
    ) -> None:
        """Append columns with objective ``cost``, bounds and entries ``A_cols`` (n_rows rows)."""
        C = sp.csc_matrix(A_cols, dtype=np.float64)
        if C.shape[1]:
            self._h.addCols(C.shape[1], _floats(cost), _floats(lower), _floats(upper),
                            *_entries(C))
            self.n_cols += C.shape[1]

    def delete_rows(self, rows: np.ndarray) -> None:
        """Remove rows by index (the remaining rows keep their order)."""
        rows = np.asarray(rows, dtype=np.int32)
        if rows.size:
            self._h.deleteRows(int(rows.size), rows)
            self.n_rows -= int(rows.size)

    def set_basis(self, col_basic: np.ndarray, row_basic: np.ndarray) -> None:
        """Start the next simplex solve from this basis: the flagged columns and rows are
        basic, the others nonbasic at a finite bound (lower first; zero when free). HiGHS
        repairs a singular guess; a guess of the wrong size raises."""
        hp = _highspy()
        col_basic, row_basic = np.asarray(col_basic, bool), np.asarray(row_basic, bool)
        if col_basic.size != self.n_cols or row_basic.size != self.n_rows:
            raise ValueError(f"a basis needs {self.n_cols} column and {self.n_rows} row flags; "
                             f"got {col_basic.size} and {row_basic.size}.")
        lp = self._h.getLp()
        S = hp.HighsBasisStatus

        def statuses(basic, lower, upper):
            lower, upper = np.asarray(lower), np.asarray(upper)
            at = np.where(np.isfinite(lower), 0, np.where(np.isfinite(upper), 1, 2))
            names = (S.kLower, S.kUpper, S.kZero)
            return [S.kBasic if b else names[a] for b, a in zip(basic, at, strict=True)]

        basis = hp.HighsBasis()
        basis.col_status = statuses(col_basic, lp.col_lower_, lp.col_upper_)
        basis.row_status = statuses(row_basic, lp.row_lower_, lp.row_upper_)
        basis.valid = True
        if self._h.setBasis(basis) != hp.HighsStatus.kOk:
            raise SolverError("HiGHS rejected the starting basis.")

    def solve(self) -> LPResult:
        """Run HiGHS and translate its answer (status, values, duals in ratecons' convention)."""
        budget = min(limits.active().remaining() if self.budgeted else np.inf,
                     np.inf if self.time_limit is None else float(self.time_limit))
        if np.isfinite(budget):
            self._h.setOptionValue("time_limit", max(budget, 1e-6))
        start = time.perf_counter()
        try:  # in a worker thread: Ctrl-C reaches the caller even during presolve
            call_interruptibly(self._h.run)
        except KeyboardInterrupt:
            self._h.cancelSolve()  # the abandoned run stops at its next iteration
            raise
        elapsed = time.perf_counter() - start
        model_status = self._h.getModelStatus()
        status = _status_map().get(model_status)
        raw = self._h.modelStatusToString(model_status)
        if status is None:
            _, algorithm = self._h.getOptionValue("solver")
            what = ("a QP (HiGHS's active-set QP solver, whatever solver= says)"
                    if self.quadratic else f"an LP (solver={algorithm!r})")
            advice = ("method='structured' or 'generic' solve a chain's QP steps (an l2 term or a "
                      "kernel model)" if self.quadratic else
                      "try another HiGHS algorithm (solver='simplex', 'ipm' or 'choose') or "
                      "standardized features; method='structured' or 'generic' solve a chain's "
                      "steps, method='ccg' a minimax risk LP by smaller LPs")
            raise SolverError(
                f"HiGHS stopped with status {raw!r} after {elapsed:.1f} s on {what} of "
                f"{self.n_rows} rows x {self.n_cols} columns without a usable solution: "
                f"{advice}.")
        info = self._h.getInfo()
        iterations = int(info.simplex_iteration_count) + int(info.ipm_iteration_count)
        if status in (settings.INFEASIBLE, settings.UNBOUNDED):
            nan_c, nan_r = np.full(self.n_cols, np.nan), np.full(self.n_rows, np.nan)
            return LPResult(status, np.nan, nan_c, nan_r, nan_r, nan_c, iterations, elapsed, raw)
        sol = self._h.getSolution()
        x = np.array(sol.col_value)
        row_value = np.array(sol.row_value)
        sign = -1.0 if self.maximize else 1.0
        row_dual = sign * np.array(sol.row_dual)
        col_dual = sign * np.array(sol.col_dual)
        objective = float(info.objective_function_value)
        return LPResult(status, objective, x, row_value, row_dual, col_dual, iterations,
                        elapsed, raw)

    @classmethod
    def read(cls, path: str, solver: str = "simplex", time_limit: float | None = None) -> HighsLP:
        """Load a model from an ``.mps`` or ``.lp`` file (e.g. one written by :meth:`write`)."""
        hp = _highspy()
        if solver not in cls.SOLVERS:
            raise UnknownOptionError(f"unknown HiGHS solver {solver!r}; use one of {cls.SOLVERS}.")
        self = cls.__new__(cls)
        self._h = hp.Highs()
        self._h.setOptionValue("output_flag", False)
        self._h.setOptionValue("solver", solver)
        self._h.HandleUserInterrupt = True
        self.time_limit = time_limit
        self.budgeted = True
        if self._h.readModel(str(path)) == hp.HighsStatus.kError:
            raise SolverError(f"HiGHS could not read the model file {path!r}.")
        lp = self._h.getLp()
        self.maximize = lp.sense_ == hp.ObjSense.kMaximize
        self.n_cols, self.n_rows, self.offset = lp.num_col_, lp.num_row_, lp.offset_
        return self

    def set_names(self, col_names: list[str] | None = None,
                  row_names: list[str] | None = None) -> None:
        """Name columns and rows (names must be unique and free of spaces for MPS)."""
        for names, count, setter, what in (
            (col_names, self.n_cols, self._h.passColName, "column"),
            (row_names, self.n_rows, self._h.passRowName, "row"),
        ):
            if names is None:
                continue
            if len(names) != count:
                raise SolverError(f"{len(names)} {what} names for {count} {what}s.")
            if len(set(names)) != count:
                raise SolverError(f"{what} names must be unique.")
            for i, name in enumerate(names):
                setter(i, name)

    def write(self, path: str) -> None:
        """Write the current model to ``path`` (``.mps`` or ``.lp``) through HiGHS, atomically:
        a temporary file in the same directory (same extension: HiGHS picks the format from
        it), renamed when complete; Ctrl-C leaves neither a partial file nor a half-overwritten
        one."""
        hp = _highspy()
        with atomic_path(path, suffix=f".tmp{Path(path).suffix}") as tmp:
            status = call_interruptibly(self._h.writeModel, str(tmp))
            if status == hp.HighsStatus.kError:
                raise SolverError(f"HiGHS could not write {path!r} (use a .mps or .lp "
                                  "extension).")


def _hessian(P: sp.spmatrix):
    """HiGHS' Hessian of (1/2) x^T P x: the lower triangle of P, column-wise."""
    hp = _highspy()
    L = sp.csc_matrix(sp.tril(P, format="csc"))
    L.sort_indices()
    h = hp.HighsHessian()
    h.dim_ = int(P.shape[0])
    h.format_ = hp.HessianFormat.kTriangular
    h.start_ = L.indptr.astype(np.int32)
    h.index_ = L.indices.astype(np.int32)
    h.value_ = L.data
    return h


def solve_lp(lp: MatrixLP, solver: str = "simplex", time_limit: float | None = None,
             budgeted: bool = True) -> LPResult:
    """Solve a :class:`MatrixLP` once with HiGHS (``budgeted``: see :class:`HighsLP`)."""
    return HighsLP(lp, solver=solver, time_limit=time_limit, budgeted=budgeted).solve()
