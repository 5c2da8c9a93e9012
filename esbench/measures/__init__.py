"""Measures shared by training and analysis: how far parameters and behaviour drifted.

A run logs these numbers at every evaluation point (:mod:`esbench.training.drift`) and the
retention analysis recomputes them from the files a run wrote, so both take them from here, below
either: :mod:`~esbench.measures.drift` (parameter drift from a snapshot) and
:mod:`~esbench.measures.distribution` (a batch of action distributions and the KL between two).
numpy only. Not the statistics of reports (intervals, aggregates): those are ``esbench.analysis``'s.
"""
