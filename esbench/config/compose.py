"""Compose run configs from ``conf/`` with Hydra, and turn Hydra's errors into one clear line."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from esbench.config.errors import ConfigError
from esbench.config.registry import algorithms
from esbench.config.schema import register_configs
from esbench.config.validate import validate
from esbench.utils.resources import conf_dir

CONF_DIR: Path = conf_dir()
"""esbench's own Hydra config directory (shipped in the package; :mod:`esbench.utils.resources`)."""


def compose_run_config(overrides: list[str], validate_config: bool = True) -> DictConfig:
    """The run config for ``overrides`` (Hydra syntax), checked; raises :class:`ConfigError`.

    The algorithm registry must be filled first (:func:`esbench.runner.load_components`, which
    every entry point calls): composition reads the schemas it registers.
    """
    if not algorithms():
        raise RuntimeError("no algorithm is registered: call esbench.runner.load_components() first")
    register_configs()
    overrides = exact_integers(overrides)
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=overrides)
    except Exception as e:
        raise ConfigError(explain_hydra_error(e, overrides)) from None
    if validate_config:
        validate(cfg)
    return cfg


# A number in scientific notation standing alone in an override's value (``1e6``, ``2.5E+5``, one
# element of ``1e5,1e6``), not inside a name (``Foo-1e5``).
_SCIENTIFIC = re.compile(r"(?<![\w.+-])[+-]?\d+(?:\.\d*)?[eE]\+?\d+(?![\w.+-])")


def exact_integers(overrides: list[str]) -> list[str]:
    """``budget.timesteps=1e6`` -> ``budget.timesteps=1000000``: a number in scientific notation that
    is an exact integer is written as one, so it fits an integer key (and a float key alike).

    Hydra reads ``1e6`` as the float 1000000.0, which an integer key refuses. Inexact values
    (``1.5e0``) stay floats and an integer key refuses them with a message naming the value.
    Sweep values (``budget.timesteps=1e5,1e6``) are rewritten element by element.
    """

    def exact(match: re.Match[str]) -> str:
        text = match.group(0)
        value = float(text)
        if value.is_integer() and abs(value) < 2**53 and _decimal_is_integer(text):
            return str(int(value))
        return text

    out = []
    for o in overrides:
        key, sep, value = o.partition("=")
        out.append(f"{key}{sep}{_SCIENTIFIC.sub(exact, value)}" if sep else o)
    return out


def _decimal_is_integer(text: str) -> bool:
    """Whether the decimal literal ``text`` is exactly an integer (no rounding through a float)."""
    from decimal import Decimal

    d = Decimal(text)
    return d == d.to_integral_value()


def explain_hydra_error(e: BaseException, overrides: list[str]) -> str:
    """One line naming the bad key or option, its value and what is allowed."""
    cause = e.__cause__ or e.__context__
    if isinstance(e, MissingConfigException):
        text = str(e)
        group = text.split("Could not find '")[-1].split("'")[0] if "Could not find '" in text else ""
        if "/" in group:
            grp, opt = group.rsplit("/", 1)
            listing = text.split("Available options in")[-1].split("Config search path:")[0]
            options = [
                line.strip()
                for line in listing.splitlines()[1:]
                if line.startswith("\t") and not line.strip().endswith("_schema")
            ]
            close = difflib.get_close_matches(opt, options, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            return f"{grp}={opt}: no such option{hint}; allowed: {', '.join(options)}"
        return text.splitlines()[0]
    if isinstance(cause, ConfigKeyError) or (
        isinstance(e, ConfigCompositionException) and "Could not override" in str(e)
    ):
        key = getattr(cause, "full_key", None) or str(e).split("'")[1]
        parent, _, leaf = key.rpartition(".")
        allowed = _allowed_keys(parent, _chosen_algo(overrides))
        if parent and not allowed and parent.rpartition(".")[0] in _SCHEMA_NODES:
            # A map of the schema (e.g. budget.stop_at_return_by_env): any key, added with "+".
            return f"{key}: not in the config yet; {parent} is a map: add an entry with +{key}=VALUE"
        close = difflib.get_close_matches(leaf, allowed, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        where = f" in {parent}" if parent else ""
        return f"{key}: no such config key{hint}; allowed keys{where}: {', '.join(allowed)}"
    if isinstance(cause, ValidationError):
        key = getattr(cause, "full_key", "?")
        msg = str(cause).splitlines()[0]
        if "could not be converted to Integer" in msg:
            given = next(
                (o.partition("=")[2] for o in reversed(overrides) if o.lstrip("+~").startswith(f"{key}=")), ""
            )
            return (
                f"{key}={given or msg.split(chr(39))[1]} is not an integer; allowed: an integer "
                "(1000000, 1_000_000 or 1e6)"
            )
        return f"{key}: {msg}"
    if isinstance(e, OverrideParseException):
        return f"cannot parse override: {str(e).splitlines()[0]}"
    if isinstance(cause, OmegaConfBaseException):
        return str(cause).splitlines()[0]
    return str(e).splitlines()[0] if str(e) else type(e).__name__


_SCHEMA_NODES = ("", "env", "policy", "budget", "eval", "cluster", "tracker", "algo")


def _chosen_algo(overrides: list[str]) -> str | None:
    """The ``algo=KEY`` the overrides choose (the last one), or ``None`` (the default)."""
    for o in reversed(overrides):
        key, _, value = o.lstrip("+~").partition("=")
        if key == "algo" and value in algorithms():
            return value
    return None


def _default_algo() -> str | None:
    """The ``algo`` option of ``conf/config.yaml``'s defaults list."""
    import yaml

    data = yaml.safe_load((CONF_DIR / "config.yaml").read_text()) or {}
    for item in data.get("defaults") or []:
        if isinstance(item, dict) and "algo" in item:
            return str(item["algo"])
    return None


def _allowed_keys(parent: str, algo: str | None = None) -> list[str]:
    """Keys of the schema node at ``parent`` (top level when empty); for ``algo``, the keys of the
    chosen algorithm (``algo``, else the default one)."""
    import dataclasses

    from esbench.config import schema as s

    nodes = {
        "": s.RunConfig,
        "env": s.EnvConfig,
        "policy": s.PolicyConfig,
        "budget": s.BudgetConfig,
        "eval": s.EvalConfig,
        "cluster": s.ClusterConfig,
        "tracker": s.TrackerConfig,
    }
    if parent == "algo":
        spec = algorithms().get(algo or _default_algo() or "")
        if spec is not None:
            return sorted(f.name for f in dataclasses.fields(spec.schema))
        return sorted({f.name for a in algorithms().values() for f in dataclasses.fields(a.schema)})
    node = nodes.get(parent)
    return [f.name for f in dataclasses.fields(node)] if node else []
