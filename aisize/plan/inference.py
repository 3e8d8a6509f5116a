"""One inference service's plan: replica shape and count for its rate and SLOs, latencies, memory.

Glue only: the fleet is sized by :func:`aisize.serving.sizing.choose_fleet` (aggregated)
or :func:`aisize.serving.disaggregated.size_pools` (separate prefill and decode pools);
the chosen replica at its share of the rate is :func:`aisize.serving.estimate`; host
RAM from :func:`aisize.host.host_for_server`; the fleet as a queueing station for the
queueing views from :func:`aisize.queueing.inference_station`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np


from aisize import checks, models, serving
from aisize.host import host_for_server
from aisize.plan import context as C
from aisize.plan.kvtiers import planned_cached_tokens
from aisize.plan.service_notes import ModelSource, ServiceNote
from aisize.plan.slo_reason import SloReason
from aisize.plan.replica_count import (FALLBACK_UTILISATION, _SUFFIX, _evaluate, _one, _sized_by_estimate,
                                       _statistic, elasticity_at)
from aisize.plan.rescue import _rescued
from aisize.queueing import Station, inference_station, knee_concurrency
from aisize.queueing.analytic import MAX_SERVERS as QUEUE_SERVERS
from aisize.serving.costs import model_costs
from aisize.serving.disaggregated import DisaggregatedPools, size_pools
from aisize.serving.memory import weights_per_gpu_bytes
from aisize.serving.curves import elasticity, rise_within
from aisize.serving.sizing import candidate_shapes, choose_fleet, knee

MAX_SERVERS_PER_REPLICA = 16  # pipeline stages may span up to this many servers


@dataclass(frozen=True)
class InferencePlan:
    """An inference service's plan (bytes, seconds; per replica unless said)."""

    name: str
    team: str
    model: str  # model id
    model_source: ModelSource  # where the architecture came from (words: present.service_text.model_source_text)
    serving_mode: str  # aggregated | disaggregated (then shape and batch are the decode pool's)
    tensor_parallel: int  # GPUs per pipeline stage
    pipeline_parallel: int
    attention_dp: int
    tp_searched: bool
    gpus_per_replica: int | None  # an aggregated replica's; None when disaggregated (prefill and decode differ)
    replica_gpus: tuple  # GPUs of every replica (prefill replicas first when disaggregated)
    weights_bytes: float  # whole model at the weight precision
    kv_bytes_per_token: float  # whole model at the KV precision
    kv_bytes_per_user: float  # (prompt + output) tokens of one request
    gpu_memory_bytes: float
    memory_per_gpu_bytes: dict  # weights, the KV pool the engine allocates, runtime (one GPU)
    fits: bool  # some shape holds the weights and one request
    batch: int  # mean requests in flight per replica at the planned load
    kv_in_use_per_gpu_bytes: float  # the KV cache those requests hold, per GPU
    max_batch: int  # requests a replica admits at once (batch limit, KV pool)
    slo_statistic: str  # p95 | p99 | mean: what the targets bound
    ttft_target_seconds: float
    tpot_target_seconds: float
    ttft_met: bool
    tpot_met: bool
    # why the targets cannot be met, naming the target and the best achievable (None: nothing to say; words:
    # present.slo_text.slo_reason_text)
    slo_reason: SloReason | None
    best_ttft_seconds: float  # best any shape reaches at the lightest load (the SLO statistic)
    best_tpot_seconds: float
    ttft_seconds: float  # mean under the planned load
    ttft_p95_seconds: float
    tpot_seconds: float
    tpot_p95_seconds: float
    ttft_p99_seconds: float  # the estimate's (or the pools' estimate's), as the p95
    tpot_p99_seconds: float
    request_seconds: float  # mean time from arrival to last token
    output_tokens_per_s_per_replica: float  # the replica's capacity (max throughput; a decode replica's)
    capacity_output_tokens_per_s: float  # the whole fleet's (disaggregated: the tighter of its two pools)
    latency_target_seconds: float  # ttft target + output tokens x tpot target
    latency_target_met: bool
    replicas: int
    gpus: int
    servers: int
    requests_per_s: float
    utilisation: float  # of each replica's capacity
    latency_mean_seconds: float  # request (end-to-end)
    latency_p95_seconds: float  # TTFT p95 + (output - 1) x TPOT p95 (an upper estimate)
    latency_p99_seconds: float  # TTFT p99 + (output - 1) x TPOT p99 (an upper estimate)
    knee_requests_per_s: float  # fleet rate at which mean latency reaches KNEE_FACTOR x the light-load latency

    within_context: bool
    context_window: int
    uncalibrated: bool
    model_loads_per_hour: float
    host_memory_needed_bytes: float
    server_host_memory_bytes: float
    host_memory_fits: bool
    station: Station  # replicas x slots channels, S = time a request holds a slot
    knee_concurrency: int  # requests in flight at which mean latency reaches KNEE_FACTOR x unloaded (closed)
    estimate: serving.ServingEstimate | None  # the aggregated replica at its share of the rate (None: disaggregated)
    pools: DisaggregatedPools | None  # prefill/decode pools when disaggregated, with pools_estimate's latencies
    notes: tuple = ()  # the estimate's (text), KV tiers' (KVTierNote) and the planner's (ServiceNote)
    # an uncalibrated GPU: the fleet's capacity [output tokens/s] and the TPOT [s] under each calibrated
    # generation's efficiencies, (low, high), read from the estimate (serving.estimate); empty when calibrated
    capacity_range_output_tokens_per_s: tuple = ()
    tpot_range_seconds: tuple = ()  # over the generations that keep the load stable
    overloaded_under: tuple = ()  # generations whose efficiencies would not carry the load
    concurrency: float | None = None  # users in flight, when the service was given that way
    kv_tiers: object = None  # prompt reuse and KV-cache tiers (aisize.plan.kvtiers.KVTierPlan), when prefix is given
    # the pools bought, at the planned rate (serving.estimate_disaggregated): every latency of a disaggregated
    # service (headline, pools, curve, knee) is read from it
    pools_estimate: serving.DisaggregatedEstimate | None = None
    # relative rise of request latency (the SLO statistic) per relative rise of load at the planned rate: past
    # C.KNEE_ELASTICITY a small rise in load raises latency sharply (inf: at or past capacity already)
    latency_elasticity: float = 0.0

    @property
    def feasible(self) -> bool:
        """Some replica shape holds the model (else the figures describe the largest one tried)."""
        return self.fits

    @property
    def stable(self) -> bool:
        """The planned load leaves every replica below its capacity (latencies are finite)."""
        return math.isfinite(self.ttft_seconds) and self.utilisation < 1.0

    @property
    def ttft_at_statistic_seconds(self) -> float:
        """TTFT at the statistic the targets bound (mean, p95 or p99): the figure every surface compares."""
        return getattr(self, f"ttft{_SUFFIX[self.slo_statistic]}_seconds")

    @property
    def tpot_at_statistic_seconds(self) -> float:
        """TPOT at the statistic the targets bound (mean, p95 or p99)."""
        return getattr(self, f"tpot{_SUFFIX[self.slo_statistic]}_seconds")


