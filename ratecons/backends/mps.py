"""MPS files: a plain-data LP/QP (:class:`~ratecons.canonical.matrix_lp.MatrixLP`) written,
and solution files read back. This backend only writes and reads files: which program a
problem exports is decided by :func:`ratecons.matrix_chain.export_mps`, beside the matrix
lowering.

The file is free MPS, written row by row as it goes (never as one string) to a temporary file in
the same directory, then renamed. The objective is minimized (no ``OBJSENSE`` section: CBC 2.10
ignores it, measured), and a maximized user objective is negated, which the header comment
states. The objective row has no RHS: readers disagree on its sign (HiGHS and CBC read the
constant as minus the RHS, GLPK 5 otherwise: it printed 1.986 where HiGHS and CBC printed
-0.0137 on one TPR@K file). A nonzero constant is the last column, :data:`CONSTANT_COLUMN`,
fixed at 1 with the constant as its cost, so every reader prints the same objective and the
file stays one self-contained program (the constant is also in the header comment). QUADOBJ
lists the lower triangle of P for the objective c x + (1/2) x P x (HiGHS and CPLEX).

:func:`read_solution_file` reads the column values of HiGHS, CBC and GLPK solution files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..canonical.matrix_lp import MatrixLP
from ..errors import DataError, SpecError
from .atomic_file import atomic_path
from .highs import HighsLP, LPResult

__all__ = ["solve_mps", "write_mps", "read_solution_file"]

#: columns written per buffered chunk
_CHUNK = 2000
#: the column, fixed at 1, whose cost is the objective constant (written when it is nonzero)
CONSTANT_COLUMN = "objective_constant"


def _num(v: float) -> str:
    return repr(float(v))


def _row_kinds(lp: MatrixLP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MPS row type (E, L, G, N), RHS and RANGES value of every row."""
    lo, hi = lp.row_lower, lp.row_upper
    kind = np.full(lp.n_rows, "L", dtype="<U1")
    rhs = np.where(np.isfinite(hi), hi, 0.0)
    rng = np.full(lp.n_rows, np.nan)
    eq = lo == hi
    g = np.isfinite(lo) & ~np.isfinite(hi)
    both = np.isfinite(lo) & np.isfinite(hi) & ~eq
    free = ~np.isfinite(lo) & ~np.isfinite(hi)
    kind[eq], kind[g], kind[free] = "E", "G", "N"
    rhs[g] = lo[g]
    rng[both] = hi[both] - lo[both]
    return kind, rhs, rng


def _bounds(lp: MatrixLP, names: list[str]) -> Iterator[str]:
    for j, (lo, hi) in enumerate(zip(lp.col_lower.tolist(), lp.col_upper.tolist())):
        n = names[j]
        if lo == hi:
            yield f" FX BND {n} {_num(lo)}\n"
        elif lo == -np.inf and hi == np.inf:
            yield f" FR BND {n}\n"
        else:
            if lo == -np.inf:
                yield f" MI BND {n}\n"
            elif lo != 0.0:
                yield f" LO BND {n} {_num(lo)}\n"
            if hi != np.inf:
                yield f" UP BND {n} {_num(hi)}\n"


def _write(lp: MatrixLP, out: TextIO, objective_name: str, comments: list[str]) -> None:
    col_names = lp.col_names or [f"c{j}" for j in range(lp.n_cols)]
    row_names = lp.row_names or [f"r{i}" for i in range(lp.n_rows)]
    if objective_name in set(row_names):
        raise DataError(f"the objective row name {objective_name!r} is also a constraint name.")
    constant = float(lp.offset)
    if constant != 0.0 and CONSTANT_COLUMN in set(col_names):
        raise DataError(f"the column name {CONSTANT_COLUMN!r} is reserved for the objective "
                        "constant; rename that column.")
    for line in comments:
        out.write(f"* {line}\n")
    if constant != 0.0:
        out.write(f"* objective constant {_num(constant)}: column {CONSTANT_COLUMN} fixed at 1\n")
    out.write(f"NAME {lp.name} FREE\n")  # FREE: CBC (CoinMpsIO) parses free format
    if lp.maximize:
        out.write("OBJSENSE\n    MAX\n")
    kind, rhs, rng = _row_kinds(lp)
    out.write(f"ROWS\n N {objective_name}\n")
    for start in range(0, lp.n_rows, _CHUNK):
        stop = min(start + _CHUNK, lp.n_rows)
        out.write("".join(f" {kind[i]} {row_names[i]}\n" for i in range(start, stop)))
    out.write("COLUMNS\n")
    A = sp.csc_matrix(lp.A)
    indptr, indices, data, c = A.indptr, A.indices, A.data, lp.c
    for start in range(0, lp.n_cols, _CHUNK):
        lines = []
        for j in range(start, min(start + _CHUNK, lp.n_cols)):
            name = col_names[j]
            if c[j] != 0.0:
                lines.append(f" {name} {objective_name} {_num(c[j])}\n")
            for i, v in zip(indices[indptr[j]:indptr[j + 1]].tolist(),
                            data[indptr[j]:indptr[j + 1]].tolist()):
                lines.append(f" {name} {row_names[i]} {v!r}\n")
            if c[j] == 0.0 and indptr[j] == indptr[j + 1]:  # keep empty columns declared
                lines.append(f" {name} {objective_name} 0.0\n")
        out.write("".join(lines))
    if constant != 0.0:
        out.write(f" {CONSTANT_COLUMN} {objective_name} {_num(constant)}\n")
    out.write("RHS\n")
    nz = np.flatnonzero((rhs != 0.0) & (kind != "N"))
    for start in range(0, nz.size, _CHUNK):
        out.write("".join(f" RHS {row_names[i]} {_num(rhs[i])}\n"
                          for i in nz[start:start + _CHUNK].tolist()))
    ranged = np.flatnonzero(~np.isnan(rng))
    if ranged.size:
        out.write("RANGES\n")
        out.write("".join(f" RNG {row_names[i]} {_num(rng[i])}\n" for i in ranged.tolist()))
    out.write("BOUNDS\n")
    out.write("".join(_bounds(lp, col_names)))
    if constant != 0.0:
        out.write(f" FX BND {CONSTANT_COLUMN} 1.0\n")
    if lp.P is not None:
        L = sp.coo_matrix(sp.tril(lp.P))
        order = np.lexsort((L.row, L.col))
        out.write("QUADOBJ\n")
        out.write("".join(f" {col_names[i]} {col_names[j]} {v!r}\n" for i, j, v in zip(
            L.row[order].tolist(), L.col[order].tolist(), L.data[order].tolist())))
    out.write("ENDATA\n")


