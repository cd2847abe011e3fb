"""The chain's start from a row sample (issues 29 and 33): the same problem solved first on
every k-th row, its model the start of the chain on all rows.

Most of the structured chain's passes over large data are interior-point iterations of phase
one and of the MM steps, each step started far from its fixed point (611 passes for logistic
loss + the 80% rule on 200,000 rows on Dask, 282 from a sample, ``docs/cluster.md``). Above
:data:`~ratecons.settings.SAMPLE_START_MIN_ROWS` rows the chain therefore solves the SAME
declarations first on a deterministic sample of 1 / :data:`~ratecons.settings.SAMPLE_START_EVERY`
of the largest dataset's rows, at most :data:`~ratecons.settings.SAMPLE_START_ROWS`, of each
dataset: the rows whose global index is a multiple of k = ceil(n / size) (:func:`sample_rows`),
so that in-memory data and Dask data pick the same rows and the two paths start from the same
model. Every subset (a group, the positives, a mask) is the subset's own rows among the sampled
ones and every rate is the mean over them, as declared (:func:`sampled_analysis`). On Dask data
only the sample's rows travel to the client (one pass, O(sample x p)); the sample is solved in
memory by the same chain (structured or CVXPY steps; :func:`chain_from_sample`, the one wrapper
of both) with no sample start of its own, and only as a start: its MM stops at the relative
decrease :data:`~ratecons.settings.SAMPLE_START_TOL`, not the certificate's, and its
deterministic model is not repaired (the sample's rates are estimates of the full data's to
about 1e-3 at 5,000 rows, so the tail of its MM path and its repair moved nothing that the
chain on all rows keeps).

Whether the chain on all rows starts from the sample's model is decided from the sample's own
run (:attr:`SampleStart.gain`): when its MM took steps but lowered the surrogate objective of
its hinge relaxation by less than :data:`~ratecons.settings.SAMPLE_START_MIN_GAIN` (relative),
its MM path crawled, and from its model the chain on all rows took more MM steps than from its
own hinge relaxation, where it starts then, as without a sample. A sample whose hinge
relaxation was its fixed point (one MM step, gain 0) is a start: the warm MM step from its
model took about as many or fewer interior-point iterations than the cold hinge relaxation on
all rows. Otherwise the sample's model (w, b) starts the chain on all rows
(:func:`ratecons.generic.solve_generic`, ``start=``): when it meets every surrogate row on all
rows with the phase-one margin, MM starts at it; when it misses a row (the sample's rates are
estimates of the full data's), the first MM step on all rows is solved at it (the bound of
eq. 4 is tight there, so the step's answer meets every surrogate row and MM goes on from it as
from any iterate); only when that step has no certified answer is the sample solved again with
the missed row's bound lowered by 2m (:meth:`SampleStart.tightened`, at most
:data:`~ratecons.settings.SAMPLE_START_TIGHTENINGS` times: in memory, one pass over all rows
to check each); after that phase one (:func:`~ratecons.phase_one.run_phase_one`) starts from
its scores and MM from the point it finds; when phase one finds none, the chain starts as
without a sample (the hinge relaxation). The structured steps also start the first MM step on
all rows from the sample's last certified step (w, b and the rows' multipliers). The sample
changes only the start: every step, the fixed-point test, the repair and the certificate are
on all rows, as before. MM's fixed points are local, so the answer can differ from the default
start's (``certificate.details["sample_start"]`` says what was used).

The constants' measurements are beside them in :mod:`ratecons.settings`; the runs behind
them in docs/composition_log.md (2026-11-27, "The sample start's rule").

The option ``sample_start`` of the chains (``method="structured"``, ``"cvxpy"``,
``"generic"``; ``problem.plan(sample_start=...)`` states it): None (the default) samples
above the threshold, False or 0 never, True always (when a dataset has more rows than the
sample), an int n >= :data:`~ratecons.settings.SAMPLE_START_MIN_SAMPLE` samples n rows of each
dataset larger than that.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import settings
from .dask_types import is_dask
from .data import Dataset, Subset
from .errors import EmptySubsetError, SpecError, parameter_error
from .expr.analysis import Analysis, analyse
from .options import RULES
from .solution import Solution

__all__ = ["NO_TIME_LEFT", "SampleStart", "chain_from_sample", "check_sample_start", "mm_gain",
           "sample_rows", "sample_size", "sample_start_note", "sampled_analysis",
           "start_from_sample"]

#: why a chain returns no model when the time limit stopped its first convex step on all rows
#: (the hinge relaxation), whose iterate is no point of the chain: 2,000 Adult rows at
#: ``time_limit=0.05`` returned its start w = 0 as a model; a user's 34,000 rows at
#: ``time_limit=10`` the same, the start from the row sample's model having used up the time
NO_TIME_LEFT = ("the time limit ended the run before a first point on all rows (the first convex "
                "step, or the start from a row sample's model: details['sample_start'], used "
                "it up); raise time_limit")


@dataclass(frozen=True)
class SampleStart:
    """A model solved on a row sample, the start of the chain on all rows.

    Attributes
    ----------
    w, b : the sample's model over the feature map (the user's w for a linear model)
    rows : int
        The sample's rows (summed over the datasets).
    status : str
        The sample solve's status.
    objective : float
        Its surrogate objective on the sample (canonical: minimized).
    mm_iterations : int
        Its MM steps.
    gain : float
        How much its MM steps lowered the surrogate objective from its hinge relaxation,
        relative to max(1, |objective|) (inf when its first point was phase one's: the
        hinge relaxation was infeasible).
    seconds : float
        The wall time of the sample solves so far, the gathering of the rows included.
    shift : ndarray
        How far each constraint's (canonical) bound was lowered on the sample
        (:meth:`tightened`; zeros at first).
    again : callable
        shift -> the sample solved again with its bounds lowered by ``shift`` (None when that
        solve finds no model).
    origin : str
        ``"sample"``; ``"scale"`` for the start of a round at the loss's scale
        (:mod:`ratecons.chain_scale`: the last round's model on all rows, at its best scale),
        which the chain uses the same way but names so in its history and does not report as
        ``certificate.details["sample_start"]``.
    """

    w: np.ndarray
    b: float
    rows: int
    status: str
    objective: float
    mm_iterations: int
    gain: float
    seconds: float
    shift: np.ndarray
    again: Callable[[np.ndarray], SampleStart | None] = field(repr=False, compare=False)
    origin: str = "sample"

    @classmethod
    def of_model(cls, w: np.ndarray, b: float, rows: int, status: str, objective: float,
                 constraints: int, origin: str) -> SampleStart:
        """A start from a model the chain already has (``origin``, e.g. ``"scale"``), used by
        the chain as a sample's model but with nothing to solve again: one MM step, a gain
        that never skips it (inf), no time, no shift, and no tightened re-solve (``again``
        finds nothing, so a miss on all rows goes to the MM step at it, then phase one)."""
        return cls(w, b, rows, status, objective, 1, math.inf, 0.0, np.zeros(constraints),
                   lambda shift: None, origin)

    def tightened(self, extra: np.ndarray) -> SampleStart | None:
        """The sample solved again with every bound lowered by ``extra`` more: a sample model
        that misses a surrogate row on all rows (the sample's rows are estimates) is moved
        inside it on the sample, in memory, before the chain spends passes over all rows on
        phase one (:meth:`ratecons.generic._ChainRun.from_sample`)."""
        found = self.again(self.shift + extra)
        return None if found is None else replace(found, seconds=self.seconds + found.seconds)

    def details(self, used: str) -> dict[str, Any]:
        """The certificate's ``sample_start`` entry; ``used`` says how the chain used it."""
        return {"rows": self.rows, "status": self.status, "objective": self.objective,
                "mm_iterations": self.mm_iterations, "gain": self.gain,
                "seconds": self.seconds,
                "tightened_by": self.shift.tolist(), "used": used}


def check_sample_start(value: Any, owner: str) -> None:
    """Raise :class:`~ratecons.errors.SpecError` unless ``value`` is a valid ``sample_start``
    (None, or the rule of :data:`ratecons.options.RULES`)."""
    expected, valid = RULES["sample_start"]
    if value is not None and not valid(value):
        raise parameter_error("sample_start", owner, "None, " + expected, value)


def sample_size(analysis: Analysis, value: Any) -> int | None:
    """The sample's rows per dataset that ``sample_start=value`` asks for on this problem, or
    None when there is no sample start (off, a problem without ramp parts or with TPR@K in a
    constraint (its k counts examples: on a sample the same k is another share of them; a
    TPR@K objective's k is scaled to the sample, :func:`sampled_analysis`), or no dataset
    larger than the sample). A kernel model's sample is solved over the whole data's feature
    map (the chains make it once), so its model is a start over the same psi."""
    check_sample_start(value, "the chain")
    if value is None:
        largest = max(d.n for d in analysis.datasets)
        size = (min(settings.SAMPLE_START_ROWS,
                    math.ceil(largest / settings.SAMPLE_START_EVERY))
                if largest > settings.SAMPLE_START_MIN_ROWS else 0)
    elif isinstance(value, bool):
        size = settings.SAMPLE_START_ROWS if value else 0
    else:
        size = int(value)
    # TPR@K in a constraint: a K declared as a count (TPR@tau's K, where it has one, follows
    # its quantile); the objective's is scaled to the sample (:func:`sampled_analysis`)
    counted = any(_counted(part) for row in analysis.constraints for _, part in row.parts)
    if size == 0 or not analysis.needs_mm or counted:
        return None
    return size if any(d.n > size for d in analysis.datasets) else None


def _counted(part: Any) -> bool:
    """Whether ``part`` is TPR@K with its K declared as a count of examples."""
    return getattr(part, "k", None) is not None and getattr(part, "tau", 0.0) is None


def sample_rows(n: int, size: int) -> np.ndarray:
    """The sample of ``size`` rows of ``n``: the global row indices that are multiples of
    k = ceil(n / size) (all rows when n <= size), the same on every backend."""
    return np.arange(0, n, max(1, math.ceil(n / size)), dtype=np.int64)


def _sampled_dataset(data: Dataset, rows: np.ndarray) -> Dataset:
    """``data``'s rows ``rows`` as an in-memory Dataset; from Dask only these rows travel
    (one pass over the partitions)."""
    if not is_dask(data.X):
        return data.take(rows, f"{data.name}[sample]")
    from .numerics.inner_max_dask import computed

    return data.take(rows, f"{data.name}[sample]",
                     features=computed(data.X[rows], features=True))


def sampled_analysis(analysis: Analysis, size: int) -> tuple[Analysis, int]:
    """The problem's declarations on the sample (module docstring) and the sample's rows.

    Raises :class:`~ratecons.errors.SpecError` when a declaration does not hold on the sample
    (an :class:`~ratecons.errors.EmptySubsetError`: a subset the problem averages over has no
    row in it)."""
    taken = {id(d): sample_rows(d.n, size) for d in analysis.datasets}
    samples = {key: _sampled_dataset(d, taken[key]) for key, d in
               ((id(d), d) for d in analysis.datasets)}

    def rebind(subset: Subset) -> Subset:
        rows = taken[id(subset.data)]
        where = np.searchsorted(rows, subset.index)
        inside = where < rows.size
        inside[inside] = rows[where[inside]] == subset.index[inside]
        if subset.n and not inside.any():
            raise EmptySubsetError(f"{subset.name} has no row among the {rows.size} rows of "
                                   "the sample")
        return Subset(samples[id(subset.data)], where[inside], subset.selector)

    objective = analysis.objective.source.rebind(rebind)
    if _counted(objective):  # TPR@K: the same share of the rows its threshold is among
        objective = objective.with_k(max(1, round(
            objective.k * objective.n_tilde / analysis.objective.source.n_tilde)))
    constraints = [row.source.rebind(rebind) for row in analysis.constraints]
    sampled = analyse(objective, analysis.sense, constraints, analysis.model)
    return sampled, int(sum(d.n for d in samples.values()))


def mm_gain(solution: Solution) -> float:
    """How much a chain's MM steps lowered the surrogate objective from its hinge relaxation,
    relative to max(1, |objective|); inf when its first point was phase one's."""
    first = next((event for event in solution.history if event.get("iteration") == 0
                  and event.get("stage") in ("hinge", "start")), None)
    if first is None or first["stage"] != "hinge":
        return math.inf
    end = float(solution.objective)
    return (float(first["objective"]) - end) / max(1.0, abs(end))


def start_from_sample(analysis: Analysis, value: Any,
                      solve: Callable[[Analysis], tuple[Solution, Any]]
                      ) -> tuple[SampleStart | None, dict[str, Any]]:
    """The :class:`SampleStart` that ``sample_start=value`` asks for, by ``solve`` (the
    chain on the sampled analysis: its Solution over the feature map, and anything), or None;
    with the certificate's details when the sample start was asked for but not used."""
    size = sample_size(analysis, value)
    if size is None:
        return None, {}
    began = time.perf_counter()
    try:
        sampled, rows = sampled_analysis(analysis, size)
    except SpecError as error:  # a subset with no row in the sample
        return None, {"sample_start": {"used": f"no: {error}"}}

    def solve_at(shift: np.ndarray, since: float) -> SampleStart | None:
        lowered = [replace(row, bound=row.bound - s) for row, s in zip(sampled.constraints,
                                                                        shift)]
        solution, _ = solve(replace(sampled, constraints=lowered))
        if solution.status not in settings.SOLVED_STATUSES or "w" not in solution.primal:
            return None
        return SampleStart(np.asarray(solution.primal["w"], dtype=np.float64),
                           float(solution.primal["b"]), rows, solution.status,
                           float(solution.objective),
                           int(solution.certificate.details.get("mm_iterations", 0)),
                           mm_gain(solution), time.perf_counter() - since, shift,
                           lambda more: solve_at(more, time.perf_counter()))

    found = solve_at(np.zeros(len(sampled.constraints)), began)
    if found is None:
        return None, {"sample_start": {"rows": rows,
                                       "used": "no: the sample solve found no model"}}
    return found, {}


#: one run of a chain: (analysis, start or None, whether it is the sample's run) -> (its
#: Solution over the feature map, the user's scorer, its last step)
Chain = Callable[[Analysis, SampleStart | None, bool], tuple[Solution, Any, Any]]


def chain_from_sample(form: Analysis, value: Any, chain: Chain, only_step: bool
                      ) -> tuple[Solution, Any, Any]:
    """``chain`` on ``form`` from the start that ``sample_start=value`` asks for (none when
    the run solves ``only_step``): the sample's run first (:func:`start_from_sample`), then
    the run on all rows from its model, whose certificate says how the sample was used. The
    one wrapper of the structured and CVXPY chains."""
    start, skipped = (None, {}) if only_step else start_from_sample(
        form, value, lambda sample: chain(sample, None, True)[:2])
    solution, scorer, last_step = chain(form, start, False)
    solution.certificate.details.update(skipped)
    return solution, scorer, last_step


def sample_start_note(analysis: Analysis | None, value: Any, method: str) -> str | None:
    """The plan's line for the chain ``method`` with ``sample_start=value`` (None when it has
    no sample start); a bad value raises, naming the method."""
    check_sample_start(value, f"method {method!r}")
    if analysis is None:
        return None
    size = sample_size(analysis, value)
    if size is None:
        return None
    rows = sum(sample_rows(d.n, size).size for d in analysis.datasets)
    return (f"starts from a solve on a {rows:,}-row sample (every k-th row of each dataset "
            f"with more than {size:,} rows, MM to a relative decrease of "
            f"{settings.SAMPLE_START_TOL:g}, no repair; sample_start=False turns it off): MM "
            "on all rows then starts near its fixed point, from the sample's model, unless "
            "the sample's MM took steps but lowered its hinge relaxation's objective by less "
            f"than {settings.SAMPLE_START_MIN_GAIN:g} (relative): then from the hinge "
            "relaxation")
