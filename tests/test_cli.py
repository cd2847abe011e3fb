"""The command line: solve / verify on spec files, help, errors."""

import json

import pytest

from ratecons.cli import main

SPEC = """
import ratecons as rc
from ratecons.testing import fairness_problem
problem = fairness_problem(n=200, seed=7)
"""


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "spec.py"
    path.write_text(SPEC)
    return str(path)


def test_solve_json(spec, capsys):
    assert main(["solve", spec, "--method", "cvxpy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["method"] == "cvxpy"


def test_solve_prints_plan_and_report(spec, capsys):
    assert main(["solve", spec, "--method", "cvxpy"]) == 0
    out = capsys.readouterr().out
    assert "because:" in out and "constraint" in out


def test_verify_against_itself_with_another_solver(spec, capsys):
    code = main(["verify", spec, "--method", "cvxpy", "--rtol", "1e-6"])
    out = capsys.readouterr().out
    assert "objective_rel_gap" in out and code == 0


@pytest.mark.parametrize("command", ["demo", "solve", "verify", "export"])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage" in capsys.readouterr().out


def test_bad_spec_is_a_clear_error(tmp_path, capsys):
    assert main(["solve", str(tmp_path / "missing.py")]) == 2
    assert "no such spec file" in capsys.readouterr().err
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert main(["solve", str(empty)]) == 2
    assert "variable named 'problem'" in capsys.readouterr().err
