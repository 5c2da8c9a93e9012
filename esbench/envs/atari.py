"""Atari 2600 games (ALE v5) with the preprocessing of Mnih et al. 2016, as Salimans et al. 2017 ran them.

:func:`make_atari_env` turns an :class:`~esbench.config.schema.EnvConfig` into a Gymnasium env whose
observations are stacks of grayscale frames, shape ``(frame_stack, screen_size, screen_size)`` uint8
(``(4, 84, 84)`` by default). One agent step is ``frame_skip`` emulator frames:

1. **No-op reset**: after ``reset`` a uniform number in ``[1, noop_max]`` of NOOP frames is played,
   drawn from the env's own seeded RNG (``env.unwrapped.np_random``), so ``reset(seed=s)`` is
   reproducible and differs across seeds; later unseeded resets continue that stream.
2. **Frame skip k** (any k >= 1): the action is repeated for k frames, rewards summed.
3. **Max-pool** over the last two emulator frames (removes sprite flicker), for every k: at k = 1 the
   previous step's frame is the other one. At a reset, and when the game ends mid-skip, the
   observation is the current frame alone.
4. **Grayscale** (ALE luminance) resized to ``screen_size`` square by area averaging (Pillow ``BOX``
   filter, fixed-point integer arithmetic, so frames are bit-identical on every machine).
5. **Frame stack** of the last ``frame_stack`` frames, oldest first; at reset every slot holds the
   first frame.
6. **Reward clipping** to its sign, per agent step, only when ``training and clip_rewards``; the
   unclipped reward is in ``info["raw_reward"]``. Evaluation scores are never clipped.
7. Optional **life-loss termination** (``terminal_on_life_loss``, training only, off by default) and an
   optional cap of ``max_episode_steps`` agent steps (``truncated=True``). ALE v5's own cap of 108,000
   frames (30 minutes of play) stays in place.
8. An **evaluation cap in frames** (``eval_max_episode_frames``, evaluation envs only): the episode is
   truncated once it has played that many emulator frames, no-op starts included, instead of at
   ``max_episode_steps``. The paper evaluated with up to 30 no-op starts and ALE's 108,000-frame cap
   at every frame skip; a cap in frames means the same play time at frame-skip 1 and 4, and lets a
   run train on short episodes (cheap) while it is evaluated on the paper's.

Every ``step`` reports ``info["frames"]``, the emulator frames consumed by that step (k, or fewer when
the game ended mid-skip); ``reset`` reports the no-op frames it played. Summing them counts frames the
way the paper's budgets do (1B frames for ES, 320M for A3C).

Defaults follow the paper, which predates Machado et al. 2018: **no sticky actions**
(``sticky_action_prob=0``; ALE v5's own default is 0.25) and the **minimal action set**
(``full_action_space=False``). Both are configurable for modern protocols.

The emulator is driven through ``ale.act`` directly (the Gymnasium ``AtariEnv`` is created with
``frameskip=1`` and used for construction, seeding and reset only), which skips the per-frame RGB
copy and info dict of ``AtariEnv.step``: this code runs in the rollout hot path.
"""

from __future__ import annotations

import csv
import difflib
import re
from functools import cache
from pathlib import Path
from typing import Any, SupportsFloat

import ale_py
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from PIL import Image

from esbench.config.schema import EnvConfig
from esbench.utils.resources import reference_dir

gym.register_envs(ale_py)

TABLE2_CSV = reference_dir() / "salimans2017_atari_table2.csv"
"""The paper's Table 2 (51 games), shipped with the package (see ``results/reference``)."""


def _load_table2(path: Path = TABLE2_CSV) -> tuple[tuple[str, ...], dict[str, str]]:
    """Read Table 2's game names and their ALE v5 ids from the reference CSV."""
    if not path.is_file():
        raise FileNotFoundError(
            f"Atari reference table not found at {path} "
            "(it ships with esbench, from results/reference/: reinstall esbench)"
        )
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    names = tuple(row["game"] for row in rows)
    return names, {row["game"]: row["gymnasium_id"] for row in rows}


ATARI_GAMES, _TABLE2_IDS = _load_table2()
"""The 51 games of Salimans et al. 2017, Table 2, as printed there (e.g. ``"Space Invaders"``)."""

_CONTROLLED_KWARGS = ("frameskip", "repeat_action_probability", "full_action_space", "obs_type")


