"""Ctrl-C during a native call: the two ways ratecons keeps it prompt.

Python delivers SIGINT (:class:`KeyboardInterrupt`) only between bytecodes of the main thread,
so a long call into native code holds Ctrl-C until it returns: measured 144 s for a HiGHS
simplex solve and 14 s for a CLARABEL solve, and a CLARABEL solve sometimes swallowed it.

- A backend that calls back into Python runs in the main thread under
  :func:`deferred_sigint`: Ctrl-C runs ``on_interrupt`` (HiGHS: ``cancelSolve``, read by its
  interrupt callback at the next simplex or IPM iteration) and :class:`KeyboardInterrupt` is
  raised once the call returned. HiGHS is not run in a worker thread: a HiGHS solve interrupted
  there made the process abort at exit ("terminate called without an active exception") in
  about half of the runs measured. HiGHS' presolve does not call the interrupt callback (8-13 s
  on a 45000 x 809 dense LP), so Ctrl-C waits for it.
- Any other native call (CVXPY's backends, a HiGHS MPS write) runs through
  :func:`call_interruptibly`, in a daemon worker thread (the backends release the GIL while they
  compute) waited for in short slices, so the main thread raises :class:`KeyboardInterrupt` at
  once; the call finishes in the background and its answer is dropped. :func:`exit_now` lets a
  command line exit at once while such a call still runs.

Outside the main thread (where no signal arrives) calls run directly.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["INTERRUPTED_EXIT_CODE", "abandoned", "call_interruptibly", "deferred_sigint"]

T = TypeVar("T")
#: seconds between two checks of the main thread for a pending Ctrl-C
POLL = 0.05
#: exit status of a process ended by Ctrl-C (128 + SIGINT), as shells report it
INTERRUPTED_EXIT_CODE = 130
_ABANDONED: list[threading.Thread] = []


@contextlib.contextmanager
def deferred_sigint(on_interrupt: Callable[[], None]) -> Iterator[None]:
    """Within the block, Ctrl-C calls ``on_interrupt()`` instead of raising; on leaving the
    block, if Ctrl-C was pressed, the SIGINT handler in place before runs (by default: raise
    :class:`KeyboardInterrupt`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[bool] = []

    def handler(signum: int, frame: Any) -> None:
        pressed.append(True)
        on_interrupt()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:  # now do what Ctrl-C would have done without this block
        if callable(previous) and previous is not signal.default_int_handler:
            previous(signal.SIGINT, None)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt


def call_interruptibly(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Return ``fn(*args, **kwargs)``, raising :class:`KeyboardInterrupt` promptly on Ctrl-C
    (exceptions of ``fn`` are re-raised in the caller; on Ctrl-C the call is left to finish in
    the background)."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="ratecons-backend", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL)
    except KeyboardInterrupt:
        _ABANDONED.append(worker)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def abandoned() -> int:
    """How many interrupted backend calls are still running in the background."""
    return sum(worker.is_alive() for worker in _ABANDONED)


@atexit.register
def _exit_past_abandoned_calls() -> None:
    """At exit with an interrupted call still running, end the process now (module docstring):
    the handlers registered before this module's import do not run."""
    if abandoned():
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(INTERRUPTED_EXIT_CODE)
