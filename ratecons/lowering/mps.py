"""Export of LP-representable problems to MPS files, written and read back through HiGHS.

``rc.export_mps(problem, "model.mps")`` writes the problem's full LP with named rows and columns
(for the MRC family: LP (4) or (2.5); see :mod:`ratecons.lowering.mrc_matrix` for the names).
With ``restricted=True`` it writes the last restricted LP of the family's generation method
(the CCG's P_{I,J} of eq. 7 for MRCs), which is much smaller and has the same optimum when the
generation converged. Any solver that reads free MPS can solve the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import NotLinearError, SpecError
from .highs import HighsLP, LPResult

__all__ = ["export_mps", "solve_mps"]


def export_mps(problem: Any, path: str | Path, restricted: bool = False,
               **options: Any) -> dict[str, Any]:
    """Write ``problem`` as an MPS file.

    Parameters
    ----------
    problem : rc.Problem
        A problem whose family has an LP form (``to_matrix_lp``).
    path : str or Path
        Destination; must end in ``.mps`` (or ``.lp`` for the CPLEX LP format).
    restricted : bool, default False
        Write the final restricted LP of the family's generation method instead of the full LP.
    **options
        Options of that generation method (e.g. ``eps1`` for CCG), with ``restricted=True``.

    Returns
    -------
    dict
        ``path``, ``rows``, ``cols`` of the written LP.
    """
    path = Path(path)
    if path.suffix not in (".mps", ".lp"):
        raise SpecError(f"export_mps writes .mps (or .lp) files; got {path.name!r}.")
    family = problem.family
    if restricted:
        if not hasattr(family, "restricted_model"):
            raise SpecError(f"{family.name} problems have no restricted LP to export.")
        if options.get("callback") is not None:
            raise SpecError("export_mps takes method options only.")
        model = family.restricted_model(problem, **options)
    else:
        if options:
            raise SpecError(f"options {sorted(options)} apply to restricted=True only.")
        if not hasattr(family, "to_matrix_lp"):
            raise NotLinearError(
                f"{family.name} problems have no LP form to export; MPS export covers "
                "LP-representable problems."
            )
        model = HighsLP(family.to_matrix_lp(problem))
    model.write(str(path))
    return {"path": str(path), "rows": model.n_rows, "cols": model.n_cols}


def solve_mps(path: str | Path, solver: str = "simplex") -> LPResult:
    """Read an MPS (or LP) file with HiGHS and solve it."""
    return HighsLP.read(str(path), solver=solver).solve()
