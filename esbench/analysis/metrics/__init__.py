"""Numbers from runs: intervals, times to a score, aggregates across tasks. Numpy and scipy in,
numbers out: no tables, no words, no verdicts (those are drawn from these numbers elsewhere).

- :mod:`~esbench.analysis.metrics.intervals`: Student-t and Welch intervals over seeds, the
  order-statistic interval of a median, the percentile bootstrap they replaced;
- :mod:`~esbench.analysis.metrics.censored`: times to a score as right-censored data (Kaplan-Meier
  median, share reached, restricted mean time);
- :mod:`~esbench.analysis.metrics.aggregate`: rliable's measures across tasks (IQM, optimality gap,
  performance profiles, probability of improvement);
- :mod:`~esbench.analysis.metrics.bootstrap`: stratified bootstrap intervals of any of them;
- :mod:`~esbench.analysis.metrics.planning`: how many seeds a study needs;
- :mod:`~esbench.analysis.metrics.coverage`: how often each interval covers, by simulation.
"""

from esbench.analysis.metrics.aggregate import (
    average_score_distribution,
    iqm,
    mean_score,
    median_score,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
    run_score_distribution,
)
from esbench.analysis.metrics.bootstrap import interval_estimate, interval_estimates
from esbench.analysis.metrics.censored import (
    restricted_mean_time,
    share_reached,
    survival_curve,
    time_to_score,
)

__all__ = [
    "average_score_distribution",
    "interval_estimate",
    "interval_estimates",
    "iqm",
    "mean_score",
    "median_score",
    "optimality_gap",
    "performance_profile",
    "probability_of_improvement",
    "restricted_mean_time",
    "run_score_distribution",
    "share_reached",
    "survival_curve",
    "time_to_score",
]
