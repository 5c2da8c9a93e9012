"""Benchmarks, all in one package: ``esbench bench`` measures and prints, it never asserts.

* :mod:`.mujoco`: ES on HalfCheetah against the raw simulator, worker scaling, noise-table memory;
  :mod:`.command` is the ``esbench bench`` entry point.
* :mod:`.rollout`: where an ES rollout's time goes (replayed actions, one process, workers).
* :mod:`.baselines`: SB3 baselines' training steps/s on one core.
* :mod:`.atari`: ES on Atari: emulator frames/s and the CNN's share of a rollout.
* :mod:`.comm`: bytes to and from the workers per generation, from ~6k to ~1M parameters.
* :mod:`.store`: the results store over a long run (appending metrics rows against rewriting).
* :mod:`.eggroll`: EGGROLL's low-rank members against full-rank ones as the MLP grows.
* :mod:`.calibrate`: this machine's rates for cost estimates (``esbench bench calibrate``),
  measured with the functions above and saved where :mod:`esbench.recipes` prices from them.
* :mod:`.projection`: the costs the scaling projection is calibrated from (rollout cost per
  environment, master time against population, message sizes, scheduler cost per task).

The package sits at the top layer beside ``reproduce`` and ``sweep``: it may import anything below.
"""
