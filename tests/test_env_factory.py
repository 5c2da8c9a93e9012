"""The environment factory: MuJoCo's C-level warnings go through logging, once each."""

from __future__ import annotations

import logging

from esbench.config.compose import compose_run_config
from esbench.envs import make_env


def test_mujoco_asset_warning_is_logged_once_not_printed(capfd, caplog) -> None:
    cfg = compose_run_config(["env=halfcheetah"])
    with caplog.at_level(logging.DEBUG, logger="esbench.envs.factory"):
        for _ in range(3):  # each make compiles half_cheetah.xml, which warns every time
            make_env(cfg.env).close()
    printed = capfd.readouterr()
    assert "settotalmass" not in printed.out + printed.err
    records = [r for r in caplog.records if "settotalmass" in r.getMessage()]
    # once per process: an earlier test in this process may already have consumed it
    assert len(records) <= 1
    assert all(r.levelno == logging.DEBUG for r in records)
