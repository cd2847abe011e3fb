"""Figures people look at for constrained classifiers (matplotlib, the ``plot`` extra).

* :func:`tradeoff`: the objective against the fairness achieved across a sweep of targets
  (:func:`ratecons.sweep`), held-out or training, as a Pareto front with the unconstrained
  model and any points computed elsewhere (fairlearn's, say);
* :func:`roc`: ROC curves of ranking models with a logarithmic false-positive axis and their
  TPR@K marked;
* :func:`group_rates`: a rate per group with the constraint's target;
* :func:`convergence`: objective, bounds and gap per iteration from ``result.history`` (the
  records every method hands to its callback);
* :func:`demo_figure`: the three side by side, as ``ratecons demo --plot`` draws them.

Each function draws on ``ax`` when given, else on a new figure sized for one column of a paper
(3.4 x 2.5 inches, 8-point text), and returns the axes. Matplotlib is imported on first use and
figures are built without pyplot (no global state, no display needed); save them with
``ax.figure.savefig("fig.png", dpi=200)``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .data import Dataset
from .errors import SpecError

__all__ = ["convergence", "demo_figure", "group_rates", "require_matplotlib", "roc",
           "tradeoff"]

#: one column of a two-column paper, in inches
COLUMN = (3.4, 2.5)
#: characters per line of a default axis label (an expression's name is wrapped to it)
LABEL_WIDTH = 48
_STYLE = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
          "xtick.labelsize": 7, "ytick.labelsize": 7, "lines.linewidth": 1.2,
          "lines.markersize": 4}


def require_matplotlib() -> Any:
    """The ``matplotlib`` module, or an ImportError that says how to install it."""
    try:
        import matplotlib
        import matplotlib.figure  # noqa: F401  (the submodule the figures are built from)
    except ImportError as exc:
        raise ImportError('ratecons.plot needs matplotlib, the "plot" extra: '
                          'pip install "ratecons[plot]"') from exc
    return matplotlib


def _axes(ax: Any, size: tuple[float, float] = COLUMN) -> Any:
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    with require_matplotlib().rc_context(_STYLE):
        fig = Figure(figsize=size, layout="constrained")
        return fig.add_subplot()


def _styled(draw: Callable[..., Any]) -> Callable[..., Any]:
    """Draw with the paper style (font sizes, line widths)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with require_matplotlib().rc_context(_STYLE):
            return draw(*args, **kwargs)

    wrapper.__name__, wrapper.__doc__ = draw.__name__, draw.__doc__
    wrapper.__wrapped__ = draw  # type: ignore[attr-defined]
    return wrapper


@_styled
def tradeoff(frontier: Any, ax: Any = None, held_out: bool = True,
             others: Mapping[str, tuple[float, float]] | None = None,
             xlabel: str | None = None, ylabel: str | None = None) -> Any:
    """The objective against the fairness achieved, for a :class:`~ratecons.frontier.Frontier`
    of :func:`ratecons.sweep`: every target's point labelled with its target, the Pareto front
    (:meth:`~ratecons.frontier.Frontier.pareto`) as a line, the unconstrained model as a star.

    ``held_out`` draws the values on the sweep's ``test`` data (else on the training data;
    held-out values need ``test=`` in the sweep). ``others`` adds points computed elsewhere on
    the same data, ``{"ExponentiatedGradient": (fairness, objective), ...}`` (fairlearn's
    mitigators, say). Points whose solve did not reach ``optimal`` are drawn hollow."""
    key = "test" if held_out else "train"
    every = [*frontier.points, frontier.unconstrained]
    if not any(np.isfinite(getattr(p, f"{key}_objective")) for p in every):
        raise SpecError(f"the frontier has no {'held-out' if held_out else 'training'} values"
                        + ("; pass test= to rc.sweep or held_out=False." if held_out else "."))
    ax = _axes(ax)
    front = frontier.pareto(held_out)
    ax.plot([getattr(p, f"{key}_fairness") for p in front],
            [getattr(p, f"{key}_objective") for p in front], color="0.6", lw=1.0, zorder=1,
            label="Pareto front")
    for p in frontier.points:
        x, y = getattr(p, f"{key}_fairness"), getattr(p, f"{key}_objective")
        hollow = p.status != "optimal"
        ax.plot([x], [y], "o", color="C0", markerfacecolor="white" if hollow else "C0",
                zorder=2, label="constrained" if p is frontier.points[0] else None)
        ax.annotate(f"{p.target:.3g}", (x, y), textcoords="offset points", xytext=(3, 3),
                    fontsize=6)
    u = frontier.unconstrained
    ax.plot([getattr(u, f"{key}_fairness")], [getattr(u, f"{key}_objective")], "*",
            color="C3", markersize=8, zorder=3, label="unconstrained")
    for i, (name, (x, y)) in enumerate((others or {}).items()):
        ax.plot([x], [y], "sDv^<>"[i % 6], color=f"C{i + 4}", zorder=3, label=name)
    # an expression's name runs past the figure's edge: wrapped (xlabel= / ylabel= to name it)
    ax.set_xlabel(xlabel or textwrap.fill(
        f"{frontier.fairness} ({'held-out' if held_out else 'train'})", LABEL_WIDTH))
    ax.set_ylabel(ylabel or textwrap.fill(
        f"{frontier.objective} ({'held-out' if held_out else 'train'})", LABEL_WIDTH))
    ax.margins(0.1)  # room for the target labels
    ax.set_title("trade-off (labels: targets)")
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


