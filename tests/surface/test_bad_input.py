"""Bad input gets a clear ratecons error that names what was wrong, or an honest status.

Each case asserts the error class and that the message names the offending input (issue 18's
battery, started here with data, labels, baselines, comparisons and compositions).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import ratecons as rc
from ratecons.errors import DataWarning

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(int)


def data(**kwargs):
    return rc.Dataset(kwargs.pop("X", X), kwargs.pop("y", Y), **kwargs)


@pytest.mark.parametrize("build, error, words", [
    (lambda: rc.Dataset(np.ones((3, 2, 2))), rc.DataError, "2-dimensional"),
    (lambda: rc.Dataset(np.array([[1.0, np.nan]])), rc.DataError, "NaN"),
    (lambda: rc.Dataset(np.array([[1.0, np.inf]])), rc.DataError, "infinite"),
    # sparse X names the rows as dense X does (it gave a count of entries only)
    (lambda: rc.Dataset(sp.csr_matrix(np.array([[1.0, 0.0], [0.0, np.nan], [2.0, np.inf]]))),
     rc.DataError, r"NaN or infinite values in 2 rows \(first: \[1, 2\]\)"),
    (lambda: rc.Dataset(np.zeros((0, 2))), rc.EmptySubsetError, "no rows"),
    (lambda: rc.Dataset(np.zeros((3, 0))), rc.DataError, "no columns"),
    (lambda: rc.Dataset([["a", "b"]]), rc.DataError, "numeric"),
    (lambda: data(y=Y[:-1]), rc.DataError, "one label per row"),
    (lambda: data(y=np.full(40, 0.5)), rc.LabelError, "non-integer"),
    (lambda: data(y=np.array(["yes"] * 40)), rc.LabelError, "one value only"),
    (lambda: data(X=np.c_[X, np.full(40, 1e200)]), rc.DataError, "overflow"),
    (lambda: data(baseline=np.linspace(0.1, 0.9, 40)), rc.DataError, "probabilities"),
    (lambda: data(baseline=np.ones(39)), rc.DataError, "one prediction or score per row"),
    (lambda: data(baseline=np.r_[np.nan, np.ones(39)]), rc.DataError, "NaN"),
    (lambda: data(weights=-np.ones(40)), rc.DataError, "nonnegative"),
    (lambda: data(weights=np.zeros(40)), rc.DataError, "sum to zero"),
    (lambda: data(groups={"g": np.ones(39)}), rc.DataError, "group 'g'"),
    # a group level NaN or None can never be selected (pandas' NA was refused, NumPy's not)
    (lambda: data(groups={"g": np.r_[np.nan, np.ones(39)]}), rc.DataError,
     r"group 'g' has 1 missing values .*first rows: \[0\]"),
    (lambda: data(groups={"g": ["a"] * 39 + [None]}), rc.DataError,
     r"group 'g' has 1 missing values .*first rows: \[39\]"),
    (lambda: data(feature_names=["a"]), rc.DataError, "feature_names"),
])
def test_bad_data_is_refused_with_what_was_wrong(build, error, words):
    with pytest.raises(error, match=words):
        build()


def test_string_labels_are_encoded_with_their_mapping():
    labels = np.where(Y == 1, ">50K", "<=50K")
    d = data(y=labels)
    assert d.is_binary and list(d.label_values) == ["<=50K", ">50K"]
    assert np.array_equal(d.y, Y)  # the larger value in sort order is the positive class
    multi = data(y=np.array(["a", "b", "c", "d"] * 10))
    assert not multi.is_binary and list(multi.label_values) == ["a", "b", "c", "d"]
    assert set(np.unique(multi.y)) == {0, 1, 2, 3}
    assert list(d.take(np.arange(5)).label_values) == ["<=50K", ">50K"]


def test_badly_scaled_columns_are_named_in_a_warning():
    big = np.c_[X, 1e7 * X[:, 0]]
    with pytest.warns(DataWarning, match="column.*income.*Standardize"):
        rc.Dataset(big, Y, feature_names=["a", "b", "c", "income"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rc.Dataset(X, Y)  # well scaled: no warning


def test_probability_baselines_need_an_explicit_threshold():
    p = np.linspace(0.05, 0.95, 40)
    d = data(baseline=p, baseline_threshold=0.5)
    assert np.array_equal(d.baseline_prediction, (p > 0.5).astype(np.int8))
    assert np.array_equal(d.take(np.arange(40)).baseline_prediction, d.baseline_prediction)
    again = data().with_baseline(p, baseline_threshold=0.5)
    assert again.baseline_prediction.sum() == d.baseline_prediction.sum()
    scores = data(baseline=p - 0.5)  # scores centred at 0 need no threshold
    assert np.array_equal(scores.baseline_prediction, d.baseline_prediction)


@pytest.mark.parametrize("compare", [
    lambda D: rc.recall(D) > 0.7,
    lambda D: rc.recall(D) < 0.7,
    lambda D: rc.tpr_at_top(D, k=3) > 0.5,
    lambda D: rc.hinge_loss(D) < 0.5,
])
def test_strict_inequalities_are_refused_with_the_fix(compare):
    with pytest.raises(rc.SpecError, match="strict inequality.*Write"):
        compare(data())


@pytest.mark.parametrize("build, error, words", [
    (lambda D: rc.recall(D) >= 1.2, rc.InfeasibleError, "can never hold"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=["recall >= 0.5"]),
     rc.SpecError, r"subject_to\[0\] is a str"),
    (lambda D: rc.Problem(minimize="error"), rc.SpecError, "cannot minimize or maximize a str"),
    (lambda D: rc.Problem(minimize=rc.precision(D)), rc.NotLinearError, "ratio"),
    (lambda D: rc.tpr_at_top(D, k=3) * rc.recall(D), rc.NotLinearError, "finite numbers"),
    (lambda D: rc.tpr_at_top(D, k=3) / 0, rc.NotLinearError, "nonzero"),
    (lambda D: bool(rc.tpr_at_top(D, k=3) >= 0.5), rc.SpecError, "no truth value"),
    (lambda D: rc.worst_case(rc.recall(D), D), rc.SpecError, "'U' parameter of worst_case"),
    (lambda D: rc.worst_case(0.5, rc.PhiDivergenceBall(D)), rc.SpecError,
     "'expr' parameter of worst_case"),
    (lambda D: rc.worst_case(rc.recall(D), rc.PhiDivergenceBall(D.negatives)), rc.SpecError,
     "outside"),
    (lambda D: rc.mean_loss(D, "exponential"), rc.SpecError, "'loss' parameter of mean_loss"),
    (lambda D: rc.mean_loss(rc.Dataset(X), "hinge"), rc.LabelError, "labels"),
    (lambda D: rc.PhiDivergenceBall([1, 2]), rc.SpecError, "'data' parameter"),
    (lambda D: rc.Problem(maximize=rc.hinge_loss(D)), rc.CurvatureError, "convex"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.tpr_at_top(D, k=3) <= 0.4]),
     rc.CurvatureError, "bounded above"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D) - rc.hinge_loss(D)), rc.CurvatureError,
     "maximized"),
    (lambda D: rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D)),
                          model=rc.LinearModel(l2=1e-3)), rc.CurvatureError, "model="),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.5],
                          model=rc.KernelModel(kernel="precomputed")),
     rc.SpecError, "precomputed"),
])
def test_bad_specs_name_the_offending_input(build, error, words):
    with pytest.raises(error, match=words):
        build(data())


def test_unknown_generic_options_list_the_valid_ones():
    problem = rc.Problem(minimize=rc.hinge_loss(data()), subject_to=[rc.recall(data()) >= 0.5])
    with pytest.raises(rc.UnknownOptionError, match="max_iterations"):
        problem.solve(max_iter=3)
    with pytest.raises(rc.UnknownOptionError, match="'solver' parameter.*'GUROBI'.*CVXPY"):
        problem.solve(solver="GUROBI")
    with pytest.raises(rc.UnknownOptionError, match="solves LPs only"):
        rc.Problem(minimize=rc.logistic_loss(data())).solve("generic", solver="HIGHS")


def test_out_of_reach_targets_give_an_honest_status_not_a_model():
    D = data()
    problem = rc.Problem(minimize=rc.hinge_loss(D),
                         subject_to=[rc.recall(D) >= 0.99, rc.false_positive_rate(D) <= 0.0,
                                     rc.positive_rate(D) <= 0.05])
    result = problem.solve()
    assert result.status == "infeasible" and not result.has_model
    assert "relax" in result.certificate.details["message"].lower()
    with pytest.raises(rc.SolverError, match="infeasible"):
        result.predict(X)


@pytest.mark.parametrize("model", [rc.LinearModel(l2=1e-2), rc.KernelModel(l2=1e-2)])
def test_nan_at_predict_is_refused_not_read_as_negative(model):
    result = rc.Problem(minimize=rc.hinge_loss(data()), model=model).solve()
    with pytest.raises(rc.DataError, match="NaN or infinite values in 1 rows"):
        result.predict(np.array([[np.nan, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    with pytest.raises(rc.DataError, match="fitted on 3 features"):
        result.decision_function(np.ones((2, 5)))


# ---------------------------------------------------------------------------- options
def _rates(D):
    return rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.5],
                      model=rc.LinearModel(l2=1e-2))


def _mrc(D):
    labels = np.arange(D.n) % 3
    return rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(D.X, labels))))


def _top(D):
    return rc.Problem(maximize=rc.tpr_at_top(D, k=3), model=rc.LinearModel(l2=1e-2))


def _dro(D):
    ball = rc.PhiDivergenceBall(D, phi="chi2", rho=0.1, strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-2))


def _composed(D):
    return rc.Problem(minimize=rc.hinge_loss(D), subject_to=[rc.recall(D) >= 0.5])


# (problem, method, option, bad value, error class): every row names the option and the value
OPTION_CASES = [
    (_rates, "mm", "rho", 2, rc.SpecError),
    (_rates, "mm", "v_max", -1, rc.SpecError),
    (_rates, "mm", "max_epochs", 0, rc.SpecError),
    (_rates, "mm", "tol", -1, rc.SpecError),
    (_rates, "mm", "epsilon", 0.0, rc.SpecError),
    (_rates, "mm", "v_chooser", "xx", rc.SpecError),
    (_rates, "mm", "max_iterations", 1.5, rc.SpecError),
    (_rates, "cvxpy", "solver", "FOO", rc.UnknownOptionError),
    (_rates, "cvxpy", "tol", "x", rc.SpecError),
    (_rates, "hinge", "solver", 3, rc.SpecError),
    (_rates, "generic", "repair_rounds", -1, rc.SpecError),
    (_rates, "generic", "kernel_points", 0, rc.SpecError),
    (_rates, "generic", "solver_options", [1], rc.SpecError),
    (_rates, "highs", "solver", "xx", rc.UnknownOptionError),
    (_rates, "highs", "highs_options", "fast", rc.SpecError),
    (_mrc, "lp", "solver", "xx", rc.UnknownOptionError),
    (_mrc, "lp", "time_limit", -2, rc.SpecError),
    (_mrc, "ccg", "eps1", -1, rc.SpecError),
    (_mrc, "ccg", "n_max", 0, rc.SpecError),
    (_mrc, "ccg", "features", "xx", rc.SpecError),
    (_mrc, "ccg", "stabilization", 2.0, rc.SpecError),
    (_mrc, "ccg", "remove_slack", "yes", rc.SpecError),
    (_mrc, "cvxpy", "solver", "FOO", rc.UnknownOptionError),
    (_mrc, "subgradient", "step", "xx", rc.SpecError),
    (_mrc, "subgradient", "iterate", "xx", rc.SpecError),
    (_mrc, "subgradient", "check_every", 0, rc.SpecError),
    (_mrc, "subgradient", "step_params", 3, rc.SpecError),
    (_top, "dual_ca", "tol", -1, rc.SpecError),
    (_top, "dual_ca", "max_epochs", 0, rc.SpecError),
    (_top, "dual_ca", "selection", "xx", rc.SpecError),
    (_top, "dual_ca", "working_set_size", 0, rc.SpecError),
    (_top, "dual_ca", "max_kernel_bytes", -1, rc.SpecError),
    (_top, "dual_ca", "shrinking", 1, rc.SpecError),
    (_top, "primal_ipm", "tol", 0, rc.SpecError),
    (_top, "primal_ipm", "max_iter", 0, rc.SpecError),
    (_top, "cvxpy", "solver", "FOO", rc.UnknownOptionError),
    (_dro, "lbfgs", "tol", -1, rc.SpecError),
    (_dro, "lbfgs", "memory", 0, rc.SpecError),
    (_dro, "lbfgs", "theta0", np.ones(99), rc.SpecError),
    (_dro, "fsg", "step", -1.0, rc.SpecError),
    (_dro, "fsg", "step", "xx", rc.SpecError),
    (_dro, "gssg", "r", 5.0, rc.SpecError),
    (_dro, "gssg", "draws", 0, rc.SpecError),
    (_dro, "gssg", "a", -1.0, rc.SpecError),
    (_dro, "gssg", "max_samples", -1.0, rc.SpecError),
    (_dro, "pssg", "nu", 0.5, rc.SpecError),
    (_dro, "pssg", "m0", 0, rc.SpecError),
    (_dro, "sgd", "batch", 0, rc.SpecError),
    (_dro, "sgd", "warn", "no", rc.SpecError),
    (_dro, "cvxpy", "solver", "FOO", rc.UnknownOptionError),
    (_composed, "generic", "max_iterations", 0, rc.SpecError),
]


@pytest.mark.parametrize("build, method, option, value, error", OPTION_CASES,
                         ids=[f"{b.__name__[1:]}-{m}-{o}-{v!r}"[:60]
                              for b, m, o, v, _ in OPTION_CASES])
def test_every_option_is_checked_in_the_parameter_format(build, method, option, value, error):
    with pytest.raises(error) as info:
        build(data()).solve(method=method, **{option: value})
    message = str(info.value)
    assert f"'{option}'" in message or f"{option}" in message.split(" must ")[0]
    if not isinstance(value, np.ndarray):
        assert repr(value) in message or str(value) in message


@pytest.mark.parametrize("build, method", [
    (_rates, "mm"), (_rates, "hinge"), (_mrc, "lp"), (_mrc, "ccg"), (_top, "dual_ca"),
    (_top, "cvxpy"),
    (_dro, "lbfgs"), (_dro, "cvxpy"), (_composed, "highs"),
])
def test_unknown_options_are_refused_naming_the_valid_ones(build, method):
    problem = build(data())
    from ratecons.dispatch import resolve

    spec, _ = resolve(problem, method)
    with pytest.raises(rc.UnknownOptionError, match=r"unknown option\(s\) \['speed'\]") as info:
        problem.solve(method=method, speed=3)
    for name in (*spec.options, "time_limit", "max_iterations"):
        assert name in str(info.value)


@pytest.mark.parametrize("build", [_rates, _mrc, _top, _dro])
def test_unknown_methods_list_the_available_ones(build):
    with pytest.raises(rc.UnknownOptionError, match="unknown method 'fastest'.*'auto'"):
        build(data()).solve(method="fastest")


# ---------------------------------------------------------------------------- targets
@pytest.mark.parametrize("target, words", [
    (lambda D: rc.precision(D) >= 1.2, r"precision\(.*\) >= 1.2' can never hold.*\[0, 1\]"),
    (lambda D: rc.f1_score(D) >= 1.01, r"f1_score.*can never hold"),
    (lambda D: rc.precision(D) <= -0.1, r"precision.*<= -0.1' can never hold"),
    (lambda D: rc.positive_rate_ratio(D.positives, D.negatives) <= -1,
     r"positive_rate_ratio.*can never hold"),
    (lambda D: rc.recall(D) >= 1.1, r"recall.*can never hold"),
    (lambda D: rc.positive_rate(D) <= -0.5, r"positive_rate.*can never hold"),
    (lambda D: rc.error_rate(D) >= 2, r"error_rate.*can never hold"),
    (lambda D: rc.false_positive_rate(D) >= 1.5, r"false_positive_rate.*can never hold"),
])
def test_targets_no_classifier_can_meet_are_refused_before_solving(target, words):
    with pytest.raises(rc.InfeasibleError, match=words):
        target(data())


def test_ratios_without_an_upper_end_accept_targets_above_one():
    D = data()
    con = rc.positive_rate_ratio(D.positives, D.negatives) >= 1.5  # reachable: no error
    assert con.target == 1.5
    with pytest.raises(rc.SpecError, match="finite"):
        _ = rc.precision(D) >= float("nan")


# ---------------------------------------------------------------------------- labels
@pytest.mark.parametrize("build, error, words", [
    (lambda: rc.MomentSet(data(y=np.zeros(40, int))), rc.LabelError,
     "at least 2 classes.*is 0"),
    (lambda: rc.MomentSet(data(y=np.array(["cat"] * 40))), rc.LabelError, "one value only"),
    (lambda: rc.MomentSet(rc.Dataset(X)), rc.LabelError, "needs labels"),
    (lambda: rc.Problem(maximize=rc.tpr_at_top(data(y=np.arange(40) % 3), k=3),
                        model=rc.LinearModel(l2=1e-2)).solve(), rc.LabelError, "binary"),
    (lambda: rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(
        data(y=np.arange(40) % 3), phi="chi2", rho=0.1)), model=rc.LinearModel(l2=1e-2)).solve(),
     rc.LabelError, "binary"),
    (lambda: rc.recall(rc.Dataset(X)), rc.LabelError, "labels"),
])
def test_label_sets_that_cannot_be_learned_are_refused(build, error, words):
    with pytest.raises(error, match=words):
        build()


# ---------------------------------------------------------------------------- the CLI
SPEC = """
import numpy as np, ratecons as rc
X = np.random.default_rng(0).normal(size=(40, 3))
problem = rc.Problem(minimize=rc.hinge_loss(rc.Dataset(X, (X[:, 0] > 0).astype(int))))
"""


@pytest.mark.parametrize("args, words", [
    (("solve", "missing.py"), "missing.py"),
    (("solve", "nothing.py"), "problem"),
    (("solve", "spec.py", "--method", "fastest"), "unknown method 'fastest'"),
    (("export", "spec.py", "-o", "model.txt"), "model.txt"),
    (("export", "spec.py", "-o", "no/such/dir/model.mps"), "directory 'no/such/dir' does not"),
])
def test_cli_errors_name_the_input_and_exit_1(tmp_path, monkeypatch, capsys, args, words):
    import json

    from ratecons.cli import main

    (tmp_path / "spec.py").write_text(SPEC)
    (tmp_path / "nothing.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    as_json = ("--json",) if args[0] == "solve" else ()
    assert main([*args, *as_json]) == 1
    out, err = capsys.readouterr()
    assert words in err
    if as_json:
        assert words in json.loads(out)["error"]


# ---------------------------------------------------------------------------- fuzzing
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ratecons import settings as rc_settings  # noqa: E402

_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                    st.sampled_from([0.0, 1.0, -1.0, 1e200, np.nan, np.inf]))


@st.composite
def _datasets(draw):
    n = draw(st.integers(0, 12))
    d = draw(st.integers(0, 3))
    X = draw(st.one_of(
        st.lists(st.lists(_VALUES, min_size=d, max_size=d), min_size=n, max_size=n),
        st.just([["a"] * d] * n),
        st.just(np.ones((n, d, 2)).tolist()),
    ))
    y = draw(st.one_of(
        st.none(),
        st.lists(st.integers(-1, 3), min_size=n, max_size=n + draw(st.integers(0, 1))),
        st.lists(st.sampled_from(["yes", "no", ""]), min_size=n, max_size=n),
        st.lists(_VALUES, min_size=n, max_size=n),
    ))
    return X, y


_KINDS = st.sampled_from(["rates", "ratio", "mrc", "top", "dro", "composed"])
_OPTIONS = st.dictionaries(
    st.sampled_from(["tol", "max_iterations", "time_limit", "solver", "max_epochs", "speed"]),
    st.one_of(st.integers(-2, 3), st.floats(allow_nan=True, width=16), st.text(max_size=3),
              st.none()), max_size=2)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(_datasets(), _KINDS, st.floats(allow_nan=True, allow_infinity=True), _OPTIONS)
def test_malformed_data_and_specs_give_a_ratecons_error_or_an_honest_status(data_, kind, target,
                                                                             options):
    """Nothing but a ratecons error or a status of the one vocabulary comes out: no NumPy,
    SciPy, CVXPY, HiGHS or numba exception reaches the user."""
    X_, y_ = data_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            D = rc.Dataset(X_, y_)
            if kind == "rates":
                problem = rc.Problem(minimize=rc.error_rate(D),
                                     subject_to=[rc.recall(D) >= target])
            elif kind == "ratio":
                problem = rc.Problem(minimize=rc.error_rate(D),
                                     subject_to=[rc.precision(D) >= target])
            elif kind == "mrc":
                problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D)))
            elif kind == "top":
                k = int(target) if np.isfinite(target) and abs(target) < 1e9 else target
                problem = rc.Problem(maximize=rc.tpr_at_top(D, k=k),
                                     model=rc.LinearModel(l2=1e-2))
            elif kind == "dro":
                ball = rc.PhiDivergenceBall(D, phi="chi2", rho=target, strict=False)
                problem = rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1))
            else:
                problem = rc.Problem(minimize=rc.hinge_loss(D),
                                     subject_to=[rc.positive_rate(D) <= target])
            result = problem.solve(**options)
        except rc.RateconsError:
            return
    assert result.status in rc_settings.STATUSES


@pytest.mark.parametrize("build, options", [
    (lambda: _mrc(data()), {"restricted": True}),
    (lambda: _mrc(data()), {}),
    (lambda: _composed(data()), {}),
])
def test_export_into_a_missing_directory_names_it(tmp_path, build, options):
    target = tmp_path / "missing" / "model.mps"
    with pytest.raises(rc.SpecError, match="directory .*missing' does not exist"):
        rc.export_mps(build(), target, **options)
    assert not (tmp_path / "missing").exists()



@pytest.mark.parametrize("method", ["cvxpy", "mm"])
@pytest.mark.parametrize(("name", "value"), [("max_iterations", None), ("max_iterations", 0),
                                             ("tol", None), ("tol", -1.0)])
def test_rate_methods_validate_their_mm_options(method, name, value):
    """Algorithm 1's T and tol are checked once, where both rate methods start it (drawn by
    the property test above: max_iterations=None and tol=None reached a TypeError)."""
    D = rc.datasets.load_adult().split(0.02, seed=0)[0]
    problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.5])
    with pytest.raises(rc.SpecError, match=f"'{name}' parameter of method '{method}'"):
        problem.solve(method, **{name: value})


def test_highs_failure_names_status_algorithm_size_and_remedies(monkeypatch):
    """A HiGHS status outside the vocabulary (e.g. 'Solve error' of its interior point on
    all of adult with 400 random Fourier features) raises SolverError saying what stopped
    and what to try, instead of returning a solution."""
    import scipy.sparse as sp

    from ratecons.backends import highs
    from ratecons.canonical.matrix_lp import MatrixLP
    from ratecons.errors import SolverError

    lp = MatrixLP(-np.ones(3), sp.csr_matrix(np.eye(3)), np.full(3, -np.inf), np.ones(3),
                  np.zeros(3), np.full(3, np.inf))
    monkeypatch.setattr(highs, "_status_map", dict)  # no status is known
    with pytest.raises(SolverError, match=r"status 'Optimal' after .* on an LP \(solver='ipm'\) "
                       r"of 3 rows x 3 columns.*solver='simplex', 'ipm' or 'choose'.*"
                       r"method='ccg'"):
        highs.HighsLP(lp, solver="ipm").solve()
    quadratic = MatrixLP(lp.c, lp.A, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper,
                         P=sp.eye(3, format="csc"))
    with pytest.raises(SolverError, match=r"on a QP \(HiGHS's active-set QP solver, whatever "
                       r"solver= says\).*method='structured' or 'generic'"):
        highs.HighsLP(quadratic, solver="simplex").solve()


def test_mps_column_named_like_the_objective_constant_is_refused(tmp_path):
    """issue 32: the objective constant is the column ``objective_constant`` fixed at 1; a
    program that already has a column of that name cannot be written unambiguously."""
    import scipy.sparse as sp

    from ratecons.backends.mps import write_mps
    from ratecons.canonical.matrix_lp import MatrixLP

    lp = MatrixLP(c=np.ones(2), A=sp.csr_matrix(np.ones((1, 2))), row_lower=np.zeros(1),
                  row_upper=np.ones(1), col_lower=np.zeros(2), col_upper=np.ones(2), offset=0.5,
                  col_names=["x", "objective_constant"], row_names=["r"])
    with pytest.raises(rc.DataError, match="reserved for the objective constant"):
        write_mps(lp, tmp_path / "x.mps")
    assert not list(tmp_path.iterdir())


def test_conditional_worst_cases_without_an_exact_form_name_the_denominator():
    """issue 32: a worst-case rate over B inside a ball over a larger S is a ratio; where it has
    no exact convex form the error names the denominator and the ball to build instead."""
    D = rc.Dataset(X, Y, groups={"g": np.where(X[:, 1] > 0, "a", "b")}, name="d")
    a, b = D.group("g", "a"), D.group("g", "b")
    with pytest.raises(rc.SpecError, match=r"different denominators .*own subset"):
        rc.worst_case(rc.recall(a) - rc.recall(b), rc.PhiDivergenceBall(D, rho=0.1))
    with pytest.raises(rc.SpecError, match=r"averages over d\[all\].*PhiDivergenceBall"):
        rc.worst_case(rc.true_positives(D), rc.PhiDivergenceBall(D.positives, rho=0.1))
    wc = rc.worst_case(rc.recall(a), rc.PhiDivergenceBall(a, rho=0.1))
    for problem in (rc.Problem(maximize=wc),
                    rc.Problem(minimize=rc.error_rate(D), subject_to=[wc >= 0.8 * rc.recall(b)])):
        with pytest.raises(rc.SpecError) as err:
            problem.solve()
        message = str(err.value)
        assert f"denominator {a.positives.name} is a strict subset" in message
        assert f"rc.PhiDivergenceBall({a.positives.name}" in message


def test_a_target_only_a_constant_classifier_meets_is_named_as_degenerate():
    """issue 32: a floor of 1 on the coverage leaves only the all-positive classifier; the solve
    says the answer is degenerate and names the constraint that forces it."""
    D = data(name="d")
    problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.positive_rate(D) >= 1.0],
                         model=rc.LinearModel(l2=1e-3))
    with pytest.warns(rc.TrivialOptimumWarning, match=r"'positive_rate\(d\[all\]\) >= 1'"):
        result = problem.solve()
    record = result.certificate.details["degenerate"]
    assert record["constant"] == "all-positive"
    assert record["binding"] == ["positive_rate(d[all]) >= 1"]


@pytest.mark.parametrize("build, words", [
    # a regularizer so heavy that only the intercept moves: a mean loss, a robust loss
    (lambda D: rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e8)),
     "smaller l2"),
    (lambda D: rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, rho=0.1)),
                          model=rc.LinearModel(l2=1e8)), "smaller l2"),
    # TPR@K under the same: the model ranks no better than a constant score
    (lambda D: rc.Problem(maximize=rc.tpr_at_top(D, k=2), model=rc.LinearModel(l2=1e8)),
     "ranks nothing"),
    # a composition: the l1 term zeroes w, a coverage floor leaves the all-positive scores
    (lambda D: rc.Problem(minimize=rc.hinge_loss(D), subject_to=[rc.positive_rate(D) >= 0.9],
                          model=rc.LinearModel(l2=0.0, l1=10.0)), "all-positive"),
])
def test_a_model_no_better_than_a_constant_is_named_for_every_family(build, words):
    """issue 32 item 5: losses, robust losses, ranking and compositions are compared with the
    best constant score that meets the constraints, as rates are."""
    problem = build(data(name="d"))
    with pytest.warns(rc.TrivialOptimumWarning, match=words):
        result = problem.solve()
    record = result.certificate.details["degenerate"]
    sign = 1.0 if problem.analysis.sense == "minimize" else -1.0  # no better: >= when minimized
    assert sign * (record["model_objective"] - record["constant_objective"]) >= -1e-6


def test_a_minimax_risk_classifier_that_predicts_one_label_is_named():
    """A moment set so loose (lambda0 = 1e4) that mu = 0: the rule predicts one label, no
    better than the most frequent one; the warning says to tighten lambda0."""
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(data(), lambda0=1e4)))
    with pytest.warns(rc.TrivialOptimumWarning, match="most frequent label"):
        result = problem.solve()
    assert result.certificate.details["degenerate"]["constant_objective"] == pytest.approx(
        1.0 - max(Y.mean(), 1.0 - Y.mean()))


def test_a_report_on_data_where_a_constrained_group_is_empty_names_the_group():
    """A rate over a group that held-out data does not have is an average over no examples:
    the report does not measure its row (it showed the rate as 0 and the constraint as
    missed; later it refused the whole report): NaN, with a note naming the group."""
    groups = {"g": np.where(np.arange(40) % 3 == 0, "a", "b")}
    train = data(groups=groups, name="train")
    problem = rc.Problem(minimize=rc.error_rate(train),
                         subject_to=[rc.positive_rate(train.group("g", "a")) >= 0.3],
                         model=rc.LinearModel(l2=1e-2))
    result = problem.solve(verbose=False)
    only_b = data(groups={"g": np.full(40, "b")}, name="held_out")
    row = result.report(only_b).rows[1]
    assert np.isnan(row.indicator) and row.satisfied is None
    assert re.search(r"not measured here: positive_rate .*held_out\[g=a\]", row.note)
    # the objective (the error rate over all rows) still has a value there
    assert result.metrics(only_b)["objective"] == pytest.approx(
        np.mean(result.predict(only_b) != Y))


@pytest.mark.parametrize("arguments, words", [
    ({"callback": 3}, r"The 'callback' parameter of solve must be a callable"),
    ({"seed": "x"}, r"The 'seed' parameter of solve must be an int >= 0 or None. Got 'x'"),
    ({"seed": -1}, r"The 'seed' parameter of solve must be an int >= 0"),
    ({"verbose": "yes"}, r"The 'verbose' parameter of solve must be True, False or None"),
])
def test_solve_arguments_are_checked_before_anything_runs(arguments, words):
    """A callback that is not callable raised TypeError at the first progress record; a
    string seed or verbose was taken silently."""
    problem = rc.Problem(minimize=rc.error_rate(data()), subject_to=[rc.recall(data()) >= 0.7],
                         model=rc.LinearModel(l2=1e-2))
    with pytest.raises(rc.SpecError, match=words):
        problem.solve(**arguments)


@pytest.mark.parametrize("build, words", [
    (lambda D: rc.tpr_at_top(D, k=2), "tpr_at_top counts examples"),
    (lambda D: rc.tpr_at_quantile(D, tau=0.1), "tpr_at_quantile counts examples"),
    (lambda D: rc.MomentSet(D), "moment set is built from the empirical distribution"),
])
def test_objectives_that_count_examples_refuse_example_weights(build, words):
    """TPR at the top and the minimax risk classifier ignored a Dataset's weights (the same
    model with and without them), as the phi-divergence ball refuses them; now refused too."""
    weighted = data(weights=np.arange(1.0, 41.0), name="w")
    with pytest.raises(rc.DataError, match=rf"'w' has example weights, but .*{words}"):
        build(weighted)


def test_a_method_that_does_not_apply_is_not_offered_and_says_why():
    """TPR@K with a kernel model: ``primal_ipm`` solves the primal in (w, t) of a linear
    model. It was listed among the available methods and accepted by ``plan``, and ``solve``
    then raised "needs an explicit linear model" without naming a method that works."""
    D = data()
    kernel = rc.Problem(maximize=rc.tpr_at_top(D, k=3),
                        model=rc.KernelModel(kernel="gaussian", l2=1e-2))
    plan = kernel.plan()
    assert "primal_ipm" not in str(plan).split("available methods:")[1]
    for call in (lambda: kernel.plan(method="primal_ipm"),
                 lambda: kernel.solve(method="primal_ipm")):
        with pytest.raises(rc.SpecError, match=r"'primal_ipm' does not apply.*kernel model "
                                               r"has no explicit w.*'dual_ca'"):
            call()
    linear = rc.Problem(maximize=rc.tpr_at_top(D, k=3), model=rc.LinearModel(l2=1e-2))
    assert linear.solve(method="primal_ipm").status == "optimal"


def test_the_plan_of_a_chain_names_a_kernel_models_approximation():
    """The chains solve a kernel model over more than ``kernel_points`` training rows through
    a Nystrom sample: another problem than the exact kernel one that ``dual_ca`` solves, and
    the plan says so (it did for ``auto`` on compositions only)."""
    D = rc.Dataset(np.random.default_rng(1).normal(size=(520, 2)),
                   np.arange(520) % 2, name="big")
    problem = rc.Problem(maximize=rc.tpr_at_top(D, k=5),
                         model=rc.KernelModel(kernel="gaussian", l2=1e-2))
    for method in ("generic", "structured", "highs"):
        text = str(problem.plan(method=method))
        assert "Nystrom sample of 500 of 520 training rows" in text
        assert "an approximation of the kernel problem" in text
    assert "Nystrom" not in str(problem.plan())  # dual_ca: the exact kernel problem


def test_a_kernel_results_w_says_what_the_model_is():
    """``result.w`` of a kernel model raised "'Result' object has no attribute 'w'" (listing
    the extras) while ``dir(result)`` lists ``w``: it now says why and what to use."""
    D = data()
    result = rc.Problem(maximize=rc.tpr_at_top(D, k=3),
                        model=rc.KernelModel(kernel="gaussian", l2=1e-2)).solve()
    with pytest.raises(AttributeError, match="KernelScorer, which has no weights w over the "
                                             "input features.*decision_function"):
        _ = result.w
    linear = rc.Problem(maximize=rc.tpr_at_top(D, k=3), model=rc.LinearModel(l2=1e-2)).solve()
    assert linear.w.shape == (3,)


def test_a_numpy_scalar_reads_as_a_number_in_the_parameter_error():
    """``LinearModel(l2=np.float64("nan"))`` said "Got np.float64(nan) instead"."""
    with pytest.raises(rc.SpecError, match=r"Got nan instead\.$"):
        rc.LinearModel(l2=np.float64("nan"))


def test_columns_other_than_the_training_ones_are_refused():
    """A user's check: a model fitted on a DataFrame scored the same frame with its columns
    reversed (22.8% of the predictions changed, error 0.311 instead of 0.203) and a held-out
    frame one-hot encoded from other categories, silently. Column names are now checked
    against the training data's wherever the model scores a DataFrame or a Dataset."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["age", "bmi", "glucose"])
    y = (X["glucose"] + 0.3 * rng.normal(size=200) > 0).astype(int).to_numpy()
    result = rc.Problem(minimize=rc.error_rate(rc.Dataset(X, y)),
                        model=rc.LinearModel(l2=1e-3)).solve(verbose=False)
    assert result.feature_names == ["age", "bmi", "glucose"]
    np.testing.assert_array_equal(result.predict(X), result.predict(X.to_numpy()))
    reordered = X[X.columns[::-1]]
    with pytest.raises(rc.DataError, match=r"another order.*X\[result.feature_names\]"):
        result.predict(reordered)
    with pytest.raises(rc.DataError, match="another order"):
        result.metrics(rc.Dataset(reordered, y))
    with pytest.raises(rc.DataError, match="another order"):
        result.report(rc.Dataset(reordered, y))
    renamed = X.rename(columns={"bmi": "weight"})
    with pytest.raises(rc.DataError, match=r"missing \['bmi'\]; not in training \['weight'\]"):
        result.decision_function(renamed)
    # one row as a Series carries its names too; a frame or Series whose labels are not all
    # strings (a numpy array wrapped by pandas) has none, and is read by position
    row = X.iloc[0]
    with pytest.raises(rc.DataError, match="another order"):
        result.decision_function(row[row.index[::-1]])
    assert result.decision_function(row)[0] == pytest.approx(result.decision_function(X)[0])
    np.testing.assert_array_equal(result.predict(pd.DataFrame(X.to_numpy())),
                                  result.predict(X))
    back = rc.Result.from_json(result.to_json())  # the names travel with the model
    assert back.feature_names == result.feature_names
    with pytest.raises(rc.DataError, match="another order"):
        back.predict(reordered)
    np.testing.assert_array_equal(result.predict(reordered[result.feature_names]),
                                  result.predict(X))


