"""Reports: the objective and every constraint against its target, on any dataset.

One report type for every problem: for each row the report gives the target, the value
achieved by deterministic predictions (indicator rates, eq. 1; exact values of losses and
thresholds), the value expected under the randomized rule or the surrogate the solver optimizes
(ramp rates, eq. 3 / App. A), and the slack (positive when satisfied). Ratio constraints also
show the ratio itself. The distinct rates the rows' rate parts are built from follow them
(``rate`` rows). :meth:`RateReport.to_dict`, :meth:`RateReport.to_records` and
:meth:`RateReport.to_frame` give the same columns (:data:`COLUMNS`) for every problem kind.
:func:`score_metrics` gives ``Result.metrics(data)``: the same keys for every score model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from .data import Dataset, Subset
from .data_columns import binary_codes
from .display import group_html, report_html, report_repr
from .errors import EmptySubsetError, SpecError
from .settings import FEASIBILITY_TOL
from .solution import _jsonable

__all__ = ["COLUMNS", "METRIC_KEYS", "GroupTable", "RateReport", "ReportRow",
           "analysis_report", "group_table", "group_tables", "make_rebinder",
           "minimax_report", "score_metrics"]

#: the columns of :meth:`RateReport.to_records` / :meth:`RateReport.to_frame`, in order
COLUMNS = ("data", "status", "method", "kind", "name", "target", "achieved", "expected",
           "slack", "satisfied", "achieved_linear", "expected_linear", "note")
#: the keys :func:`score_metrics` returns for every score-model problem (family keys follow)
METRIC_KEYS = ("objective", "error", "accuracy", "auc", "positive_rate")
#: a report holds a per-group table for each group attribute with at most this many levels
MAX_GROUP_LEVELS = 20
#: the summary lines of a :class:`GroupTable` after its levels
GROUP_SUMMARIES = ("overall", "difference", "ratio")
#: short column titles of :meth:`GroupTable.__str__`
_SHORT = {"count": "n", "selection_rate": "selected", "error_rate": "error",
          "true_positive_rate": "TPR", "false_positive_rate": "FPR"}


def _frame(records: list[dict[str, Any]], columns: list[str], what: str) -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(f"{what}.to_frame needs pandas (pip install pandas); "
                          "to_records() gives the same table as plain dicts.") from exc
    return pd.DataFrame(records, columns=columns)


@dataclass(repr=False)
class GroupTable:
    """Metrics of deterministic predictions by level of one group attribute (one row per
    level), with the whole data (``overall``) and, for every metric, the largest difference
    between two levels (max - min) and the smallest ratio (min / max).

    ``columns`` are ``count`` (examples), then ``selection_rate`` (the positive rate s_p),
    ``error_rate``, ``true_positive_rate`` and ``false_positive_rate`` as far as the labels
    define them (no labels: the selection rate only; multiclass labels: the error rate only).
    Rates are weighted by the dataset's example weights. A rate undefined on a level (a
    TPR without positives) is NaN and left out of the difference and ratio.
    """

    feature: str
    levels: list[str]
    columns: list[str]
    values: list[list[float]]
    overall: list[float]

    def summary(self, which: str) -> dict[str, float]:
        """One summary line of the table, keyed by column: ``overall`` (the whole data),
        ``difference`` (max - min over the levels) or ``ratio`` (min / max). The count of the
        last two is NaN; so is a metric defined on no level."""
        if which not in GROUP_SUMMARIES:
            raise ValueError(f"GroupTable.summary takes one of {list(GROUP_SUMMARIES)}; got "
                             f"{which!r}.")
        if which == "overall":
            return dict(zip(self.columns, self.overall))
        table = np.asarray(self.values, dtype=np.float64)
        out = {self.columns[0]: float("nan")}
        for name, column in zip(self.columns[1:], table.T[1:]):
            defined = column[np.isfinite(column)]
            top = defined.max() if defined.size else float("nan")
            if defined.size == 0 or (which == "ratio" and top <= 0):
                out[name] = float("nan")
            elif which == "difference":
                out[name] = float(top - defined.min())
            else:
                out[name] = float(defined.min() / top)
        return out

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per level, then ``overall``, ``difference`` and ``ratio``: the key
        ``feature`` holds the level, the other keys are :attr:`columns`."""
        records = [{self.feature: level, **dict(zip(self.columns, row))}
                   for level, row in zip(self.levels, self.values)]
        return records + [{self.feature: name, **self.summary(name)} for name in GROUP_SUMMARIES]

    def to_frame(self) -> Any:
        """A pandas DataFrame of :meth:`to_records` indexed by level."""
        return _frame(self.to_records(), [self.feature, *self.columns],
                      "GroupTable").set_index(self.feature)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(dict(self.__dict__))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupTable:
        nan = float("nan")
        values = [[nan if v is None else v for v in row] for row in data["values"]]
        overall = [nan if v is None else v for v in data["overall"]]
        return cls(data["feature"], list(data["levels"]), list(data["columns"]), values,
                   overall)

    def __repr__(self) -> str:
        return (f"GroupTable({self.feature!r}, levels={self.levels[:6]!r}"
                f"{'...' if len(self.levels) > 6 else ''}, columns={self.columns!r})")

    def _repr_html_(self) -> str:
        return group_html(self)

    def __str__(self) -> str:
        width = max([len(str(level)) for level in self.levels] + [10]) + 2
        width = min(width, 40)
        head = "".join(f"{_SHORT.get(c, c):>10s}" for c in self.columns)
        lines = [f"by {self.feature}", f"  {'':{width}s}{head}"]
        for record in self.to_records():
            level = str(record[self.feature])[:width]
            cells = "".join(
                f"{'':>10s}" if np.isnan(record[c]) else
                (f"{record[c]:10.0f}" if c == "count" else f"{record[c]:10.4f}")
                for c in self.columns)
            lines.append(f"  {level:{width}s}{cells}")
        return "\n".join(lines)


