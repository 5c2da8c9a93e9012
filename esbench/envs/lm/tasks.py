"""Task A (multi-digit addition) and task B (a Countdown-like puzzle): seeded, verifiable prompts.

Task A is the prior capability the model is pretrained on: ``"347+85="`` -> ``"432"``. Its reward
is exact match of the completion with the sum. Task B is the new task, outcome reward only:
``"3,5,7:56="`` -> any expression that uses 3, 5 and 7 each exactly once and equals 56 (for
example ``"(3+5)*7"``), checked by :func:`~esbench.envs.lm.verifier.verify_countdown`.

Prompt sets are pure functions of (seed, split, index) (:func:`esbench.utils.seeding.generator`),
so every worker and every resume sees the same prompts. Each task splits its problem space in two
by a hash of the problem: ``train`` prompts (fitness batches, pretraining data) never include a
``held_out`` problem, so evaluation measures generalization, not memory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

import numpy as np

from esbench.envs.lm.verifier import countdown_reward, evaluate, verify_countdown, well_formed
from esbench.utils.seeding import generator

Split = Literal["train", "held_out"]
#: Seeding purposes (distinct from esbench.utils.seeding's, which index other streams).
_ADDITION_STREAM = 101
_COUNTDOWN_STREAM = 102
_SPLITS: dict[str, int] = {"train": 0, "held_out": 1}


@dataclass(frozen=True)
class Problem:
    """One prompt and what its reward needs.

    Attributes:
        prompt: The text the model continues, ending in ``=``.
        answer: A reference completion (the sum; one solution of a puzzle).
        numbers: Task B: the numbers to use; task A: the two addends.
        target: The value to reach (the sum for task A).
    """

    prompt: str
    answer: str
    numbers: tuple[int, ...]
    target: int


def _held_out(key: str, fraction: float) -> bool:
    """Whether problem ``key`` is in the held-out split (a fixed ``fraction`` of the space)."""
    h = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
    return h / 2**64 < fraction


@dataclass(frozen=True)
class AdditionTask:
    """Task A: ``a+b=`` with 1 to ``digits``-digit addends; the completion must be the sum.

    Attributes:
        digits: Largest number of digits of an addend.
        held_out_fraction: Share of (a, b) pairs reserved for evaluation.
    """

    digits: int = 3
    held_out_fraction: float = 0.1
    name: str = "addition"

    def problem(self, a: int, b: int) -> Problem:
        return Problem(f"{a}+{b}=", str(a + b), (a, b), a + b)

    def sample(self, seed: int, split: Split, n: int, start: int = 0) -> list[Problem]:
        """Problems ``start .. start+n-1`` of the seeded stream of ``split``."""
        out = []
        for index in range(start, start + n):
            rng = generator(seed, _ADDITION_STREAM, _SPLITS[split], index)
            while True:
                # Each addend's length uniform in 1..digits, then its value uniform at that length.
                a, b = (self._number(rng) for _ in range(2))
                if _held_out(f"{a}+{b}", self.held_out_fraction) == (split == "held_out"):
                    out.append(self.problem(a, b))
                    break
        return out

    def _number(self, rng: np.random.Generator) -> int:
        d = int(rng.integers(1, self.digits + 1))
        return int(rng.integers(0 if d == 1 else 10 ** (d - 1), 10**d))

    def reward(self, completion: str, problem: Problem) -> float:
        """1.0 if the completion is exactly the sum (surrounding spaces ignored), else 0.0."""
        return float(completion.strip() == problem.answer)

    def solved(self, completion: str, problem: Problem) -> float:
        """The reward (exact match is the only credit)."""
        return self.reward(completion, problem)

    def formatted(self, completion: str, problem: Problem) -> float:
        """1.0 for a completion that is a number (the answer's form), else 0.0."""
        return float(completion.strip().isdigit())


@dataclass(frozen=True)
class CountdownTask:
    """Task B: ``n1,n2,...:target=``; reach ``target`` using each number exactly once.

    Puzzles are made solvable by construction: ``count`` numbers drawn uniformly from
    ``1..max_number``, combined in a random order by a random binary tree of random operations;
    a draw whose value is not an integer in ``1..max_target`` is redrawn. That expression is the
    reference answer; any other correct expression earns the same reward.

    Attributes:
        count: How many numbers a puzzle gives (each must be used exactly once).
        max_number: Largest number given.
        max_target: Largest target.
        held_out_fraction: Share of puzzles (numbers as a multiset, and target) kept for evaluation.
        format_score: Reward of a well-formed, wrong expression over given numbers
            (:func:`~esbench.envs.lm.verifier.countdown_reward`); 0: outcome only.
    """

    count: int = 3
    max_number: int = 9
    max_target: int = 99
    held_out_fraction: float = 0.2
    format_score: float = 0.0
    name: str = "countdown"

    def sample(self, seed: int, split: Split, n: int, start: int = 0) -> list[Problem]:
        """Problems ``start .. start+n-1`` of the seeded stream of ``split``."""
        out = []
        for index in range(start, start + n):
            rng = generator(seed, _COUNTDOWN_STREAM, _SPLITS[split], index, self.count)
            while True:
                numbers = [int(x) for x in rng.integers(1, self.max_number + 1, size=self.count)]
                expr = self._expression(rng, numbers)
                try:
                    value = evaluate(expr)[0]
                except ZeroDivisionError:
                    continue
                if value.denominator != 1 or not 1 <= value <= self.max_target:
                    continue
                target = int(value)
                key = ",".join(map(str, sorted(numbers))) + f":{target}"
                if _held_out(key, self.held_out_fraction) == (split == "held_out"):
                    prompt = ",".join(map(str, numbers)) + f":{target}="
                    out.append(Problem(prompt, expr, tuple(numbers), target))
                    break
        return out

    @staticmethod
    def _expression(rng: np.random.Generator, numbers: list[int]) -> str:
        """A random fully-bracketed-where-needed expression using ``numbers`` in a random order."""
        terms = [str(x) for x in rng.permutation(numbers)]
        while len(terms) > 1:
            i = int(rng.integers(0, len(terms) - 1))
            op = "+-*/"[int(rng.integers(0, 4))]
            left, right = terms[i], terms[i + 1]
            wrap = len(terms) > 2  # brackets keep the tree's order whatever the precedence
            joined = f"{left}{op}{right}"
            terms[i : i + 2] = [f"({joined})" if wrap else joined]
        return terms[0]

    def reward(self, completion: str, problem: Problem) -> float:
        """1.0 for a correct expression, ``format_score`` for a well-formed one over given numbers
        (:func:`~esbench.envs.lm.verifier.countdown_reward`), else 0.0."""
        return countdown_reward(completion, problem.numbers, problem.target, self.format_score)

    def solved(self, completion: str, problem: Problem) -> float:
        """1.0 for a correct expression, else 0.0 (the exact-solve rate's term)."""
        return verify_countdown(completion, problem.numbers, problem.target).reward

    def formatted(self, completion: str, problem: Problem) -> float:
        """1.0 for a well-formed expression over the given numbers, solved or not (the format
        rate's term, :func:`~esbench.envs.lm.verifier.well_formed`), else 0.0."""
        return float(well_formed(completion, problem.numbers))
