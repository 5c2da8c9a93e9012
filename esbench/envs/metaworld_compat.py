"""Meta-World 3.1.1 on MuJoCo 4: the one fix it needs, the width of a weld constraint's data.

Meta-World 3.1.1 pins ``mujoco==3.3.0``; esbench runs MuJoCo 4.0.0. Every Sawyer environment calls
``SawyerMocapBase.reset_mocap_welds`` in its constructor, which writes an 11-number row into each
weld constraint's ``model.eq_data``. MuJoCo 4 widened ``eq_data`` to 12 columns (``mjNEQDATA``), so
construction fails with "could not broadcast input array from shape (11,) into shape (12,)".

The layout of a weld's row (MuJoCo's ``mjEQ_WELD``): anchor (3), relative position (3), relative
quaternion (4), torque scale (1), and in MuJoCo 4 a twelfth entry. Measured here (MuJoCo 4.0.0): the
compiler writes 1 there when the XML gives no ``relpose`` and the relative pose was computed from
the reference configuration ``qpos0``, and 0 when ``relpose`` is given; ``mj_setConst`` recomputes
the relative pose from ``qpos0`` when it is 1 and keeps the given pose when it is 0; stepping does
not read it. MuJoCo 3.3 had no such entry: a non-zero quaternion meant "given". Meta-World's row
gives the pose explicitly (identity: quaternion (-1, 0, 0, 0)), so the faithful MuJoCo 4 row is
Meta-World's 11 numbers followed by 0. :func:`fit_weld_row` builds it for any width; the patched
``reset_mocap_welds`` (:func:`patch_metaworld`) writes it. The 0 matters whenever the model's
constants are recomputed (``env.dynamics.body_mass_scale`` calls ``mj_setConst``): a 1 there would
replace Meta-World's identity pose with the pose at ``qpos0``.

Bit-identity: MuJoCo 4.0 and 3.3 do not step the same model identically (Gymnasium's own
HalfCheetah-v5 differs from step 1), so results with this fix are reproducible on this install
(same MuJoCo, same config, same numbers) but not bit-identical to Meta-World on its pinned MuJoCo
3.3.0. Measured on the ten CW10 tasks: observations differ by 1e-4 to 6e-4 right after reset
(Meta-World's 50 hand-settling simulation steps); over 20 seeded placements of 200 steps,
Meta-World's scripted expert policies reach the same success rates under both versions within
0.15 on nine tasks, their mean returns within 1% on six; shelf-place's expert succeeds less often
on MuJoCo 4 (0.83 against 0.97 over 60 placements). The table is in docs/guides/sequences.md.

This module imports without Meta-World (the fix itself is tested on synthetic arrays);
:mod:`esbench.envs.continual_world` applies it when it builds a Meta-World environment.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

METAWORLD_WELD_ROW = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 5.0)
"""The row Meta-World 3.1.1 writes into each weld (``metaworld/sawyer_xyz_env.py``,
``SawyerMocapBase.reset_mocap_welds``): anchor 0, relative position 0, relative quaternion
(-1, 0, 0, 0) (the identity rotation), torque scale 5."""

_GIVEN_RELPOSE = 0.0  # MuJoCo 4's twelfth weld entry: 0 = relpose given, 1 = computed from qpos0


def fit_weld_row(row: Any, width: int) -> np.ndarray:
    """A MuJoCo 3.3 weld row (11 numbers) as a row of ``width`` columns, same meaning.

    Args:
        row: The 11 numbers of a MuJoCo 3.3 weld row: anchor (3), relative position (3),
            relative quaternion (4), torque scale (1).
        width: ``model.eq_data.shape[1]`` of the running MuJoCo (11 in 3.3, 12 in 4.0).

    Returns:
        Shape ``(width,)`` float64: ``row`` followed by 0 ("relative pose given") when MuJoCo
        is wider, ``row`` itself when the widths agree.

    Raises:
        ValueError: ``row`` is not 11 numbers, or ``width`` is below 11 (a MuJoCo whose weld
            has fewer fields: the meaning of the row is unknown there).
    """
    values = np.asarray(row, dtype=np.float64)
    if values.shape != (11,):
        raise ValueError(f"a MuJoCo 3.3 weld row has 11 numbers, got shape {values.shape}")
    if width < 11:
        raise ValueError(f"eq_data has {width} columns: fewer than a weld's 11, layout unknown")
    out = np.zeros(width, dtype=np.float64)
    out[:11] = values
    if width > 11:
        out[11] = _GIVEN_RELPOSE
    return out


def reset_mocap_welds(self: Any) -> None:
    """Meta-World's ``SawyerMocapBase.reset_mocap_welds`` for any ``eq_data`` width.

    Same effect as Meta-World's own on MuJoCo 3.3: every weld constraint gets
    :data:`METAWORLD_WELD_ROW` (with :func:`fit_weld_row`'s twelfth entry on MuJoCo 4).
    """
    import mujoco

    model = self.model
    if model.nmocap > 0 and model.eq_data is not None:
        row = fit_weld_row(METAWORLD_WELD_ROW, int(model.eq_data.shape[1]))
        for i in range(model.eq_data.shape[0]):
            if model.eq_type[i] == mujoco.mjtEq.mjEQ_WELD:
                model.eq_data[i] = row


def patch_metaworld() -> None:
    """Replace ``metaworld.sawyer_xyz_env.SawyerMocapBase.reset_mocap_welds`` (idempotent).

    Raises:
        ImportError: Meta-World is not installed.
    """
    from metaworld.sawyer_xyz_env import SawyerMocapBase

    if SawyerMocapBase.reset_mocap_welds is not reset_mocap_welds:
        SawyerMocapBase.reset_mocap_welds = reset_mocap_welds  # type: ignore[method-assign]
        log.debug("metaworld: reset_mocap_welds patched for eq_data of any width (MuJoCo 4)")