def level_sums(pred: np.ndarray, y: np.ndarray, w: np.ndarray, codes: np.ndarray,
               levels: int) -> np.ndarray:
    """The sums a :class:`GroupTable` is made of, per level (shape (8, levels)): the count,
    then the weighted sums of 1, pred, 1[pred != y], 1[y = 1], pred 1[y = 1], 1[y = 0] and
    pred 1[y = 0] (``pred`` 0/1; ``y`` coded 0/1, or 2 for another class)."""
    hit = pred == 1
    pos, neg = y == 1, y == 0
    columns = [np.ones(pred.size), w, w * hit, w * (pred != y), w * pos, w * (hit & pos),
               w * neg, w * (hit & neg)]
    return np.stack([np.bincount(codes, weights=c, minlength=levels) for c in columns])


def _coded_labels(data: Dataset) -> np.ndarray:
    """The labels as :func:`level_sums` reads them: 0 and 1, any other class 2 (never a
    prediction), all 0 without labels (then only the selection rate is read)."""
    if data.y is None:
        return np.zeros(data.n, dtype=np.int8)
    y = np.asarray(data.y)
    with np.errstate(all="ignore"):
        return np.where(y == 0, 0, np.where(y == 1, 1, 2)).astype(np.int8)


def _levels(data: Dataset, feature: str) -> tuple[np.ndarray, np.ndarray]:
    if feature not in data.groups:
        raise SpecError(f"dataset {data.name!r} has no group attribute {feature!r}; it has "
                        f"{sorted(data.groups) or 'none'}.")
    return np.unique(data.groups[feature], return_inverse=True)


def group_table(predictions: np.ndarray, data: Dataset, feature: str) -> GroupTable:
    """The :class:`GroupTable` of ``predictions`` (one per example of ``data``) by the levels
    of the group attribute ``feature``.

    Counts and rates are sums over the examples of each level, computed at once for every
    level (``np.bincount`` over the level codes, :func:`level_sums`)."""
    levels, codes = _levels(data, feature)
    pred = np.asarray(predictions)
    if pred.shape != (data.n,):
        raise SpecError(f"group_table needs one prediction per example of {data.name!r} "
                        f"({data.n}); got shape {pred.shape}.")
    coded = binary_codes(pred, "predictions")
    if coded is None:  # scores, probabilities or labels by name would be read as counts
        raise SpecError(
            f"group_table takes binary predictions (0/1, -1/+1 or bool), e.g. "
            f"result.predict(data); got values {np.unique(pred)[:5].tolist()}. Threshold "
            "scores first (scores > 0), or compare label names (labels == 'yes').")
    w = np.ones(data.n) if data.weights is None else data.weights
    sums = level_sums(coded, _coded_labels(data), w, codes, levels.size)
    return _table_of_sums(feature, levels, sums, data)


