"""The language-model environment: prompts in, generations out, a verifier's reward.

- :mod:`.tokenizer`: a character-level tokenizer for digits and arithmetic, built locally.
- :mod:`.verifier`: an exact, eval-free checker of arithmetic expressions (task B's reward).
- :mod:`.tasks`: task A (multi-digit addition, the prior capability) and task B (a Countdown-like
  puzzle, the new task), their seeded prompt sets and their rewards.
"""
