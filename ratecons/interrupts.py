"""Ctrl-C during a native call: run the call in a worker thread, keep the main thread listening.

Python delivers SIGINT (:class:`KeyboardInterrupt`) only between bytecodes of the main thread,
so a long call into native code (a HiGHS or CLARABEL solve, an MPS write) holds Ctrl-C until it
returns -- measured at tens of seconds on large models, and a CLARABEL solve sometimes swallowed
it altogether. :func:`call_interruptibly` runs such a call in a daemon worker thread (the
backends release the GIL while they compute) and waits for it in short slices, so the main
thread raises :class:`KeyboardInterrupt` at once. ``cancel`` asks the backend to stop (HiGHS'
interrupt callback); a backend without one finishes in the background and its answer is
dropped. Outside the main thread (where no signal arrives) the call runs directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["call_interruptibly"]

T = TypeVar("T")
#: seconds between two checks of the main thread for a pending Ctrl-C
POLL = 0.05
#: seconds to wait for a cancelled backend to return before giving up on it
CANCEL_GRACE = 1.0


def call_interruptibly(fn: Callable[..., T], *args: Any, cancel: Callable[[], None] | None = None,
                       **kwargs: Any) -> T:
    """Return ``fn(*args, **kwargs)``, raising :class:`KeyboardInterrupt` promptly on Ctrl-C.

    Exceptions of ``fn`` are re-raised in the caller. On Ctrl-C, ``cancel()`` is called (when
    given) and the worker is waited for at most :data:`CANCEL_GRACE` seconds.
    """
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
        if cancel is not None:
            cancel()
            worker.join(CANCEL_GRACE)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]
