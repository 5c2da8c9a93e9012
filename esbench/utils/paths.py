"""Names that become directories: ``experiment`` and ``run_id`` must stay one level inside the store.

A run lives in ``<results_dir>/<experiment>/<run_id>/`` and ``resume=false`` deletes that directory's
files, so a name such as ``../..`` or ``/home/me`` would point esbench's writes and deletes outside
the results store. Only plain names are accepted: ASCII letters, digits and ``. _ - + =``, not
starting with ``.`` or ``-`` (hidden files, command-line options), without ``..``, at most 128
characters. Everything a recipe or the default run id produces fits
(``openai_es-halfcheetah-v5-s0-1a2b3c4d``).
"""

from __future__ import annotations

import re

MAX_LENGTH = 128
_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=-]*")
ALLOWED = (
    f"1-{MAX_LENGTH} characters from letters, digits and . _ - + =, "
    "starting with a letter, digit or _, without '..'"
)


def check_path_component(key: str, value: object) -> str:
    """``value`` if it is a safe single directory name, else ``ValueError`` naming ``key``.

    Args:
        key: The config key the value came from (``experiment``, ``run_id``), for the message.
        value: The name to check.

    Returns:
        ``value``, unchanged.

    Raises:
        ValueError: One line: ``<key>=<value> is not a safe directory name; allowed: ...``.
    """
    if (
        not isinstance(value, str)
        or len(value) > MAX_LENGTH
        or ".." in value
        or _SAFE.fullmatch(value) is None
    ):
        raise ValueError(f"{key}={value!r} is not a safe directory name; allowed: {ALLOWED}")
    return value
