"""The scriptable command line: --version, python -m ratecons, exit codes (0 solved, 1 error,
2 infeasible or not solved to tolerance) in every mode, and --json stdout that is JSON alone for
every problem kind (no solver banner, no prints of the spec file)."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ratecons
import ratecons as rc
from ratecons.cli import EXIT_ERROR, EXIT_NOT_SOLVED, EXIT_SOLVED, main

HEAD = """
import numpy as np
import ratecons as rc
print("a line the spec file prints")
rng = np.random.default_rng(0)
X = rng.normal(size=(80, 3))
y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)
D = rc.Dataset(X, y, groups={"g": np.where(X[:, 1] > 0, "a", "b")})
"""

SPECS = {
    "rates": "problem = rc.Problem(minimize=rc.error_rate(D), subject_to=["
             "rc.positive_rate(D.group('g', 'a')) >= 0.8 * rc.positive_rate(D.group('g', 'b'))])",
    "minimax": "problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D)))",
    "top": "problem = rc.Problem(maximize=rc.tpr_at_top(D, k=3), model=rc.LinearModel(l2=1e-2))",
    "robust": "problem = rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, rho=0.1)))",
    "composed": "problem = rc.Problem(minimize=rc.hinge_loss(D), subject_to=[rc.recall(D) >= 0.7])",
}
INFEASIBLE = ("problem = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=0.0), "
              "subject_to=[rc.positive_rate(D) >= 0.9, rc.positive_rate(D) <= 0.1])")


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ratecons", *args], capture_output=True,
                          text=True, cwd=cwd)


def _spec(tmp_path, body):
    path = tmp_path / "spec.py"
    path.write_text(HEAD + body + "\n")
    return str(path)


def test_version():
    out = _run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"ratecons {ratecons.__version__}"


def test_minimax_json_in_a_fresh_process_has_no_banner(tmp_path):
    """HiGHS prints its banner when a process creates its first solver: a fresh process."""
    out = _run("solve", _spec(tmp_path, SPECS["minimax"]), "--json")
    doc = json.loads(out.stdout)  # the whole of stdout parses: nothing else was printed
    assert out.returncode == EXIT_SOLVED and doc["status"] == "optimal"
    assert "a line the spec file prints" in out.stderr


@pytest.mark.parametrize("kind", list(SPECS))
def test_solve_json_is_json_alone(kind, tmp_path, capfd):
    code = main(["solve", _spec(tmp_path, SPECS[kind]), "--json"])
    out, err = capfd.readouterr()
    doc = json.loads(out)
    assert code == (EXIT_SOLVED if doc["status"] == "optimal" else EXIT_NOT_SOLVED)
    assert doc["model"] is not None and "a line the spec file prints" in err


def test_infeasible_exits_2_in_every_mode(tmp_path, capfd):
    spec = _spec(tmp_path, INFEASIBLE)
    assert main(["solve", spec]) == EXIT_NOT_SOLVED
    capfd.readouterr()
    assert main(["solve", spec, "--json"]) == EXIT_NOT_SOLVED
    doc = json.loads(capfd.readouterr().out)
    assert doc["status"] != "optimal" and doc["model"] is None


def test_errors_exit_1_in_every_mode(tmp_path, capfd):
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('broken spec')\n")
    assert main(["solve", str(bad)]) == EXIT_ERROR
    assert "broken spec" in capfd.readouterr().err
    assert main(["solve", str(bad), "--json"]) == EXIT_ERROR
    said = json.loads(capfd.readouterr().out)  # where the spec failed, and how
    assert said["error"].endswith("bad.py line 1 raised RuntimeError: broken spec (-v shows "
                                  "the traceback)") and said["type"] == "SpecError"
    assert main(["verify", str(tmp_path / "missing.py"), "--json"]) == EXIT_ERROR
    assert "no such spec file" in json.loads(capfd.readouterr().out)["error"]
    out = _run("solve")  # a usage error
    assert out.returncode == EXIT_ERROR and "usage" in out.stderr


def test_a_user_who_passes_data_or_a_bad_number_is_told_what_is_wanted(tmp_path, capfd):
    """A user's `ratecons solve data.csv` ran the CSV as Python ("name 'x0' is not defined"),
    a folder gave "can't find '__main__' module", and `--rtol abc` "invalid _positive value";
    `demo --method nonsense` printed the demo's header before refusing."""
    data = tmp_path / "data.csv"
    data.write_text("x0,x1,label\n1,2,0\n")
    for given in (data, tmp_path):
        assert main(["solve", str(given)]) == EXIT_ERROR
        assert "is not a Python file" in capfd.readouterr().err
    spec = tmp_path / "spec.py"
    spec.write_text(HEAD + SPECS["rates"])
    with pytest.raises(SystemExit):
        main(["verify", str(spec), "--rtol", "abc"])
    assert "--rtol: must be a finite number > 0; got abc" in capfd.readouterr().err
    assert main(["demo", "--method", "nonsense"]) == EXIT_ERROR
    captured = capfd.readouterr()
    assert "unknown method 'nonsense'" in captured.err and "Adult" not in captured.out


def test_verify_json(tmp_path, capfd):
    code = main(["verify", _spec(tmp_path, SPECS["composed"]), "--json"])
    doc = json.loads(capfd.readouterr().out)
    assert code == (EXIT_SOLVED if doc["agrees"] else EXIT_NOT_SOLVED)
    assert doc["status"] == "optimal"


def test_verify_exits_0_only_when_both_results_are_certified(tmp_path, capfd):
    """A user's check: two ``infeasible`` results were "agrees": false (exit 2), while an
    agreement with a reference stopped at ``iteration_limit`` exited 0. Both infeasible now
    agree and confirm; numbers that agree with an uncertified reference confirm nothing."""
    spec = tmp_path / "spec.py"
    spec.write_text(
        "import numpy as np, ratecons as rc\n"
        "rng = np.random.default_rng(3)\n"
        "X = rng.normal(size=(150, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "D = rc.Dataset(X, y, name='cli')\n"
        "problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[\n"
        "    rc.positive_rate(D) <= 0.2, rc.positive_rate(D) >= 0.5],\n"
        "    model=rc.LinearModel(l2=1e-2))\n")
    code = main(["verify", str(spec), "--json"])
    doc = json.loads(capfd.readouterr().out)
    assert doc["status"] == doc["reference_status"] == "infeasible"
    assert doc["agrees"] and doc["confirmed"] and code == EXIT_SOLVED
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    D = rc.Dataset(X, (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int))
    problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.positive_rate(D) <= 0.3],
                         model=rc.LinearModel(l2=1e-2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = rc.verify(problem, rtol=1.0, reference_options={"max_iterations": 1})
    assert report.reference_result.status == "iteration_limit"
    assert report.agrees and not report.confirmed
    assert "confirms nothing" in str(report)


def test_a_spec_that_exits_is_an_error_of_the_spec(tmp_path, capfd):
    """``sys.exit(3)`` in a spec file made the CLI exit 3 with no JSON; it is exit 1 with the
    JSON error, as any exception of the spec."""
    spec = tmp_path / "exits.py"
    spec.write_text("import sys\nsys.exit(3)\n")
    assert main(["solve", str(spec), "--json"]) == EXIT_ERROR
    assert "called sys.exit(3)" in json.loads(capfd.readouterr().out)["error"]