def _source(w) -> ModelSource:
    m = w.model
    if isinstance(m, str):
        return ModelSource("catalog", models.resolve(m).source)
    if getattr(m, "hf_config", None):
        return ModelSource("hf-config", m.hf_config)
    return ModelSource("inline", getattr(m, "source", None))


CONCURRENCY_ITERATIONS = 4  # fixed-point steps from users in flight to the rate they send


@lru_cache(maxsize=256)
def plan_inference(w, ctx: C.HardwareContext, policies) -> InferencePlan:
    """Plan one :class:`~aisize.scenario.Inference` service on the resolved hardware.

    A service given as ``concurrency`` users in flight with no think time sends, by Little's law,
    ``C / (mean request latency)`` requests per second; the fleet is planned for that rate, found by
    a few fixed-point steps (the latency depends on the fleet, and the fleet on the rate)."""
    if w.requests_per_s is None:
        return _plan_for_concurrency(w, ctx, policies)
    arch = models.resolve(w.model)
    engine = serving.ENGINES[w.engine]
    cal = C.serving_calibration(policies)
    per = ctx.server.gpus
    ttft_t, tpot_t = w.ttft_target_ms / 1e3, w.tpot_target_ms / 1e3
    kw = dict(weight_precision=w.weight_precision, kv_precision=w.kv_precision, input_tokens=w.prompt_tokens,
              output_tokens=w.output_tokens)
    shapes = candidate_shapes(arch, serving.hardware.device(ctx.accelerator, w.weight_precision, w.kv_precision),
                              scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, tensor_parallel=w.tensor_parallel,
                              pipeline_parallel=w.pipeline_parallel, gpus_per_server=per,
                              max_servers=MAX_SERVERS_PER_REPLICA, engine=engine)
    pools = None
    if w.serving == "disaggregated":
        pools = size_pools(arch, ctx.accelerator, **kw, requests_per_s=w.requests_per_s, ttft_target_s=ttft_t,
                           tpot_target_s=tpot_t, statistic=w.slo_statistic, shapes=shapes, engine=engine,
                           calibration=cal, scaleout_bytes_per_s=ctx.scaleout_bytes_per_s)
    fleet = choose_fleet(arch, ctx.accelerator, **kw, requests_per_s=w.requests_per_s, ttft_target_s=ttft_t,
                         tpot_target_s=tpot_t, statistic=w.slo_statistic, shapes=shapes, engine=engine,
                         calibration=cal, length_cv=w.length_cv, cached_tokens=planned_cached_tokens(w))
    shape = fleet.shape or _fallback_shape(shapes)
    replicas = fleet.replicas if fleet.feasible else None
    est = kv = unmet = None
    if shape is not None and fleet.feasible:  # the screen's best shapes, sized again with the estimate the plan shows
        fleet, kv, est = _sized_by_estimate(w, ctx, policies, arch, fleet, kw, engine, cal, ttft_t, tpot_t)
        shape, replicas, unmet = fleet.shape, fleet.replicas, fleet.unmet
    elif shape is not None and (rescued := _rescued(w, ctx, policies, arch, shapes, fleet, kw, engine, cal, ttft_t,
                                                    tpot_t)):
        fleet, kv, est = rescued
        shape, replicas = fleet.shape, fleet.replicas
    elif shape is not None:
        one = _one(w, shape, kw, engine, cal)
        cap = serving.estimate(arch, ctx.accelerator, **one)
        if shape.pipeline_parallel > 1:  # pipeline stages only for a model one stage cannot hold (the recipes)
            single = max((s for s in shapes if s.pipeline_parallel == 1), key=lambda s: s.gpus, default=None)
            cap1 = serving.estimate(arch, ctx.accelerator, **_one(w, single, kw, engine, cal)) if single else None
            if cap1 is not None and cap1.feasible:
                shape, one, cap = single, _one(w, single, kw, engine, cal), cap1
        if not cap.feasible:  # nothing fits: one replica shows what fails
            replicas = 1
        else:  # no shape meets the targets: keep the fleet at 70 % of capacity instead
            replicas = max(math.ceil(w.requests_per_s / (cap.max_requests_per_s * FALLBACK_UTILISATION)), 1)
        kv, est = _evaluate(w, ctx, policies, arch, shape, replicas, one)
        if cap.feasible and est is not None and est.feasible and 0 < est.max_requests_per_s < math.inf:
            # the capacity with the service's prompt reuse, speculation and lengths (the plain one leaves them out)
            again = max(math.ceil(w.requests_per_s / (est.max_requests_per_s * FALLBACK_UTILISATION)), 1)
            if again != replicas:
                replicas = again
                kv, est = _evaluate(w, ctx, policies, arch, shape, replicas, one)
    return _assemble(w, ctx, policies, arch, shape, replicas or 0, fleet, est, pools, ttft_t, tpot_t, kv, unmet)


