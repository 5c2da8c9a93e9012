"""The A3C CNN policy: parameter layout, determinism, VBN statistics, reference batch."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
import torch

from esbench.config.schema import EnvConfig
from esbench.policies.cnn import (
    BatchedCNN,
    CNNPolicy,
    VirtualBatchNorm,
    a3c_cnn,
    a3c_cnn_num_params,
    collect_reference_batch,
    scale_obs,
)

OBS_SHAPE = (4, 84, 84)
PONG = EnvConfig(name="pong", id="ALE/Pong-v5", kind="atari", game="Pong")


@pytest.fixture(scope="module")
def ref_batch() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (16, *OBS_SHAPE), dtype=np.uint8)


@pytest.fixture(scope="module")
def policy(ref_batch: np.ndarray) -> CNNPolicy:
    return CNNPolicy(OBS_SHAPE, 6, ref_batch)


@pytest.mark.parametrize("vbn", [False, True])
@pytest.mark.parametrize("n_actions", [6, 18])
def test_param_count_matches_formula(vbn: bool, n_actions: int, ref_batch: np.ndarray) -> None:
    pol = CNNPolicy(OBS_SHAPE, n_actions, ref_batch if vbn else None)
    assert pol.num_params == a3c_cnn_num_params(n_actions, vbn)
    assert pol.num_params == sum(p.numel() for p in a3c_cnn(n_actions, vbn=vbn).parameters())
    # conv1 4*64*16+16, conv2 16*16*32+32, fc 2592*256+256, out 256*6+6
    assert a3c_cnn_num_params(6, vbn=False) == 4112 + 8224 + 663808 + 1542


def test_a3c_cnn_features_extractor_shape() -> None:
    net = a3c_cnn(None)
    assert net(torch.zeros(2, *OBS_SHAPE)).shape == (2, 256)


def test_init_params_from_numpy_rng_only(policy: CNNPolicy) -> None:
    state = torch.random.get_rng_state()
    a = policy.init_params(np.random.default_rng(7))
    b = policy.init_params(np.random.default_rng(7))
    CNNPolicy(OBS_SHAPE, 6, None)
    assert torch.equal(state, torch.random.get_rng_state())
    assert a.dtype == np.float32 and a.shape == (policy.num_params,)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, policy.init_params(np.random.default_rng(8)))


def test_set_params_round_trip_and_views(policy: CNNPolicy) -> None:
    flat = policy.init_params(np.random.default_rng(1))
    policy.set_params(flat)
    np.testing.assert_array_equal(policy.get_params(), flat)
    flat[0] += 1.0  # the caller's array is not kept
    assert policy.get_params()[0] != flat[0]
    for p in policy.net.parameters():  # every tensor is a view of the one buffer
        assert np.shares_memory(p.detach().numpy(), policy._flat)
    with pytest.raises(ValueError):
        policy.set_params(flat[:-1])


def test_forward_deterministic_and_reset_same_params(policy: CNNPolicy, ref_batch: np.ndarray) -> None:
    theta_a = policy.init_params(np.random.default_rng(2))
    theta_b = policy.init_params(np.random.default_rng(3))
    obs = ref_batch[:4]
    policy.set_params(theta_a)
    logits_a = policy.logits(obs)
    actions_a = [policy.act(o) for o in obs]
    assert logits_a.shape == (4, 6) and all(isinstance(a, int) and 0 <= a < 6 for a in actions_a)
    np.testing.assert_array_equal(policy.logits(obs), logits_a)
    assert [policy.act(o) for o in obs] == actions_a
    policy.set_params(theta_b)
    assert not np.array_equal(policy.logits(obs), logits_a)
    policy.set_params(theta_a)  # VBN statistics recomputed: same params, same outputs
    np.testing.assert_array_equal(policy.logits(obs), logits_a)
    assert [policy.act(o) for o in obs] == actions_a
    np.testing.assert_allclose(policy.logits(obs[0]), logits_a[0], rtol=1e-4, atol=1e-6)


def test_vbn_normalizes_reference_batch(policy: CNNPolicy, ref_batch: np.ndarray) -> None:
    policy.set_params(policy.init_params(np.random.default_rng(4)))
    outputs: list[torch.Tensor] = []
    vbns = [m for m in policy.net if isinstance(m, VirtualBatchNorm)]
    assert len(vbns) == 3
    hooks = [m.register_forward_hook(lambda _m, _i, out: outputs.append(out)) for m in vbns]
    try:
        with torch.inference_mode():
            policy.net(torch.from_numpy(scale_obs(ref_batch)))
    finally:
        for h in hooks:
            h.remove()
    for out in outputs:  # gamma = 1, beta = 0: zero mean, unit variance per channel on the batch
        dims = [d for d in range(out.dim()) if d != 1]
        var, mean = torch.var_mean(out, dim=dims, correction=0)
        assert mean.abs().max() < 1e-4
        assert ((var - 1).abs() < 1e-2).all()


def _digest(batch: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(batch).tobytes()).hexdigest()


def test_reference_batch_reproducible_across_processes() -> None:
    a = collect_reference_batch(PONG, size=6, seed=11, keep_prob=0.2)
    b = collect_reference_batch(PONG, size=6, seed=11, keep_prob=0.2)
    assert a.shape == (6, *OBS_SHAPE) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, b)
    assert len({_digest(o) for o in a}) > 1
    assert not np.array_equal(a, collect_reference_batch(PONG, size=6, seed=12, keep_prob=0.2))
    code = (
        "import hashlib, numpy as np\n"
        "from esbench.config.schema import EnvConfig\n"
        "from esbench.policies.cnn import collect_reference_batch\n"
        "cfg = EnvConfig(name='pong', id='ALE/Pong-v5', kind='atari', game='Pong')\n"
        "b = collect_reference_batch(cfg, size=6, seed=11, keep_prob=0.2)\n"
        "print(hashlib.sha256(np.ascontiguousarray(b).tobytes()).hexdigest())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == _digest(a)


@pytest.mark.parametrize("vbn", [True, False])
def test_batched_forward_equals_each_member_alone_exactly(vbn: bool, ref_batch: np.ndarray) -> None:
    """Tolerance zero: each slot's logits are bit-identical to the member's own policy, whatever
    shares the batch, its size (every prefix) and its slot. That keeps ``algo.rollout_batch`` and
    the number of workers out of a run's numbers."""
    pol = CNNPolicy(OBS_SHAPE, 6, ref_batch if vbn else None)
    rng = np.random.default_rng(5)
    base = pol.init_params(rng)
    members = [base + 0.05 * rng.standard_normal(base.size, dtype=np.float32) for _ in range(6)]
    obs = rng.integers(0, 256, (6, *OBS_SHAPE), dtype=np.uint8)
    alone = []
    for theta, o in zip(members, obs, strict=True):
        pol.set_params(theta)
        alone.append((pol.logits(o), pol.act(o)))
    batched = BatchedCNN(pol, 6)
    for order in ([0, 1, 2, 3, 4, 5], [5, 3, 1, 0, 2, 4]):  # the same members in other slots
        for slot, k in enumerate(order):
            batched.set_slot(slot, members[k])
        for n in range(1, 7):
            view = batched.prefix(n)
            logits = view.logits(obs[order[:n]]).numpy()
            actions = view.act(obs[order[:n]])
            for row, k in enumerate(order[:n]):
                np.testing.assert_array_equal(logits[row], alone[k][0])
                assert int(actions[row]) == alone[k][1]
    with pytest.raises(ValueError):
        batched.prefix(7)
