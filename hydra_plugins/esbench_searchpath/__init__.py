"""Hydra search-path plugin: the directories of ``ESBENCH_CONFIG_PATH`` join the config search path.

Hydra finds plugins in the ``hydra_plugins`` namespace package and asks every search-path plugin to
extend the search path whenever it composes a config: for ``esbench run``, for each job of a sweep
(``-m``, on any launcher) and for ``--cfg``. Directories come after esbench's own ``conf/``, so a
user's file adds options (``env/mycheetah.yaml``) next to the shipped ones.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from esbench.utils.resources import user_config_dirs


class EsbenchSearchPathPlugin(SearchPathPlugin):
    """Appends ``file://DIR`` for every directory of ``ESBENCH_CONFIG_PATH``."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        """Add the user's config directories (none when the variable is unset)."""
        for d in user_config_dirs():
            search_path.append(provider="esbench-user", path=f"file://{d}")
