"""Export of every LP/QP-representable problem: the matrix lowering, method='highs', MPS files
solved by external solvers, and solutions read back.

For every kind (rates with l1 / l2, a ratio constraint, hinge loss, TopPushK with l1 / l2,
TPR@tau (tau-FPL and Pat&Mat), a kernel model, a squared loss):

- ``method="highs"`` (the generic chain on the matrix form) agrees with ``method="generic"``
  (CVXPY) to 1e-6 relative (max(1, |ref|), the project's convention);
- the exported file (the hinge relaxation, or the MM step at the result for problems with ramp
  parts) is solved by HiGHS reading it (LPs and QPs), by CBC (PuLP's binary), by GLPK
  (swiglpk) and by glpsol when installed (LPs); the objective each prints is
  ``info["sign"] * result.objective`` within 1e-6;
- ``rc.read_solution`` maps each solver's solution file (and a dict, and an array) back to the
  same objective and report.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import ratecons as rc
from ratecons.backends.highs import HighsLP
from ratecons.backends.mps import solve_mps
from ratecons.matrix_chain import matrix_step
from ratecons.reductions.to_matrix import mps_names
from ratecons.testing import small_composition_data
from tests.mps_readers import cbc_objective, cbc_path, glpk_objective
from tests.shared_data import standardized

N = 120
RTOL = 1e-6


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(N, group="sex", values=("Female", "Male"),
                                  feature_names=["age", "hours per week", "education"])


L1 = rc.LinearModel(l2=0.0, l1=1e-2)
L2 = rc.LinearModel(l2=1e-2)

KINDS = {
    "rates_l1": lambda D: dict(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.75],
                               model=L1),
    "rates_l2": lambda D: dict(minimize=rc.error_rate(D), subject_to=[
        rc.positive_rate(D.group("sex", "Female"))
        >= 0.8 * rc.positive_rate(D.group("sex", "Male"))], model=L2),
    "ratio_l1": lambda D: dict(minimize=rc.hinge_loss(D), subject_to=[rc.precision(D) >= 0.75],
                               model=L1),
    "toppushk_l1": lambda D: dict(maximize=rc.tpr_at_top(D, k=3), model=L1),
    "toppushk_l2": lambda D: dict(maximize=rc.tpr_at_top(D, k=3), model=L2),
    "tpr_tau_l1": lambda D: dict(maximize=rc.tpr_at_quantile(D, tau=0.1), model=L1),
    "patmat_l2": lambda D: dict(maximize=rc.tpr_at_quantile(D, tau=0.2, formulation="pat&mat"),
                                model=L2),
    "kernel_l2": lambda D: dict(maximize=rc.tpr_at_top(D, k=3),
                                model=rc.KernelModel(kernel="gaussian", l2=1e-2)),
    "squared_l2": lambda D: dict(minimize=rc.mean_loss(D, "squared"),
                                 subject_to=[rc.recall(D) >= 0.75], model=L2),
}


@pytest.fixture(scope="module")
def solved(data: rc.Dataset) -> dict:
    out = {}
    for kind, make in KINDS.items():
        problem = rc.Problem(**make(data))
        out[kind] = (problem, problem.solve(method="highs"))
    return out


def _export(problem: rc.Problem, result: rc.Result, path: Path) -> dict:
    at = result if problem.analysis.needs_mm else None
    return rc.export_mps(problem, path, at=at)


@pytest.mark.parametrize("kind", list(KINDS))
def test_highs_agrees_with_the_generic_chain(kind, solved):
    problem, result = solved[kind]
    reference = problem.solve(method="generic")
    assert result.status == reference.status == "optimal"
    assert result.method == "highs"
    assert _rel(result.objective, reference.objective) <= RTOL
    assert result.certificate.max_violation <= 1e-6
    assert np.all(result.solution.dual["v"] >= -1e-9)


@pytest.mark.parametrize("kind", list(KINDS))
def test_exported_file_solves_to_the_result(kind, solved, tmp_path):
    problem, result = solved[kind]
    path = tmp_path / f"{kind}.mps"
    info = _export(problem, result, path)
    expect_qp = kind.endswith("l2")
    assert info["kind"] == ("QP" if expect_qp else "LP")
    assert ("QUADOBJ" in path.read_text()) == expect_qp
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # HiGHS reads the file (LPs and QPs): file objective * sign is the user's objective
    model = HighsLP.read(str(path))
    assert _rel(info["sign"] * model.solve().objective, result.objective) <= RTOL
    # and its solution file maps back to the same result
    sol = tmp_path / f"{kind}.sol"
    model.highs.writeSolution(str(sol), 0)
    back = rc.read_solution(problem, sol)
    assert _rel(back.objective, result.objective) <= RTOL
    assert back.status == ("iteration_limit" if problem.analysis.needs_mm else "optimal")
    assert back.report().rows[0].indicator == pytest.approx(result.report().rows[0].indicator,
                                                            abs=1e-6)


def _highs_objective(path: Path) -> float:
    """The objective HiGHS reports for the file (highspy, independent of ratecons' wrapper)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return float(h.getInfo().objective_function_value)


def _glpsol_objective(glpsol: str, path: Path, report: Path, sol: Path) -> float:
    """The objective glpsol prints in its report ("Objective:  obj = ... (MINimum)")."""
    subprocess.run([glpsol, "--freemps", str(path), "-o", str(report), "-w", str(sol)],
                   check=True, capture_output=True, timeout=60)
    line = next(line for line in report.read_text().splitlines()
                if line.startswith("Objective:"))
    return float(line.split("=")[1].split()[0])


@pytest.mark.parametrize("kind", [k for k in KINDS if not k.endswith("l2")])
def test_every_reader_prints_the_same_objective(kind, solved, tmp_path):
    """issue 32: the file objective printed by HiGHS, CBC and GLPK is sign * result.objective
    (the objective row has no RHS; the constant is a column fixed at 1)."""
    problem, result = solved[kind]
    path = tmp_path / f"{kind}.mps"
    info = _export(problem, result, path)
    text = path.read_text()
    rhs = text.split("\nRHS\n")[1].split("\nBOUNDS\n")[0]
    assert not any(line.split()[1] == "obj" for line in rhs.splitlines() if line.strip())
    target = info["sign"] * result.objective
    assert abs(_highs_objective(path) - target) <= RTOL
    assert abs(glpk_objective(path) - target) <= RTOL
    cbc = cbc_path()
    assert cbc is not None, "PuLP's CBC binary (test extra) is missing"
    sol = tmp_path / "cbc.sol"
    assert abs(cbc_objective(cbc, path, sol) - target) <= RTOL
    assert _rel(rc.read_solution(problem, sol).objective, result.objective) <= RTOL
    glpsol = shutil.which("glpsol")
    if glpsol is not None:  # Debian's glpk-utils: the command line prints the same number
        sol = tmp_path / "glpk.sol"
        assert abs(_glpsol_objective(glpsol, path, tmp_path / "glpk.txt", sol) - target) <= RTOL
        assert _rel(rc.read_solution(problem, sol).objective, result.objective) <= RTOL


def test_objective_constant_is_a_fixed_column(solved, tmp_path):
    problem, _ = solved["toppushk_l1"]
    lp = matrix_step(problem)[0].lp
    assert lp.offset != 0.0
    info = rc.export_mps(problem, tmp_path / "t.mps")
    lines = (tmp_path / "t.mps").read_text().splitlines()
    assert f"* objective constant {lp.offset!r}: column objective_constant fixed at 1" in lines
    assert f" objective_constant obj {lp.offset!r}" in lines
    assert " FX BND objective_constant 1.0" in lines
    # the file's columns, as every reader counts them: the program's and the constant's
    assert info["cols"] == lp.n_cols + 1 == HighsLP.read(str(tmp_path / "t.mps")).highs.getNumCol()
    # and the header's line says the same count
    assert any(f"with {lp.n_cols + 1} columns (one fixed at 1" in line for line in lines[:5])
    assert sum(line.startswith(" objective_constant ") for line in lines) == 1


def test_read_solution_takes_dicts_and_arrays(solved):
    problem, result = solved["rates_l1"]
    step, _ = matrix_step(problem, at=result)
    res = HighsLP(step.lp).solve()
    by_name = dict(zip(step.lp.col_names, res.x))
    for values in (by_name, res.x):
        back = rc.read_solution(problem, values)
        assert _rel(back.objective, result.objective) <= RTOL
        assert back.status == "iteration_limit"  # one MM step, no status given
        np.testing.assert_allclose(back.decision_function(problem.analysis.datasets[0].X),
                                   result.decision_function(problem.analysis.datasets[0].X),
                                   atol=1e-6)
    with pytest.raises(rc.SpecError, match="none of the model's columns"):
        rc.read_solution(problem, {"x": 1.0})
    with pytest.raises(rc.SpecError, match="values"):
        rc.read_solution(problem, np.zeros(2))
    # a user's NaN and inf were read into a model that predicted (objective nan)
    for bad in (np.nan, np.inf):
        with pytest.raises(rc.DataError, match="finite values"):
            rc.read_solution(problem, {**by_name, step.lp.col_names[0]: bad})
    # a misnamed column of a linear model: its names, not a kernel's draw
    with pytest.raises(rc.SpecError, match="named as the training data's columns"):
        rc.read_solution(problem, {"w[Age]": 1.0, "b": 0.0})


def test_an_anchor_must_be_a_score_models_result(solved, tmp_path):
    """A minimax risk classifier's result (w and b None) was taken as the MM anchor and the
    file written as "MM step at an anchor"."""
    problem, _ = solved["rates_l1"]
    X, y = problem.analysis.datasets[0].X, problem.analysis.datasets[0].y
    mrc = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, y)))).solve("lp")
    with pytest.raises(rc.SpecError, match="result of a score-model problem"):
        rc.export_mps(problem, tmp_path / "step.mps", at=mrc)