def _table_of_sums(feature: str, levels: np.ndarray, sums: np.ndarray, data: Dataset
                   ) -> GroupTable:
    """The :class:`GroupTable` from the sums of :func:`level_sums`."""

    def rate(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, float]:
        with np.errstate(invalid="ignore", divide="ignore"):
            by_level = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        total = float(den.sum())
        return by_level, (float(num.sum()) / total if total > 0 else float("nan"))

    wanted = []
    if data.y is None or data.is_binary:
        wanted.append(("selection_rate", 2, 1))
    if data.y is not None:
        wanted.append(("error_rate", 3, 1))
        if data.is_binary:
            wanted += [("true_positive_rate", 5, 4), ("false_positive_rate", 7, 6)]
    columns, by_level, overall = ["count"], [sums[0]], [float(data.n)]
    for name, num, den in wanted:
        part, whole = rate(sums[num], sums[den])
        columns.append(name)
        by_level.append(part)
        overall.append(whole)
    values = np.column_stack(by_level)
    return GroupTable(feature, [str(v) for v in levels], columns, values.tolist(), overall)


def group_tables(model: Any, data: Dataset, workers: Any = None) -> dict[str, GroupTable]:
    """A :class:`GroupTable` of the deterministic predictions of ``model`` (any Result with a
    model, or a scorer) on ``data`` for every group attribute of ``data`` with at most
    :data:`MAX_GROUP_LEVELS` levels. On Dask data (``workers``, the scores on the workers:
    :class:`ratecons.dask_metrics.WorkerScores`) each table is one reduction over the
    partitions of :func:`level_sums`."""
    features = [name for name, values in data.groups.items()
                if np.unique(values).size <= MAX_GROUP_LEVELS]
    if not features:
        return {}
    if workers is not None:
        out = {}
        for name in features:
            levels, codes = _levels(data, name)
            sums = workers.level_sums(level_sums, codes, _coded_labels(data), levels.size)
            out[name] = _table_of_sums(name, levels, sums, data)
        return out
    predictions = np.asarray(model.predict(data)).ravel()
    return {name: group_table(predictions, data, name) for name in features}


@dataclass
class ReportRow:
    """One line of a report (objective, constraint or rate)."""

    kind: str
    name: str
    target: str
    indicator: float
    ramp: float
    slack: float | None = None
    satisfied: bool | None = None
    linear_indicator: float | None = None
    linear_ramp: float | None = None
    note: str = ""


@dataclass(repr=False)
class RateReport:
    """Every rate of a problem against its target on one dataset (see module docstring)."""

    data: str
    rows: list[ReportRow] = field(default_factory=list)
    status: str = ""
    method: str = ""
    #: metrics by group level, one :class:`GroupTable` per group attribute of the data
    groups: dict[str, GroupTable] = field(default_factory=dict)

    @property
    def all_satisfied(self) -> bool:
        """True when every constraint holds for deterministic predictions."""
        return all(r.satisfied for r in self.rows if r.kind == "constraint")

    def row(self, name: str) -> ReportRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``data``, ``status``, ``method``, ``rows`` (each with the fields of
        :class:`ReportRow`, the same for every problem kind) and ``groups`` (each
        :meth:`GroupTable.to_dict`)."""
        return {"data": self.data, "status": self.status, "method": self.method,
                "rows": [_jsonable(r.__dict__) for r in self.rows],
                "groups": {name: t.to_dict() for name, t in self.groups.items()}}

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per row with the keys :data:`COLUMNS`."""
        return [dict(zip(COLUMNS, (self.data, self.status, self.method, r.kind, r.name,
                                   r.target, r.indicator, r.ramp, r.slack, r.satisfied,
                                   r.linear_indicator, r.linear_ramp, r.note)))
                for r in self.rows]

    def to_frame(self) -> Any:
        """A pandas DataFrame of :meth:`to_records` (pandas is optional; it is needed here).
        The tables by group are ``groups[name].to_frame()``."""
        return _frame(self.to_records(), list(COLUMNS), "RateReport")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RateReport:
        """Inverse of :meth:`to_dict`."""
        rows = [ReportRow(**{k: (float("nan") if v is None and k in ("indicator", "ramp")
                                 else v) for k, v in r.items()}) for r in data["rows"]]
        groups = {name: GroupTable.from_dict(t) for name, t in data.get("groups", {}).items()}
        return cls(data["data"], rows, data.get("status", ""), data.get("method", ""), groups)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), indent=kwargs.pop("indent", 2), **kwargs)

    def __repr__(self) -> str:
        return report_repr(self)

    def _repr_html_(self) -> str:
        return report_html(self)

    def __str__(self) -> str:
        head = f"report on {self.data}"
        if self.method:
            head += f"  (method {self.method}, status {self.status})"
        width = max([len(r.name) for r in self.rows] + [20])
        width = min(width, 70)
        lines = [head, f"{'':11s}{'':{width}s} {'target':>12s} {'achieved':>10s} "
                 f"{'expected':>10s} {'slack':>10s}  ok",
                 f"{'':11s}{'':{width}s} {'':>12s} {'(determ.)':>10s} {'(random.)':>10s}"]
        for r in self.rows:
            name = r.name if len(r.name) <= width else r.name[: width - 3] + "..."
            slack = "" if r.slack is None else _cell(r.slack)
            ok = "" if r.satisfied is None else ("yes" if r.satisfied else "NO")
            lines.append(f"{r.kind:11s}{name:{width}s} {r.target:>12s} {_cell(r.indicator)} "
                         f"{_cell(r.ramp)} {slack:>10s}  {ok}")
            if r.linear_indicator is not None:
                label = f"  multiplied through ({r.target.split()[0]} 0)"
                lines.append(f"{'':11s}{label:{width}s} {'':>12s} "
                             f"{_cell(r.linear_indicator)} {_cell(r.linear_ramp)}")
            if r.note:
                lines.append(f"{'':11s}  {r.note}")
        lines += [str(table) for table in self.groups.values()]
        return "\n".join(lines)


