"""Lowering tables: one registry per lowering, from term type to its canonicalization.

Each lowering -- CVXPY (:data:`ratecons.reductions.cvxpy_canon.LOWERINGS`), the matrix LP/QP
(:data:`ratecons.reductions.to_matrix.LOWERINGS`) and the structured step solver
(:data:`ratecons.reductions.to_structured.LOWERINGS`) -- keeps a dict from a term's exact type
to the entry that writes it (CVXPY's ``CANON_METHODS``). Adding a term is its class plus one
entry per lowering that supports it; :func:`entry_for` refuses a term without one by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..errors import NotLinearError
from ..expr.atom import label_of

__all__ = ["entry_for"]

Entry = TypeVar("Entry")


def entry_for(table: Mapping[type, Entry], part: Any, lowering: str) -> Entry:
    """The entry of ``type(part)`` in ``table``; a :class:`NotLinearError` naming the part and
    the types the lowering takes when there is none."""
    entry = table.get(type(part))
    if entry is None:
        known = ", ".join(sorted(t.__name__ for t in table))
        raise NotLinearError(
            f"the {lowering} lowering has no entry for {label_of(part)} "
            f"({type(part).__name__}); it lowers {known}. Register the term in its LOWERINGS "
            "table (docs/architecture.md, 'Adding a term') or choose a method whose lowering "
            "takes it.")
    return entry