def _plan_for_concurrency(w, ctx, policies) -> InferencePlan:
    probe = plan_inference(w.model_copy(update={"requests_per_s": 1e-3, "concurrency": None}), ctx, policies)
    rate = w.concurrency / max(probe.latency_mean_seconds if math.isfinite(probe.latency_mean_seconds) else 1.0, 1e-6)
    for _ in range(CONCURRENCY_ITERATIONS):
        p = plan_inference(w.model_copy(update={"requests_per_s": rate, "concurrency": None}), ctx, policies)
        if not math.isfinite(p.latency_mean_seconds):
            break
        rate = 0.5 * rate + 0.5 * w.concurrency / p.latency_mean_seconds  # damped: the latency rises with the rate
    p = plan_inference(w.model_copy(update={"requests_per_s": rate, "concurrency": None}), ctx, policies)
    return replace(p, concurrency=w.concurrency, notes=p.notes + (ServiceNote("concurrency", {
        "users": w.concurrency, "requests_per_s": rate, "latency_mean_seconds": p.latency_mean_seconds}),))


def _fallback_shape(shapes):
    """With no shape meeting the targets, start from the largest one tried (its figures say why it fails; the plan
    keeps a one-stage shape instead where one holds the model)."""
    return max(shapes, key=lambda s: s.gpus) if shapes else None