def test_options_sweeps_and_csv_tokens_get_messages_that_say_what_to_do(tmp_path):
    """A user check: ``options="fast"`` on an estimator raised a bare TypeError; a sweep whose
    callable returned a number asked for ``fairness=``; ``load_csv`` advised an option it
    does not have."""
    from ratecons.sklearn import RateConstrainedClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), np.tile([0, 1], 30)
    with pytest.raises(rc.SpecError, match="'options' parameter .* a dict or None"):
        RateConstrainedClassifier(options="fast").fit(X, y)
    D = rc.Dataset(X, y)
    base = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-2))
    with pytest.raises(rc.SpecError, match=r"returned float, not a constraint"):
        rc.sweep(base, lambda k: k, [0.5])
    path = tmp_path / "q.csv"
    path.write_text("a,b,label\n" + "".join(f"{i},{'?' if i == 3 else i},{i % 2}\n"
                                            for i in range(10)))
    with pytest.raises(rc.DataError, match="in pandas .*from_pandas"):
        rc.datasets.load_csv(path, label="label")


def test_a_baseline_that_threshold_zero_would_misread_is_refused():
    """A user's deployed model coded 1/2 (2 positive, as in many UCI files) was read as scores
    all above 0: every row "baseline positive", and a churn <= 0.05 solve ended `optimal`
    with 99.5% predicted positive and a true churn of 0.64. Codes 1/2 and 0/1/2, and scores
    all above 0, now need baseline_threshold=; 0/1, -1/+1, booleans and scores of both signs
    are read as before."""
    old = (X[:, 0] > 0.2).astype(int)
    for coded, words in ((old + 1, "integers {1, 2}"), (old * 2 + (X[:, 1] > 0), "class codes"),
                         (np.abs(X[:, 0]) + 0.5, "all above 0")):
        with pytest.raises(rc.DataError, match=re.escape(words)):
            data(baseline=coded)
        assert data(baseline=coded, baseline_threshold=1.5).baseline_prediction is not None
    assert np.array_equal(data(baseline=2 * old - 1).baseline_prediction, old)
    assert np.array_equal(data(baseline=X[:, 0] - 0.2).baseline_prediction, old)


