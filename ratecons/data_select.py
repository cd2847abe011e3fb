"""Selection recipes behind :class:`~ratecons.data.Subset`: how a subset was chosen.

(``data`` below is a :class:`~ratecons.data.Dataset`; this module sits below ``data.py`` and
does not import it.)

A recipe computes the boolean mask of its rows on any dataset that has the attributes it needs
(labels, a group attribute, baseline predictions), so the same selection can be re-applied to
held-out data; recipes combine with ``&`` and ``|``. The notation of the labels follows Goh et
al. (Table 1): ``+`` for D^+, ``-`` for D^-, ``baseline+`` for the baseline's positives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import DataError, SpecError

__all__ = ["Selector", "All", "Label", "Group", "Baseline", "Mask", "Combine"]


class Selector:
    """How a subset was chosen; re-applicable to any dataset with the needed attributes."""

    def mask(self, data: Any) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def hint(self, data: Any) -> str:
        """What to check when this selection picks no row of ``data`` (for the error)."""
        return "it matches no row"

    def __and__(self, other: Selector) -> Selector:
        if isinstance(self, All):
            return other
        if isinstance(other, All):
            return self
        return Combine("&", self, other)

    def __or__(self, other: Selector) -> Selector:
        return Combine("|", self, other)


@dataclass(frozen=True)
class All(Selector):
    def mask(self, data: Any) -> np.ndarray:
        return np.ones(data.n, dtype=bool)

    def describe(self) -> str:
        return "all"


@dataclass(frozen=True)
class Label(Selector):
    value: int

    def mask(self, data: Any) -> np.ndarray:
        return data.require_labels("selecting examples by label") == self.value

    def describe(self) -> str:
        return {1: "+", 0: "-"}.get(self.value, f"y={self.value}")


@dataclass(frozen=True)
class Group(Selector):
    name: str
    value: Any

    def mask(self, data: Any) -> np.ndarray:
        if self.name not in data.groups:
            raise SpecError(
                f"dataset {data.name!r} has no group attribute {self.name!r}; it has "
                f"{sorted(data.groups) or 'none'}. Pass groups={{{self.name!r}: ...}}."
            )
        return data.groups[self.name] == self.value

    def describe(self) -> str:
        return f"{self.name}={self.value}"

    def hint(self, data: Any) -> str:
        values = np.unique(data.groups[self.name])
        plain = [v.item() if hasattr(v, "item") else v for v in values[:10]]
        shown = ", ".join(repr(v) for v in plain)
        asked = (f"; the value asked for is {self.value!r}, a {type(self.value).__name__}, and "
                 f"the values are {type(plain[0]).__name__}s"
                 if plain and isinstance(self.value, str) != isinstance(plain[0], str) else "")
        return (f"{self.name!r} takes the values {shown}{', ...' if values.size > 10 else ''}"
                + asked)


@dataclass(frozen=True)
class Baseline(Selector):
    prediction: int

    def mask(self, data: Any) -> np.ndarray:
        return data.require_baseline("selecting by baseline prediction") == self.prediction

    def describe(self) -> str:
        return "baseline" + ("+" if self.prediction == 1 else "-")


class Mask(Selector):
    def __init__(self, mask: Any, name: str | None) -> None:
        self.fn = mask if callable(mask) else None
        self.fixed = None if callable(mask) else np.asarray(mask)
        self.name = name or ("where(callable)" if callable(mask) else "where(mask)")

    def mask(self, data: Any) -> np.ndarray:
        m = self.fn(data) if self.fn is not None else self.fixed
        m = np.asarray(m)
        if m.dtype != bool:
            raise DataError(f"{self.name}: the mask must be boolean; got dtype {m.dtype}.")
        if m.shape != (data.n,):
            hint = (
                " A fixed mask cannot be re-applied to another dataset: pass a callable "
                "where(lambda data: ...) to report on held-out data."
                if self.fn is None
                else ""
            )
            raise DataError(
                f"{self.name}: the mask has shape {m.shape}, dataset {data.name!r} has "
                f"{data.n} rows.{hint}"
            )
        return m

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Combine(Selector):
    op: str
    left: Selector
    right: Selector

    def mask(self, data: Any) -> np.ndarray:
        a, b = self.left.mask(data), self.right.mask(data)
        return a & b if self.op == "&" else a | b

    def describe(self) -> str:
        joiner = " & " if self.op == "&" else " | "
        return "(" + self.left.describe() + joiner + self.right.describe() + ")"