@_styled
def roc(models: Mapping[str, Any], data: Dataset, ax: Any = None, log_fpr: bool = True,
        ks: Sequence[int] = (1, 5, 10)) -> Any:
    """ROC curves (true- against false-positive rate) of ranking models on labelled ``data``,
    with a logarithmic FPR axis by default: the low-FPR corner that TPR@K and TPR@tau are
    about (the ranking paper's Table 6), where a linear axis shows nothing.

    ``models`` maps a label to a Result (or any object with ``decision_function``) or to an
    array of scores. Each curve marks TPR@K for every K in ``ks`` (:func:`ratecons.metrics.
    tpr_at_top`: positives above the mean of the K largest negative scores) at FPR = K /
    (number of negatives); that mean is at least the K-th largest negative score, so a mark
    lies on or below its curve. Points with FPR = 0 have no place on a log axis and are not
    drawn.
    """
    from sklearn.metrics import roc_curve

    from .metrics import auc, tpr_at_top

    y = data.require_labels("plot.roc", binary=True)
    n_neg = int(np.sum(y == 0))
    ax = _axes(ax)
    for i, (label, model) in enumerate(models.items()):
        scores = (np.asarray(model.decision_function(data), dtype=np.float64)
                  if hasattr(model, "decision_function") else np.asarray(model, dtype=float))
        fpr, tpr, _ = roc_curve(y, scores)
        keep = fpr > 0 if log_fpr else np.ones(fpr.size, dtype=bool)
        ax.step(fpr[keep], tpr[keep], where="post", color=f"C{i}",
                label=f"{label} (AUC {auc(scores, y):.3f})")
        marks = [k for k in ks if k <= n_neg]
        ax.plot([k / n_neg for k in marks], [tpr_at_top(scores, y, k) for k in marks], "o",
                color=f"C{i}", markerfacecolor="white")
        for k in marks if i == 0 else ():  # the K labels once
            ax.annotate(f"K={k}", (k / n_neg, tpr_at_top(scores, y, k)),
                        textcoords="offset points", xytext=(3, -8), fontsize=6)
    if log_fpr:
        ax.set_xscale("log")
        ax.set_xlim(0.5 / n_neg, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("false-positive rate" + (" (log scale)" if log_fpr else ""))
    ax.set_ylabel("true-positive rate")
    ax.set_title(f"ROC on {data.name} (circles: TPR@K)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower right")
    return ax


@_styled
def group_rates(result: Any, data: Dataset, group: str, rate: Callable[[Any], Any] | None = None,
                ratio: float | None = None, target: float | None = None, ax: Any = None,
                label: str | None = None) -> Any:
    """A rate (default the positive rate) on each level of the group attribute ``group`` of
    ``data``, for deterministic predictions and the randomized rule, with the constraint's
    target: ``ratio`` draws ratio x (largest deterministic rate) (the 80% rule at 0.8),
    ``target`` a fixed value."""
    from . import rates

    rate = rate or rates.positive_rate
    if group not in data.groups:
        raise SpecError(f"{data.name} has no group {group!r}; it has {sorted(data.groups)}.")
    levels = list(np.unique(data.groups[group]))
    scorer = result.scorer
    det = np.array([rate(data.group(group, v)).value(scorer, "indicator") for v in levels])
    ran = np.array([rate(data.group(group, v)).value(scorer, "ramp") for v in levels])
    ax = _axes(ax)
    x = np.arange(len(levels))
    ax.bar(x - 0.2, det, width=0.4, label="deterministic")
    ax.bar(x + 0.2, ran, width=0.4, label="randomized (expected)", alpha=0.7)
    if ratio is not None:
        ax.axhline(ratio * det.max(), color="black", linestyle="--", linewidth=1,
                   label=f"target: {ratio:g} x largest")
    if target is not None:
        ax.axhline(target, color="black", linestyle=":", linewidth=1, label=f"target {target:g}")
    ax.set_xticks(x, [str(v) for v in levels])
    ax.set_xlabel(group)
    name = getattr(rate, "__name__", "rate").replace("_", " ")
    ax.set_ylabel(f"{name} on {data.name}")
    ax.set_title(label or f"{name} by {group}")
    ax.set_ylim(0, max(1e-9, float(max(det.max(), ran.max()))) * 1.6)
    ax.legend()
    return ax


def _one_after_another(iterations: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The iteration numbers of a history whose runs each count from their own start (a
    repair's re-run, a round at the loss's scale, auto's next method) made to follow one
    another, and where each later run starts: ``ratecons demo --plot`` drew a line from its
    second run's iteration 14 back to 0."""
    x, starts, shift = iterations.copy(), [], 0.0
    for k in range(1, x.size):
        if iterations[k] <= iterations[k - 1]:
            shift = x[k - 1] + 1.0 - iterations[k]
            starts.append(x[k - 1] + 0.5)
        x[k] = iterations[k] + shift
    return x, starts


@_styled
def convergence(result: Any, ax: Any = None, log_gap: bool = True) -> Any:
    """Objective per iteration from ``result.history``, with the lower / upper bounds and the
    gap (right axis, log scale) when the method records them (under the shared event keys
    of :data:`ratecons.solvers.tracker.EVENT_KEYS`)."""
    history = result.history

    def series(key: str) -> np.ndarray:
        return np.array([h[key] if isinstance(h.get(key), (int, float)) else np.nan
                         for h in history], dtype=np.float64)

    drawn_keys = [k for k in ("objective", "upper", "lower", "gap")
                  if history and np.isfinite(series(k)).any()]
    if not drawn_keys:
        raise SpecError(f"the result of method {result.method!r} recorded no objective, bound "
                        f"or gap per iteration; nothing to draw.")
    ax = _axes(ax)
    it, rounds = _one_after_another(np.array([h.get("iteration", k) for k, h in
                                              enumerate(history)], dtype=np.float64))
    for start in rounds:
        ax.axvline(start, color="0.75", linestyle=":", linewidth=0.8)
    drawn = []

    def draw(on: Any, key: str, style: str, **kw: Any) -> np.ndarray:
        v = series(key)
        ok = np.isfinite(v)  # a key some iterations lack (or hold as inf) is drawn through the rest
        few = ok.sum() <= 3  # e.g. a bound certified at the last iteration only: a marker
        drawn.extend(on.plot(it[ok], v[ok], style + ("o" if few and "o" not in style else ""),
                             markersize=4 if few else 2, **kw))
        return v[ok]

    values = {key: draw(ax, key, style, label=key)
              for key, style in (("objective", "-o"), ("upper", "--"), ("lower", ":"))
              if key in drawn_keys}
    primal = np.concatenate([values.get("objective", []), values.get("upper", [])])
    if primal.size and "lower" in values:
        # a first lower bound far below the optimum would flatten the rest: clip the axis
        final = min(primal.min(), values["lower"][-1])
        span = max(primal.max() - final, 1e-12)
        if values["lower"].min() < final - span:
            ax.set_ylim(final - 0.5 * span, primal.max() + 0.1 * span)
    if "gap" in drawn_keys:
        right = ax.twinx()
        gap = draw(right, "gap", "-", color="grey", linewidth=0.8, label="gap (right)")
        if log_gap and gap.min() > 0:
            right.set_yscale("log")
        right.set_ylabel("gap")
    ax.set_xlabel("iteration" + (" (the runs one after another: a repair, a scale round, the "
                                 "next method)" if rounds else ""))
    ax.set_ylabel("objective")
    ax.set_title(f"convergence of {result.method} ({result.status})")
    ax.grid(alpha=0.3)
    ax.legend(drawn, [line.get_label() for line in drawn])
    return ax


def demo_figure(results: dict[str, Any], test: Dataset, group: str, ratio: float,
                path: str | None = None, frontier: Any = None) -> Any:
    """The demo's figure: per-group positive rates on ``test`` for each result in
    ``results`` (label -> Result), the convergence of the first, and the trade-off
    (:func:`tradeoff`) when a ``frontier`` (from :func:`ratecons.sweep`) is given; saved to
    ``path`` when given."""
    matplotlib = require_matplotlib()
    from matplotlib.figure import Figure

    panels = len(results) + 1 + (frontier is not None)
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(COLUMN[0] * panels * 0.9, COLUMN[1]), layout="constrained")
        axes = fig.subplots(1, panels)
    for ax, (label, result) in zip(axes, results.items()):
        group_rates(result, test, group, ratio=ratio, ax=ax, label=f"{label} model")
    top = max(ax.get_ylim()[1] for ax in axes[:len(results)])
    for ax in axes[:len(results)]:
        ax.set_ylim(0, top)  # one scale, so the models compare at a glance
    convergence(next(iter(results.values())), ax=axes[len(results)])
    if frontier is not None:
        tradeoff(frontier, ax=axes[-1])
    if path is not None:
        fig.savefig(path, dpi=200)
    return fig