def _admitted(est, shape) -> int:
    """Requests a replica admits at once: the engine's batch limit or, below it, what the KV pool and token budget
    hold (an engine without a limit of its own, SGLang's default, is bounded by its KV pool)."""
    limit = est.max_batch_size * shape.attention_dp * shape.pipeline_parallel
    held = est.max_concurrency if math.isfinite(est.max_concurrency) else limit
    return max(int(min(limit, held)), 1)


def check_fleet(w, calibration, replicas, gpus, what="model replicas") -> None:
    """A service's replicas and their GPUs against the plan's limits (:func:`aisize.checks.count`), before
    anything per replica is built; the error names the rate, a replica's share of it and the constants of a
    calibration that make serving far slower than aisize's."""
    slow = calibration.slowdowns()
    why = (f"the service's {w.requests_per_s:.4g} requests/s at {w.requests_per_s / max(replicas, 1):.3g} requests/s "
           f"per replica of {gpus / max(replicas, 1):.3g} GPUs"
           + (f"; the scenario's serving calibration sets {slow}" if slow else ""))
    checks.count(what, replicas, checks.MAX_REPLICAS, why=why)
    checks.count("GPUs", gpus, checks.MAX_GPUS, why=why)


def check_queue(replicas, max_batch, calibration=None) -> None:
    """The servers of a fleet's queueing station (replicas x the requests each admits) against the queueing
    model's limit, before the station is made."""
    slow = calibration.slowdowns() if calibration is not None else ""
    checks.count("servers", max(replicas, 1) * max_batch, QUEUE_SERVERS,
                 why=f"the servers of the fleet's queue are its {max(replicas, 1):,} replicas x {max_batch:,} requests "
                     "each at once" + (f"; the scenario's serving calibration sets {slow}" if slow else ""))


def _aggregated(w, ctx, shape, replicas, est, calibration) -> dict:
    """The fleet figures of aggregated serving: ``replicas`` copies of ``shape`` at their share of the rate."""
    check_fleet(w, calibration, replicas, replicas * (shape.gpus if shape else 0))
    # what the engine holds on each GPU: weights, the KV pool it allocates at start, its runtime peak
    mem = {"weights_bytes": est.weights_per_gpu_bytes if est else 0.0,
           "kv_cache_bytes": est.kv_pool_bytes if est else 0.0,
           "runtime_bytes": (ctx.gpu_memory_bytes - est.weights_per_gpu_bytes
                             - est.kv_pool_bytes / serving.ENGINES[w.engine].kv_memory_fraction) if est else 0.0}

    def fin(value):  # the estimate's figure, or unbounded when there is no replica
        return value if est else math.inf

    return dict(
        serving_mode="aggregated", tensor_parallel=shape.tensor_parallel if shape else 0,
        pipeline_parallel=shape.pipeline_parallel if shape else 0, attention_dp=shape.attention_dp if shape else 0,
        gpus_per_replica=shape.gpus if shape else 0, replicas=replicas,
        replica_gpus=((shape.gpus,) * replicas) if shape else (), memory_per_gpu_bytes=mem,
        batch=int(round(est.batch_size)) if est and math.isfinite(est.batch_size) else 0,
        max_batch=_admitted(est, shape) if est else 1,
        kv_in_use_per_gpu_bytes=est.kv_pool_bytes * est.kv_occupancy if est else 0.0,
        ttft_seconds=fin(est and est.ttft_s), ttft_p95_seconds=fin(est and est.ttft_p95_s),
        tpot_seconds=fin(est and est.tpot_s), tpot_p95_seconds=fin(est and est.tpot_p95_s),
        ttft_p99_seconds=fin(est and est.ttft_p99_s), tpot_p99_seconds=fin(est and est.tpot_p99_s),
        output_tokens_per_s_per_replica=est.max_output_tokens_per_s if est else 0.0,
        capacity_output_tokens_per_s=replicas * est.max_output_tokens_per_s if est else 0.0,
        utilisation=fin(est and est.utilisation), estimate=est)


