"""A Hydra launcher that runs each multirun job as a task on esbench's Dask cluster.

Use it with ``esbench run -m hydra/launcher=dask ...``. The cluster is the run config's
``cluster`` group (``cluster=local`` by default, ``cluster=address``, ``cluster=slurm``).
"""
