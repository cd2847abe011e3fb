"""The objective an external MPS reader prints: CBC through the binary PuLP ships and GLPK
through swiglpk (the test extra), for the tests that check exported files in every reader."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path


def cbc_path() -> str | None:
    """The CBC binary PuLP ships, or None."""
    try:
        import pulp
    except ImportError:  # pragma: no cover - pulp is in the test extra
        return None
    with warnings.catch_warnings():  # PuLP 3 deprecates the bundled binary's wrapper
        warnings.simplefilter("ignore", DeprecationWarning)
        path = pulp.apis.PULP_CBC_CMD().path
    return path if path and Path(path).exists() else None


def cbc_objective(cbc: str, path: Path, sol: Path) -> float:
    """The objective CBC prints on its standard output ("Optimal objective ...")."""
    out = subprocess.run([cbc, str(path), "solve", "solu", str(sol)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    line = next(line for line in out.splitlines() if line.startswith("Optimal objective"))
    return float(line.split()[2])


def glpk_objective(path: Path) -> float:
    """GLPK's objective through swiglpk (the library glpsol is built on; a test extra)."""
    import swiglpk as glpk

    glpk.glp_term_out(glpk.GLP_OFF)
    lp = glpk.glp_create_prob()
    try:
        assert glpk.glp_read_mps(lp, glpk.GLP_MPS_FILE, None, str(path)) == 0
        parm = glpk.glp_smcp()
        glpk.glp_init_smcp(parm)
        parm.msg_lev = glpk.GLP_MSG_OFF
        assert glpk.glp_simplex(lp, parm) == 0 and glpk.glp_get_status(lp) == glpk.GLP_OPT
        return float(glpk.glp_get_obj_val(lp))
    finally:
        glpk.glp_delete_prob(lp)
