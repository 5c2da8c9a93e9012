"""CMA-ES through pycma: Hansen & Ostermeier (2001), with optional IPOP restarts (Auger & Hansen 2005).

The covariance matrix adaptation evolution strategy samples ``lambda`` candidates per generation,

    x_k = m + sigma * s * B (D z_k),   z_k ~ N(0, I)                                     (1)

(``C = B D^2 B^T`` the covariance matrix, ``s`` pycma's diagonal scaling ``sigma_vec``), moves the
mean to a weighted mean of the best ``mu``, adapts sigma by cumulative step-size adaptation of the
path ``p_sigma`` and C by the rank-one (path ``p_c``) and rank-mu updates: the algorithm summary of
Hansen (2016), "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772, Eq. (38)-(47). All of
that arithmetic is pycma's (``cma==4.5.0``, N. Hansen's maintained reference implementation,
pinned for bit-identical runs): this module hands it the members that were evaluated and keeps
its state where the runtime can replicate it.

**Sampling is ours.** pycma's ``ask`` draws from a numpy RNG inside pycma, which no replica can
reproduce from (seed, generation). Here ``z_k`` is member k's noise-table slice (offsets from
:meth:`CMAES.ask`, as every variant), ``x_k`` follows Eq. (1) with the B and D that pycma's own
``ask`` would use (its lazy eigendecomposition and ``alleviate_conditioning_in_coordinates`` run
at the end of each ``tell``, where the next ``ask`` would run them), and ``tell`` receives those
``x_k`` (``check_points=False``: not repaired, like pycma's own samples). pycma may never draw:
its ``randn`` option raises, and its ``seed`` option is NaN ("do nothing"), so it never reseeds
numpy's global RNG either. pycma minimizes: it is told ``-return``.

**State is data.** A worker rebuilds members from the state alone (nothing is sent: it replays
``tell``), so pycma's state lives in ``ESState.aux`` as numeric arrays (mean, sigma, C and its
eigen-factors B and D, the evolution paths, the diagonal scaling, and the counters and fitness
histories the stop conditions read), and every ``tell`` restores a fresh
``cma.CMAEvolutionStrategy`` from them, tells it and reads them back. Pickling the pycma object
into ``aux`` was rejected: its bytes are not a function of the numbers (it holds wall-clock
timers), and unpickling a checkpoint runs code (pycma even ``eval`` s option strings, so a class
whitelist would not make it safe), which esbench's data-only checkpoints exist to prevent. That
the restore is complete is tested: restored every generation, the run equals one pycma object
running its own ask/tell, bit for bit (tests/test_variants_pgpe_cma.py). BLAS runs on one thread
inside the update and Eq. (1) (:func:`_one_blas_thread`): OpenBLAS's eigh differs in the last
bits between 1 and 2 threads, and Dask workers run 1 while the master runs one per core.

**Covariance.** ``full``: the N x N matrix (C and B: 16 N^2 bytes of state; an O(N^3)
eigendecomposition every ``~1 / (10 N (c_1 + c_mu))`` generations, pycma's lazy update).
``diagonal``: pycma's ``CMA_diagonal=True``, the separable CMA-ES of Ros & Hansen (2008), O(N)
state and time. ``auto``: full up to ``full_max_dim`` parameters (default 1000), diagonal above.
Measured per generation (lambda = 40, BLAS on one thread, this 2-core VM unloaded; about twice
as long under load), ``tell`` on every replica (restore, pycma's update, the eigendecomposition
when due) and the state in ``aux``: N = 100 full 4 ms, 0.17 MB; N = 1000 full 19 ms, or 140 ms
in the ~1 generation in 5 with an eigendecomposition, 16 MB; N = 5800 diagonal 6 ms, 0.3 MB;
N = 100,000 diagonal 70 ms, 5.2 MB. Full C at N = 5.8k (a 64x64
MLP on HalfCheetah) would be 270 MB per replica and seconds per eigendecomposition. The Atari CNN
(1.7M parameters) is not offered: even separable, a ``tell`` took 5-10 s and 6 GB on every replica,
and its learning rates (c_sigma 8e-6, c_mu 6e-6) adapt nothing within any feasible run.

**IPOP.** With ``restarts > 0``, whenever pycma's ``stop()`` reports a termination condition, the
search restarts (from the initial parameters, or with ``restart_from: best`` from the best member
of the run that stopped; ``cma.fmin`` takes the best of all runs) with sigma0 and ``incpopsize``
times the population, as ``cma.fmin`` does (pycma's restarts exist only inside ``cma.fmin``, not
in ask/tell). The number of members lives
in the state (``aux["ipop"]``) and :meth:`CMAES.ask` reads it, so the runtime, which sizes every
generation by ``len(strategy.ask(state))`` and whose records carry their own population, follows
the growth with nothing else to change; ``population_size`` in the config is the first run's
lambda (budgets in timesteps are unaffected, a generation just costs more). Without restarts
(the default, as ``cma.fmin``), stop conditions are reported (metric ``cma_stop``) and ignored:
the budget ends a run.

Switched off (their state is not carried, or they sample inside pycma): TPA step-size adaptation
(pycma's default for N >= 300, which needs pycma's own mirrored samples; CSA is used at every
size), mirrored sampling, injection, elitism, bounds, and the gene-space transformation pycma adds
above a condition number of 1e12 (``conditioncov_alleviate``'s second value is 0; pycma's
``tolconditioncov`` stop at 1e14 still applies).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from esbench.config.registry import AlgorithmSpec, register_algorithm
from esbench.config.schema import ESConfig, _c
from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable
from esbench.utils.layout import ParamLayout
from esbench.utils.seeding import NOISE_OFFSETS, generator

#: pycma's scalar state, stored in ``aux["cma_scalars"]`` (float64) in this order. ``None`` in
#: pycma (a median or best before the first generation) is stored as NaN (floats) or -1 (counts).
SCALARS: tuple[str, ...] = (
    "sigma",  # the step size
    "countiter",  # generations told to this run
    "countevals",  # evaluations told to this run
    "sm_count_tell",  # full C: covariance updates so far
    "sm_last_update",  # full C: count_tell at the last eigendecomposition (lazy update)
    "sm_count_eigen",  # full C: eigendecompositions so far
    "scaling_is_identity",  # pycma's flag: sigma_vec still the identity (1.0)
    "median0",  # fit.median0: the first generation's median f (tolfunrel)
    "median_min",  # fit.median_min
    "median_previous",  # fit.median_previous
    "median_got_worse",  # fit.median_got_worse
    "flatfit_iterations",  # fit.flatfit_iterations (tolflatfitness; updated by stop())
    "best_f",  # best.f: best f (= -return) of this run
    "best_evals",  # best.evals: the evaluation that found it (tolstagnation)
    "xstag_count",  # tolxstagnation: iterations counted
    "xstag_count_x",  # tolxstagnation: iteration of the reference mean
)
_S = {name: i for i, name in enumerate(SCALARS)}

#: pycma options fixed here (the rest are pycma's defaults; ``popsize`` and ``CMA_diagonal`` are
#: set per run). Output off, no signals file read, no RNG, no feature whose state is not carried.
_FIXED_OPTIONS: dict[str, Any] = {
    "verbose": -9,
    "verb_log": 0,
    "verb_disp": 0,
    "verb_plot": 0,
    "verb_time": False,
    "signals_filename": "",  # pycma otherwise reads options from ./cma_signals.in in stop()
    "seed": float("nan"),  # "do nothing": never np.random.seed (a global side effect)
    "CMA_mirrors": 0,  # members are i.i.d. (or our antithetic pairs), never pycma's mirrors
    "CMA_elitist": False,
    "conditioncov_alleviate": [1e8, 0],  # second value (gene-space transform) off, see module doc
}


_BLAS: Any = None  # a threadpoolctl.ThreadpoolController, made on first use (after BLAS is loaded)


def _one_blas_thread() -> Any:
    """A context in which BLAS/LAPACK run single-threaded.

    OpenBLAS's results depend on its thread count (measured: ``eigh`` of a C whose eigenvalues
    are 1e-8 apart differs in the 9th digit between 1 and 2 threads), and a Dask worker runs 1
    thread while the master runs one per core; pycma's update and Eq. (1) run in this context on
    every replica, so they agree bit for bit (and the master stays in step with its workers).
    """
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def _refuse_randn(*shape: int) -> np.ndarray:
    """pycma's ``randn`` option: every sample here comes from the noise table, none from pycma."""
    raise RuntimeError(
        f"pycma asked for random numbers {shape}: esbench samples every CMA-ES member itself "
        "(noise-table offsets from the run seed); a pycma feature that samples internally is not "
        "supported"
    )


