"""Notebook display: HTML tables and short ``repr`` strings for results, reports, plans and
verification reports.

Jupyter shows an object left as a cell's value through its ``_repr_html_`` method; the classes
of :mod:`ratecons.result`, :mod:`ratecons.report`, :mod:`ratecons.dispatch` and
:mod:`ratecons.verify` delegate theirs to the functions here (or take them from the mixins
:class:`PlanDisplay` and :class:`VerifyDisplay`), so the table layouts live in one place.
Tables are rendered by pandas (``DataFrame.to_html``, which notebooks style) when it is
installed, and as plain escaped HTML otherwise; the cells are the same either way.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["PlanDisplay", "VerifyDisplay", "group_html", "html_table", "plan_html", "report_html",
           "report_repr", "result_html", "verify_html"]

#: significant digits of the numbers shown in tables
DIGITS = 6


def _cell(value: Any) -> str:
    """The text of one table cell: numbers to :data:`DIGITS` significant digits, None blank."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{DIGITS}g}"
    return str(value)


def html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]],
               caption: str | None = None) -> str:
    """An HTML ``<table>`` of ``rows`` under the header ``columns`` (every cell escaped).

    Rendered by pandas (``DataFrame.to_html``) when it is installed, by hand otherwise.
    """
    cells = [[_cell(v) for v in row] for row in rows]
    head = f"<p><b>{html.escape(caption)}</b></p>\n" if caption else ""
    try:
        import pandas as pd
    except ImportError:
        header = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = "\n".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                         for row in cells)
        return (f"{head}<table>\n<thead><tr>{header}</tr></thead>\n<tbody>\n{body}\n"
                "</tbody>\n</table>")
    frame = pd.DataFrame(cells, columns=[str(c) for c in columns])
    return head + frame.to_html(index=False, escape=True)


def _items(pairs: Sequence[tuple[str, Any]]) -> list[list[Any]]:
    return [[name, value] for name, value in pairs if value is not None]


def result_html(result: Any) -> str:
    """A :class:`~ratecons.result.Result`: status, method, objective, certificate, timing, the
    scalar extras (a ranking threshold, a robust loss), the reasons for the method and a
    degenerate answer's message."""
    cert = result.certificate
    rows = _items([
        ("status", result.status), ("method", result.method),
        ("objective", result.objective), ("solver", result.solution.solver or None),
        ("lower bound", cert.lower_bound), ("upper bound", cert.upper_bound),
        ("gap", cert.gap), ("max violation", cert.max_violation),
        ("solve time (s)", result.solve_time), ("iterations", len(result.history) or None),
    ])
    rows += _items([(name, value) for name, value in result.extras.items()
                    if isinstance(value, (int, float)) and not isinstance(value, bool)])
    rows += [["because", reason] for reason in result.reasons]
    if "degenerate" in cert.details:
        rows.append(["degenerate", cert.details["degenerate"]["message"]])
    hint = "result.report() (or report(test)) gives every rate against its target"
    return html_table(("", "value"), rows, caption=type(result).__name__) + (
        f"\n<p>{html.escape(hint)}</p>" if result.has_model and result.problem is not None
        else "")


#: the report columns shown in HTML (the others are in ``to_records``)
_REPORT_COLUMNS = ("kind", "name", "target", "achieved", "expected", "slack", "satisfied",
                   "note")


def report_html(report: Any) -> str:
    """A :class:`~ratecons.report.RateReport`: one line per objective, constraint and rate,
    then one table per group attribute (:func:`group_html`)."""
    records = report.to_records()
    caption = f"report on {report.data}"
    if report.method:
        caption += f" (method {report.method}, status {report.status})"
    out = [html_table(_REPORT_COLUMNS, [[r[c] for c in _REPORT_COLUMNS] for r in records],
                      caption=caption)]
    out += [group_html(table) for table in report.groups.values()]
    return "\n".join(out)


def group_html(table: Any) -> str:
    """A :class:`~ratecons.report.GroupTable`: one line per level, then the whole data, the
    differences and the ratios."""
    columns = [table.feature, *table.columns]
    rows = [[record[c] for c in columns] for record in table.to_records()]
    return html_table(columns, rows, caption=f"by {table.feature}")


def report_repr(report: Any) -> str:
    """One line: the data, the solve, how many constraints hold."""
    constraints = [r for r in report.rows if r.kind == "constraint"]
    met = sum(bool(r.satisfied) for r in constraints)
    parts = [repr(report.data)]
    if report.method:
        parts.append(f"method={report.method!r}, status={report.status!r}")
    parts.append(f"{len(report.rows)} rows, {met}/{len(constraints)} constraints met")
    if report.groups:
        parts.append("groups=" + ",".join(report.groups))
    return f"{type(report).__name__}({', '.join(parts)})"


def plan_html(plan: Any) -> str:
    """A :class:`~ratecons.dispatch.Plan`: pattern, method, reasons, form, alternatives."""
    rows = [["pattern", plan.pattern], ["method", plan.method]]
    rows += [["because", reason] for reason in plan.reasons]
    rows += [["canonical form", plan.form_summary],
             ["available methods", ", ".join(plan.available)]]
    return html_table(("", "value"), rows, caption="plan")


def verify_html(report: Any) -> str:
    """A :class:`~ratecons.verify.VerifyReport`: the method and the reference side by side."""
    rows: list[list[Any]] = [
        ["status", report.result.status, report.reference_result.status],
        ["wall time (s)", report.result.solve_time, report.reference_result.solve_time]]
    for key, value in report.rows.items():
        rows.append([key, *value] if isinstance(value, tuple) else [key, value, None])
    rows.append([f"agrees (rtol={report.rtol:g})", report.agrees, None])
    return html_table(("", report.method, report.reference), rows, caption="verify")


class PlanDisplay:
    """``_repr_html_`` and a one-line ``repr`` for :class:`~ratecons.dispatch.Plan`."""

    pattern: str
    method: str
    available: list[str]

    def _repr_html_(self) -> str:
        return plan_html(self)

    def __repr__(self) -> str:
        return (f"Plan(pattern={self.pattern!r}, method={self.method!r}, "
                f"available={self.available!r})")


class VerifyDisplay:
    """``_repr_html_`` and a one-line ``repr`` for :class:`~ratecons.verify.VerifyReport`."""

    method: str
    reference: str
    rows: dict[str, Any]

    def _repr_html_(self) -> str:
        return verify_html(self)

    def __repr__(self) -> str:
        gap = self.rows.get("objective_rel_gap")
        gap_text = "" if gap is None else f", objective_rel_gap={gap:.3g}"
        return (f"VerifyReport(method={self.method!r}, reference={self.reference!r}, "
                f"agrees={self.agrees}{gap_text})")  # type: ignore[attr-defined]
