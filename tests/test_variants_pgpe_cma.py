"""PGPE (with ClipUp) and CMA-ES (pycma) beyond the registry-wide tests of tests/test_strategies.py.

CMA-ES: the state kept in ``ESState.aux`` is all of pycma's state (a run restored from it every
generation equals one pycma object running its own ask/tell, bit for bit), members are what pycma's
``ask`` would sample from the same standard normals, runs are reproducible, no global RNG is used,
the covariance mode follows the dimension, and IPOP restarts grow the population on every replica.
PGPE: the update is evotorch's symmetric PGPE update, sigma adapts both ways and is clipped.
ClipUp: the velocity is capped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.config.registry import get_algorithm
from esbench.runner import load_components
from esbench.runtime.replica import GenerationRecord, TrainerState, advance, state_digest
from esbench.strategies import ESState, Strategy, make_strategy
from esbench.strategies.cma_es import _S, CMAES
from esbench.strategies.optimizers import ClipUp, OptState, init_opt_state
from esbench.strategies.pgpe import PGPE
from esbench.utils import statefile

load_components()


def cfg(name: str, **overrides: Any) -> Any:
    """The structured config of ``name`` with a small noise table and ``overrides``."""
    c = OmegaConf.structured(get_algorithm(name).schema)
    c.noise_table_size = 200_000
    for k, v in overrides.items():
        c[k] = v
    return c


def rosenbrock(x: np.ndarray) -> float:
    x = x.astype(np.float64)
    return -float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def sphere(x: np.ndarray) -> float:
    return -float(np.sum((x.astype(np.float64) - 1.0) ** 2))


def evaluate(s: Strategy, state: ESState, f: Callable[[np.ndarray], float]) -> tuple[Any, np.ndarray]:
    """This generation's population and its fitness, shape (n, 1 or 2)."""
    pop = s.ask(state)
    fit = np.array([[f(s.member_params(state, pop, i, sg)) for sg in pop.signs] for i in range(len(pop))])
    return pop, fit


def run(s: Strategy, f: Callable[[np.ndarray], float], x0: np.ndarray, generations: int) -> ESState:
    state = s.init(x0)
    for _ in range(generations):
        pop, fit = evaluate(s, state, f)
        state, _ = s.tell(state, pop, fit)
    return state


# -- CMA-ES -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_cma_matches_one_pycma_object_running_its_own_ask_and_tell(covariance: str) -> None:
    """One pycma object runs ask/tell for 120 generations, its ``randn`` fed our noise-table draws;
    our strategy restores pycma from ``aux`` every generation. Its members equal what pycma's ask
    samples (up to the float32 rounding of the policy parameters), and after every tell its state
    equals the object's, bit for bit (the object is told our points), as do the stop conditions.
    In dimension 6, full C is eigendecomposed every generation, so B and D are exercised."""
    n, lam = 6, 8
    s = make_strategy(cfg("cma_es", population_size=lam, sigma=0.3, covariance=covariance), dim=n, seed=0)
    assert isinstance(s, CMAES)
    state = s.init(np.zeros(n, np.float32))
    draws: list[np.ndarray] = []

    def randn(rows: int, cols: int) -> np.ndarray:
        assert (rows, cols) == (lam, n)
        return draws.pop()

    es = s._new_es(np.zeros(n), lam)
    es.opts["randn"] = es.sm.randn = randn  # the sampler keeps its own reference
    for g in range(120):
        pop = s.ask(state)
        draws.append(np.stack([s.noise.get(int(o), n).astype(np.float64) for o in pop.offsets]))
        sampled = np.asarray(es.ask())  # pycma's own ask: condition alleviation, lazy eigh, sampling
        theirs = s._export(es, 0, lam, state.aux["cma_x0"])
        for key, value in theirs.items():
            np.testing.assert_array_equal(state.aux[key], value, err_msg=f"generation {g}: {key}")
        ours = s._members(state, pop)
        np.testing.assert_allclose(ours, sampled, rtol=1e-6, atol=1e-7, err_msg=f"generation {g}")
        fit = np.array([[rosenbrock(x)] for x in ours])
        es.tell(list(ours), list(-fit[:, 0]), check_points=False)
        state, metrics = s.tell(state, pop, fit)
        assert metrics["cma_stop"] == float(bool(es.stop()))