def test_a_kernel_solution_is_read_under_the_exports_draw_only(solved, tmp_path):
    """A user read a Nystrom export (kernel_points=50, seed=3) back with the defaults or
    another seed: the absent columns read as 0 (or the same names under another sample) and
    gave another model and objective, silently (0.600 in the file, 0.675 read back). The
    draw is in the psi columns' names; a solution of another draw is refused, and the header
    and warning name the export's seed."""
    problem = solved["kernel_l2"][0]
    with pytest.warns(rc.ApproximationWarning, match=r"\(seed 3\)"):
        rc.export_mps(problem, tmp_path / "k.mps", kernel_points=50, seed=3)
    lines = (tmp_path / "k.mps").read_text().splitlines()
    assert not any("(seed 0)" in line for line in lines if line.startswith("* "))
    model = HighsLP.read(str(tmp_path / "k.mps"))
    objective = model.solve().objective
    model.highs.writeSolution(str(tmp_path / "k.sol"), 0)
    assert "w[nystrom50s3:psi0]" in (tmp_path / "k.sol").read_text()
    back = rc.read_solution(problem, tmp_path / "k.sol", kernel_points=50, seed=3)
    assert _rel(back.objective, -objective) <= RTOL  # a maximized TPR@K
    for other in (dict(kernel_points=50, seed=0), dict(), dict(kernel_points=40, seed=3)):
        with pytest.raises(rc.SpecError, match="kernel_points and seed"):
            rc.read_solution(problem, tmp_path / "k.sol", **other)
    with pytest.raises(rc.SpecError, match="seed=None"):
        rc.read_solution(problem, tmp_path / "k.sol", kernel_points=50, seed=None)
    # an array has no names to tell the draw: refused for a sampled expansion
    values = np.asarray(model.highs.getSolution().col_value)
    with pytest.raises(rc.SpecError, match="not from an array"):
        rc.read_solution(problem, values, kernel_points=50, seed=3)