@dataclass
class CMAESConfig(ESConfig):
    """CMA-ES (pycma) with optional IPOP restarts; ``population_size`` is lambda of the first run.

    ``sigma`` is CMA-ES's initial step size sigma0 (estool's CMA-ES wrapper: 0.1). With
    ``antithetic`` (off by default, CMA-ES samples i.i.d.) a member is a mirrored pair and
    pycma is told both points.
    """

    name: str = "cma_es"
    population_size: int = _c(40, ge=4)  # lambda, evaluations per generation
    antithetic: bool = False
    sigma: float = _c(0.1, gt=0.0)  # sigma0
    covariance: str = _c("auto", choices=("auto", "full", "diagonal"))
    full_max_dim: int = _c(1000, ge=1)  # auto: full C up to this many parameters, diagonal above
    restarts: int = _c(0, ge=0)  # IPOP restarts (cma.fmin's `restarts`); 0: plain CMA-ES
    incpopsize: float = _c(2.0, ge=1.0)  # population factor per restart (cma.fmin's `incpopsize`)
    restart_from: str = _c("initial", choices=("initial", "best"))  # cma.fmin: x0 (default) or best
    tolfun: float = _c(1e-11, ge=0.0)  # pycma's stop: f range below this (now and in recent history)
    tolx: float = _c(1e-11, ge=0.0)  # pycma's stop: every sigma * std below this