def _cell(value: float) -> str:
    """A number of the printed report, 10 wide: four decimals, or two significant digits
    when it is nonzero but would print as +-0.0000 (a slack of -2.2e-05 is a missed bound,
    which "-0.0000" hides)."""
    if value != 0.0 and abs(value) < 5e-5:
        return f"{value:10.1e}"
    return f"{value:10.4f}"


def make_rebinder(
    sources: list[Dataset], data: Dataset | Mapping[Dataset, Dataset] | None
) -> tuple[Any, str]:
    """A function mapping each training subset to its counterpart on ``data``, and a label.

    ``data`` may be None (the training data), one Dataset (when the problem uses one dataset),
    or a mapping from each training dataset to its replacement.
    """
    if data is None:
        return (lambda s: s), ", ".join(d.name for d in sources)
    if isinstance(data, Dataset):
        if len(sources) != 1:
            raise SpecError(
                f"the problem uses {len(sources)} datasets ({[d.name for d in sources]}); pass "
                "report({train_i: test_i, ...}) mapping each to its held-out counterpart."
            )
        mapping = {id(sources[0]): data}
        label = data.name
    elif isinstance(data, Mapping):
        mapping = {id(k): v for k, v in data.items()}
        missing = [d.name for d in sources if id(d) not in mapping]
        if missing:
            raise SpecError(f"report mapping has no counterpart for datasets {missing}.")
        label = ", ".join(v.name for v in data.values())
    else:
        raise SpecError(f"report(data) takes a Dataset or a mapping; got {type(data).__name__}.")

    def rebind(subset: Subset) -> Subset:
        target = mapping[id(subset.data)]
        if target.d != subset.data.d:
            raise SpecError(f"{target.name} has {target.d} features; the model uses "
                            f"{subset.data.d}.")
        return subset.on(target)

    return rebind, label


def _with_groups(report: RateReport, scorer: Any, datasets: list[Dataset],
                 evaluation: Any = None) -> RateReport:
    """Attach the tables by group (:func:`group_tables`) when the report is on one dataset
    (on Dask data by reductions over its partitions)."""
    if len(datasets) == 1:
        workers = None
        if evaluation is not None and datasets[0].in_dask:
            workers = evaluation.scores_on(datasets[0])
        report.groups = group_tables(scorer, datasets[0], workers)
    return report