def test_a_random_features_export_reads_back(data, tmp_path):
    """The random-features kernel map had no transform matrix, and read_solution failed with
    an AttributeError on every such export; its draw is in the names as for Nystrom."""
    problem = rc.Problem(minimize=rc.hinge_loss(data), model=rc.KernelModel(
        kernel="gaussian", l2=1e-1, approximation="random_features"))
    with pytest.warns(rc.ApproximationWarning):
        rc.export_mps(problem, tmp_path / "rf.mps", kernel_points=40, seed=5)
    model = HighsLP.read(str(tmp_path / "rf.mps"))
    objective = model.solve().objective
    model.highs.writeSolution(str(tmp_path / "rf.sol"), 0)
    assert "w[fourier40s5:psi0]" in (tmp_path / "rf.sol").read_text()
    back = rc.read_solution(problem, tmp_path / "rf.sol", kernel_points=40, seed=5)
    assert _rel(back.objective, objective) <= RTOL
    with pytest.raises(rc.SpecError, match="kernel_points and seed"):
        rc.read_solution(problem, tmp_path / "rf.sol", kernel_points=40, seed=6)


def test_names_follow_the_users_expressions(solved, tmp_path):
    problem, result = solved["rates_l2"]
    step, _ = matrix_step(problem, at=result)
    cols, rows = step.lp.col_names, step.lp.row_names
    assert cols[:4] == ["w[age]", "w[hours_per_week]", "w[education]", "b"] or \
        cols[:4] == ["w[age]", "w[hoursperweek]", "w[education]", "b"]
    assert any(c.startswith("xi+[syn:") for c in cols)
    assert rows[step.constraint_rows[0]].startswith("positive_rate(syn[sex=Female])")
    for names in (cols, rows):
        assert len(set(names)) == len(names)
        assert all(0 < len(n) <= 255 and " " not in n for n in names)


