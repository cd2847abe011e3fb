"""The element-by-element array copy that compiled kernels use instead of ``target[:] = source``.

numba compiles a slice assignment between arrays with a shape check whose error message it
formats at run time; formatting it compiles numba's string machinery (``str``, ``repr`` and
unicode concatenation of the shapes), about 3.5 s of the first solve in a fresh environment
(the SDCA kernel of the rate pattern: 7.2 -> 3.7 s of compilation, ``ratecons demo`` 12.8 ->
9.0 s on an empty numba cache). The callers know the sizes agree.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["copy_into"]


@numba.njit(cache=True, inline="always")
def copy_into(source: np.ndarray, target: np.ndarray) -> None:
    """``target[:] = source`` for 1-D arrays of the same size, without the shape check."""
    for k in range(source.size):
        target[k] = source[k]
