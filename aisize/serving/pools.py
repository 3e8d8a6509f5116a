"""``aisize.serving.estimate_disaggregated``: given prefill and decode pools, at a concurrency or a rate.

Disaggregated deployments (NVIDIA Dynamo, SGLang PD, llm-d; DistServe [1], Splitwise [2])
run prompts on one pool of replicas and generation on another, and ship each request's KV
cache between them. For pools as deployed (replicas and their TP/EP/attention-DP, both
sides) this module evaluates:

- a prefill replica runs iterations of whole prompts under its token budget (``q`` prompts
  per attention-DP rank; a longer prompt spans several chunks): serving ``q·dp`` prompts
  per prefill iteration. The pool is a queue of ``replicas x q·dp`` slots with deterministic
  service (Allen-Cunneen [3]); a lone prompt runs in a smaller iteration than a full one;
- the KV transfer: the prompt's KV cache (every layer, at the KV precision) leaves the
  prefill GPUs, each GPU its shard, over the scale-up link when both pools sit in one
  scale-up domain (a GB200/GB300 NVL72 rack) and over the GPUs' scale-out NICs otherwise;
- a decode replica runs decode-only iterations at its batch (``b`` per replica, Little's law
  on its share of the requests, up to its slots: batch limit and KV pool), with speculative
  decoding where given; TPOT is that iteration over the tokens a step emits;
- a closed-loop client holding C requests: the throughput X solves
  ``X·(TTFT(X) + (O - 1)·TPOT(X)) = C`` (Little's law on the loop [4]); as X nears the
  slower pool's capacity its queue holds the rest, so beyond it the extra requests wait.

References
----------
.. [1] Zhong et al. 2024, "DistServe", OSDI'24, arXiv:2401.09670, sec. 3-4.
.. [2] Patel et al. 2024, "Splitwise", ISCA'24, arXiv:2311.18677, sec. 4.
.. [3] Allen 1990, "Probability, Statistics and Queueing Theory", sec. 6.4 (G/G/c).
.. [4] Lazowska et al. 1984, "Quantitative System Performance", ch. 3 (closed systems, zero think time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from aisize import checks, models
from aisize.serving.pool_pair import PoolPair, pools_state
from aisize.serving.pools_run import MAX_PROMPTS, benchmark_run
from aisize.serving.engine import resolve_engine
from aisize.serving.estimate import MAX_TOKENS, parts, resolve_calibration
from aisize.serving.replica import Replica
from aisize.serving.hardware import scaleout_bytes_per_s
from aisize.serving.iteration import iteration_time
from aisize.serving.memory import replica_memory
from aisize.serving.shapes import ReplicaShape, check_shape, placed
from aisize.serving.tails import QUANTILES
from aisize.serving.throughput import DEFAULT_TOKENS, EngineLimits
from aisize.units import GiB as GIB

POOL_KEYS = ("replicas", "tensor_parallel", "expert_parallel", "attention_dp", "pipeline_parallel",
             "stage_link_bytes_per_s")
GRID_POINTS, GRID_PASSES = 33, 4  # the closed loop's throughput on log(X): 32^4 cells, to ~1e-5 relative


class PoolsDoNotFit(ValueError):
    """Disaggregated pools that cannot hold the model with one request's KV cache (the message says which
    pool and by how much)."""


@dataclass(frozen=True)
class Pool:
    """One side of a disaggregated deployment: replicas of one shape [count]."""

    replicas: int
    tensor_parallel: int  # GPUs per pipeline stage
    expert_parallel: int
    attention_dp: int
    pipeline_parallel: int = 1
    stage_link_bytes_per_s: float | None = None  # between stages (None: the scale-up link)

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def gpus(self) -> int:
        return self.replicas * self.gpus_per_replica

    def shape(self) -> ReplicaShape:
        return ReplicaShape(self.tensor_parallel, self.attention_dp, self.pipeline_parallel,
                            self.stage_link_bytes_per_s, self.expert_parallel)


def pool(side: str, spec, model) -> Pool:
    """A checked :class:`Pool` from a mapping with keys ``replicas``, ``tensor_parallel``, ``expert_parallel``
    and ``attention_dp`` (the last two default to 1). An ``expert_parallel`` wider than ``tensor_parallel``
    spans that many GPUs, attention data-parallel over them in groups of ``tensor_parallel``."""
    if isinstance(spec, Pool):
        spec = {k: getattr(spec, k) for k in POOL_KEYS}
    if not isinstance(spec, Mapping):
        raise ValueError(f"{side}={spec!r} is not allowed: give a dict with {', '.join(POOL_KEYS)}")
    unknown = set(spec) - set(POOL_KEYS)
    if unknown:
        raise ValueError(f"{side} has unknown keys {sorted(unknown)!r}: allowed {', '.join(POOL_KEYS)}")
    for key in ("replicas", "tensor_parallel"):
        if key not in spec:
            raise ValueError(f"{side} needs {key}")
    n = int(checks.scalar(f"{side}.replicas", checks.integer(f"{side}.replicas", spec["replicas"], high=10**5)))
    tp = int(checks.scalar(f"{side}.tensor_parallel",
                           checks.integer(f"{side}.tensor_parallel", spec["tensor_parallel"], high=4096)))
    ep = int(checks.scalar(f"{side}.expert_parallel",
                           checks.integer(f"{side}.expert_parallel", spec.get("expert_parallel", 1), high=4096)))
    dp = int(checks.scalar(f"{side}.attention_dp",
                           checks.integer(f"{side}.attention_dp", spec.get("attention_dp", 1), high=4096)))
    pp = int(checks.scalar(f"{side}.pipeline_parallel",
                           checks.integer(f"{side}.pipeline_parallel", spec.get("pipeline_parallel", 1), high=1024)))
    if model.experts <= 1:
        ep = 1
    if ep > tp:
        # experts over more GPUs than attention's tensor parallelism (SGLang's "TP1 DP8 EP8"): the replica
        # spans the expert-parallel GPUs, attention data-parallel over them in groups of tensor_parallel
        if ep % tp:
            raise ValueError(f"{side}.expert_parallel={ep} is not allowed: a multiple of tensor_parallel={tp} "
                             f"when wider than it")
        tp, dp = ep, ep // tp * dp
    try:
        check_shape(model, tensor_parallel=tp, attention_dp=dp, pipeline_parallel=pp,
                    expert_parallel=ep if model.experts > 1 else None)
    except ValueError as e:
        raise ValueError(f"{side}: {e}") from None
    return Pool(n, tp, ep, dp, pp, spec.get("stage_link_bytes_per_s"))


@dataclass(frozen=True)
class DisaggregatedEstimate:
    """Fixed prefill and decode pools under a load (the whole deployment) [count, 1/s, s, B]."""

    model: str
    accelerator: str
    engine: str
    prefill: Pool
    decode: Pool
    input_tokens: int
    output_tokens: int
    feasible: bool
    reason: str
    concurrency: float  # requests in flight (given, or Little's law at the rate)
    requests_per_s: float
    output_tokens_per_s: float  # the whole deployment
    stable: bool
    limited_by: str  # prefill, decode, or "" when neither pool is saturated
    ttft_s: float
    ttft_p95_s: float
    tpot_s: float
    tpot_p95_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    prefill_utilisation: float
    decode_batch: float  # per decode replica (per attention-DP group: / attention_dp)
    decode_slots: float  # per decode replica
    prefill_seconds: float  # a prompt's prefill iteration at this load
    kv_bytes_per_request: float  # the prompt's KV cache, whole model
    kv_transfer_s: float  # per request
    kv_link: str  # scale-up or scale-out
    kv_link_bytes_per_s: float  # the deployment's KV traffic
    kv_link_utilisation: float  # of the prefill GPUs' links (one direction)
    weights_per_gpu_bytes: dict = field(default_factory=dict)  # prefill and decode
    speculative_method: str | None = None
    acceptance_length: float = 1.0
    uncalibrated: bool = False
    notes: tuple = ()
    max_requests_per_s: float = 0.0  # the pools' capacity: the slower pool saturates here
    # a prefill and a decode replica and their KV link, built once (None: infeasible): what every figure and curve
    # of these pools is computed from. Not exported (a value of values).
    pair: PoolPair | None = field(default=None, repr=False, compare=False, metadata={"export": False})

    @property
    def latency_at(self):
        """TTFT and TPOT (means, p95, p99) of these pools at open-loop rates (vectorized, :func:`pools_state`):
        the model behind every figure, so a curve over load (:func:`disaggregated_curve`) passes through them;
        None where the pools are not feasible."""
        if self.pair is None:
            return None
        return partial(pools_state, self.pair, self.prefill.replicas, self.decode.replicas)

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def prefill_gpus(self) -> int:
        return self.prefill.gpus

    @property
    def decode_gpus(self) -> int:
        return self.decode.gpus

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        return self.output_tokens_per_s / self.gpus

    @property
    def e2e_s(self) -> float:
        return self.ttft_s + (self.output_tokens - 1) * self.tpot_s


def estimate_disaggregated(model, accelerator, *, prefill, decode, weight_precision="fp8", kv_precision="fp8",
                           input_tokens, output_tokens, concurrency=None, requests_per_s=None, engine=None,
                           speculative_method=None, speculative_tokens=None, acceptance_length=None,
                           draft_model=None, max_num_tokens=None, max_batch_size=None,
                           kv_link_bytes_per_s=None, calibration=None,
                           if_infeasible: str = "raise", prompts=None,
                           output_range_ratio=1.0) -> DisaggregatedEstimate:
    """Throughput and latencies of given prefill and decode pools, at a concurrency or a request rate.

    Parameters
    ----------
    model : catalog id or model record; accelerator : catalog accelerator id (both pools)
    prefill, decode : dicts with ``replicas``, ``tensor_parallel``, ``expert_parallel`` and ``attention_dp``
        (and optionally ``pipeline_parallel`` with ``stage_link_bytes_per_s``): GPUs per replica =
        tensor_parallel x pipeline_parallel; attention DP groups split a stage's GPUs for attention
    weight_precision, kv_precision : formats (as for :func:`aisize.serving.estimate`)
    input_tokens, output_tokens : mean lengths [tokens]
    concurrency : requests a closed-loop client holds in flight (the whole deployment)
    requests_per_s : Poisson arrival rate at the deployment; give one of the two
    engine : engine key or :class:`~aisize.serving.Engine` (both pools; None: TensorRT-LLM serve)
    speculative_method, speculative_tokens, acceptance_length, draft_model : speculative decoding in
        the decode pool (as for :func:`aisize.serving.estimate`)
    max_num_tokens : the prefill token budget as the engine's flag states it (None: the engine's own): each
        attention-DP rank's, or on an engine whose flags are the replica's (SGLang's
        ``chunked_prefill_size``) the replica's, split among its ranks
    max_batch_size : the decode batch limit likewise (None: the engine's own, else the KV pool's; SGLang's
        ``max_running_requests``)
    kv_link_bytes_per_s : link rate per prefill GPU per direction that carries the KV cache [B/s];
        None: the scale-up link when both pools fit one scale-up domain, else the server's NICs
    calibration : fitted constants, a calibration file, or None (the default)
    if_infeasible : ``"raise"`` (default): pools that cannot hold the model and one request's KV cache
        raise :class:`PoolsDoNotFit` naming the pool, its weights and memory per GPU; ``"result"``: return
        an estimate with ``feasible=False`` and that ``reason`` (a sizing search screening shapes)
    prompts : with ``concurrency``, the requests of a benchmark run that sends them all at once behind ``C`` in
        flight (InferenceX's ``10·C``): throughput, TTFT, TPOT and decode batch are then that run's, its start
        and end included (:func:`aisize.serving.pools_run.benchmark_run`); None (default): the steady state
    output_range_ratio : that run's output lengths, uniform in ``[r·L, L]`` around ``output_tokens`` (the
        client's ``--random-range-ratio``; 1: every request ``output_tokens`` long)

    Raises
    ------
    PoolsDoNotFit (a ValueError) : see ``if_infeasible``. A deployment that cannot run never reads
        as 0 tokens/s.
    """
    if if_infeasible not in ("raise", "result"):
        raise ValueError(f"if_infeasible={if_infeasible!r} is not allowed: 'raise' or 'result'")
    m = models.resolve(model)
    if (concurrency is None) == (requests_per_s is None):
        raise ValueError(f"concurrency={concurrency!r} and requests_per_s={requests_per_s!r}: give exactly one "
                         f"(a closed-loop concurrency or an open-loop request rate)")
    ratio = float(checks.scalar("output_range_ratio", checks.fraction("output_range_ratio", output_range_ratio)))
    if prompts is not None:
        if concurrency is None:
            raise ValueError(f"prompts={prompts!r} is not allowed without concurrency: a benchmark run is a "
                             f"closed loop")
        prompts = int(checks.scalar("prompts", checks.integer("prompts", prompts, high=MAX_PROMPTS)))
    elif ratio != 1.0:  # the steady state has no run whose lengths it could spread: say so, not ignore it
        raise ValueError(f"output_range_ratio={output_range_ratio!r} is not allowed without prompts: it spreads the "
                         f"output lengths of a benchmark run (prompts=N); the steady state takes output_tokens")
    eng = resolve_engine(engine, flat_out=False)
    calib = resolve_calibration(calibration)
    i = int(checks.scalar("input_tokens", checks.integer("input_tokens", input_tokens, high=MAX_TOKENS)))
    o = int(checks.scalar("output_tokens", checks.integer("output_tokens", output_tokens, high=MAX_TOKENS)))
    dev, costs, rates, spec, eng = parts(m, accelerator, weight_precision, kv_precision, calib, eng,
                                         method=speculative_method, draft_tokens=speculative_tokens,
                                         acceptance_length=acceptance_length, draft_model=draft_model)
    budget = max_num_tokens if max_num_tokens is not None else eng.max_num_tokens
    p_pool, d_pool = pool("prefill", prefill, m), pool("decode", decode, m)
    if budget is None:
        budget = float(DEFAULT_TOKENS)  # no flag: a budget per rank
    else:
        budget = float(checks.scalar("max_num_tokens", checks.positive("max_num_tokens", budget, high=1e8)))
        budget = float(eng.rank_limit(budget, p_pool.attention_dp))
    p_shape, d_shape = (placed(x.shape(), dev.scaleup_domain, lambda: scaleout_bytes_per_s(dev.id))
                        for x in (p_pool, d_pool))
    notes = []
    # prefill: q whole prompts per attention-DP rank per iteration (a longer prompt spans ceil(I / budget))
    q = max(math.floor(budget / i), 1)
    spans = max(math.ceil(i / budget), 1)
    per_iter = q * p_pool.attention_dp

    def prefill_time(prompts):
        return float(iteration_time(costs, rates, calib, decode_sequences=0.0, decode_context=float(i),
                                    prefill_tokens=prompts * min(i, budget), prefill_prompts=prompts,
                                    prompt_tokens=float(i), graphed=False, **p_shape.kwargs()).seconds) * spans

    t_full, t_one = prefill_time(float(per_iter)), prefill_time(1.0)
    p_mem = replica_memory(costs, eng, dev.memory_bytes, sequence_tokens=i + 1.0, max_num_tokens=q * i,
                           gpus=p_pool.tensor_parallel, attention_dp=p_pool.attention_dp,
                           pipeline_parallel=p_pool.pipeline_parallel, expert_parallel=p_pool.expert_parallel)
    # decode: slots per replica from the batch limit (per rank) and the KV pool
    extra = 0.0 if spec is None else spec.draft_weights_bytes / d_pool.gpus_per_replica
    mbs = max_batch_size if max_batch_size is not None else eng.max_batch_size
    if mbs is None:
        mbs = 4096.0  # no flag: the KV pool bounds the batch
    else:
        mbs = float(checks.scalar("max_batch_size", checks.positive("max_batch_size", mbs, high=1e7)))
        mbs = float(eng.rank_limit(mbs, d_pool.attention_dp))
    d_mem = replica_memory(costs, eng, dev.memory_bytes, sequence_tokens=i + o, max_num_tokens=mbs,
                           gpus=d_pool.tensor_parallel, attention_dp=d_pool.attention_dp,
                           pipeline_parallel=d_pool.pipeline_parallel, extra_weights_bytes=extra,
                           expert_parallel=d_pool.expert_parallel)
    slots = float(min(mbs * d_pool.attention_dp * d_pool.pipeline_parallel, float(d_mem.sequences)))
    fits = bool(p_mem.fits) and bool(d_mem.fits) and slots >= 1
    base = dict(model=m.id, accelerator=dev.id, engine=eng.key, prefill=p_pool, decode=d_pool, input_tokens=i,
                output_tokens=o, weights_per_gpu_bytes={"prefill": float(p_mem.weights_bytes),
                                                        "decode": float(d_mem.weights_bytes)},
                speculative_method=spec.method if spec else None,
                acceptance_length=spec.acceptance_length if spec else 1.0, uncalibrated=rates.uncalibrated)
    if not fits:
        side, mem, sp = ("prefill", p_mem, p_pool) if not bool(p_mem.fits) else ("decode", d_mem, d_pool)
        reason = (f"{m.id} ({base['speculative_method'] or 'no speculation'}, weights {weight_precision}) does not "
                  f"fit the {side} pool's replicas of {sp.gpus_per_replica} {dev.id} GPUs (TP {sp.tensor_parallel}, "
                  f"EP {sp.expert_parallel}, attention DP {sp.attention_dp}): per GPU, weights "
                  f"{float(mem.weights_bytes) / GIB:.1f} GiB + runtime {float(mem.runtime_bytes) / GIB:.1f} GiB of "
                  f"{dev.memory_bytes / GIB:.1f} GiB leave no room for one request's KV cache "
                  f"({i + (o if side == 'decode' else 1)} tokens); use more GPUs per replica or a smaller weight format")
        if if_infeasible == "raise":
            raise PoolsDoNotFit(reason)
        return _infeasible(base, reason)
    # KV transfer: each prefill GPU ships its shard of the prompt's cache
    kv_req = float(costs.kv_bytes(float(i)))
    same_domain = p_pool.gpus + d_pool.gpus <= dev.scaleup_domain
    if kv_link_bytes_per_s is not None:
        link, kind = float(checks.positive("kv_link_bytes_per_s", kv_link_bytes_per_s)), "given"
    elif same_domain:
        link, kind = dev.link_bytes_per_s, "scale-up"
    else:
        link, kind = scaleout_bytes_per_s(dev.id), "scale-out"
    link_rate = link * calib.link_efficiency
    shards = min(p_pool.tensor_parallel, max(costs.kv_heads, 1) * p_pool.attention_dp) * p_pool.pipeline_parallel

    def rep(shape, speculating, limits):
        return Replica(model=m, accelerator=accelerator, device=dev, costs=costs, rates=rates, calibration=calib,
                       engine=eng, speculation=speculating, shape=shape, limits=limits, kv_precision=kv_precision,
                       input_tokens=i, output_tokens=o)

    decode_rep = rep(d_shape, spec, EngineLimits(mbs, budget))
    pair = PoolPair(prefill=rep(p_shape, None, EngineLimits(float(q), budget)), decode=decode_rep,
                    decode_launch=decode_rep.launch, prefill_prompts=per_iter, prefill_seconds=t_full,
                    lone_prefill_seconds=t_one, decode_slots=slots, kv_bytes_per_request=kv_req, kv_link=kind,
                    kv_link_bytes_per_s=link_rate, kv_transfer_seconds=kv_req / (link_rate * shards))
    steps = pair.decode_steps
    x_prefill = p_pool.replicas * per_iter / t_full
    x_decode = (d_pool.replicas * slots / ((steps - 1.0) * float(pair.decode_seconds(slots))) if steps > 1
                else math.inf)
    at = partial(pools_state, pair, p_pool.replicas, d_pool.replicas)

    def scalar(state, k=0):
        return {key: float(np.ravel(v)[k]) for key, v in state.items()}

    x_max = min(x_prefill, x_decode) * (1.0 - 1e-9)
    limited = "prefill" if x_prefill <= x_decode else "decode"
    if requests_per_s is not None:
        x = float(checks.scalar("requests_per_s", checks.positive("requests_per_s", requests_per_s, high=1e9)))
        stable = x < x_max
        state = scalar(at(min(x, x_max)))
        c_eff = x * (state["ttft"] + (o - 1.0) * state["tpot"]) if stable else math.inf
        wait = 0.0
        if not stable:
            notes.append(f"requests_per_s={x:g} is at or beyond the pools' capacity of {x_max:.4g} requests/s "
                         f"(the {limited} pool): the queue grows without bound")
    else:
        c_eff = float(checks.scalar("concurrency", checks.positive("concurrency", concurrency, high=1e9)))
        x, state, wait = _closed_loop(partial(at, slot_wait=False), c_eff, x_max, o)  # no random arrivals
        stable = True
        if wait == 0.0:
            limited = ""
        state = scalar(state)
        if prompts is not None:  # the benchmark's run of these pools, its start and end included
            run = benchmark_run(pair, p_pool.replicas, d_pool.replicas, max(round(c_eff), 1), prompts,
                                range_ratio=ratio)
            x, wait = run.output_tokens_per_s / o, 0.0  # output tokens/s: its tokens over its duration
            state.update(ttft=run.ttft_s, tpot=run.tpot_s, batch=run.decode_batch,
                         **{f"ttft{q * 100:.0f}": v for q, v in zip(QUANTILES, run.ttft_quantile_s)},
                         **{f"tpot{q * 100:.0f}": v for q, v in zip(QUANTILES, run.tpot_quantile_s)})
            notes.append(f"a benchmark run of {prompts} prompts, {max(round(c_eff), 1)} in flight, all sent at "
                         f"once: its means over {run.duration_s:.4g} s, start and end included")
    link_load = x * kv_req
    if spec is not None:
        notes.append(f"speculative decoding ({spec.method}, {spec.draft_tokens} draft tokens): "
                     f"{spec.acceptance_length:.2f} tokens per step")
    if rates.uncalibrated:
        notes.append(f"{dev.id}: no calibrated efficiencies for its generation (uncalibrated)")
    inf = math.inf
    return DisaggregatedEstimate(
        **base, feasible=True, reason="", concurrency=c_eff, requests_per_s=x if stable else x_max,
        output_tokens_per_s=(x if stable else x_max) * o, stable=stable, limited_by=limited,
        ttft_s=state["ttft"] + wait if stable else inf, ttft_p95_s=state["ttft95"] + wait if stable else inf,
        tpot_s=state["tpot"] if stable else inf, tpot_p95_s=state["tpot95"] if stable else inf,
        ttft_p99_s=state["ttft99"] + wait if stable else inf, tpot_p99_s=state["tpot99"] if stable else inf,
        prefill_utilisation=state["rho"], decode_batch=state["batch"], decode_slots=slots,
        prefill_seconds=state["t_pre"], kv_bytes_per_request=kv_req, kv_transfer_s=pair.kv_transfer_seconds,
        kv_link=kind, kv_link_bytes_per_s=link_load, kv_link_utilisation=link_load / (link_rate * p_pool.gpus),
        notes=tuple(notes), max_requests_per_s=x_max, pair=pair)


def disaggregated_curve(est: DisaggregatedEstimate, points: int = 48) -> dict:
    """TTFT and TPOT (mean, p95, p99) and request latency of ``est``'s pools from 1 % to 99 % of their capacity, from
    the same model as its figures [1/s, s]; empty arrays for pools that are not feasible."""
    n = int(checks.scalar("points", checks.integer("points", points, low=2, high=10_000)))
    if not est.feasible or est.pair is None or not est.max_requests_per_s > 0:
        empty = np.zeros(0)
        return {k: empty for k in ("requests_per_s", "utilisation", "ttft_seconds", "ttft_p95_seconds",
                                   "tpot_seconds", "tpot_p95_seconds", "ttft_p99_seconds", "tpot_p99_seconds",
                                   "latency_mean_seconds", "latency_p95_seconds", "latency_p99_seconds")}
    rates = np.linspace(0.01, 0.99, n) * est.max_requests_per_s
    s = pools_state(est.pair, est.prefill.replicas, est.decode.replicas, rates)
    ok = np.asarray(s["ok"], dtype=bool) & (rates < est.max_requests_per_s)
    out = {"requests_per_s": rates, "utilisation": rates / est.max_requests_per_s}
    for key, name in (("ttft", "ttft_seconds"), ("ttft95", "ttft_p95_seconds"), ("tpot", "tpot_seconds"),
                      ("tpot95", "tpot_p95_seconds"), ("ttft99", "ttft_p99_seconds"), ("tpot99", "tpot_p99_seconds")):
        out[name] = np.where(ok, np.asarray(s[key], dtype=float) * np.ones(n), np.inf)
    o = est.output_tokens
    out["latency_mean_seconds"] = out["ttft_seconds"] + (o - 1) * out["tpot_seconds"]
    out["latency_p95_seconds"] = out["ttft_p95_seconds"] + (o - 1) * out["tpot_p95_seconds"]
    out["latency_p99_seconds"] = out["ttft_p99_seconds"] + (o - 1) * out["tpot_p99_seconds"]
    return out


def _closed_loop(at, concurrency, x_max, output_tokens):
    """Throughput X of a closed loop: ``X·(TTFT(X) + (O - 1)·TPOT(X)) = C``, on two log-spaced grids of X
    (the requests in flight grow with X); at the slower pool's capacity the rest wait their turn.

    Returns (X, the state at X, the extra wait of requests beyond the capacity) [1/s, dict, s]."""
    def in_flight(x):
        s = at(x)
        return x * (s["ttft"] + (output_tokens - 1.0) * s["tpot"]), s

    n_max, s_max = in_flight(np.array([x_max]))
    if float(n_max[0]) <= concurrency:  # saturated: the extra requests queue at the slower pool
        return x_max, s_max, (concurrency - float(n_max[0])) / x_max
    lo, hi = math.log(x_max * 1e-9), math.log(x_max)
    for _ in range(GRID_PASSES):
        grid = np.linspace(lo, hi, GRID_POINTS)
        n, _ = in_flight(np.exp(grid))
        k = int(np.clip(np.searchsorted(n, concurrency), 1, GRID_POINTS - 1))
        lo, hi = grid[k - 1], grid[k]
    x = math.exp(0.5 * (lo + hi))
    _, s = in_flight(np.array([x]))
    return x, s, 0.0


def _infeasible(base, reason) -> DisaggregatedEstimate:
    inf = math.inf
    return DisaggregatedEstimate(**base, feasible=False, reason=reason, concurrency=0.0, requests_per_s=0.0,
                                 output_tokens_per_s=0.0, stable=False, limited_by="", ttft_s=inf, ttft_p95_s=inf,
                                 tpot_s=inf, tpot_p95_s=inf, ttft_p99_s=inf, tpot_p99_s=inf, prefill_utilisation=0.0,
                                 decode_batch=0.0, decode_slots=0.0, prefill_seconds=inf, kv_bytes_per_request=0.0,
                                 kv_transfer_s=inf, kv_link="", kv_link_bytes_per_s=0.0, kv_link_utilisation=0.0)
