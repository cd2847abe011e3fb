"""The robust-learning example runs in its reduced mode and prints both comparisons."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "robust_learning.py"


def test_robust_learning_example_reduced(capsys, tmp_path):
    """Its figure goes where it is asked to (never into the repository by default)."""
    spec = importlib.util.spec_from_file_location("robust_learning_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(quick=True, figure=tmp_path / "figure" / "robust.png")
    assert (tmp_path / "figure" / "robust.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "ERM" in out and "gssg" in out
    assert set(results) == {"adult", "synthetic3000"}
    for runs, erm in results.values():
        assert set(runs) == {"fsg", "pssg", "gssg", "sgd"}
        for samples, errors, res in runs.values():
            assert samples[-1] > samples[0] and 0.0 <= errors.min() <= errors.max() <= 1.0
            assert res.objective < 0.70  # below log 2, the objective at theta = 0
        assert 0.0 < erm["error"] < 0.35