#: pycma's own defaults (cma 4.5.0, ``cma.CMAOptions().defaults()``) for every option that shapes the
#: algorithm, written out here rather than taken from esbench, so that an option esbench sets wrongly
#: shows up as a difference. Where esbench deliberately differs (TPA off, no mirrors, no gene-space
#: transform) the test's dimension and population are ones where pycma's defaults do the same thing.
PYCMA_DEFAULTS: dict[str, Any] = {
    "AdaptSigma": True,  # CSA at N < 300 (TPA above; esbench always CSA)
    "CMA_active": True,
    "CMA_cmean": 1,
    "CMA_mirrors": "popsize < 6",  # none at popsize 8 (esbench: never)
    "CMA_mirrormethod": 2,
    "CMA_elitist": False,
    "CMA_rankmu": 1.0,
    "CMA_rankone": 1.0,
    "CMA_recombination_weights": None,
    "CMA_mu": None,
    "CMA_dampsvec_fac": np.inf,
    "CMA_const_trace": False,
    "CMA_on": 1,
    "CMA_diagonal_decoding": 0,
    "CSA_dampfac": 1,
    "CSA_damp_mueff_exponent": None,
    "CSA_disregard_length": False,
    "CSA_clip_length_value": None,
    "CSA_squared": False,
    "conditioncov_alleviate": [1e8, 1e12],  # the 1e12 transform never triggers on this problem
    "tolfun": 1e-11,
    "tolx": 1e-11,
    "tolfunhist": 1e-12,
    "tolflatfitness": 1,
    "tolconditioncov": 1e14,
    "tolupsigma": 1e20,
    "tolfacupx": 1e3,
    "mean_shift_line_samples": False,
    "pc_line_samples": False,
    "minstd": 0,
    "maxstd": None,
}


def test_the_pinned_pycma_defaults_are_pycmas() -> None:
    """The values above are what the installed pycma uses by default (so the next test compares
    esbench with pycma as shipped, not with a copy of esbench's own options)."""
    import cma

    assert cma.__version__ == "4.5.0"
    defaults = cma.CMAOptions().defaults()
    for key, value in PYCMA_DEFAULTS.items():
        text = str(defaults[key]).split("#")[0].strip()  # pycma keeps each default as source text
        if isinstance(value, str):  # an expression pycma evaluates per problem
            assert text == value, (key, text)
        else:
            assert eval(text, {"np": np}) == value, (key, text, value)  # pycma's own default text


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_cma_samples_what_pycma_with_its_own_defaults_samples(covariance: str) -> None:
    """A pycma object built here with pycma's defaults (not esbench's options) runs its own
    ask/tell for 120 generations on Rosenbrock, its ``randn`` fed the same noise-table draws and
    its tell given the points esbench evaluated and their fitness. Every generation esbench's
    members equal pycma's samples, so mean, step size and covariance agree all along."""
    import cma

    n, lam, sigma0 = 6, 8, 0.3
    s = make_strategy(cfg("cma_es", population_size=lam, sigma=sigma0, covariance=covariance), dim=n, seed=0)
    state = s.init(np.zeros(n, np.float32))
    draws: list[np.ndarray] = []

    def randn(rows: int, cols: int) -> np.ndarray:
        assert (rows, cols) == (lam, n)
        return draws.pop()

    options = {**PYCMA_DEFAULTS, "popsize": lam, "CMA_diagonal": covariance == "diagonal",
               "randn": randn, "verbose": -9, "seed": 1}  # fmt: skip
    es = cma.CMAEvolutionStrategy(np.zeros(n), sigma0, options)
    for g in range(120):
        pop = s.ask(state)
        draws.append(np.stack([s.noise.get(int(o), n).astype(np.float64) for o in pop.offsets]))
        theirs = np.asarray(es.ask())
        ours = np.stack([s.member_params(state, pop, i, 1) for i in range(len(pop))]).astype(np.float64)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7, err_msg=f"generation {g}")
        fit = np.array([[rosenbrock(x)] for x in ours])
        # Told the points evaluated (pycma's samples rounded to float32 parameters); check_points=False
        # or pycma would take them for injected foreign points and clip their length.
        es.tell(list(ours), list(-fit[:, 0]), check_points=False)
        state, metrics = s.tell(state, pop, fit)
        assert metrics["cma_stop"] == float(bool(es.stop())), g
    assert rosenbrock(ours.mean(axis=0)) > rosenbrock(np.zeros(n))  # it moved toward the optimum


