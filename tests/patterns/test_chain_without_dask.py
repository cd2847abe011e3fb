"""The structured chain on in-memory data does not import Dask.

``chain_points.on_client`` (every MM step's anchor) imported the Dask module of the inner
maximization to gather scores held on workers, even when none were: the first structured solve
of a process on NumPy data paid Dask's import (the composition below, fresh processes
alternating, load 6-7: 0.66-0.78 s against 0.48-0.50 s without it; 0.50 against 0.26 s in a
quieter run).
"""

import os
import pathlib
import subprocess
import sys

import ratecons

_SOLVE = """
import sys, warnings
import numpy as np
import ratecons as rc

rng = np.random.default_rng(0)
X = rng.normal(size=(600, 5))
y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
D = rc.Dataset(X, y)
problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],
                     model=rc.LinearModel(l2=1e-3, l1=1e-3))
warnings.simplefilter("ignore")
result = problem.solve("structured")
print(result.status, result.certificate.details["mm_iterations"], "dask" in sys.modules)
"""


def test_structured_chain_on_numpy_data_does_not_import_dask():
    package_root = str(pathlib.Path(ratecons.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [package_root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _SOLVE], capture_output=True, text=True,
                         check=True, env=env, cwd=package_root)
    status, mm_steps, dask_loaded = out.stdout.split()
    assert status == "optimal"
    assert int(mm_steps) >= 2  # MM steps were taken: every one gathers its anchor's scores
    assert dask_loaded == "False"
