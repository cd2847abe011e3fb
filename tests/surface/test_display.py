"""Notebook display: ``_repr_html_`` tables and short reprs of results, reports, plans and
verification reports, rendered by pandas and by hand (pandas hidden)."""

import sys

import pytest

import ratecons as rc
from ratecons.report import RateReport, ReportRow
from ratecons.testing import fairness_problem


@pytest.fixture(scope="module")
def solved():
    problem = fairness_problem(n=300, seed=3, kappa=0.9)
    return problem, problem.solve(method="cvxpy")


@pytest.fixture(params=["pandas", "plain"])
def renderer(request, monkeypatch):
    if request.param == "plain":
        monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    else:
        pytest.importorskip("pandas")
    return request.param


def _is_table(text: str, renderer: str) -> None:
    assert "<table" in text and "</table>" in text and "<td>" in text
    assert ('class="dataframe"' in text) == (renderer == "pandas")


def test_result_html_and_repr(solved, renderer):
    _, result = solved
    text = result._repr_html_()
    _is_table(text, renderer)
    assert "optimal" in text and result.method in text
    assert len(repr(result)) < 120


def test_report_html_lists_every_row_and_repr_is_short(solved, renderer):
    _, result = solved
    report = result.report()
    text = report._repr_html_()
    _is_table(text, renderer)
    table = report.groups["g"]
    # header + one line per row, then the group table: header, levels and three summaries
    assert text.count("<tr") == len(report.rows) + 1 + 1 + len(table.levels) + 3
    assert "by g" in text and "selection_rate" in text and "difference" in text
    for row in report.rows:
        assert row.kind in text
    short = repr(report)
    assert len(short) < 300
    n_constraints = sum(r.kind == "constraint" for r in report.rows)
    assert f"{n_constraints}/{n_constraints} constraints met" in short


def test_plan_html_and_repr(solved, renderer):
    problem, _ = solved
    plan = problem.plan()
    text = plan._repr_html_()
    _is_table(text, renderer)
    assert plan.method in text and all(m in text for m in plan.available)
    assert repr(plan).startswith("Plan(") and len(repr(plan)) < 300


def test_verify_html_and_repr(solved, renderer):
    problem, _ = solved
    report = rc.verify(problem)
    text = report._repr_html_()
    _is_table(text, renderer)
    assert report.method in text and report.reference in text
    assert "objective_rel_gap" in text
    assert repr(report).startswith("VerifyReport(") and len(repr(report)) < 300


def test_cells_are_escaped(renderer):
    report = RateReport("<script>x</script>", [
        ReportRow("constraint", "rate(a<b & c>d)", ">= 0.8", 0.9, 0.85, 0.1, True)])
    text = report._repr_html_()
    _is_table(text, renderer)
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "a&lt;b &amp; c&gt;d" in text
