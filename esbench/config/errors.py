"""The one exception a config that cannot run raises: its message is one line for the user."""

from __future__ import annotations


class ConfigError(ValueError):
    """A config that cannot run; the message is one line naming the key, the value and what is allowed."""
