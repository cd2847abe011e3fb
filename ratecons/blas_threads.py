"""The threads of a solve: one BLAS thread, unless the user says otherwise, and every core for
its weighted Gram products.

Nearly every BLAS call of a solve is a level-1 or level-2 product over the examples (a rate's
ramp value, a row check, a matrix-vector product with the features), memory-bound work that
threads do not speed up. The one level-3 work, the interior points' weighted Gram product, runs
on one thread too (:data:`ratecons.solvers.interior.single_blas_thread`), except a syrk over
wide dense rows, which takes :func:`gram_threads` (:func:`ratecons.scans.gram_threads_for`).
Threaded OpenBLAS made the small products 3-8 ms each on a loaded 2-core machine against 0.04
ms on one thread (the ramp value of a rate over 22,794 examples), and the rate pattern's MM on
the whole Adult split (error rate + 80% rule) took 6.2 s against 3.1 s
(docs/composition_log.md).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext

from . import settings
from .errors import parameter_error

__all__ = ["gram_threads", "solve_blas_threads"]


def solve_blas_threads() -> AbstractContextManager:
    """The BLAS thread limit of one solve (:data:`ratecons.settings.SOLVE_BLAS_THREADS`; None
    leaves BLAS's own setting), the caller's setting restored when it exits; a bad
    :data:`ratecons.settings.GRAM_THREADS` is refused here, before any product needs it."""
    _setting("GRAM_THREADS", "every core")
    threads = _setting("SOLVE_BLAS_THREADS", "BLAS's own setting")
    if threads is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits  # (64 ms to import: not at import ratecons)

    return threadpool_limits(limits=threads, user_api="blas")


def gram_threads() -> int:
    """The threads of a weighted Gram product (:data:`ratecons.settings.GRAM_THREADS`; None:
    the cores this process may run on)."""
    threads = _setting("GRAM_THREADS", "every core")
    if threads is None:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    return threads


def _setting(name: str, none: str) -> int | None:
    """The thread count ``settings.<name>``: None (which means ``none``) or an int >= 1;
    anything else is refused by the setting's name."""
    threads = getattr(settings, name)
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise parameter_error(name, "ratecons.settings", f"an int >= 1 or None ({none})",
                              threads)
    return threads