def _key(name: str) -> str:
    """Normalize a game name for matching: ``"Montezuma's Revenge"``, ``"montezuma_revenge"`` -> same."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


@cache
def _game_index() -> dict[str, str]:
    """Normalized name -> ALE v5 id, for Table 2's games and every ALE/*-v5 id registered."""
    index: dict[str, str] = {}
    for env_id in gym.registry:
        m = re.fullmatch(r"ALE/(\w+)-v5", env_id)
        if m:
            index[_key(m.group(1))] = env_id
    for name, env_id in _TABLE2_IDS.items():
        index[_key(name)] = env_id
        index[_key(env_id.split("/")[1].rsplit("-", 1)[0])] = env_id
    return index


def resolve_game(game: str) -> str:
    """The ALE v5 id of a game name.

    Args:
        game: A Table 2 name (``"Space Invaders"``), an ALE name in any case or style
            (``"SpaceInvaders"``, ``"space_invaders"``), or a full id (``"ALE/SpaceInvaders-v5"``).
            Any game registered in ALE is accepted, not only Table 2's.

    Returns:
        The Gymnasium id, ``"ALE/<Game>-v5"``.

    Raises:
        ValueError: Unknown game; the one-line message gives the name, close matches, then the
            valid (Table 2) names.
    """
    m = re.fullmatch(r"ALE/(\w+)-v\d+", game.strip())
    key = _key(m.group(1) if m else game)
    index = _game_index()
    if key in index:
        return index[key]
    keys = {_key(n): n for n in ATARI_GAMES}
    close = difflib.get_close_matches(key, list(keys), n=5, cutoff=0.6)
    close_names = [keys[k] for k in close]
    hint = f"close matches: {', '.join(close_names)}; " if close_names else "no close match; "
    raise ValueError(f"unknown Atari game {game!r}: {hint}valid games (Table 2): {', '.join(ATARI_GAMES)}")


class AtariPreprocessing(gym.Wrapper):
    """Mnih et al. 2016 preprocessing over an ALE env created with ``frameskip=1``.

    See the module docstring for the exact pipeline. Observations have shape
    ``(frame_stack, screen_size, screen_size)``, dtype uint8; each returned array is a fresh copy.
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        frame_skip: int = 4,
        noop_max: int = 30,
        screen_size: int = 84,
        frame_stack: int = 4,
        clip_rewards: bool = False,
        terminal_on_life_loss: bool = False,
        max_episode_steps: int | None = None,
        max_episode_frames: int | None = None,
    ) -> None:
        super().__init__(env)
        if frame_skip < 1 or noop_max < 0 or screen_size < 1 or frame_stack < 1:
            raise ValueError("frame_skip, screen_size, frame_stack must be >= 1 and noop_max >= 0")
        if getattr(env.unwrapped, "_frameskip", None) != 1:
            raise ValueError("the wrapped ALE env must be created with frameskip=1")
        self.frame_skip = frame_skip
        self.noop_max = noop_max
        self.screen_size = screen_size
        self.frame_stack = frame_stack
        self.clip_rewards = clip_rewards
        self.terminal_on_life_loss = terminal_on_life_loss
        self.max_episode_steps = max_episode_steps
        self.max_episode_frames = max_episode_frames

        self._ale: ale_py.ALEInterface = env.unwrapped.ale  # type: ignore[attr-defined]
        self._action_set = list(env.unwrapped._action_set)  # type: ignore[attr-defined]
        h, w = self._ale.getScreenDims()
        self._prev = np.zeros((h, w), dtype=np.uint8)  # second-to-last emulator frame
        self._last = np.zeros((h, w), dtype=np.uint8)  # last emulator frame
        self._stack = np.zeros((frame_stack, screen_size, screen_size), dtype=np.uint8)
        self._lives = 0
        self._steps = 0
        self._frames = 0  # emulator frames of this episode, no-ops included
        self.observation_space = spaces.Box(0, 255, self._stack.shape, dtype=np.uint8)

    def _frame(self, pool: bool) -> np.ndarray:
        """The current preprocessed frame, shape (screen_size, screen_size) uint8."""
        screen = np.maximum(self._prev, self._last, out=self._prev) if pool else self._last
        img = Image.fromarray(screen).resize((self.screen_size, self.screen_size), Image.Resampling.BOX)
        return np.asarray(img)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the game, play the random no-ops, fill the stack with the first frame.

        Returns:
            ``(obs, info)``: obs of shape (frame_stack, screen_size, screen_size) uint8; info has
            ``frames`` (no-op frames played) and ``lives``.
        """
        _, info = self.env.reset(seed=seed, options=options)
        ale = self._ale
        frames = 0
        if self.noop_max > 0:
            noops = int(self.env.unwrapped.np_random.integers(1, self.noop_max + 1))
            for _ in range(noops):
                ale.act(ale_py.Action.NOOP)
                frames += 1
                if ale.game_over():
                    self.env.reset()
        ale.getScreenGrayscale(self._last)
        self._stack[:] = self._frame(pool=False)
        self._lives = ale.lives()
        self._steps = 0
        self._frames = frames
        info = dict(info, frames=frames, lives=self._lives, episode_frame_number=ale.getEpisodeFrameNumber())
        return self._stack.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """Repeat ``action`` for ``frame_skip`` frames (fewer if the game ends).

        Returns:
            ``(obs, reward, terminated, truncated, info)``: obs (frame_stack, screen_size,
            screen_size) uint8; reward summed over the frames (sign-clipped when ``clip_rewards``);
            info has ``frames``, ``raw_reward`` and ``lives``.
        """
        ale = self._ale
        ale_action = self._action_set[int(action)]
        k = self.frame_skip
        reward = 0.0
        frames = 0
        game_over = False
        if k == 1:
            self._prev, self._last = self._last, self._prev  # previous step's frame is the other one
        for t in range(k):
            reward += ale.act(ale_action)
            frames += 1
            if ale.game_over():
                game_over = True
                break
            if t == k - 2:
                ale.getScreenGrayscale(self._prev)
        ale.getScreenGrayscale(self._last)
        self._stack[:-1] = self._stack[1:]
        self._stack[-1] = self._frame(pool=frames == k)  # both frames are this episode's

        terminated = game_over and ale.game_over(with_truncation=False)
        truncated = game_over and not terminated
        lives = ale.lives()
        if self.terminal_on_life_loss and lives < self._lives:
            terminated = True
        self._lives = lives
        self._steps += 1
        self._frames += frames
        if self.max_episode_steps is not None and self._steps >= self.max_episode_steps:
            truncated = truncated or not terminated
        if self.max_episode_frames is not None and self._frames >= self.max_episode_frames:
            truncated = truncated or not terminated
        raw = reward
        if self.clip_rewards:
            reward = float(np.sign(reward))
        info = {"frames": frames, "raw_reward": raw, "lives": lives}
        return self._stack.copy(), reward, terminated, truncated, info


