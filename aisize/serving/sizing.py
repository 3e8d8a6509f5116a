"""Size a serving fleet: the replica shape and count that carry a request rate within its SLOs.

For every candidate shape the replica's capacity comes from its max-throughput
state (:mod:`.throughput`); its latencies under Poisson load are evaluated at a
geometric grid of per-replica rates up to that capacity, all shapes and rates
in one vectorized call (:func:`~aisize.serving.latency.loaded_state`), then
refined by bisection. The grid does not depend on the targets and is memoised
apart from them, so a move of a target reruns only the comparison and the
bisection. A replica's *SLO rate* is the highest rate whose TTFT and
TPOT statistics (mean, p95 or p99) meet the targets; the fleet needs
``ceil(λ / SLO rate)`` replicas.
The shape with the fewest GPUs wins (then the smaller replica, then the lower TTFT). When no shape meets
a target at any load, the result says which target and the best any shape
achieves (at the lightest load).

References
----------
.. [1] Zhong et al. 2024 (DistServe), OSDI'24, sec. 2 ("goodput": the highest rate at which a
       share of requests meets the TTFT and TPOT SLOs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from aisize import checks
from aisize.serving.costs import model_costs
from aisize.serving.estimate import _sig
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates
from aisize.serving.latency import loaded_state
from aisize.serving.shapes import (ENGINE_LAYOUTS, ReplicaShape, ShapeGrid, attention_dp_choices, check_shape,
                                   engine_runs, pipeline_for_capacity)
from aisize.serving.throughput import EngineLimits, engine_limits, max_throughput
from aisize.serving.tails import STATISTIC_SUFFIX

RATE_GRID = 16  # per-replica rates tried per shape, geometric from 0.1 % to 99.5 % of capacity ...
# ... then the step where the targets stop holding, resolved as 5 halvings would (to 2 % of the rate) in one
# call of 31 rates: a call's cost is mostly per call, not per rate (since Erlang B sums only the terms of loads
# near their servers)
SEARCH_BITS = 5
STATISTICS = tuple(STATISTIC_SUFFIX)  # what a TTFT or TPOT target bounds
KNEE_FACTOR = 2.0  # the knee: where mean request latency doubles over its light-load value
KNEE_POINTS = 48  # rates of each shape's curve the knee is read from (1 % to 99 % of capacity; solved with the grid)


@dataclass(frozen=True)
class FleetChoice:
    """The chosen replica shape and count, or why none meets the targets."""

    shape: ReplicaShape | None
    replicas: int
    slo_requests_per_s: float  # per replica
    feasible: bool
    reason: str
    best_ttft_s: float  # best any fitting shape achieves at the lightest load (the target's statistic)
    best_tpot_s: float
    candidates: int
    knee_requests_per_s: float = 0.0  # per replica of the chosen shape: mean request latency doubles there
    # every shape that meets the targets, in the order the search ranks them (the chosen first): (shape, replicas,
    # SLO rate per replica [requests/s]); a plan that checks the ranking with its full estimate reads it
    ranked: tuple = ()
    knee_of: object = field(default=None, repr=False, compare=False)  # shape -> its knee [requests/s per replica]
    # shape -> its capacity [requests/s per replica] from the screen's max-throughput state (no speculation, reuse or
    # length spread: with none of them, the estimate's to the bit; tests/test_slider_screen_capacity.py)
    capacity_of: object = field(default=None, repr=False, compare=False)


def candidate_shapes(model, dev, *, scaleout_bytes_per_s, tensor_parallel="auto", pipeline_parallel="auto",
                     gpus_per_server=8, max_servers=16, engine=None) -> list[ReplicaShape]:
    """Shapes worth trying: the layouts the engine's published recipes run (docs/engine-shapes.md).

    Tensor parallelism stays inside one scale-up domain and splits the heads evenly;
    pipeline stages (2, 4 or 8) are added only at the widest such TP, one scale-up domain
    (server) per stage, and stages beyond one scale-up domain talk over the servers'
    scale-out NICs (``scaleout_bytes_per_s`` per GPU); MoE models also try attention data
    parallelism with expert parallelism, without pipeline stages, on engines whose recipes
    run it (:data:`~aisize.serving.shapes.ENGINE_LAYOUTS`; ``engine`` None: every engine's).
    A shape the scenario fixes (both TP and PP given) is tried as given.
    """
    domain = max(dev.scaleup_domain, 1)
    if tensor_parallel != "auto":
        check_shape(model, tensor_parallel=tensor_parallel, attention_dp=1,
                    pipeline_parallel=1 if pipeline_parallel == "auto" else pipeline_parallel)
    tps = [tensor_parallel] if tensor_parallel != "auto" else [
        t for t in (1, 2, 4, 8, 16, 32, 64, 72) if t <= domain and model.heads % t == 0]
    pps = [pipeline_parallel] if pipeline_parallel != "auto" else [
        p for p in (1, 2, 4, 8) if p <= max_servers * max(gpus_per_server, 1)]
    fixed = tensor_parallel != "auto" and pipeline_parallel != "auto"
    key = getattr(engine, "key", engine)
    out = []
    for pp in pps:
        if pp > model.layers:
            continue
        for tp in tps:
            link = scaleout_bytes_per_s if pp > 1 and tp * pp > domain else None
            dps = attention_dp_choices(model, tp) if key is None or key in ENGINE_LAYOUTS else [1]
            for dp in dps:
                shape = ReplicaShape(tp, dp, pp, link)
                if fixed or engine_runs(shape, max(tps)):
                    out.append(shape)
    return out


def choose_fleet(model, accelerator, *, weight_precision, kv_precision, input_tokens, output_tokens,
                 requests_per_s, ttft_target_s, tpot_target_s, statistic="p95", shapes, engine, calibration,
                 length_cv=0.0, cached_tokens=0.0) -> FleetChoice:
    """The fewest-GPU shape and replica count that serve ``requests_per_s`` within the targets.

    ``cached_tokens``: prompt tokens a request finds in a KV cache (held, not computed; :mod:`.prefix`).

    Every shape's SLO rate does not depend on the fleet's rate, so it is worked out once per
    service (:func:`_slo_rates`, memoised): a move of the request rate only recounts replicas.
    """
    lam = checks.positive("requests_per_s", requests_per_s, high=1e9)
    stat = checks.choice("statistic", statistic, STATISTICS)
    r = _slo_rates(model, accelerator, weight_precision, kv_precision, input_tokens, output_tokens,
                   float(ttft_target_s), float(tpot_target_s), stat, tuple(shapes), engine, _Key(calibration),
                   float(length_cv), float(cached_tokens))
    if r.fitting is None:
        return FleetChoice(None, 0, 0.0, False, "no shape holds the weights and one request's KV cache", np.inf,
                           np.inf, len(shapes))
    # pipelined shapes only where no one-stage shape holds the model (the engines' recipes, docs/engine-shapes.md)
    slo_rate = np.where(pipeline_for_capacity([s for s, _ in r.fitting], np.ones(len(r.fitting), bool)), r.slo_rate,
                        0.0)
    with np.errstate(divide="ignore"):
        replicas = np.where(slo_rate > 0, np.ceil(lam / np.where(slo_rate > 0, slo_rate, 1.0)), np.inf)
    if not np.isfinite(replicas).any():
        missed = []
        if r.best_ttft > ttft_target_s:
            missed.append(f"TTFT {stat} target {ttft_target_s * 1e3:,g} ms (best achievable "
                          f"{_ms(r.best_ttft)})")
        if r.best_tpot > tpot_target_s:
            missed.append(f"TPOT {stat} target {tpot_target_s * 1e3:,g} ms (best achievable "
                          f"{_ms(r.best_tpot)})")
        if not missed:
            missed.append("TTFT and TPOT targets together (each is reachable alone, not both at once)")
        return FleetChoice(None, 0, 0.0, False, "no replica shape meets the " + " and ".join(missed), r.best_ttft,
                           r.best_tpot, len(shapes))
    total = replicas * r.gpus
    order = np.lexsort((r.ttft_light, r.gpus, total))  # fewest GPUs, then the smallest replica, then the lowest TTFT
    k = int(order[0])
    ranked = tuple((r.fitting[j][0], int(replicas[j]), float(slo_rate[j])) for j in order if np.isfinite(replicas[j]))
    index = {r.fitting[j][0]: int(j) for j in order}
    return FleetChoice(r.fitting[k][0], int(replicas[k]), float(slo_rate[k]), True, "", r.best_ttft, r.best_tpot,
                       len(shapes), r.knee(k), ranked, lambda shape: r.knee(index[shape]),
                       lambda shape: float(r.capacity[index[shape]]))


def _ms(seconds) -> str:
    """A latency in milliseconds for a refusal's text, as aisize.format.ms shows it ("44.7 ms"; "unbounded"): a
    formula does not import presentation."""
    return f"{_sig(float(seconds) * 1e3)} ms" if math.isfinite(seconds) else _sig(seconds)


class _Key:
    """A calibration as a cache key: equal field values, equal keys (its mappings are read-only views)."""

    def __init__(self, calibration):
        self.value = calibration
        self.key = tuple((f, tuple(sorted(v.items())) if hasattr(v, "items") else v)
                         for f, v in vars(calibration).items())

    def __eq__(self, other):
        return isinstance(other, _Key) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


@dataclass
class _ShapeRates:
    """What choose_fleet knows of every fitting shape before it sees the fleet's rate."""

    fitting: list | None  # (shape, engine limits) of the shapes that hold the weights and one request
    gpus: np.ndarray
    slo_rate: np.ndarray  # per replica [requests/s]; 0 where no rate meets the targets
    ttft_light: np.ndarray  # TTFT statistic at the lightest load [s]
    best_ttft: float
    best_tpot: float
    knee: object  # shape index -> knee of that shape [requests/s per replica] (memoised)
    capacity: np.ndarray | None = None  # as _ShapeGrid's


@dataclass
class _ShapeGrid:
    """Every fitting shape's capacity and latencies on the coarse grid of rates: all that the SLO search
    reads before it compares with the targets (so a move of a target reuses it)."""

    fitting: list | None
    gpus: np.ndarray
    at: object  # per-replica rates (shapes x rates), near -> (TTFT statistic, TPOT statistic, stable, mean iteration)
    lam_grid: np.ndarray  # shapes x RATE_GRID [requests/s]
    ttft: np.ndarray  # the statistic at lam_grid [s]
    tpot: np.ndarray
    stable: np.ndarray
    iteration: np.ndarray  # the mean iteration at lam_grid [s]
    knee: object  # shape index -> knee of that shape [requests/s per replica] (memoised)
    capacity: np.ndarray | None = None  # each fitting shape's max-throughput rate [requests/s per replica]


def _read_only(grid: ShapeGrid) -> ShapeGrid:
    """``grid`` with its arrays read-only: each step of a solve over it then reads the shapes' constants kept
    (aisize.serving.iteration_shape keeps a layout of read-only arrays only, which cannot change under it)."""
    for name in ("tensor_parallel", "attention_dp", "pipeline_parallel", "stage_link_bytes_per_s", "expert_parallel"):
        x = getattr(grid, name)
        while isinstance(x, np.ndarray):  # the column and the array it views (ShapeGrid.of's [:, None])
            x.flags.writeable = False
            x = x.base
    return grid


@lru_cache(maxsize=128)
def _shape_grid(model, accelerator, weight_precision, kv_precision, input_tokens, output_tokens, stat, shapes,
                engine, calibration_key, length_cv, cached_tokens) -> _ShapeGrid:
    """Capacity and latencies of every shape that fits on the coarse grid of rates (all at once, vectorized)."""
    calibration = calibration_key.value
    dev = device(accelerator, weight_precision, kv_precision)
    costs = model_costs(model, weight_precision, kv_precision)
    rates = achieved_rates(dev, calibration, engine)
    empty = np.zeros((0, RATE_GRID))
    if not shapes:
        return _ShapeGrid(None, np.zeros(0), None, empty, empty, empty, empty.astype(bool), empty, None)
    # every shape's max-throughput state in one call (a column per shape), then the shapes that fit
    limits = [engine_limits(costs, dev, engine, input_tokens=input_tokens, output_tokens=output_tokens, shape=s)
              for s in shapes]
    column = (len(shapes), 1)
    cap = max_throughput(costs, dev, rates, calibration, engine,
                         EngineLimits(np.array([float(lim.max_batch_size) for lim in limits])[:, None],
                                      np.array([float(lim.max_num_tokens) for lim in limits])[:, None]),
                         input_tokens=input_tokens, output_tokens=output_tokens,
                         shape=ShapeGrid.of(shapes, dev.link_bytes_per_s), cached_tokens=cached_tokens)
    fits = np.broadcast_to(cap.memory.fits, column)[:, 0]
    fitting = [(s, lim) for s, lim, ok in zip(shapes, limits, fits) if ok]
    if not fitting:
        return _ShapeGrid(None, np.zeros(0), None, empty, empty, empty, empty.astype(bool), empty, None)
    capacity = np.broadcast_to(cap.state.requests_per_s, column)[fits, 0].astype(float)
    slots = np.broadcast_to(cap.state.concurrency, column)[fits, 0].astype(float)
    budget = np.array([float(lim.max_num_tokens) * s.attention_dp * s.pipeline_parallel for s, lim in fitting])
    grid_shape = _read_only(ShapeGrid.of([s for s, _ in fitting], dev.link_bytes_per_s))

    def at(rates_per_s, near=None, state=False):
        """(TTFT statistic, TPOT statistic, stable, mean iteration) of every shape (rows) at per-replica rates
        (columns); ``near`` as for :func:`loaded_state`; with ``state``, the loaded state besides."""
        ls = loaded_state(costs, rates, calibration, requests_per_s=rates_per_s,
                          capacity_requests_per_s=capacity[:, None], slots=slots[:, None], input_tokens=input_tokens,
                          output_tokens=output_tokens, max_num_tokens=budget[:, None],
                          chunked_prefill=engine.chunked_prefill, shape=grid_shape, length_cv=length_cv,
                          cached_tokens=cached_tokens, near=near)
        suffix = STATISTIC_SUFFIX[stat]
        ttft, tpot = getattr(ls, f"ttft{suffix}_seconds"), getattr(ls, f"tpot{suffix}_seconds")
        return (ttft, tpot, ls.stable, ls.iteration_seconds) + ((ls,) if state else ())

    # the grid and every shape's knee curve (a fine linear grid: the curve the app and report draw) in one solve:
    # each root settles on its own (littles_law_concurrency), so each rate's figures are those it has alone
    lam_grid = capacity[:, None] * np.geomspace(1e-3, 0.995, RATE_GRID)[None, :]
    lam_knee = capacity[:, None] * np.linspace(0.01, 0.99, KNEE_POINTS)[None, :]
    *got, ls = at(np.concatenate((lam_grid, lam_knee), axis=1), state=True)
    both = (len(fitting), RATE_GRID + KNEE_POINTS)
    ttft, tpot, stable, iteration = (np.broadcast_to(x, both)[:, :RATE_GRID] for x in got)
    mean = np.broadcast_to(ls.ttft_seconds + (output_tokens - 1) * ls.tpot_seconds, both)[:, RATE_GRID:]

    @lru_cache(maxsize=None)
    def shape_knee(k: int) -> float:
        return knee(lam_knee[k], mean[k])

    gpus = np.array([s.gpus for s, _ in fitting], dtype=float)
    return _ShapeGrid(fitting, gpus, at, lam_grid, ttft, tpot, stable, iteration, shape_knee, capacity)


@lru_cache(maxsize=128)
def _slo_rates(model, accelerator, weight_precision, kv_precision, input_tokens, output_tokens, ttft_target_s,
               tpot_target_s, stat, shapes, engine, calibration_key, length_cv, cached_tokens) -> _ShapeRates:
    """SLO rate and light-load latency of every shape that fits: the grid (:func:`_shape_grid`, which does not
    depend on the targets) against the targets, then bisection where they stop holding."""
    g = _shape_grid(model, accelerator, weight_precision, kv_precision, input_tokens, output_tokens, stat, shapes,
                    engine, calibration_key, length_cv, cached_tokens)
    if g.fitting is None:
        return _ShapeRates(None, np.zeros(0), np.zeros(0), np.zeros(0), np.inf, np.inf, None)

    def met(ttft, tpot, stable):
        return stable & (ttft <= ttft_target_s) & (tpot <= tpot_target_s)

    # the coarse geometric grid of rates, then bisection between the last that meets the targets and the next
    lam_grid, ok = g.lam_grid, met(g.ttft, g.tpot, g.stable)
    best_ttft, best_tpot = float(np.min(g.ttft[:, 0])), float(np.min(g.tpot[:, 0]))
    last = np.where(ok.any(axis=1), RATE_GRID - 1 - np.argmax(ok[:, ::-1], axis=1), -1)
    k_lo, k_hi = np.maximum(last, 0)[:, None], np.where(last == RATE_GRID - 1, last, last + 1)[:, None]
    lo = np.where(last >= 0, np.take_along_axis(lam_grid, k_lo, axis=1)[:, 0], 0.0)
    hi = np.take_along_axis(lam_grid, k_hi, axis=1)[:, 0]
    # what SEARCH_BITS halvings of the step find (the latencies rise with the rate), in one vectorized call: the
    # 2**SEARCH_BITS - 1 evenly spaced rates inside the step, keeping the last at which the targets hold; each
    # solve starts from the grid's own between the step's ends
    steps = 2 ** SEARCH_BITS
    inner = lo[:, None] + (hi - lo)[:, None] * (np.arange(1, steps) / steps)[None, :]
    near = (lo[:, None], np.take_along_axis(g.iteration, k_lo, axis=1), hi[:, None],
            np.take_along_axis(g.iteration, k_hi, axis=1))
    good = met(*g.at(inner, near)[:3]) & (last >= 0)[:, None]
    held = np.where(good.any(axis=1), steps - 1 - np.argmax(good[:, ::-1], axis=1), 0)  # 0: none of them
    lo = np.take_along_axis(np.concatenate((lo[:, None], inner), axis=1), held[:, None], axis=1)[:, 0]
    slo_rate = np.where(last >= 0, lo, 0.0)
    return _ShapeRates(g.fitting, g.gpus, slo_rate, g.ttft[:, 0], best_ttft, best_tpot, g.knee, g.capacity)


def knee(rates_per_s, mean_latency_s, factor: float = KNEE_FACTOR) -> float:
    """The rate at which mean latency first reaches ``factor`` x its value at the lightest rate
    (interpolated between the rates given; the last rate when it never does) [1/s]."""
    lat = np.asarray(mean_latency_s, dtype=float)
    rate = np.asarray(rates_per_s, dtype=float)
    over = np.flatnonzero(~(lat < factor * lat[0]))  # inf (unstable) counts as over
    if not over.size:
        return float(rate[-1])
    j = max(int(over[0]), 1)
    if not np.isfinite(lat[j]):
        return float(rate[j - 1])
    return float(np.interp(factor * lat[0], lat[j - 1:j + 1], rate[j - 1:j + 1]))
