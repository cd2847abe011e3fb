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
    assert main(["solve", str(tmp_path / "missing.py")]) == 1
    assert "no such spec file" in capsys.readouterr().err
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert main(["solve", str(empty)]) == 1
    assert "variable named 'problem'" in capsys.readouterr().err


def test_a_failing_spec_says_where_and_usage_errors_answer_in_json(tmp_path, spec, capsys):
    """A user's spec raised IndexError and the CLI printed only "list index out of range";
    ``--rtol -1 --json`` printed the usage text and no JSON; ``demo --plot x.txt`` failed
    after both solves."""
    failing = tmp_path / "failing.py"
    failing.write_text("import ratecons as rc\nx = [1]\nprint(x[3])\n")
    assert main(["solve", str(failing)]) == 1
    err = capsys.readouterr().err
    assert f"{failing} line 3 raised IndexError: list index out of range" in err
    assert "-v shows the traceback" in err
    with pytest.raises(SystemExit) as stopped:
        main(["verify", spec, "--rtol", "-1", "--json"])
    assert stopped.value.code == 1
    said = json.loads(capsys.readouterr().out)
    assert said["type"] == "UsageError" and "--rtol" in said["error"]
    with pytest.raises(SystemExit):  # (no --json: the usage text alone, exit 1)
        main(["verify", spec, "--rtol", "-1"])
    assert capsys.readouterr().out == ""
    assert main(["demo", "--plot", str(tmp_path / "x.txt")]) == 1
    assert "end the name with one of them" in capsys.readouterr().err


def test_export_writes_an_mps_file_that_highs_reads_back(tmp_path, capsys):
    from ratecons.backends.highs import HighsLP

    spec = tmp_path / "mrc.py"
    spec.write_text(
        "import numpy as np\nimport ratecons as rc\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.normal(size=(60, 3))\ny = (X[:, 0] > 0).astype(int)\n"
        "problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, y))))\n"
    )
    out = tmp_path / "mrc.mps"
    assert main(["export", str(spec), "-o", str(out)]) == 0
    assert "rows" in capsys.readouterr().out
    namespace: dict = {}
    exec(spec.read_text(), namespace)
    expected = namespace["problem"].solve("lp").objective
    assert HighsLP.read(str(out)).solve().objective == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("argv, verbose", [
    (["demo", "-v"], True), (["-v", "demo"], True), (["demo", "--verbose"], True),
    (["demo"], False), (["solve", "spec.py", "-v"], True), (["-v", "verify", "spec.py"], True),
    (["export", "spec.py"], False)])
def test_verbose_before_or_after_the_command(argv, verbose):
    from ratecons.cli import build_parser

    assert build_parser().parse_args(argv).verbose is verbose


def test_demo_v_runs_the_demo_with_a_trace(monkeypatch):
    import ratecons.cli as cli

    calls = []
    monkeypatch.setattr(cli, "run_demo", lambda **kw: calls.append(kw) or {})
    assert main(["demo", "-v", "--seed", "3"]) == 0
    assert calls[0]["trace"] is True and calls[0]["seed"] == 3


@pytest.mark.parametrize("command", ["demo", "solve", "verify", "export"])
def test_every_seed_option_has_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--seed SEED seed of" in text


def test_flags_an_export_would_ignore_are_refused_before_any_solve(tmp_path, spec, capsys,
                                                                   monkeypatch):
    """A user's `export --method bogus` wrote the file and exited 0 (--method is read by
    --at solve only); `--read SOL -o x.mps` wrote nothing without a word; `--restricted` on a
    score-model problem and `--at solve` on a minimax-risk one failed only after the solve;
    `verify --rtol -1` and `demo --kappa -1` ran. Each is now exit 1 with the reason, and no
    solve runs."""
    import ratecons as rc

    def no_solve(*args, **kwargs):
        raise AssertionError("solved before refusing the flags")

    monkeypatch.setattr(rc.Problem, "solve", no_solve)
    mrc = tmp_path / "mrc.py"
    mrc.write_text("import numpy as np\nimport ratecons as rc\n"
                   "X = np.random.default_rng(0).normal(size=(40, 2)); y = (X[:, 0] > 0) * 1\n"
                   "problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet("
                   "rc.Dataset(X, y))))\n")
    out = str(tmp_path / "x.mps")
    cases = [
        (["export", spec, "-o", out, "--method", "bogus"], "--method chooses the solve"),
        (["export", spec, "--read", "s.sol", "-o", out], "drop -o"),
        (["export", spec, "-o", out, "--at", "solve", "--restricted"],
         "--restricted applies to minimax-risk"),
        (["export", str(mrc), "-o", out, "--at", "solve"], "--at applies to score-model"),
    ]
    for argv, reason in cases:
        assert main(argv) == 1, argv
        assert reason in capsys.readouterr().err, argv
    assert not (tmp_path / "x.mps").exists()
    for argv in (["verify", spec, "--rtol", "-1"], ["verify", spec, "--rtol", "inf"],
                 ["demo", "--kappa", "-1"], ["demo", "--l2", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 1 and "must be" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly(spec, capsys, monkeypatch):
    """`ratecons solve spec.py --json | head -c 10` printed a BrokenPipeError traceback
    twice; the command now stops quietly (exit 1, nothing on standard error)."""
    import io
    import sys

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["solve", spec, "--method", "cvxpy", "--json"]) == 1
    assert capsys.readouterr().err == ""
