"""Type and range of every solve option, checked once before any method runs.

An option means the same thing in every method that takes it (``tol`` is a tolerance >= 0,
``max_epochs`` a count >= 1, ...), so one table (:data:`RULES`) checks them all, by name, in
scikit-learn's error format (:func:`ratecons.errors.parameter_error`):
``The 'max_epochs' parameter of method 'mm' must be an int >= 1. Got 0 instead.``
``solver`` names a CVXPY backend for the CVXPY methods and a HiGHS algorithm for the HiGHS
ones (:data:`SOLVERS`). A method checks what only it knows on top (e.g. the choices of
``v_chooser``); ``None`` keeps an option's default and is not checked here.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from . import settings
from .errors import UnknownOptionError, parameter_error

__all__ = ["METHOD_RULES", "RULES", "SOLVERS", "validate_options"]

Rule = tuple[str, Callable[[Any], bool]]


def _int(low: int) -> Rule:
    return (f"an int >= {low}",
            lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= low)


def _real(strict: bool) -> Rule:
    def ok(v: Any) -> bool:
        return (isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
                and (v > 0 if strict else v >= 0))
    return ("a finite float > 0" if strict else "a finite float >= 0", ok)


_BOOL: Rule = ("a bool", lambda v: isinstance(v, bool))
#: ``sample_start`` of the chains (:mod:`ratecons.sample_start`): on/off, or the sample's rows
_SAMPLE_START: Rule = (
    f"a bool, or 0 or an int >= {settings.SAMPLE_START_MIN_SAMPLE} (the sample's rows per "
    "dataset)",
    lambda v: isinstance(v, bool) or (isinstance(v, numbers.Integral) and (
        v == 0 or v >= settings.SAMPLE_START_MIN_SAMPLE)))
_DICT: Rule = ("a dict of option names to values", lambda v: isinstance(v, dict))

#: option name -> (what it must be, check)
RULES: dict[str, Rule] = {
    **{name: _real(strict=False) for name in ("tol", "eps1", "eps2", "improvement_tol")},
    **{name: _real(strict=True) for name in ("epsilon", "start_epsilon", "v_max", "a",
                                             "max_samples", "time_limit")},
    **{name: _int(1) for name in ("max_epochs", "max_iter", "max_iterations", "memory",
                                  "n_max", "m_max", "k_max", "check_every", "batch",
                                  "batch_size", "m0", "draws", "kernel_points")},
    **{name: _int(0) for name in ("repair_rounds", "max_kernel_bytes")},
    **{name: _BOOL for name in ("warn", "shrinking", "group_moves", "check_feasibility",
                                "remove_slack")},
    **{name: _DICT for name in ("solver_options", "highs_options", "step_params")},
    "sample_start": _SAMPLE_START,
}

#: method -> the values its ``solver`` option takes
_CVXPY_BACKENDS = ("CLARABEL", "SCS", "HIGHS")
_HIGHS_ALGORITHMS = ("simplex", "ipm", "choose")
SOLVERS: dict[str, tuple[str, ...]] = {
    "cvxpy": _CVXPY_BACKENDS, "hinge": _CVXPY_BACKENDS, "generic": _CVXPY_BACKENDS,
    "lp": _HIGHS_ALGORITHMS, "ccg": _HIGHS_ALGORITHMS, "highs": _HIGHS_ALGORITHMS,
}


#: options whose meaning depends on the method: method -> option -> rule
_STEP: Rule = ("'auto' or a finite float > 0",
               lambda v: v == "auto" or _real(strict=True)[1](v))
METHOD_RULES: dict[str, dict[str, Rule]] = {m: {"step": _STEP}
                                            for m in ("fsg", "gssg", "pssg", "sgd")}


def validate_options(method: str, options: dict[str, Any]) -> None:
    """Raise a :class:`~ratecons.errors.SpecError` naming the first option of the wrong type
    or range (an unknown ``solver`` is an :class:`~ratecons.errors.UnknownOptionError`)."""
    owner = f"method {method!r}"
    for name, value in options.items():
        if value is None:
            continue
        if name == "solver" and method in SOLVERS:
            choices = SOLVERS[method]
            if not isinstance(value, str):
                raise parameter_error(name, owner, f"one of {choices}", value)
            if value not in choices and value.upper() not in choices:
                kind = "CVXPY" if choices is _CVXPY_BACKENDS else "HiGHS"
                raise UnknownOptionError(
                    f"The 'solver' parameter of {owner} must be one of {choices}. Got "
                    f"{value!r} instead (unknown {kind} solver).")
            continue
        rule = METHOD_RULES.get(method, {}).get(name) or RULES.get(name)
        if rule is not None and not rule[1](value):
            raise parameter_error(name, owner, rule[0], value)