def test_cma_state_survives_a_data_only_checkpoint() -> None:
    """``aux`` through esbench's data-only state file (npz + JSON, no pickle) and back: the next
    generation is bit-identical (B's column-major layout included, which BLAS results depend on)."""
    s = make_strategy(cfg("cma_es", population_size=8, sigma=0.3, covariance="full"), dim=6, seed=1)
    state = run(s, rosenbrock, np.zeros(6, np.float32), 20)
    loaded = statefile.loads(statefile.dumps(state, [ESState, OptState]), [ESState, OptState])
    assert isinstance(loaded, ESState)
    assert loaded.aux["cma_B"].flags.f_contiguous == state.aux["cma_B"].flags.f_contiguous
    pop, fit = evaluate(s, state, rosenbrock)
    a, _ = s.tell(state, pop, fit)
    b, _ = s.tell(loaded, pop, fit)
    assert state_digest(TrainerState(a, None)) == state_digest(TrainerState(b, None))


def test_cma_state_does_not_depend_on_the_blas_thread_count() -> None:
    """A Dask worker runs BLAS on 1 thread, the master on one per core; OpenBLAS's eigh and gemm
    differ in the last bits between the two at N = 100, which would make every worker fail the
    state digest and need a snapshot every generation. The strategy runs them on one thread.
    (On a one-core machine both runs below use one thread and this test cannot tell.)"""
    from threadpoolctl import threadpool_limits

    digests = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            s = make_strategy(
                cfg("cma_es", population_size=20, sigma=0.1, covariance="full"), dim=100, seed=0
            )
            state = run(s, sphere, np.zeros(100, np.float32), 8)
        digests.append(state_digest(TrainerState(state, None)))
    assert digests[0] == digests[1]


def test_cma_run_is_a_function_of_its_seed() -> None:
    """Same seed: bit-identical parameters after 40 generations; another seed: different ones."""
    params = {}
    for label, seed in (("a", 0), ("b", 0), ("c", 1)):
        s = make_strategy(cfg("cma_es", population_size=10, sigma=0.3), dim=8, seed=seed)
        params[label] = run(s, sphere, np.zeros(8, np.float32), 40).params
    np.testing.assert_array_equal(params["a"], params["b"])
    assert not np.array_equal(params["a"], params["c"])


def test_cma_uses_no_global_rng_and_pycma_may_not_draw() -> None:
    """init/ask/tell leave numpy's global RNG untouched (pycma's seed option would reseed it), and
    pycma's own sampler refuses: every member comes from the noise table."""
    before = np.random.get_state()
    s = make_strategy(cfg("cma_es", population_size=8, sigma=0.3), dim=5, seed=0)
    assert isinstance(s, CMAES)
    state = run(s, sphere, np.zeros(5, np.float32), 5)
    after = np.random.get_state()
    assert before[0] == after[0] and np.array_equal(before[1], after[1]) and before[2:] == after[2:]
    with pytest.raises(RuntimeError, match="samples every CMA-ES member itself"):
        s._restore(state.aux).ask()


@pytest.mark.parametrize(
    ("dim", "full_max_dim", "diagonal"),
    [(20, 20, False), (21, 20, True), (1000, 1000, False), (5800, 1000, True)],
)
def test_cma_auto_covariance_is_diagonal_above_the_threshold(
    dim: int, full_max_dim: int, diagonal: bool
) -> None:
    s = make_strategy(cfg("cma_es", population_size=8, full_max_dim=full_max_dim), dim=dim, seed=0)
    assert isinstance(s, CMAES)
    assert s.diagonal is diagonal
    state = s.init(np.zeros(dim, np.float32))
    assert ("cma_C" in state.aux) is not diagonal
    assert s._restore(state.aux).opts["CMA_diagonal"] is diagonal
    if diagonal:  # O(N) state: no N x N array anywhere
        assert max(a.size for a in state.aux.values()) <= dim
    else:
        assert state.aux["cma_C"].shape == (dim, dim)


def flat(x: np.ndarray) -> float:
    return 0.0