@pytest.mark.parametrize("what", ["groups", "y"])
def test_a_missing_value_in_a_list_is_refused_not_made_a_level(what):
    """df["sex"].tolist() mixes strings and float NaN: NumPy made the NaN the text 'nan', a
    group level of its own (a 2-row group in every fairness constraint); labels with None
    became a class 'None' (and [1, None] passed as binary)."""
    values = ["F" if v < 0 else "M" for v in X[:, 2]]
    for missing in (float("nan"), None):
        given = list(values)
        given[3] = missing
        kwargs = {"groups": {"sex": given}} if what == "groups" else {"y": given}
        with pytest.raises(rc.DataError, match=r"missing values .*first rows: \[3\]"):
            data(**kwargs)
    with pytest.raises(rc.DataError, match="missing"):
        data(y=[1, None] * 20)
    assert data(groups={"sex": values}).group("sex", "F").n == values.count("F")


def test_a_tpr_target_above_one_is_refused_when_built():
    """tpr_at_top >= 1.5 was accepted, solved, and ended `infeasible` with "models meeting the
    exact target may exist: lower the target"."""
    with pytest.raises(rc.InfeasibleError, match="takes values at most 1"):
        rc.Problem(minimize=rc.error_rate(data()), subject_to=[rc.tpr_at_top(data(), k=3) >= 1.5])
    reachable = rc.tpr_at_top(data(), k=3) >= 1.0
    assert reachable.bound == 1.0


