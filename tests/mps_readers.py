"""The objective an external MPS reader prints: CBC through the binary PuLP ships (the test
extra), for the tests that check exported files in every reader."""

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