def test_mps_names_are_unique_short_and_spaceless():
    raw = ["a b", "ab", "ab", "x" * 300, "x" * 300, "", "é"]
    names = mps_names(raw)
    assert names[:3] == ["ab", "ab~2", "ab~3"]
    assert len(set(names)) == len(names)
    assert all(0 < len(n) <= 255 and n.isascii() and " " not in n for n in names)


@pytest.mark.parametrize("make, atom", [
    (lambda D: dict(minimize=rc.logistic_loss(D)), "mean_loss(syn[all], 'logistic')"),
    (lambda D: dict(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, phi="kl", rho=0.1))),
     "exponential cone"),
    (lambda D: dict(minimize=rc.error_rate(D), subject_to=[rc.worst_case(
        rc.recall(D), rc.PhiDivergenceBall(D.positives, phi="chi2", rho=0.1)) >= 0.7]),
     "second-order cone"),
    (lambda D: dict(minimize=rc.error_rate(D),
                    subject_to=[rc.mean_loss(D, "squared") <= 0.8]), "QCQP"),
])
def test_not_lp_or_qp_names_the_atom(data, make, atom, tmp_path):
    problem = rc.Problem(**make(data))
    with pytest.raises(rc.NotLinearError, match="not an LP or QP") as err:
        rc.export_mps(problem, tmp_path / "x.mps")
    assert atom in str(err.value) and "method='generic'" in str(err.value)
    with pytest.raises(rc.NotLinearError):
        problem.solve(method="highs")
    assert not list(tmp_path.iterdir())


def test_solver_option_and_method_listing(solved, data):
    problem, result = solved["toppushk_l1"]
    ipm = problem.solve(method="highs", solver="ipm")
    assert _rel(ipm.objective, result.objective) <= RTOL
    with pytest.raises(rc.UnknownOptionError, match="highs"):
        problem.solve(method="nope")
    with pytest.raises(rc.SpecError, match="export_mps writes .mps"):
        rc.export_mps(problem, "x.txt")