@pytest.mark.parametrize("call, error, words", [
    (lambda: data().take([0, 1, 500]), rc.DataError, "row 500 is outside"),
    (lambda: data().take([]), rc.EmptySubsetError, "at least one row"),
    (lambda: data().take([0.5, 1.0]), rc.DataError, "integer row positions"),
    (lambda: data().take(np.ones(3, dtype=bool)), rc.DataError, "boolean mask"),
    (lambda: data().label("yes"), rc.DataError, "no label 'yes'"),
    (lambda: data().split(0.5, seed="a"), rc.SpecError, "'seed' parameter"),
    (lambda: data().all.on(X), rc.SpecError, "Subset.on needs a Dataset"),
    (lambda: rc.verify("x"), rc.SpecError, "verify needs an rc.Problem"),
    (lambda: rc.Result.from_json('{"a": 1}'), rc.SpecError, "no ['method', 'objective'"),
    (lambda: rc.Result.from_json("[1, 2]"), rc.SpecError, "got a JSON list"),
    (lambda: rc.Result.from_json("{"), rc.SpecError, "text of Result.to_json()"),
    (lambda: data(weights=["1"] * 39 + ["x"]), rc.DataError, "weights must be numeric"),
])
def test_public_calls_raise_ratecons_errors_not_numpy_ones(call, error, words):
    """A user's raw IndexError, ValueError, TypeError, AttributeError and KeyError from public
    calls (take, label, split, Subset.on, verify, from_json, weights)."""
    with pytest.raises(error, match=re.escape(words)):
        call()


