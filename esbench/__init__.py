"""esbench: a reproducible benchmark suite for Evolution Strategies against reinforcement learning.

Reproduces Salimans et al. 2017, "Evolution Strategies as a Scalable Alternative to Reinforcement
Learning" (arXiv:1703.03864), at the scale a machine allows, on a Dask cluster.
"""

__version__ = "0.1.0"