def _disaggregated(w, ctx, arch, pools, calibration) -> dict:
    """The fleet figures of disaggregated serving: the prefill and decode pools of ``pools`` at the service's
    rate, through :func:`aisize.serving.estimate_disaggregated` (the public model of given pools)."""
    costs = model_costs(arch, w.weight_precision, w.kv_precision)
    d_tp, d_pp, d_dp = pools.decode_tensor_parallel, pools.decode_pipeline_parallel, pools.decode_attention_dp
    weights = float(weights_per_gpu_bytes(costs, d_tp, d_dp, d_pp))
    p_shape, d_shape = pools.prefill_shape, pools.decode_shape
    p_gpus, d_gpus = pools.prefill_gpus // max(pools.prefill_replicas, 1), pools.decode_gpus // pools.decode_replicas
    check_fleet(w, calibration, pools.prefill_replicas + pools.decode_replicas, pools.prefill_gpus + pools.decode_gpus,
                "prefill and decode replicas")

    def side(n, s):
        return dict(replicas=n, tensor_parallel=s.tensor_parallel, attention_dp=s.attention_dp,
                    pipeline_parallel=s.pipeline_parallel, stage_link_bytes_per_s=s.stage_link_bytes_per_s,
                    expert_parallel=s.tensor_parallel if arch.experts > 1 else 1)

    est = serving.estimate_disaggregated(
        arch, ctx.accelerator, prefill=side(pools.prefill_replicas, p_shape),
        decode=side(pools.decode_replicas, d_shape), weight_precision=w.weight_precision, kv_precision=w.kv_precision,
        input_tokens=w.prompt_tokens, output_tokens=w.output_tokens, requests_per_s=w.requests_per_s,
        engine=w.engine, kv_link_bytes_per_s=ctx.scaleout_bytes_per_s, calibration=calibration,
        if_infeasible="result")
    batch = est.decode_batch if math.isfinite(est.tpot_s) else pools.decode_batch
    kv = batch * float(costs.kv_bytes(w.prompt_tokens + w.output_tokens)) / (d_shape.kv_split(costs.kv_heads)
                                                                               * d_pp * d_dp)
    mem = {"weights_bytes": weights, "kv_cache_bytes": kv}
    capacity = est.requests_per_s if not est.stable else (
        w.requests_per_s / max(est.prefill_utilisation, est.decode_batch / max(est.decode_slots, 1.0), 1e-12))
    ttft_stat, tpot_stat = _statistic(w, est)
    # the pools as bought, with the latencies of the model that evaluates them (size_pools sizes with that same
    # model, so these equal its own figures; kept so that one object carries every surface's figure)
    shown = dataclasses.replace(
        pools, ttft_s=est.ttft_s, ttft_p95_s=est.ttft_p95_s, tpot_s=est.tpot_s, tpot_p95_s=est.tpot_p95_s,
        ttft_p99_s=est.ttft_p99_s, tpot_p99_s=est.tpot_p99_s,
        ttft_statistic_s=ttft_stat, tpot_statistic_s=tpot_stat, kv_transfer_s=est.kv_transfer_s,
        kv_link_bytes_per_s=est.kv_link_bytes_per_s, kv_link_utilisation=est.kv_link_utilisation)
    slots = float(pools.pair.decode_slots) if pools.pair is not None else float(pools.decode_batch)
    full = float(pools.pair.decode_seconds(slots)) if pools.pair is not None else pools.tpot_s
    return dict(
        pools=shown, pools_estimate=est,
        serving_mode="disaggregated", tensor_parallel=d_tp, pipeline_parallel=d_pp, attention_dp=d_dp,
        gpus_per_replica=None, replicas=pools.prefill_replicas + pools.decode_replicas,
        replica_gpus=(p_gpus,) * pools.prefill_replicas + (d_gpus,) * pools.decode_replicas,
        memory_per_gpu_bytes=mem, kv_in_use_per_gpu_bytes=kv, batch=int(round(batch)), max_batch=int(slots),
        ttft_seconds=est.ttft_s, ttft_p95_seconds=est.ttft_p95_s, tpot_seconds=est.tpot_s,
        tpot_p95_seconds=est.tpot_p95_s, ttft_p99_seconds=est.ttft_p99_s, tpot_p99_seconds=est.tpot_p99_s,
        output_tokens_per_s_per_replica=slots / full,  # a decode replica flat out: its slots full
        capacity_output_tokens_per_s=capacity * w.output_tokens,
        utilisation=max(est.prefill_utilisation, est.decode_batch / max(est.decode_slots, 1.0))
        if est.stable else math.inf, estimate=None)