def test_label_takes_the_original_string_labels():
    D = data(y=np.where(Y == 1, "yes", "no"))
    assert D.label("yes").n == int(Y.sum()) and D.label(0).n == int((Y == 0).sum())
    assert data().label(1.0).n == int(Y.sum()) and data().take(Y == 1).n == int(Y.sum())


def test_predicting_on_text_names_x():
    result = rc.Problem(minimize=rc.error_rate(data()), model=rc.LinearModel(l2=1e-2)).solve(
        "hinge", verbose=False)
    with pytest.raises(rc.DataError, match="X must be numeric"):
        result.predict([["a", "b", "c"]])


@pytest.mark.parametrize("call, error, words", [
    (lambda: rc.verify(rc.Problem(minimize=rc.error_rate(data())), rtol=-1), rc.SpecError,
     "'rtol' parameter of verify"),
    (lambda: data(baseline_threshold=0.5), rc.DataError, "without a baseline"),
    (lambda: data(X=X + 1j), rc.DataError, "real numbers"),
    (lambda: rc.Dataset(X, Y, feature_names=["a", "b", "a"]), rc.DataError, "unique"),
])
def test_silently_accepted_values_are_refused(call, error, words):
    """A user's rtol=-1 (verify said agrees=False), baseline_threshold without a baseline,
    complex X (cast to real with NumPy's warning) and duplicate column names (matched by name
    at predict) were accepted."""
    with pytest.raises(error, match=re.escape(words)):
        call()


