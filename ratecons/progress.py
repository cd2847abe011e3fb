"""What a solve shows while it runs: a progress bar on a terminal, nothing otherwise.

Every method reports its iterations (MM steps, constraint-generation rounds, subgradient epochs,
CVXPY calls of the generic chain) to a ``callback(event)`` with keys such as ``iteration``,
``stage``, ``objective``, ``gap``, ``lower``, ``upper`` and ``max_violation``.
:func:`solve_progress` wraps that callback at the dispatch level (no solver knows about it)
with a ``tqdm`` bar, shown when ``verbose=True``, or when ``verbose=None`` and standard error is a
terminal. It also keeps HiGHS' banner off standard output
(:func:`ratecons.backends.highs.silence_banner`), so ``ratecons solve --json`` prints JSON
alone.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from .backends.highs import silence_banner

__all__ = ["show_progress", "solve_progress"]

Callback = Callable[[dict[str, Any]], None]
#: event keys shown next to the bar, in this order
_SHOWN = ("objective", "gap", "max_violation", "lower", "upper")
def show_progress(verbose: bool | None) -> bool:
    """Whether to draw a bar: ``verbose`` if given, else only when stderr is a terminal."""
    if verbose is not None:
        return bool(verbose)
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def _postfix(event: dict[str, Any]) -> str:
    parts = [str(event["stage"])] if event.get("stage") else []
    for key in _SHOWN:
        value = event.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{key}={value:.4g}")
    return " ".join(parts)


@contextlib.contextmanager
def solve_progress(method: str, callback: Callback | None, verbose: bool | None,
                   total: int | None = None) -> Iterator[Callback | None]:
    """The callback to hand to the method: the user's, plus a bar when :func:`show_progress`.

    Used as ``with solve_progress(name, callback, verbose) as cb: run(..., callback=cb)``.
    With ``total`` (the method's iteration cap) the bar counts the events' ``iteration``
    against it, with a percentage and an ETA; without, it counts events.
    """
    silence_banner()
    if not show_progress(verbose):
        yield callback
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=f"ratecons {method}", unit=" it", file=sys.stderr, leave=False,
               dynamic_ncols=True, total=total)

    def tick(event: dict[str, Any]) -> None:
        bar.set_postfix_str(_postfix(event), refresh=False)
        iteration = event.get("iteration")
        if not total:  # redraws at most every mininterval (0.1 s)
            bar.update(1)
        elif isinstance(iteration, int):
            bar.update(max(0, iteration - bar.n))
        if callback is not None:
            callback(event)

    try:
        yield tick
    finally:
        if bar.n:
            bar.refresh()  # the last state, even when every event came within mininterval
        bar.close()
