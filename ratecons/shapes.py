"""The sizes every container of examples reads off its matrix: one definition for all of them.

:class:`ExampleShape` gives N (rows) and d (columns) of a feature matrix ``X`` (datasets, the
canonical programs); :class:`PsiShape` gives N, p, the number L of p-blocks and m = L p of a
matrix of feature maps ``psi`` with an optional label map E (minimax risk classifiers: Phi(x, y)
= E[y] kron psi(x), Bondugula et al., eq. 1). Both are mixins that read attributes of the class
they serve; they import nothing from ratecons.
"""

from __future__ import annotations

__all__ = ["ExampleShape", "PsiShape"]


class ExampleShape:
    """``n`` and ``d`` of ``self.X`` (N examples x d features)."""

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.X.shape[0])  # type: ignore[attr-defined]

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.X.shape[1])  # type: ignore[attr-defined]


class PsiShape:
    """``n``, ``p``, ``n_blocks`` (L) and ``m`` (L p) of ``self.psi`` (N x p) with
    ``self.label_map`` (E, n_classes x L; None is one-hot: L = ``self.n_classes``)."""

    @property
    def n(self) -> int:
        return int(self.psi.shape[0])  # type: ignore[attr-defined]

    @property
    def p(self) -> int:
        return int(self.psi.shape[1])  # type: ignore[attr-defined]

    @property
    def n_blocks(self) -> int:
        """L: the number of p-blocks of Phi and mu (n_classes one-hot, 1 compact)."""
        label_map = self.label_map  # type: ignore[attr-defined]
        return self.n_classes if label_map is None else int(label_map.shape[1])  # type: ignore

    @property
    def m(self) -> int:
        """Length of Phi(x, y) and mu: L * p."""
        return self.n_blocks * self.p