@pytest.mark.parametrize(
    ("objective", "overrides"),
    [(flat, {}), (sphere, {"tolfun": 1e9})],  # tolflatfitness; tolfun (every f within 1e9)
    ids=["flat-fitness", "tolfun"],
)
def test_ipop_restart_doubles_the_population_after_a_stop(
    objective: Callable[[np.ndarray], float], overrides: dict
) -> None:
    """A stop condition restarts the search at x0 with sigma0 and twice the members, as many
    times as ``restarts`` allows; ``ask`` (which sizes the runtime's generation) follows."""
    c = cfg("cma_es", population_size=6, sigma=0.3, restarts=2, incpopsize=2.0, **overrides)
    s = make_strategy(c, dim=4, seed=0)
    x0 = np.full(4, 0.5, np.float32)
    state = s.init(x0)
    sizes, restarts = [], 0
    for _ in range(30):
        pop, fit = evaluate(s, state, objective)
        sizes.append(len(pop))
        state, metrics = s.tell(state, pop, fit)
        if metrics["cma_restart"]:
            restarts += 1
            np.testing.assert_array_equal(state.params, x0)  # restart_from=initial
            assert state.aux["cma_scalars"][_S["sigma"]] == 0.3
            assert state.aux["cma_scalars"][_S["countiter"]] == 0
    assert restarts == 2  # then stop conditions are ignored: the budget ends a run
    assert sorted(set(sizes)) == [6, 12, 24]
    assert sizes == sorted(sizes)
    assert len(s.ask(state)) == 24 and state.aux["ipop"].tolist() == [2, 24]


def test_ipop_growth_replays_on_a_worker_replica() -> None:
    """The runtime's replication path (replica.advance over generation records): a worker that
    replays the master's records follows the restarts and the larger populations, digest for
    digest, and each record's population has the size the master asked for."""
    s = make_strategy(cfg("cma_es", population_size=6, sigma=0.3, restarts=1, tolfun=1e9), dim=4, seed=0)
    worker = make_strategy(cfg("cma_es", population_size=6, sigma=0.3, restarts=1, tolfun=1e9), dim=4, seed=0)
    master_state = TrainerState(s.init(np.zeros(4, np.float32)), None)
    worker_state = TrainerState(worker.init(np.zeros(4, np.float32)), None)
    sizes = []
    for _ in range(6):
        pop, fit = evaluate(s, master_state.es, sphere)
        sizes.append(len(pop))
        record = GenerationRecord(population=worker.ask(worker_state.es), fitness=fit)
        assert len(record.population) == len(pop)
        master_state, _ = advance(s, master_state, GenerationRecord(population=pop, fitness=fit))
        worker_state, _ = advance(worker, worker_state, record)
        assert state_digest(master_state) == state_digest(worker_state)
    assert sizes[0] == 6 and sizes[-1] == 12


def test_cma_skips_a_generation_with_fewer_finite_members_than_parents() -> None:
    s = make_strategy(cfg("cma_es", population_size=10, sigma=0.3), dim=5, seed=0)
    state = s.init(np.zeros(5, np.float32))
    pop, fit = evaluate(s, state, sphere)
    fit[2:] = np.nan  # 2 finite < mu = 5
    new, metrics = s.tell(state, pop, fit)
    assert metrics["cma_skipped"] == 1.0 and new.generation == 1
    for key in state.aux:
        np.testing.assert_array_equal(new.aux[key], state.aux[key])


# -- PGPE -------------------------------------------------------------------------------------------


def test_pgpe_update_is_evotorchs_symmetric_update() -> None:
    """One generation against evotorch's ``SymmetricSeparableGaussian`` update written out from
    the evaluated points (not the noise): centered ranks over all 2n returns, gradients divided by
    the number of directions, ``sigma + lr * g_sigma`` clipped to +-20%, and the center moved by
    the optimizer (SGD, lr 1, no momentum: the step is the gradient)."""
    c = cfg("pgpe", population_size=8, radius_init=None, sigma=0.2, optimizer="sgd", learning_rate=1.0)
    c.momentum = 0.0
    s = make_strategy(c, dim=5, seed=0)
    state = s.init(np.linspace(-1, 1, 5, dtype=np.float32))
    pop, fit = evaluate(s, state, sphere)
    new, _ = s.tell(state, pop, fit)

    mu, sigma = state.params.astype(np.float64), state.aux["sigma"].astype(np.float64)
    plus = np.array([s.member_params(state, pop, i, 1) for i in range(len(pop))], dtype=np.float64)
    ranks = np.argsort(np.argsort(fit.ravel(), kind="stable"), kind="stable").reshape(fit.shape)
    u = ranks / (fit.size - 1) - 0.5
    scaled = plus - mu  # samples[0::2] - mu
    g_mu = ((u[:, 0] - u[:, 1]) / 2) @ scaled / len(pop)
    g_sigma = ((u[:, 0] + u[:, 1]) / 2) @ ((scaled**2 - sigma**2) / sigma) / len(pop)
    expected_sigma = np.clip(sigma + 0.1 * g_sigma, 0.8 * sigma, 1.2 * sigma)
    np.testing.assert_allclose(new.params, mu + g_mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new.aux["sigma"], expected_sigma, rtol=1e-5)


