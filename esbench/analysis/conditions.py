"""Condition names of the retention studies: an algorithm with its variant.

A condition is a registered algorithm key, ``+awd`` when it trains with Anchored Weight Decay
(``algo.l2_anchor: stage_start``), and ``@pop<N>`` when one algorithm runs at more than one
population size (``openai_es+awd@pop20``). Reports label a condition from the registry's label of
its algorithm plus its variant (``ES (OpenAI) +AWD pop 20``).
"""

from __future__ import annotations

from esbench.config.registry import label_of

#: Suffix of a condition trained with Anchored Weight Decay (``algo.l2_anchor: stage_start``).
AWD_SUFFIX = "+awd"
#: Separator before a condition's population size (``openai_es@pop40``).
POP_SEP = "@pop"


def base_algo(condition: str) -> str:
    """The registered algorithm of a condition name (``openai_es+awd@pop40`` -> ``openai_es``)."""
    return str(condition).split(POP_SEP)[0].removesuffix(AWD_SUFFIX)


def condition_label(condition: str) -> str:
    """A condition's report label: the algorithm's label with its variant (``ES (OpenAI) +AWD``)."""
    base = base_algo(condition)
    return label_of(base) + str(condition)[len(base) :].replace(AWD_SUFFIX, " +AWD").replace(POP_SEP, " pop ")