def test_flags_and_thresholds_that_would_be_misread():
    from ratecons.sklearn import DemographicParityRatio, MinimaxRiskClassifier

    result = rc.Problem(minimize=rc.error_rate(data()), model=rc.LinearModel(l2=1e-2)).solve(
        "hinge", verbose=False)
    with pytest.raises(rc.SpecError, match="'randomized' parameter"):
        result.predict(X, randomized="no")  # a truthy string randomized the predictions
    for flag in ("fixed_marginals", "deterministic"):
        with pytest.raises(rc.SpecError, match=f"'{flag}' parameter"):
            MinimaxRiskClassifier(**{flag: "x"}).fit(X, Y)
    with pytest.warns(DataWarning, match="negative on every row"):
        data(baseline=np.clip(X[:, 0], 0, 1), baseline_threshold=2.0)
    from ratecons.sklearn import RateConstrainedClassifier

    for wrong, words in ((3, "Got 3"), ([rc.positive_rate(data()) >= 0.3], "Got Constraint")):
        with pytest.raises(rc.SpecError, match=words):
            RateConstrainedClassifier(constraints=wrong).fit(X, Y)
    with pytest.raises(rc.SpecError, match="'bound' parameter of DemographicParityRatio"):
        RateConstrainedClassifier(constraints=DemographicParityRatio("a")).fit(
            X, Y, sensitive_features=X[:, 1] > 0)