class CMAES(Strategy):
    """CMA-ES with pycma doing every update; see the module docstring for sampling and state.

    Args:
        cfg: a :class:`CMAESConfig`.
        noise: the shared noise table (member k's z_k is the slice at its offset).
        dim: number of parameters N.
        seed: the run seed (noise offsets derive from it and the generation).
        layout: unused (CMA-ES sees one flat vector).
    """

    def __init__(
        self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: ParamLayout | None = None
    ) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        mode = str(cfg.covariance)
        #: separable (diagonal) CMA-ES, chosen once from the config and the dimension
        self.diagonal = mode == "diagonal" or (mode == "auto" and self.dim > int(cfg.full_max_dim))
        self.pairs = 2 if cfg.antithetic else 1  # evaluations per member

    # -- pycma objects ---------------------------------------------------------------------------
    def _options(self, lam: int) -> dict[str, Any]:
        """pycma's options for a run with population ``lam`` (evaluations per generation)."""
        from cma.sigma_adaptation import CMAAdaptSigmaCSA  # pycma imports scipy.stats: 0.8 s

        return {
            **_FIXED_OPTIONS,
            "popsize": int(lam),
            "CMA_diagonal": bool(self.diagonal),
            "AdaptSigma": CMAAdaptSigmaCSA,  # pycma's default is TPA for N >= 300, see module doc
            "randn": _refuse_randn,
            "tolfun": float(self.cfg.tolfun),
            "tolx": float(self.cfg.tolx),
        }

    def _new_es(self, x0: np.ndarray, lam: int) -> Any:
        """A fresh ``cma.CMAEvolutionStrategy`` at ``x0`` (shape (N,), float64) with sigma0."""
        import cma

        return cma.CMAEvolutionStrategy(np.asarray(x0, np.float64), float(self.cfg.sigma), self._options(lam))

    def _prepare_ask(self, es: Any) -> None:
        """What pycma's ``ask`` does to the distribution before sampling (Eq. (1)'s B, D):
        coordinate-wise condition alleviation, then the lazy eigendecomposition of C."""
        es.alleviate_conditioning_in_coordinates(es.opts["conditioncov_alleviate"][0])
        if not self.diagonal:  # diagonal: C is sigma_vec, nothing to decompose
            es.sm.update_now()
            es._updateBDfromSM(es.sm)

    def _members(self, state: ESState, population: Population) -> np.ndarray:
        """The evaluated points, shape (len(population) * pairs, N), float64, in fitness order."""
        rows = []
        for i in range(len(population)):
            for sign in population.signs:
                rows.append(self.member_params(state, population, i, sign))
        return np.asarray(rows, dtype=np.float64)

    # -- state <-> pycma -------------------------------------------------------------------------
    def _export(self, es: Any, run: int, members: int, x0: np.ndarray) -> dict[str, np.ndarray]:
        """pycma's state as aux arrays (copies; float64 unless stated)."""

        def f64(x: Any) -> np.ndarray:
            return np.array(x, dtype=np.float64, order="K")  # keeps B's column-major layout, see _restore

        def num(x: Any, missing: float) -> float:
            return missing if x is None else float(x)

        fit, best, xstag = es.fit, es.best, es._stoptolxstagnation
        scalars = np.zeros(len(SCALARS))
        scalars[_S["sigma"]] = float(es.sigma)
        scalars[_S["countiter"]] = es.countiter
        scalars[_S["countevals"]] = es.countevals
        scalars[_S["scaling_is_identity"]] = float(bool(es.sigma_vec.is_identity))
        scalars[_S["median0"]] = num(fit.median0, np.nan)
        scalars[_S["median_min"]] = float(fit.median_min)
        scalars[_S["median_previous"]] = float(fit.median_previous)
        scalars[_S["median_got_worse"]] = fit.median_got_worse
        scalars[_S["flatfit_iterations"]] = fit.flatfit_iterations
        scalars[_S["best_f"]] = float(best.f)
        scalars[_S["best_evals"]] = num(best.evals, -1.0)
        scalars[_S["xstag_count"]] = xstag.count
        scalars[_S["xstag_count_x"]] = xstag.count_x
        aux = {
            "cma_scalars": scalars,
            "cma_mean": f64(es.mean),
            "cma_pc": f64(es.pc),
            "cma_ps": f64(es.adapt_sigma.ps),
            "cma_scaling": f64(es.sigma_vec.scaling),  # shape () while the identity, else (N,)
            "cma_best_x": f64(best.x if best.x is not None else []),
            "cma_xstag_x": f64(xstag.x),
            "cma_fit_last": f64(fit.fit if fit.fit is not None else []),  # sorted f, last generation
            "cma_fit_hist": f64(fit.hist),  # best f of recent generations, newest first
            "cma_fit_histbest": f64(fit.histbest),  # every 5th generation's best f
            "cma_fit_histmedian": f64(fit.histmedian),  # every 5th generation's median f
            "cma_x0": np.array(x0, dtype=np.float32),  # this run's start (IPOP restart_from=initial)
            "ipop": np.array([run, members], dtype=np.int64),  # restarts done, members per generation
        }
        if not self.diagonal:
            scalars[_S["sm_count_tell"]] = es.sm.count_tell
            scalars[_S["sm_last_update"]] = es.sm.last_update
            scalars[_S["sm_count_eigen"]] = es.sm.count_eigen
            aux["cma_C"] = f64(es.sm.C)  # (N, N)
            aux["cma_B"] = f64(es.sm.B)  # (N, N), columns: eigenvectors of C as of the last decomposition
            aux["cma_D"] = f64(es.sm.D)  # (N,), sqrt of those eigenvalues, ascending
        return aux

    def _restore(self, aux: Any) -> Any:
        """A ``cma.CMAEvolutionStrategy`` in exactly the state ``aux`` describes, ready to be told."""
        from cma.utilities.utils import ElapsedWCTime

        s = aux["cma_scalars"]
        lam = int(aux["ipop"][1]) * self.pairs
        es = self._new_es(aux["cma_mean"], lam)

        def count(name: str) -> int:
            return int(s[_S[name]])

        def opt(x: float, missing: Any = None) -> Any:
            return missing if np.isnan(x) or x < 0 else x

        def arr(key: str) -> np.ndarray:
            # Same values *and* memory layout as pycma's own arrays: BLAS sums in a different order
            # for a column-major B (pycma's, from eigh) than for a row-major copy of it.
            return np.array(aux[key], dtype=np.float64, order="K")

        es.mean = arr("cma_mean")
        es.mean_after_tell = arr("cma_mean")
        es.mean_old = arr("cma_mean")  # tell overwrites it before use (TPA alone reads the old one)
        es.sigma = float(s[_S["sigma"]])
        es.pc = arr("cma_pc")
        es.adapt_sigma.ps = arr("cma_ps")
        es.sigma_vec.scaling = arr("cma_scaling")
        es.sigma_vec.dim = int(np.size(es.sigma_vec.scaling))
        es.sigma_vec.is_identity = bool(s[_S["scaling_is_identity"]])
        if not self.diagonal:
            es.sm.C = arr("cma_C")
            es.sm.B = arr("cma_B")
            es.sm.D = arr("cma_D")
            es.sm.count_tell = count("sm_count_tell")
            es.sm.last_update = count("sm_last_update")
            es.sm.count_eigen = count("sm_count_eigen")
        es._updateBDfromSM(es.sm)
        es.countiter = count("countiter")
        es.countevals = count("countevals")
        fit = es.fit
        fit.fit = list(aux["cma_fit_last"]) if aux["cma_fit_last"].size else None
        fit.hist = list(aux["cma_fit_hist"])
        fit.histbest = list(aux["cma_fit_histbest"])
        fit.histmedian = list(aux["cma_fit_histmedian"])
        fit.median0 = opt(float(s[_S["median0"]]))
        fit.median_min = float(s[_S["median_min"]])
        fit.median_previous = float(s[_S["median_previous"]])
        fit.median_got_worse = count("median_got_worse")
        fit.flatfit_iterations = count("flatfit_iterations")
        es.best.f = float(s[_S["best_f"]])
        es.best.evals = opt(float(s[_S["best_evals"]]))
        es.best.evals = None if es.best.evals is None else int(es.best.evals)
        es.best.evalsall = es.countevals
        es.best.x = arr("cma_best_x") if aux["cma_best_x"].size else None
        xstag = es._stoptolxstagnation
        xstag.count = count("xstag_count")
        xstag.count_x = count("xstag_count_x")
        xstag.x = arr("cma_xstag_x")
        # What pycma's ask records about the population it hands out (nothing random).
        es._flgtelldone = False
        es.timer = ElapsedWCTime()  # wall clock, read only by the (disabled) timeout stop
        es.evaluations_per_f_value = 1
        es.number_of_injections = 0
        es.number_of_solutions_asked = lam
        es._is_independent_sample = lam * [True]
        return es

    # -- Strategy hooks --------------------------------------------------------------------------
    def _init_aux(self, params: np.ndarray) -> dict[str, np.ndarray]:
        members = self.num_members
        with _one_blas_thread():
            es = self._new_es(params, members * self.pairs)
            self._prepare_ask(es)
        return self._export(es, run=0, members=members, x0=params)

    def ask(self, state: ESState) -> Population:
        """This generation's members: as many as the current IPOP run has (``aux["ipop"][1]``)."""
        rng = generator(self.seed, NOISE_OFFSETS, state.generation)
        members = int(state.aux["ipop"][1])
        offsets = self.noise.sample_offsets(rng, self.draw_size, members)
        return Population(generation=state.generation, offsets=offsets, antithetic=bool(self.cfg.antithetic))

    def perturbation(self, state: ESState, population: Population, i: int) -> np.ndarray:
        """Member i's step from the mean, Eq. (1): ``sigma * s * B (D z_i)``, shape (N,), float32."""
        aux = state.aux
        z = self.noise.get(int(population.offsets[i]), self.dim).astype(np.float64)
        if self.diagonal:  # B = D = I: elementwise only
            y = z
        else:
            with _one_blas_thread():
                y = aux["cma_B"] @ (aux["cma_D"] * z)  # Eq. (1)
        sigma = float(aux["cma_scalars"][_S["sigma"]])
        return (sigma * (aux["cma_scaling"] * y)).astype(np.float32)

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        with _one_blas_thread():
            return self._update_one_thread(state, population, fitness)

    def _update_one_thread(
        self, state: ESState, population: Population, fitness: np.ndarray
    ) -> tuple[ESState, dict]:
        """:meth:`_update` (restore, tell, stop, IPOP, prepare the next ask), BLAS single-threaded."""
        run, members = (int(v) for v in state.aux["ipop"])
        es = self._restore(state.aux)
        solutions = self._members(state, population)
        if len(solutions) < max(3, es.sp.weights.mu):  # pycma refuses fewer points than parents
            return state, {"cma_skipped": 1.0, "cma_sigma": float(es.sigma), "cma_restart": 0.0}
        es.tell(list(solutions), list(-fitness.reshape(-1)), check_points=False)  # pycma minimizes
        stop = dict(es.stop())
        x0 = state.aux["cma_x0"]
        restarted = bool(stop) and run < int(self.cfg.restarts)
        if restarted:  # IPOP: sigma0 again, incpopsize times the population
            run += 1
            members = max(1, int(self.num_members * float(self.cfg.incpopsize) ** run + 0.5))
            if self.cfg.restart_from == "best" and es.best.x is not None:
                x0 = np.asarray(es.best.x, dtype=np.float32)
            es = self._new_es(x0, members * self.pairs)
        self._prepare_ask(es)
        aux = self._export(es, run=run, members=members, x0=x0)
        params = aux["cma_mean"].astype(np.float32)
        step = float(np.linalg.norm(params - state.params))
        metrics = {
            "update_ratio": step / max(float(np.linalg.norm(state.params)), 1e-12),
            "cma_sigma": float(es.sigma),
            "cma_restart": float(restarted),
            "cma_stop": float(bool(stop)),
        }
        return replace(state, params=params, aux=aux), metrics


register_algorithm(
    AlgorithmSpec(
        key="cma_es",
        family="es",
        schema=CMAESConfig,
        cls=CMAES,
        label="CMA-ES",
        colour="#000000",
        description="CMA-ES (pycma 4.5.0), Hansen & Ostermeier 2001: full or separable C, IPOP restarts",
        policy_kinds=("mlp", "linear"),
    )
)
