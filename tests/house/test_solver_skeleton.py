"""One solver skeleton (issue 30): every solver's run ends through the Tracker.

``Solution(...)`` is constructed in :mod:`ratecons.solvers.tracker` only: every other module
builds its answer with :meth:`~ratecons.solvers.tracker.Tracker.solution` (or the tracker
module's :func:`~ratecons.solvers.tracker.no_point`, :func:`~ratecons.solvers.tracker.revised`
and :func:`~ratecons.solvers.tracker.from_record`). The scan below parses every module with
:mod:`ast`, follows the names ``Solution`` is imported under and counts attribute calls
(``solution.Solution(...)``) too; a self-test shows it finds a planted construction.

The other half of the Done-when line, every registered ``MethodSpec`` run with
``max_iterations=1`` and with a spent ``time_limit`` ending on the shared status words and the
warning rule, runs in ``tests/patterns/test_limits.py`` (its registry check fails a method
added without a row); the rule itself is checked here on the Tracker.
"""

from __future__ import annotations

import ast
import math
import warnings
from pathlib import Path

import pytest

from ratecons import limits, settings
from ratecons.errors import ConvergenceWarning
from ratecons.solvers.tracker import STATUS_REASON, Tracker, no_point, revised

ROOT = Path(__file__).resolve().parents[2] / "ratecons"
#: the one module that may construct a Solution
SKELETON = "solvers/tracker.py"


def constructions(source: str) -> list[int]:
    """Line numbers of ``Solution(...)`` calls in ``source``: under the name ``Solution``,
    under any alias it is imported as, or as an attribute (``module.Solution(...)``)."""
    tree = ast.parse(source)
    names = {"Solution"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.name == "Solution" and a.asname)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in names) or (
                isinstance(func, ast.Attribute) and func.attr == "Solution"):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scanner_finds_a_planted_construction():
    planted = ("from ratecons.solution import Solution as Answer\n"
               "import ratecons.solution as sol\n"
               "a = Solution('optimal', 0.0)\n"
               "b = Answer('optimal', 0.0)\n"
               "c = sol.Solution('optimal', 0.0)\n"
               "d = StructuredSolution('optimal')\n")  # another class: not counted
    assert constructions(planted) == [3, 4, 5]


def test_solution_is_constructed_only_in_the_tracker():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        lines = constructions(path.read_text())
        if lines and where != SKELETON:
            found[where] = lines
    assert found == {}, f"Solution(...) outside {SKELETON}: {found}"
    assert constructions((ROOT / SKELETON).read_text())  # the skeleton does build them


def _limit_run(name: str, **options) -> Tracker:
    tracker = Tracker(name, max_iterations=1, **options)
    tracker.check(1)
    return tracker


def _caught(block) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        block()
    return [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


def test_outside_a_solve_every_limit_ended_run_warns():
    said = _caught(lambda: [_limit_run(n).solution({}, objective=1.0) for n in "ab"])
    assert len(said) == 2
    assert said[0].startswith("a: reached max_iterations=1 after 1 iterations "
                              "(status iteration_limit)")


def test_one_warning_per_solve_and_none_from_a_step():
    def solve():
        with limits.limits_scope(limits.Limits(time_limit=100.0)):
            step = _limit_run("step", warn=False).solution({}, objective=1.0)
            first = _limit_run("run").solution({}, objective=1.0)
            again = _limit_run("continuation").solution({}, objective=1.0)
        assert step.status == first.status == again.status == settings.ITERATION_LIMIT

    said = _caught(solve)
    assert len(said) == 1 and said[0].startswith("run: reached max_iterations=1")
    assert len(_caught(solve)) == 1  # the next solve warns again


def test_a_certified_end_does_not_warn():
    tracker = Tracker("certified", tol=1e-6)
    tracker.bound(lower=1.0, upper=1.0 + 1e-9)
    assert tracker.check(1)
    built = []
    assert _caught(lambda: built.append(tracker.solution({}, objective=1.0))) == []
    assert built[0].status == settings.OPTIMAL
    assert built[0].certificate.details["stopped_by"] == "gap"


@pytest.mark.parametrize("status", [settings.TIME_LIMIT, settings.ITERATION_LIMIT,
                                    settings.NUMERICAL_ERROR, settings.INFEASIBLE])
def test_a_backend_status_gives_its_stop_reason_from_one_table(status):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = Tracker("cvxpy/CLARABEL").solution({}, objective=math.nan, status=status)
    assert sol.status == status
    assert sol.certificate.details["stopped_by"] == STATUS_REASON.get(status, "backend")


def test_a_spent_budget_names_the_users_time_limit():
    with limits.limits_scope(limits.Limits(time_limit=1e-9)):
        said = _caught(lambda: Tracker("cvxpy/CLARABEL").solution(
            {}, objective=math.nan, status=settings.TIME_LIMIT))
    assert said and "reached time_limit=1e-09 s" in said[0]


def test_relative_gap_normalization_and_the_solvers_own_clock():
    tracker = Tracker("dro", relative=True, scale_floor=1.0, tol=1e-3)
    tracker.bound(lower=0.2, upper=0.2005)  # |F| < 1: relative to 1, as DRO's tolerance is
    assert tracker.relative_gap() == pytest.approx(5e-4)
    assert tracker.check(1) and tracker.stop_reason == "gap"
    sol = tracker.solution({}, objective=0.2005, solve_time=0.125)  # checkpoints left out
    assert sol.solve_time == 0.125 and sol.certificate.gap == pytest.approx(5e-4)


def test_no_point_and_revised_copies():
    empty = no_point(settings.INFEASIBLE, solver="phase1", details={"message": "none"})
    assert math.isnan(empty.objective) and empty.primal == {}
    copy = revised(empty, status=settings.NUMERICAL_ERROR)
    copy.certificate.details["message"] = "changed"
    assert empty.certificate.details["message"] == "none"  # the copy shares no details
