"""Backends: the adapters that own an external solver library or file format (HiGHS, MPS, CVXPY's
status table), each in one file."""
