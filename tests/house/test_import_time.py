"""`import ratecons` loads no heavy module (its speed: python -m benchmarks.import_time)."""

import subprocess
import sys

from benchmarks.import_time import LAZY, loaded_lazy_modules


def test_import_loads_no_lazy_module():
    assert loaded_lazy_modules() == []


def test_lazy_names_resolve_on_first_use():
    code = ("import sys, ratecons as rc; rc.RateConstrainedClassifier; rc.verify; rc.export_mps; "
            "rc.datasets.load_adult; rc.metrics.auc([0.1, 0.9], [0, 1]); "
            "print('sklearn' in sys.modules, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_lazy_list_names_real_modules():
    import importlib.util

    for name in LAZY:
        if name.startswith("ratecons."):
            assert importlib.util.find_spec(name) is not None, name