def test_impossible_bounds_on_losses_and_worst_cases_are_refused_when_built():
    """hinge_loss <= -1, robust_loss <= -1 and worst_case(rate) >= 1.5 went to the solver and
    ended infeasible with a hinge-relaxation message; rate and TPR bounds were refused at
    once. A loss is >= 0, a worst-case rate lies in its rate's range."""
    D = data()
    ball = rc.PhiDivergenceBall(D, phi="chi2", rho=0.1)
    for build, words in ((lambda: rc.hinge_loss(D) <= -1, "takes values at least 0"),
                         (lambda: rc.robust_loss(ball) <= -1, "takes values at least 0"),
                         (lambda: rc.worst_case(rc.recall(D), rc.PhiDivergenceBall(
                             D.positives, phi="chi2", rho=0.1)) >= 1.5, "in [0, 1]")):
        with pytest.raises(rc.InfeasibleError, match=re.escape(words)):
            build()
    assert (rc.hinge_loss(D) <= 0.0).bound == 0.0  # reachable (a separable set)


def test_a_constant_rate_objective_is_refused_when_built():
    """0 * rc.error_rate(D) (+ 1) with no constraints was accepted; describe() then raised an
    IndexError and solve() NumPy's "zero-size array" ValueError. With constraints it is a
    feasibility problem, and its objective is the constant."""
    D = data()
    for objective in (0 * rc.error_rate(D), 0 * rc.error_rate(D) + 1):
        with pytest.raises(rc.SpecError, match="the objective is a constant"):
            rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e-2))
    feasible = rc.Problem(minimize=0 * rc.error_rate(D) + 1, subject_to=[rc.recall(D) >= 0.5],
                          model=rc.LinearModel(l2=1e-2)).solve(verbose=False)
    assert feasible.status == "optimal" and feasible.objective == pytest.approx(1.0, abs=1e-9)


