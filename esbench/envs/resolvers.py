"""OmegaConf resolvers used by ``conf/``, registered when :mod:`esbench.envs` is imported.

``${atari_id:${env.game}}`` (``conf/env/atari.yaml``) turns a game name in any accepted spelling
(``Pong``, ``pong``, ``"Space Invaders"``, ``ALE/Pong-v5``) into its canonical ALE v5 id, so the
resolved config that a run stores (``config.yaml``) and the reports read names the game the same
way every time. Every process that composes or resolves a run config loads esbench's components
first (:func:`esbench.runner.load_components`: the CLI, sweep jobs, tests), so the resolver is
always there.
"""

from __future__ import annotations

from omegaconf import OmegaConf


def atari_id(game: str) -> str:
    """The ALE v5 id of ``game`` (see :func:`esbench.envs.atari.resolve_game`); raises ValueError
    with close matches for an unknown game."""
    from esbench.envs.atari import resolve_game

    return resolve_game(str(game))


def register_resolvers() -> None:
    """Register esbench's resolvers with OmegaConf (idempotent)."""
    if not OmegaConf.has_resolver("atari_id"):
        OmegaConf.register_new_resolver("atari_id", atari_id)