def test_mrc_export_solves_by_cbc(tmp_path):
    cbc = cbc_path()
    if cbc is None:
        pytest.skip("CBC (PuLP) not installed")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, y, name="m"))))
    result = problem.solve(method="lp")
    path = tmp_path / "mrc.mps"
    rc.export_mps(problem, path)
    sol = tmp_path / "mrc.sol"
    subprocess.run([cbc, str(path), "solve", "solu", str(sol)], check=True,
                   capture_output=True, timeout=60)
    assert _rel(float(sol.read_text().splitlines()[0].split()[-1]), result.objective) <= RTOL
    assert _rel(solve_mps(path).objective, result.objective) <= 1e-9


def test_cli_export_at_solve_and_read(tmp_path, capsys):
    from ratecons.cli import main

    spec = tmp_path / "spec.py"
    spec.write_text(
        "import numpy as np, ratecons as rc\n"
        "rng = np.random.default_rng(1)\n"
        "X = rng.normal(size=(80, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)\n"
        "D = rc.Dataset(X, y, name='cli')\n"
        "problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],\n"
        "                     model=rc.LinearModel(l2=0, l1=1e-2))\n")
    out = tmp_path / "cli.mps"
    assert main(["export", str(spec), "-o", str(out), "--at", "solve"]) == 0
    text = capsys.readouterr().out
    assert "solved by cvxpy" in text and "LP" in text  # auto, 80 rows
    model = HighsLP.read(str(out))
    res = model.solve()
    sol = tmp_path / "cli.sol"
    model.highs.writeSolution(str(sol), 0)
    # one MM step read back is `iteration_limit` (not a certified fixed point): exit 2
    assert main(["export", str(spec), "--read", str(sol)]) == 2
    report = capsys.readouterr().out
    assert "recall" in report
    objective = float(text.split("objective ")[1].split()[0])
    assert _rel(res.objective, objective) <= RTOL


@pytest.mark.slow
def test_real_data_rates_with_l1_and_l2(tmp_path):
    """Diabetes (shared/data), recall floor, l1 (LP) and l2 (QP): highs = generic (1e-6), and
    the file at the result is the next MM step: its optimum is the CVXPY lowering's optimum of
    the same step (an independent lowering, 1e-6) and at most the result's objective (the
    majorizer is tight at the anchor)."""
    from ratecons.datasets import load_csv
    from ratecons.reductions.kernelize import kernelize
    from ratecons.reductions.to_cvxpy import pick_solver, solve_step
    from ratecons.reductions.to_matrix import anchor_of

    path = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "diabetes.csv"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    raw = load_csv(path)
    X = np.asarray(raw.X, dtype=float)
    D = rc.Dataset((X - X.mean(0)) / X.std(0), raw.y, name="diabetes")
    for model in (rc.LinearModel(l2=0.0, l1=1e-3), rc.LinearModel(l2=1e-3)):
        problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],
                             model=model)
        result = problem.solve(method="highs")
        reference = problem.solve(method="generic")
        assert result.status == reference.status == "optimal"
        assert _rel(result.objective, reference.objective) <= RTOL
        info = rc.export_mps(problem, tmp_path / "d.mps", at=result)
        from_file = info["sign"] * solve_mps(tmp_path / "d.mps").objective
        analysis = problem.analysis
        psi = {id(d): kernelize(model, analysis.datasets).apply(d.X) for d in analysis.datasets}
        cvx = solve_step(analysis, psi, anchor_of(analysis, result),
                         result.certificate.details["step_bounds"],
                         pick_solver(analysis, None))
        assert _rel(from_file, cvx.objective) <= RTOL
        assert from_file <= result.objective + 1e-9


