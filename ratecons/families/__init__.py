"""Problem families: each module compiles its objectives, lists its methods and registers itself
with :mod:`ratecons.dispatch`."""
