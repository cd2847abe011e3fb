"""Exceptions and warnings raised by ratecons.

Every error subclasses :class:`RateconsError` and, where it refines a built-in
exception, that built-in too, so ``except ValueError`` keeps working for users
who do not know about ratecons' own classes.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "RateconsError",
    "SpecError",
    "DataError",
    "LabelError",
    "EmptySubsetError",
    "NotLinearError",
    "CurvatureError",
    "InfeasibleError",
    "UnboundedError",
    "SolverError",
    "UnknownOptionError",
    "ApproximationWarning",
    "ConvergenceWarning",
    "DataWarning",
    "check_flag",
    "parameter_error",
]


class RateconsError(Exception):
    """Base class of every error raised by ratecons."""


class SpecError(RateconsError, ValueError):
    """A specification (rate, constraint, problem, model, option) is malformed."""


class DataError(SpecError):
    """Input data has the wrong shape, type, or non-finite values."""


class LabelError(DataError):
    """Labels are missing where a rate needs them, or are not of the needed kind."""


class EmptySubsetError(DataError):
    """A rate was asked for over a subset with no examples (every rate is an average)."""


class NotLinearError(SpecError, TypeError):
    """An expression cannot be used where a linear combination of rates is needed."""


class CurvatureError(SpecError):
    """A composition breaks a curvature rule (a concave term minimized or bounded above, a
    convex one maximized or bounded below, minimax risk mixed with other terms).

    The message names the offending sub-expression as the user wrote it and the fix to try.
    """


class InfeasibleError(RateconsError):
    """The problem (or a relaxation that must be feasible to start) has no feasible point."""


class UnboundedError(RateconsError):
    """The problem is unbounded."""


class SolverError(RateconsError, RuntimeError):
    """A numerical solver failed or returned a status ratecons cannot interpret."""


class UnknownOptionError(SpecError, TypeError):
    """A method name or solver option was not recognised."""


class DataWarning(UserWarning):
    """Input data that ratecons can use but that is likely to hurt (badly scaled columns)."""


class ConvergenceWarning(UserWarning):
    """A solver stopped before certifying its tolerance (iteration or time limit)."""


class TrivialOptimumWarning(UserWarning):
    """The optimum is (numerically) w = 0: the model scores every example alike."""


class SlowMethodWarning(UserWarning):
    """The requested method is known to be slow, or to stall, on this kind of problem (the
    message says what was measured and which method to use instead)."""


class ApproximationWarning(UserWarning):
    """What was written or solved is an approximation of the problem declared (a kernel
    model over more rows than ``kernel_points``, made linear by a Nystrom sample or random
    features): its optimum can differ from an exact method's."""


def parameter_error(name: str, owner: str, expected: str, got: object) -> SpecError:
    """Build the one parameter-error message format used across ratecons.

    Examples
    --------
    >>> str(parameter_error("k", "tpr_at_top", "an int >= 1", 0))
    "The 'k' parameter of tpr_at_top must be an int >= 1. Got 0 instead."
    >>> import numpy as np
    >>> str(parameter_error("l2", "LinearModel", "a nonnegative float", np.float64("nan")))
    "The 'l2' parameter of LinearModel must be a nonnegative float. Got nan instead."
    """
    if type(got).__module__ == "numpy" and hasattr(got, "item") and getattr(got, "ndim", 1) == 0:
        got = got.item()  # np.float64(nan) reads as nan, as the user wrote it
    return SpecError(f"The {name!r} parameter of {owner} must be {expected}. Got {got!r} instead.")


def check_flag(value: object, name: str, owner: str, none: bool = False) -> None:
    """Refuse a flag that is not True or False (or None, with ``none``): 1, "no" and 0.5
    are not flags, and ``bool()`` of them would be a silent guess.

    Examples
    --------
    >>> check_flag("no", "randomized", "predict")
    Traceback (most recent call last):
    ...
    ratecons.errors.SpecError: The 'randomized' parameter of predict must be True or False. \
Got 'no' instead.
    """
    if not (isinstance(value, (bool, np.bool_)) or (none and value is None)):
        raise parameter_error(name, owner, "True, False or None" if none else "True or False",
                              value)