def test_export_at_a_result_without_a_model_says_why(tmp_path, capsys):
    """``export_mps(at=result)`` on a solve that found no model raised a bare AttributeError
    ('NoneType' has no 'decision_function'), and ``ratecons export --at solve`` exited 1 with
    it: now the result's own SolverError (status, what to do) and exit 2 (not solved)."""
    from ratecons.cli import main

    source = (
        "import numpy as np, ratecons as rc\n"
        "rng = np.random.default_rng(1)\n"
        "X = rng.normal(size=(80, 2)); y = (X[:, 0] > 0).astype(int)\n"
        "D = rc.Dataset(X, y, name='cli')\n"
        "problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[\n"
        "    rc.positive_rate(D) >= 0.6, rc.positive_rate(D) <= 0.4],\n"
        "    model=rc.LinearModel(l2=0, l1=1e-2))\n")
    spec = tmp_path / "spec.py"
    spec.write_text(source)
    namespace: dict = {}
    exec(source, namespace)
    problem = namespace["problem"]
    result = problem.solve(method="highs")
    assert result.status == "infeasible" and not result.has_model
    with pytest.raises(rc.SolverError, match="no model to use: the solve ended with status "
                                             "'infeasible'"):
        rc.export_mps(problem, tmp_path / "x.mps", at=result)
    assert main(["export", str(spec), "-o", str(tmp_path / "y.mps"), "--at", "solve"]) == 2
    captured = capsys.readouterr()
    assert "status infeasible" in captured.out and "no model to write the step at" in captured.err
    assert not (tmp_path / "y.mps").exists()


def test_export_at_solve_refuses_a_problem_without_lp_form_before_solving(tmp_path, capsys,
                                                                          monkeypatch):
    """A robust hinge loss has no LP/QP form: ``--at solve`` solved it first and refused only
    then; it refuses at once (exit 1), as the export without ``--at`` does."""
    from ratecons.cli import main

    spec = tmp_path / "spec.py"
    spec.write_text(
        "import numpy as np, ratecons as rc\n"
        "rng = np.random.default_rng(2)\n"
        "X = rng.normal(size=(120, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "D = rc.Dataset(X, y, name='cli')\n"
        "problem = rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, rho=0.1),\n"
        "    loss='hinge'), model=rc.LinearModel(l2=1e-2))\n")
    monkeypatch.setattr(rc.Problem, "solve", lambda *a, **k: pytest.fail("solved first"))
    assert main(["export", str(spec), "-o", str(tmp_path / "r.mps"), "--at", "solve"]) == 1
    assert "not an LP or QP" in capsys.readouterr().err


def test_export_at_solve_uses_auto_by_default(tmp_path, capsys):
    """``ratecons export --at solve`` solved with ``highs`` by default, which warns at every
    use on an l2 problem (a QP step: auto never picks it there). The default is ``auto``;
    the step is written at its model's scores."""
    from ratecons.cli import main

    spec = tmp_path / "spec.py"
    spec.write_text(
        "import numpy as np, ratecons as rc\n"
        "rng = np.random.default_rng(2)\n"
        "X = rng.normal(size=(200, 3)); y = (X[:, 0] + 0.5 * rng.normal(size=200) > 0)\n"
        "D = rc.Dataset(X, y.astype(int), name='cli')\n"
        "problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[\n"
        "    rc.positive_rate(D) <= 0.4], model=rc.LinearModel(l2=1e-2))\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", rc.SlowMethodWarning)
        assert main(["export", str(spec), "-o", str(tmp_path / "s.mps"), "--at", "solve"]) == 0
    out = capsys.readouterr().out
    assert "solved by cvxpy: status optimal" in out and "wrote" in out  # auto, 200 rows
    assert (tmp_path / "s.mps").exists()


