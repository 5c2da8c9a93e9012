"""An exact verifier for Countdown-like answers: parse, check the numbers, evaluate exactly.

An answer is an arithmetic expression over non-negative integers with ``+ - * /`` and
parentheses, the usual precedence (``*`` and ``/`` bind tighter, left to right). It is parsed by
a small recursive-descent parser (never ``eval``) and evaluated in exact rationals
(:class:`fractions.Fraction`), so ``7/2*2`` is 7 and no float rounding decides a reward. The
answer is correct when it parses, uses the given numbers each exactly once (as a multiset, the
rule of the Countdown task in Qiu et al. 2025 and TinyZero), divides by no zero, and equals the
target. :func:`verify_countdown`'s reward is 1.0 for a correct answer and 0.0 otherwise: outcome
only. :func:`countdown_reward` adds the field's format score (TinyZero's Countdown reward, used by
Qiu et al. 2025): a small reward for a well-formed expression that uses only the given numbers,
each at most once, without reaching the target, so a learner that starts below every solution
still sees which answers are closer to the task's form.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

#: Longest expression accepted (characters): bounds the parser's recursion and work.
MAX_CHARS = 64


class ParseError(ValueError):
    """The text is not an expression of the grammar (or divides by zero)."""


@dataclass(frozen=True)
class Verdict:
    """What the verifier found.

    Attributes:
        reward: 1.0 if correct, else 0.0.
        reason: ``"correct"``, ``"malformed"``, ``"division by zero"``, ``"wrong numbers"`` or
            ``"wrong value"``.
        value: The expression's exact value when it parsed and evaluated, else None.
    """

    reward: float
    reason: str
    value: Fraction | None = None


class _Parser:
    """expr := term (('+'|'-') term)*; term := atom (('*'|'/') atom)*; atom := INT | '(' expr ')'."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.numbers: list[int] = []

    def parse(self) -> Fraction:
        if not self.s.strip():
            raise ParseError("empty expression")
        value = self._expr()
        self._peek()  # skips trailing spaces
        if self.i != len(self.s):
            raise ParseError(f"unexpected {self.s[self.i]!r} at {self.i}")
        return value

    def _peek(self) -> str:
        """The next character that is not a space ("" at the end); spaces separate tokens only."""
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1
        return self.s[self.i] if self.i < len(self.s) else ""

    def _expr(self) -> Fraction:
        value = self._term()
        while self._peek() and self._peek() in "+-":
            op = self.s[self.i]
            self.i += 1
            rhs = self._term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def _term(self) -> Fraction:
        value = self._atom()
        while self._peek() and self._peek() in "*/":
            op = self.s[self.i]
            self.i += 1
            rhs = self._atom()
            if op == "*":
                value = value * rhs
            elif rhs == 0:
                raise ZeroDivisionError("division by zero")
            else:
                value = value / rhs
        return value

    def _atom(self) -> Fraction:
        c = self._peek()
        if c == "(":
            self.i += 1
            value = self._expr()
            if self._peek() != ")":
                raise ParseError(f"missing ')' at {self.i}")
            self.i += 1
            return value
        start = self.i
        while self.i < len(self.s) and self.s[self.i] in "0123456789":
            self.i += 1
        if start == self.i:
            raise ParseError(f"expected a number or '(' at {start}")
        digits = self.s[start : self.i]
        if len(digits) > 1 and digits[0] == "0":
            raise ParseError(f"number with a leading zero: {digits}")
        self.numbers.append(int(digits))
        return Fraction(int(digits))


def evaluate(expression: str) -> tuple[Fraction, list[int]]:
    """The exact value of ``expression`` and the numbers it uses, in order of appearance.

    Raises:
        ParseError: not an expression of the grammar, or longer than :data:`MAX_CHARS`.
        ZeroDivisionError: it divides by zero.
    """
    if len(expression) > MAX_CHARS:
        raise ParseError(f"expression longer than {MAX_CHARS} characters")
    parser = _Parser(expression)
    value = parser.parse()
    return value, parser.numbers


def verify_countdown(expression: str, numbers: Sequence[int], target: int) -> Verdict:
    """Check a Countdown answer: ``expression`` uses ``numbers`` each exactly once and equals ``target``.

    Args:
        expression: The model's completion (surrounding spaces are ignored).
        numbers: The numbers given in the prompt.
        target: The value to reach.

    Returns:
        A :class:`Verdict`; its ``reward`` is the outcome reward.
    """
    try:
        value, used = evaluate(expression.strip())
    except ZeroDivisionError:
        return Verdict(0.0, "division by zero")
    except (ParseError, RecursionError):
        return Verdict(0.0, "malformed")
    if Counter(used) != Counter(int(n) for n in numbers):
        return Verdict(0.0, "wrong numbers", value)
    if value != target:
        return Verdict(0.0, "wrong value", value)
    return Verdict(1.0, "correct", value)


def countdown_reward(
    expression: str, numbers: Sequence[int], target: int, format_score: float = 0.0
) -> float:
    """The Countdown reward with a format score (TinyZero's convention).

    Returns:
        1.0 for a correct answer (:func:`verify_countdown`); ``format_score`` for an expression that
        parses, divides by no zero and uses only given numbers, each at most as often as given
        (a subset of the multiset), but is not correct; 0.0 otherwise.
    """
    if verify_countdown(expression, numbers, target).reward == 1.0:
        return 1.0
    return float(format_score) if well_formed(expression, numbers) else 0.0


def well_formed(expression: str, numbers: Sequence[int]) -> bool:
    """Whether ``expression`` has the answer's form: it parses, divides by no zero and uses only
    given numbers, each at most as often as given (every correct answer is well formed)."""
    try:
        _, used = evaluate(expression.strip())
    except (ParseError, RecursionError, ZeroDivisionError):
        return False
    return not Counter(used) - Counter(int(n) for n in numbers)
