"""Patterns: the structures the specialized solvers were built for, recognized on a composed
problem by :mod:`ratecons.dispatch` (see :mod:`ratecons.patterns.pattern`)."""