@pytest.mark.slow
def test_highs_searches_a_feasible_start_where_the_hinge_relaxation_is_infeasible():
    """Diabetes (Pima, standardized), error rate with recall >= 0.7 and precision >= 0.6, l1:
    an LP, the case the docs recommend ``highs`` for. Its hinge relaxation is infeasible;
    ``highs`` ended ``infeasible`` without a model where every other chain ran phase one
    and reached ``optimal`` (0.257354). It runs phase one now (CVXPY's elastic steps, as the
    generic chain): the same start, the same MM path, the same answer."""
    D = standardized("diabetes")
    problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7,
                                                                rc.precision(D) >= 0.6],
                         model=rc.LinearModel(l2=0, l1=1e-2))
    hinge = problem.solve(method="hinge")
    assert hinge.status == "infeasible_inaccurate"  # no proof
    highs, generic = problem.solve(method="highs"), problem.solve(method="generic")
    assert highs.status == generic.status == "optimal"
    assert highs.objective == pytest.approx(generic.objective, rel=1e-6)
    np.testing.assert_allclose(highs.w, generic.w, atol=1e-6)
    assert highs.report().all_satisfied


def test_the_header_names_the_step_the_model_map_and_a_qp(solved, tmp_path):
    """The header says what the file is: the convex problem itself where nothing is
    majorized (TPR@K), the model's feature map, a kernel model's Nystrom sample when the
    training rows exceed ``kernel_points`` (the file is then an approximation of the kernel
    problem, which exact methods such as dual_ca do not solve), and what a QP asks of the
    solver that reads it."""
    def header(kind: str, **options) -> tuple[list[str], dict]:
        info = rc.export_mps(solved[kind][0], tmp_path / f"{kind}.mps", **options)
        lines = (tmp_path / f"{kind}.mps").read_text().splitlines()
        return [line for line in lines if line.startswith("* ")], info

    lines, info = header("toppushk_l1")
    assert "step: the convex problem itself (no ramp part to majorize)" in lines[1]
    assert "* model: linear model: psi(x) = x" in lines and info["kind"] == "LP"
    assert not any("QP:" in line for line in lines)
    rates, _ = header("rates_l2")
    assert "step: hinge relaxation" in rates[1] and any("* QP: HiGHS" in r for r in rates)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rc.ApproximationWarning)  # exact: no warning
        exact, info = header("kernel_l2")
    assert "over 120 points (exact representer over 120 training rows)" in info["feature_map"]
    assert not any("an approximation" in line for line in exact)
    with pytest.warns(rc.ApproximationWarning, match="Nystrom sample of 50 of 120 training "
                      "rows .*an approximation of the kernel problem"):
        sampled, info = header("kernel_l2", kernel_points=50)
    assert "Nystrom sample of 50 of 120 training rows" in info["feature_map"]
    assert any("Nystrom sample of 50 of 120" in line and "an approximation of the kernel "
               "problem" in line for line in sampled)


def test_files_get_the_users_permissions(solved, tmp_path):
    """A user's exports were owner-only (0600, a temporary file's mode), so another account
    (a solver service) could not read them; they follow the umask now, as HiGHS' own files:
    0644 under umask 022, for our writer and for HiGHS' (a restricted minimax-risk LP)."""
    import os

    old = os.umask(0o022)
    try:
        rc.export_mps(solved["rates_l1"][0], tmp_path / "r.mps")
        X = np.random.default_rng(0).normal(size=(40, 2))
        mrc = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, (X[:, 0] > 0) * 1))))
        rc.export_mps(mrc, tmp_path / "m.mps", restricted=True)
    finally:
        os.umask(old)
    for name in ("r.mps", "m.mps"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_a_solve_over_a_drawn_kernel_map_warns(solved):
    """A user's kernel TPR@8 on 840 rows by generic ended optimal at 0.336, the exact methods
    at 0.423, with the Nystrom sample named only in result.reasons: a chain over a drawn map
    warns as the export does; over the exact representer it does not."""
    problem = solved["kernel_l2"][0]
    with pytest.warns(rc.ApproximationWarning, match="Nystrom sample of 50 of 120"):
        drawn = problem.solve("structured", kernel_points=50, seed=3)
    # result.reasons named the plan's default expansion (500 points, seed 0)
    assert any("Nystrom sample of 50 of 120 training rows (seed 3)" in reason
               for reason in drawn.reasons), drawn.reasons
    with warnings.catch_warnings():
        warnings.simplefilter("error", rc.ApproximationWarning)
        problem.solve("structured")