def _elasticity(w, v: dict) -> float:
    """How steeply the service's request latency (its SLO statistic) rises with load at the planned rate
    (:func:`aisize.serving.curves.elasticity`); 0 where nothing is served."""
    est, pools = v["estimate"], v.get("pools_estimate")
    if est is not None and est.feasible and v["replicas"] > 0:
        return elasticity_at(est, w.requests_per_s / v["replicas"], w.slo_statistic)
    if pools is not None and pools.feasible and pools.latency_at is not None:
        rise = rise_within(w.requests_per_s, pools.max_requests_per_s)
        if rise <= 0:
            return math.inf  # at or past the pools' capacity already
        s = pools.latency_at(np.array([w.requests_per_s, w.requests_per_s * (1.0 + rise)]))
        key = _SUFFIX[w.slo_statistic].lstrip("_p")  # the pools' keys: ttft, ttft95, ttft99
        ttft, tpot = s[f"ttft{key}"], s[f"tpot{key}"]
        total = np.where(np.asarray(s["ok"], dtype=bool), np.asarray(ttft, dtype=float)
                         + (w.output_tokens - 1) * np.asarray(tpot, dtype=float), np.inf) * np.ones(2)
        return elasticity(float(total[0]), float(total[1]), rise)
    return 0.0


def _pools_knee(est) -> float:
    """Service rate at which the pools' mean request latency reaches KNEE_FACTOR x its light-load value [1/s]."""
    c = serving.disaggregated_curve(est)
    return knee(c["requests_per_s"], c["latency_mean_seconds"], C.KNEE_FACTOR) if len(c["requests_per_s"]) else 0.0


def _slo_reason(w, fleet, pools, use_pools, unmet) -> SloReason | None:
    """Why the plan's targets are not met, by part (None where nothing is said): the aggregated fleet's refusal
    (the screen's) or miss (``unmet``), after the pools' refusal where disaggregated pools were asked for."""
    if use_pools:
        return None
    refused = w.serving == "disaggregated" and pools is not None and not pools.feasible
    reason = SloReason(pools_refusal=pools.reason if refused else None, screen_refusal=fleet.reason, unmet=unmet)
    return reason if refused or fleet.reason or unmet is not None else None