def make_atari_env(env_cfg: EnvConfig, *, training: bool) -> gym.Env:
    """An ALE v5 game with Mnih et al. 2016 preprocessing (see the module docstring).

    Args:
        env_cfg: The env config; ``game`` (or else ``id``) names the game, see :func:`resolve_game`.
            ``kwargs`` go to ``gymnasium.make`` (e.g. ``mode``, ``difficulty``) but may not set
            the keys this function controls (``frameskip``, ``repeat_action_probability``,
            ``full_action_space``, ``obs_type``).
        training: Training env (reward clipping and life-loss termination as configured) or an
            evaluation env (never clipped, episodes end only at game over or the cap: the frame
            cap ``eval_max_episode_frames`` when set, else the step cap ``max_episode_steps``).

    Returns:
        The env; observations (frame_stack, screen_size, screen_size) uint8, ``Discrete`` actions.
    """
    env_id = resolve_game(env_cfg.game if env_cfg.game else env_cfg.id)
    kwargs = dict(env_cfg.kwargs or {})
    clash = sorted(set(kwargs) & set(_CONTROLLED_KWARGS))
    if clash:
        raise ValueError(f"env.kwargs may not set {clash}: use the EnvConfig fields instead")
    env = gym.make(
        env_id,
        frameskip=1,
        repeat_action_probability=float(env_cfg.sticky_action_prob),
        full_action_space=bool(env_cfg.full_action_space),
        obs_type="grayscale",
        **kwargs,
    )
    eval_frames = getattr(env_cfg, "eval_max_episode_frames", None)
    frame_cap = None if training or eval_frames is None else int(eval_frames)
    return AtariPreprocessing(
        env,
        frame_skip=env_cfg.frame_skip,
        noop_max=env_cfg.noop_max,
        screen_size=env_cfg.screen_size,
        frame_stack=env_cfg.frame_stack,
        clip_rewards=training and env_cfg.clip_rewards,
        terminal_on_life_loss=training and env_cfg.terminal_on_life_loss,
        max_episode_steps=env_cfg.max_episode_steps if frame_cap is None else None,
        max_episode_frames=frame_cap,
    )