def test_pgpe_sigma_shrinks_near_the_sphere_optimum_and_grows_where_longer_steps_pay() -> None:
    """At the sphere's optimum every longer step is worse: sigma shrinks (from 0.1). Maximizing
    ``|x|^2`` at 0 (the center held still), every longer step is better: sigma grows. (On a
    linear function a mirrored pair's mean return is constant, so sigma would not move.)"""
    c = cfg("pgpe", population_size=20, radius_init=None, sigma=0.1, learning_rate=0.01, max_speed=0.02)
    at_optimum = run(make_strategy(c, dim=10, seed=0), sphere, np.ones(10, np.float32), 100)
    assert float(at_optimum.aux["sigma"].mean()) < 0.04

    def bowl(x: np.ndarray) -> float:
        return float(np.sum(x.astype(np.float64) ** 2))

    still = cfg("pgpe", population_size=20, radius_init=None, sigma=0.1, learning_rate=1e-6, max_speed=2e-6)
    uphill = run(make_strategy(still, dim=10, seed=0), bowl, np.zeros(10, np.float32), 60)
    assert float(uphill.aux["sigma"].mean()) > 0.15


def test_pgpe_sigma_changes_at_most_stdev_max_change_per_generation() -> None:
    """A huge sigma learning rate: every sigma_j moves by at most 20% per generation, and the
    clip is what stops it (some sigma_j sit exactly at a bound)."""
    c = cfg("pgpe", population_size=20, radius_init=None, sigma=0.1, stdev_learning_rate=100.0)
    s = make_strategy(c, dim=10, seed=0)
    state = s.init(np.zeros(10, np.float32))
    clipped = 0
    for _ in range(10):
        pop, fit = evaluate(s, state, sphere)
        new, _ = s.tell(state, pop, fit)
        ratio = new.aux["sigma"] / state.aux["sigma"]
        assert ratio.min() >= 0.8 - 1e-6 and ratio.max() <= 1.2 + 1e-6
        clipped += int(np.isclose(ratio, 0.8).sum() + np.isclose(ratio, 1.2).sum())
        state = new
    assert clipped > 0


def test_pgpe_radius_init_sets_the_initial_sigma() -> None:
    s = make_strategy(cfg("pgpe", radius_init=2.25), dim=400, seed=0)
    assert isinstance(s, PGPE)
    sigma = s.init(np.zeros(400, np.float32)).aux["sigma"]
    np.testing.assert_allclose(sigma, 2.25 / 20.0)
    np.testing.assert_allclose(np.linalg.norm(sigma), 2.25, rtol=1e-6)


# -- ClipUp ------------------------------------------------------------------------------------------


def test_clipup_velocity_never_exceeds_max_speed() -> None:
    """Gradients of every scale (1e-6 to 1e6) and a constant one: ``|v| <= max_speed`` after
    every step (up to one float32 rounding of the rescaled vector), the step is the velocity, and
    a constant gradient drives ``|v|`` to the cap (lr / (1 - momentum) = 5 * max_speed uncapped)."""
    rng = np.random.default_rng(0)
    opt = ClipUp(lr=0.05, momentum=0.9, max_speed=0.1)
    tolerance = 0.1 * (1 + 4 * np.finfo(np.float32).eps)
    for constant in (False, True):
        state: OptState = init_opt_state(100)
        for _ in range(200):
            g = np.ones(100) if constant else rng.standard_normal(100) * 10 ** rng.uniform(-6, 6)
            state, step = opt.step(state, g.astype(np.float32))
            np.testing.assert_array_equal(step, state.v)
            assert np.linalg.norm(state.v.astype(np.float64)) <= tolerance
        if constant:
            assert np.linalg.norm(state.v.astype(np.float64)) > 0.1 * (1 - 1e-6)
    assert ClipUp(lr=0.05).max_speed == 0.1  # the paper's rule of thumb: max_speed = 2 lr
