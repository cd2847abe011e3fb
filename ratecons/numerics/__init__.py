"""Numerics that spec objects, canonical forms and solvers share, below all of them.

:mod:`ratecons.numerics.phi` (phi-divergence generators), :mod:`ratecons.numerics.inner_max`
(the exact inner maximization of the robust loss) and its compiled kernels
:mod:`ratecons.numerics.phi_kernels`. Nothing here imports a spec, a canonical form or a solver.
"""