def test_columns_named_differently_or_reordered_are_refused():
    """Two datasets with the same columns in another order were combined (one w reads both by
    position: recall 0.874 where the row said >= 0.95); a frame of integer labels trained as
    '0'..'2' and given as 2, 1, 0 at predict was scored by position (signs flipped)."""
    pd = pytest.importorskip("pandas")
    A = rc.Dataset(pd.DataFrame(X, columns=["a", "b", "c"]), Y, name="A")
    B = rc.Dataset(pd.DataFrame(X[:, ::-1], columns=["c", "b", "a"]), Y, name="B")
    with pytest.raises(rc.DataError, match="name their feature columns differently"):
        rc.Problem(minimize=rc.error_rate(A), subject_to=[rc.recall(B) >= 0.5])
    frame = pd.DataFrame(X)  # integer labels 0, 1, 2
    result = rc.Problem(minimize=rc.error_rate(rc.Dataset(frame, Y)),
                        model=rc.LinearModel(l2=1e-2)).solve("hinge", verbose=False)
    assert np.allclose(result.decision_function(frame), result.decision_function(X))
    with pytest.raises(rc.DataError, match="in another order"):
        result.decision_function(frame[[2, 1, 0]])
    assert result.decision_function(pd.DataFrame(X[:5])).shape == (5,)  # a wrapped array


def test_wide_data_never_go_to_the_dense_structured_step():
    """3,000 x 50,000 sparse rows: auto picked 'structured', whose dense (d + 1)^2 Newton
    system (20 GB a copy) had the process killed; 'mm' solves it in 0.2 s. Past
    settings.STRUCTURED_MAX_FEATURES the structured step says why it does not apply."""
    rng = np.random.default_rng(0)
    wide = sp.random(300, rc.settings.STRUCTURED_MAX_FEATURES + 1, density=0.01,
                     random_state=0, format="csr")
    labels = (rng.random(300) < 0.4).astype(int)
    D = rc.Dataset(wide, labels, groups={"g": np.where(rng.random(300) < 0.3, "a", "b")})
    problem = rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.recall(D) >= 0.5])
    assert problem.plan().method != "structured"
    with pytest.raises(rc.SpecError, match=r"Newton system is dense.*d = 4,097 features"):
        problem.solve("structured")


def test_a_gaussian_kernel_over_unscaled_columns_warns():
    """Raw Adult columns (capital gain up to 1e5) under a Gaussian kernel with gamma = 1/d:
    every kernel value between two rows is about exp(-5e6), and the held-out TPR@5 fell from
    0.136 (standardized) to 0.009 with no warning (the magnitude warning starts at 1e6)."""
    raw = np.column_stack([X, 1e4 * np.abs(X[:, 0])])
    with pytest.warns(DataWarning, match="standardize the features"):
        rc.Problem(maximize=rc.tpr_at_top(data(X=raw), k=3),
                   model=rc.KernelModel("gaussian", l2=1e-2))
    scaled = (raw - raw.mean(0)) / raw.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        rc.Problem(maximize=rc.tpr_at_top(data(X=scaled), k=3),
                   model=rc.KernelModel("gaussian", l2=1e-2))