class _InMemory:
    """Row and rate values from the scores in memory (the parts' own evaluation); Dask data
    has :class:`ratecons.dask_metrics.WorkerEvaluation` with the same two methods."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer

    def row_value(self, row: Any, kind: str) -> float:
        return row.value(self.scorer, kind)

    def rate(self, expr: Any, kind: str) -> float:
        return expr.value(self.scorer, kind)


def _evaluation(scorer: Any, datasets: list[Dataset]) -> Any:
    """:class:`ratecons.dask_metrics.WorkerEvaluation` when some dataset is Dask-backed,
    else :class:`_InMemory`."""
    if not any(d.in_dask for d in datasets):
        return _InMemory(scorer)
    from .dask_metrics import WorkerEvaluation

    return WorkerEvaluation(scorer)


def analysis_report(result: Any, data: Dataset | Mapping[Dataset, Dataset] | None = None
                    ) -> RateReport:
    """The report of any score-model problem from its composition analysis
    (:mod:`ratecons.expr.analysis`): the objective and every constraint with its target, exact
    value (deterministic predictions), surrogate value, slack and met / not met, on the training
    data or on ``data`` (see :func:`make_rebinder`). On Dask data the values are reductions
    over the partitions (:mod:`ratecons.dask_metrics`)."""
    from .expr.analysis import analyse

    scorer = result._require_model()
    problem = result.problem
    analysis = problem.analysis
    rebind, label = make_rebinder(analysis.datasets, data)
    loosened = {row["constraint"]: row for row in
                result.certificate.details.get("loosened_bounds", [])}
    status = result.status + (" (of the surrogate problem with loosened bounds)" if loosened
                              else "")
    report = RateReport(label, status=status, method=result.method)
    missing: dict[int, str] = {}  # constraints over a subset the held-out data lacks
    kept = []
    for i, c in enumerate(problem.constraints if data is not None else ()):
        try:
            kept.append(c.rebind(rebind))
        except EmptySubsetError as exc:  # a small group absent from a test split
            missing[i] = str(exc)
    try:
        rebound = analysis if data is None else analyse(
            problem.objective.rebind(rebind), analysis.sense, kept, analysis.model)
    except (EmptySubsetError, SpecError) as exc:  # e.g. K above the held-out negatives
        raise SpecError(f"the objective {analysis.objective.name} cannot be measured on "
                        f"{label}: {exc}") from exc
    ev = _evaluation(scorer, rebound.datasets)
    row = rebound.objective
    objective = ReportRow("objective", row.name, analysis.sense,
                          row.to_user(ev.row_value(row, "exact")),
                          row.to_user(ev.row_value(row, "surrogate")))
    if any(getattr(part, "curvature", "") == "concave" for _, part in row.parts):
        objective.note = RANKING_OBJECTIVE_NOTE
    report.rows.append(objective)
    measured = iter(rebound.constraints)
    for i, trained in enumerate(analysis.constraints):
        if i in missing:
            report.rows.append(ReportRow("constraint", trained.name, "", float("nan"),
                                         float("nan"), note=f"not measured here: {missing[i]}"))
            continue
        con = next(measured)
        exact = ev.row_value(con, "exact")
        slack = con.bound - exact
        sense = "<=" if con.sign > 0 else ">="
        line = ReportRow("constraint", con.name, f"{sense} {con.sign * con.bound:.4g}",
                         con.to_user(exact), con.to_user(ev.row_value(con, "surrogate")),
                         slack, slack >= -FEASIBILITY_TOL)
        ratio = getattr(con.source, "ratio", None)
        if ratio is not None:  # show the ratio itself next to its multiplied-through form
            line.linear_indicator, line.linear_ramp = line.indicator, line.ramp
            line.indicator = ev.rate(ratio, "indicator")
            line.ramp = ev.rate(ratio, "ramp")
            line.target = f"{sense} {con.source.target:.4g}"
            # the slack in the ratio's units, as target and achieved are (NaN where the
            # denominator is 0); met or not stays the multiplied-through form's, shown beneath
            line.slack = (line.indicator - con.source.target if sense == ">="
                          else con.source.target - line.indicator)
            line.note = "ratio constraint, multiplied through by its denominator (App. B)"
            if np.isnan(line.indicator):
                line.note += ("; the denominator is 0 here, so the ratio is undefined and the "
                              "multiplied-through form holds trivially")
        if trained.name in loosened:  # the certificate's, on the training data
            line.note = "; ".join(filter(None, [line.note,
                                                _loosened_note(loosened[trained.name])]))
        report.rows.append(line)
    _rate_rows(report, rebound, ev, [analysis.constraints[i] for i in missing], rebind)
    return _with_groups(report, scorer, rebound.datasets, ev)


#: the note of an objective with a TPR@K / TPR@tau term: its "expected" value is no TPR
RANKING_OBJECTIVE_NOTE = (
    "TPR at the top: 'achieved' is the exact TPR; 'expected' holds the surrogate the solver "
    "maximized (1 - the positives' mean ranking loss), a lower bound on it that can be "
    "negative, not a TPR of the randomized rule")


def _loosened_note(row: Mapping[str, Any]) -> str:
    """The note of a constraint whose surrogate bound the certificate loosened (an entry of
    ``certificate.details["loosened_bounds"]``, :func:`ratecons.generic.loosened_bounds`)."""
    return (f"certified surrogate bound {row['sense']} {row['certified_bound']:.6g}, loosened "
            f"from your {row['user_bound']:.6g} after an unreached repair; on the training "
            f"data the exact value {row['exact']:.6g} "
            f"{'meets' if row['met'] else 'misses'} your bound (surrogate "
            f"{row['surrogate']:.6g})")


def _row_atoms(row: Any) -> list[Any]:
    """The distinct rates a row's rate parts are built from (a ratio constraint: the rates of
    its numerator and denominator)."""
    ratio = getattr(row.source, "ratio", None)
    exprs = ([ratio.numerator, ratio.denominator] if ratio is not None
             else [part for _, part in row.rate_parts if hasattr(part, "atoms")])
    return [a for expr in exprs for a in expr.atoms]


def _rate_rows(report: RateReport, analysis: Any, ev: Any, unmeasured: list[Any] = (),
               rebind: Any = None) -> None:
    """One ``rate`` row for every distinct rate of the rows, after the rows; then those of
    the ``unmeasured`` rows (constraints over a subset the data lacks), each rebound by
    ``rebind`` where it can be (NaN where its own subset is empty)."""
    atoms: dict[str, Any] = {}
    for row in analysis.rows:
        atoms.update((a.name, a) for a in _row_atoms(row))
    for row in unmeasured:
        for atom in _row_atoms(row):
            try:
                held = atom.rebind(rebind)
            except EmptySubsetError:
                atoms.setdefault(atom.name, None)
            else:
                atoms.setdefault(held.name, held)
    for name, atom in atoms.items():
        report.rows.append(ReportRow("rate", name, "", np.nan, np.nan, note="no examples here")
                           if atom is None else
                           ReportRow("rate", name, "", ev.rate(atom, "indicator"),
                                     ev.rate(atom, "ramp")))


def score_metrics(result: Any, data: Dataset) -> dict[str, float]:
    """Metrics of a score model's deterministic predictions f(x) > 0 on a labelled ``data``
    (weighted by its example weights), the same keys for every score-model problem.

    Keys: ``objective`` (the problem's objective, exact, in the user's sense, with its
    dataset replaced by ``data``: indicator rates, exact TPR, exact mean or robust loss,
    without the regularizer, which ``result.objective`` includes; NaN
    when the objective uses several datasets or a subset empty on ``data``), ``error``,
    ``accuracy``, ``auc`` (NaN with one class only) and ``positive_rate`` (:data:`METRIC_KEYS`),
    then one key per family part of the objective: ``tpr@K`` / ``tpr@tau`` (exact TPR at the
    top), ``mean_loss`` (mean margin loss of a loss or robust loss) and ``robust_loss`` (the
    robust loss over ``data``'s own ball: same phi and rho).
    """
    from .expr.analysis import analyse

    if not isinstance(data, Dataset):
        raise SpecError(f"metrics(data) takes a labelled rc.Dataset; got {type(data).__name__}.")
    scorer = result._require_model()
    problem = result.problem
    if problem is None:
        raise SpecError("this Result was loaded from JSON without its problem; it predicts "
                        "but cannot evaluate its objective (pickle the Result to keep both).")
    data.require_labels("metrics", binary=True)
    workers = _worker_scores(scorer, data)
    out = {"objective": float("nan"),
           **(_memory_classification(scorer, data) if workers is None
              else _worker_classification(workers))}
    analysis = problem.analysis
    sources = {id(d): d for _, part in analysis.objective.parts for d in _part_datasets(part)}
    if len(sources) != 1:
        return out
    rebind, _ = make_rebinder(list(sources.values()), data)
    try:
        row = analyse(problem.objective.rebind(rebind), analysis.sense, [],
                      analysis.model).objective
    except (EmptySubsetError, SpecError):  # a subset empty on data; a ball too small for rho;
        # K above the data's negatives: the same keys, NaN
        return {**out, **_family_metrics(analysis.objective, None)}
    out["objective"] = (row.user_value(scorer, "exact") if workers is None
                        else row.to_user(workers.evaluation().row_value(row, "exact")))
    out.update(_family_metrics(row, scorer, workers))
    return out


def _worker_scores(scorer: Any, data: Dataset) -> Any:
    """The scores on the workers (:class:`ratecons.dask_metrics.WorkerScores`) for a
    Dask-backed ``data``; None in memory."""
    if not data.in_dask:
        return None
    from .dask_metrics import WorkerScores

    return WorkerScores(scorer, data)


def _memory_classification(scorer: Any, data: Dataset) -> dict[str, float]:
    """``error``, ``accuracy``, ``auc`` and ``positive_rate`` from the scores in memory."""
    from .metrics import auc

    y = data.y.astype(bool)
    s = np.asarray(scorer.decision_function(data), dtype=np.float64)
    weights = np.ones(data.n) if data.weights is None else np.asarray(data.weights, float)
    weights = weights / weights.sum()
    predicted = s > 0
    error = float(weights @ (predicted != y))
    return {"error": error, "accuracy": 1.0 - error,
            "auc": auc(s, y, data.weights) if 0 < y.sum() < y.size else float("nan"),
            "positive_rate": float(weights @ predicted)}


def _worker_classification(workers: Any) -> dict[str, float]:
    """The same keys by reductions over the partitions (the AUC by Dask's sort)."""
    sums = workers.classification()
    positives = sums.pop("positives")
    sums["auc"] = workers.auc() if 0 < positives < workers.data.n else float("nan")
    return {key: sums[key] for key in ("error", "accuracy", "auc", "positive_rate")}


def _part_datasets(part: Any) -> list[Dataset]:
    """A part's datasets: a method of terms, an attribute of rate expressions."""
    return part.datasets() if callable(part.datasets) else part.datasets


def _family_metrics(row: Any, scorer: Any, workers: Any = None) -> dict[str, float]:
    """The metrics of :func:`score_metrics` named by the objective's family parts, told apart
    by what they declare (no switch on their types): TPR at the top is the concave term, a
    loss has ``kind == "loss"``, a robust loss its per-example ``losses`` besides. With
    ``workers`` (Dask data) TPR and mean losses are reductions over the partitions. Without
    ``scorer``, the keys with NaN values."""
    measures: dict[str, Callable[[], float]] = {}  # each key's measurement, run below
    for _, part in row.parts:
        if getattr(part, "curvature", "rate") == "concave":
            key = f"tpr@{part.k}" if part.tau is None else f"tpr@{part.tau:g}"
            measures[key] = (partial(part.value, scorer) if workers is None
                             else partial(workers.tpr_at_top, part))
        elif getattr(part, "kind", "") == "loss" and hasattr(part, "losses"):
            measures["mean_loss"] = lambda part=part: float(np.mean(part.losses(scorer)))
            measures["robust_loss"] = partial(part.value, scorer)
        elif getattr(part, "kind", "") == "loss":
            measures["mean_loss"] = (partial(part.value, scorer) if workers is None
                                     else partial(workers.mean_loss, part))
    return {key: np.nan if scorer is None else measure() for key, measure in measures.items()}


def minimax_report(result: Any, data: Dataset | None = None) -> RateReport:
    """The report of a minimax risk classifier. Without ``data``: R*, the minimax risk (an
    upper bound on the expected 0-1 error for every distribution in U). With a labelled
    ``data``: the 0-1 error of the argmax rule (achieved) and of the randomized rule h(y|x)
    (expected) on it."""
    if data is None:
        report = RateReport(result.problem.objective.U.data_name, status=result.status,
                            method=result.method)
        report.rows.append(ReportRow(
            "objective", "minimax risk R*", "minimize", result.objective, result.objective,
            note="upper bound on the expected 0-1 error over U; report(data) gives errors"))
        return report
    report = RateReport(data.name, status=result.status, method=result.method)
    report.rows.append(ReportRow("objective", "0-1 error", "minimize", result.error(data),
                                 result.error(data, randomized=True)))
    return _with_groups(report, result, [data])