def _assemble(w, ctx, policies, arch, shape, replicas, fleet, est, pools, ttft_t, tpot_t, kv=None,
              unmet=None) -> InferencePlan:
    agg_gpus = replicas * (shape.gpus if shape else 0)
    use_pools = pools is not None and pools.feasible and (not fleet.feasible or pools.gpus <= agg_gpus)
    v = (_disaggregated(w, ctx, arch, pools, C.serving_calibration(policies)) if use_pools
         else _aggregated(w, ctx, shape, replicas, est, C.serving_calibration(policies)) | {"pools": pools})
    v["memory_per_gpu_bytes"]["total_bytes"] = sum(v["memory_per_gpu_bytes"].values())
    stat = w.slo_statistic
    ttft_met = v[f"ttft{_SUFFIX[stat]}_seconds"] <= ttft_t
    tpot_met = v[f"tpot{_SUFFIX[stat]}_seconds"] <= tpot_t
    gpus = sum(v["replica_gpus"])
    mean_request = v["ttft_seconds"] + (w.output_tokens - 1) * v["tpot_seconds"]
    hold = mean_request if math.isfinite(mean_request) else 1.0
    check_queue(v["replicas"], v["max_batch"], C.serving_calibration(policies))
    station = inference_station(max(v["replicas"], 1), v["max_batch"], max(hold, 1e-9), C.INFERENCE_SERVICE_CV)
    host = host_for_server(ctx.server, ctx.accelerator, ratio=policies.host_ram_ratio,
                           kv_cache_bytes=kv.host_dram_per_server_bytes if kv else 0.0)
    seq = w.prompt_tokens + w.output_tokens
    kv_token = float(models.kv_bytes_per_token(arch, w.kv_precision))
    return InferencePlan(
        name=w.name, team=w.team, model=arch.id, model_source=_source(w), tp_searched=w.tensor_parallel == "auto",
        weights_bytes=float(model_costs(arch, w.weight_precision, w.kv_precision).weights_bytes),
        kv_bytes_per_token=kv_token, kv_bytes_per_user=kv_token * seq, gpu_memory_bytes=float(ctx.gpu_memory_bytes),
        fits=(est is not None and est.feasible) or use_pools, slo_statistic=stat, ttft_target_seconds=ttft_t,
        tpot_target_seconds=tpot_t, ttft_met=bool(ttft_met), tpot_met=bool(tpot_met),
        slo_reason=_slo_reason(w, fleet, pools, use_pools, unmet),
        best_ttft_seconds=fleet.best_ttft_s, best_tpot_seconds=fleet.best_tpot_s, request_seconds=hold,
        latency_target_seconds=ttft_t + w.output_tokens * tpot_t, latency_target_met=bool(ttft_met and tpot_met),
        gpus=gpus, servers=math.ceil(gpus / ctx.server.gpus), requests_per_s=w.requests_per_s,
        latency_mean_seconds=mean_request,
        latency_p95_seconds=v["ttft_p95_seconds"] + (w.output_tokens - 1) * v["tpot_p95_seconds"],
        latency_p99_seconds=v["ttft_p99_seconds"] + (w.output_tokens - 1) * v["tpot_p99_seconds"],
        knee_requests_per_s=(fleet.knee_requests_per_s * v["replicas"] if v["estimate"] else
                             _pools_knee(v["pools_estimate"]) if use_pools else 0.0),
        latency_elasticity=_elasticity(w, v),
        within_context=seq <= arch.max_seq,
        context_window=arch.max_seq, uncalibrated=bool(est.uncalibrated) if est else False,
        model_loads_per_hour=w.model_loads_per_hour, host_memory_needed_bytes=float(host.memory.total_bytes),
        server_host_memory_bytes=float(ctx.server.host_memory_bytes), host_memory_fits=bool(host.memory_fits),
        station=station, knee_concurrency=int(knee_concurrency(station, C.KNEE_FACTOR)),
        notes=tuple(est.notes) + (kv.notes if kv else ()) if est else (), kv_tiers=kv,
        capacity_range_output_tokens_per_s=tuple(x * v["replicas"] for x in est.max_output_tokens_per_s_range)
        if est else (), tpot_range_seconds=tuple(est.tpot_range_s) if est else (),
        overloaded_under=tuple(est.overloaded_under) if est else (), **v)
