"""Analysis: results store -> the paper's tables and figures beside the published numbers.

Two stages (rl-baselines3-zoo / rliable style): :mod:`~esbench.analysis.load` aggregates a results
directory into tidy tables; everything else draws from those.

- :mod:`~esbench.analysis.load`: run table and curve table (one row per run and evaluation point).
- :mod:`~esbench.analysis.metrics`: numbers in, numbers out: Student-t and Welch intervals over
  seeds, censored times to a score, rliable's aggregates across tasks with a stratified bootstrap,
  and the simulations that measure their coverage.
- :mod:`~esbench.analysis.stats`: common grids, curves on one grid, loud seed-count checks
  (``allow_partial`` to mark instead of fail).
- :mod:`~esbench.analysis.claims`: the one verdict vocabulary and rule (supported, contradicted,
  undecided, not testable: no learning, not tested) and the retention claims as data;
  :mod:`~esbench.analysis.verdicts`: times to a target and ratios, decided in that vocabulary;
  :mod:`~esbench.analysis.coverage`: the measured coverage of every interval.
- :mod:`~esbench.analysis.retention_measures`: retention measures as numpy functions (a drop and
  its recovery, a gain path, the matched gain, the standard error of one evaluation).
- :mod:`~esbench.analysis.curves`: mean/IQM curves, time to a target.
- :mod:`~esbench.analysis.table1`, :mod:`~esbench.analysis.table2`, :mod:`~esbench.analysis.frameskip`,
  :mod:`~esbench.analysis.scaling`: one paper result each.
- :mod:`~esbench.analysis.tables`, :mod:`~esbench.analysis.figures`: Markdown/LaTeX/CSV and PNG/PDF.
- :mod:`~esbench.analysis.report`: ``build_report`` writes ``REPORT.md`` with tables and figures,
  rendered from the report's ``data/`` (:mod:`~esbench.analysis.report_data`);
  :mod:`~esbench.analysis.report_check`: ``esbench report --check`` recomputes and compares.
- :mod:`~esbench.analysis.cli`: ``esbench report TARGET ...``; :mod:`~esbench.analysis.wandb_report`:
  the same report in W&B: a report run using the runs' artifacts, and a W&B Report.
"""