def write_mps(lp: MatrixLP, path: str | Path, objective_name: str = "objective",
              comments: list[str] | None = None) -> None:
    """Write ``lp`` as free MPS (module docstring), atomically: a temporary file in the same
    directory, renamed when complete."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="ascii",
                                        buffering=1 << 20) as out:
        _write(lp, out, objective_name, comments or [])


def solve_mps(path: str | Path, solver: str = "simplex") -> LPResult:
    """Read an MPS (or LP) file with HiGHS and solve it (LPs and QPs)."""
    return HighsLP.read(str(path), solver=solver).solve()


# ---------------------------------------------------------------------------- solution files
_STATUS_WORDS = {"optimal": settings.OPTIMAL, "infeasible": settings.INFEASIBLE,
                 "unbounded": settings.UNBOUNDED, "time limit": settings.TIME_LIMIT,
                 "iteration limit": settings.ITERATION_LIMIT,
                 "stopped on time": settings.TIME_LIMIT,
                 "stopped on iterations": settings.ITERATION_LIMIT}


def _status(text: str) -> str | None:
    low = text.lower()
    for word, status in _STATUS_WORDS.items():
        if low.startswith(word) or f" {word}" in f" {low}":
            return status
    return None


def _highs_solution(lines: list[str]) -> tuple[str | None, dict[str, float]]:
    status = _status(lines[1]) if len(lines) > 1 else None
    values: dict[str, float] = {}
    for i, line in enumerate(lines):
        if line.startswith("# Columns"):
            count = int(line.split()[2])
            for entry in lines[i + 1:i + 1 + count]:
                name, value = entry.split()[:2]
                values[name] = float(value)
            break
    return status, values


def _cbc_solution(lines: list[str]) -> tuple[str | None, dict[str, float]]:
    status = _status(lines[0].split(" - ")[0])
    values: dict[str, float] = {}
    for line in lines[1:]:
        tokens = line.replace("**", " ").split()
        if len(tokens) >= 3 and tokens[0].isdigit():
            values[tokens[1]] = float(tokens[2])
    return status, values


def _glpk_solution(lines: list[str]) -> tuple[str | None, np.ndarray]:
    """GLPK's plain text format (``glpsol -w``): ``s bas m n p d obj``, ``j col st prim dual``
    (basic solutions), ``s ipt ...``/``j col prim dual`` (interior point), ``s mip ...``/
    ``j col val`` (MIP)."""
    head = next(line.split() for line in lines if line.startswith("s "))
    kind, n = head[1], int(head[3])
    if kind == "mip":
        status = settings.OPTIMAL if head[4] == "o" else None
    else:
        status = settings.OPTIMAL if head[4:6] == ["f", "f"] else (
            settings.INFEASIBLE if head[4] == "n" else None)
    x = np.zeros(n)
    pos = 3 if kind == "bas" else 2
    for line in lines:
        if line.startswith("j "):
            tokens = line.split()
            x[int(tokens[1]) - 1] = float(tokens[pos])
    return status, x


def read_solution_file(path: str | Path) -> tuple[str | None, Any]:
    """The status (the one vocabulary, or None) and column values (name -> value, or an array
    in column order for GLPK, whose files carry no names) of a solution file of HiGHS, CBC or
    GLPK."""
    path = Path(path)
    if not path.exists():
        raise SpecError(f"no solution file at {str(path)!r}.")
    lines = [line.rstrip("\n") for line in path.read_text().splitlines() if line.strip()]
    if not lines:
        raise SpecError(f"the solution file {str(path)!r} is empty.")
    if lines[0].startswith("Model status"):
        return _highs_solution(lines)
    if any(line.startswith("s ") for line in lines) and any(
            line.startswith("c ") or line.startswith("j ") for line in lines):
        return _glpk_solution(lines)
    if " - objective value" in lines[0] or lines[0].split()[0] in ("Optimal", "Infeasible",
                                                                    "Unbounded", "Stopped"):
        return _cbc_solution(lines)
    raise SpecError(
        f"cannot tell the format of the solution file {str(path)!r}: read_solution knows HiGHS "
        "(--solution_file), CBC (solu) and GLPK (glpsol -w) files; pass a dict of column "
        "values otherwise.")
