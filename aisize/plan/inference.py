"""One inference service's plan: replica shape and count for its rate and SLOs, latencies, memory.

Glue only: the fleet is sized by :func:`aisize.serving.sizing.choose_fleet` (aggregated)
or :func:`aisize.serving.disaggregated.size_pools` (separate prefill and decode pools);
the chosen replica at its share of the rate is :func:`aisize.serving.estimate`; host
RAM from :func:`aisize.host.host_for_server`; the fleet as a queueing station for the
queueing views from :func:`aisize.queueing.inference_station`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from aisize import models, serving
from aisize.host import host_for_server
from aisize.plan import context as C
from aisize.queueing import Station, inference_station, knee_concurrency
from aisize.serving.costs import model_costs
from aisize.serving.disaggregated import DisaggregatedPools, size_pools
from aisize.serving.sizing import candidate_shapes, choose_fleet

MAX_SERVERS_PER_REPLICA = 16  # pipeline stages may span up to this many servers
FALLBACK_UTILISATION = 0.7  # assumption: replicas' load when no shape meets the targets


@dataclass(frozen=True)
class InferencePlan:
    """An inference service's plan (bytes, seconds; per replica unless said)."""

    name: str
    team: str
    model: str  # model id
    model_source: str  # where the architecture came from
    serving_mode: str  # aggregated | disaggregated
    tensor_parallel: int  # GPUs per pipeline stage
    pipeline_parallel: int
    attention_dp: int
    tp_searched: bool
    gpus_per_replica: int
    weights_bytes: float  # whole model at the weight precision
    kv_bytes_per_token: float  # whole model at the KV precision
    kv_bytes_per_user: float  # (prompt + output) tokens of one request
    gpu_memory_bytes: float
    memory_per_gpu_bytes: dict  # weights, KV at the mean batch, runtime (one GPU)
    fits: bool  # some shape holds the weights and one request
    batch: int  # mean requests in flight per replica at the planned load
    max_batch: int  # requests a replica admits at once (batch limit, KV pool)
    slo_statistic: str  # p95 | mean: what the targets bound
    ttft_target_seconds: float
    tpot_target_seconds: float
    ttft_met: bool
    tpot_met: bool
    slo_reason: str  # why the targets cannot be met, naming the target and the best achievable
    best_ttft_seconds: float  # best any shape reaches at the lightest load (the SLO statistic)
    best_tpot_seconds: float
    ttft_seconds: float  # mean under the planned load
    ttft_p95_seconds: float
    tpot_seconds: float
    tpot_p95_seconds: float
    request_seconds: float  # mean time from arrival to last token
    output_tokens_per_s_per_replica: float  # the replica's capacity (max throughput)
    latency_target_seconds: float  # ttft target + output tokens x tpot target
    latency_target_met: bool
    replicas: int
    gpus: int
    servers: int
    requests_per_s: float
    utilisation: float  # of each replica's capacity
    latency_mean_seconds: float  # request (end-to-end)
    latency_p95_seconds: float  # TTFT p95 + (output - 1) x TPOT p95 (an upper estimate)
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
    estimate: serving.ServingEstimate | None  # the replica at its share of the rate
    pools: DisaggregatedPools | None  # prefill/decode pools when disaggregated
    notes: tuple = ()


def _source(w) -> str:
    m = w.model
    if isinstance(m, str):
        return f"catalog: {models.resolve(m).source}"
    if getattr(m, "hf_config", None):
        return f"Hugging Face config.json ({m.hf_config})"
    return f"inline fields ({getattr(m, 'source', 'no source')})"


@lru_cache(maxsize=256)
def plan_inference(w, ctx: C.HardwareContext, policies) -> InferencePlan:
    """Plan one :class:`~aisize.scenario.Inference` service on the resolved hardware."""
    arch = models.resolve(w.model)
    engine = serving.ENGINES[w.engine]
    cal = serving.TRTLLM_1_0
    per = ctx.server.gpus
    ttft_t, tpot_t = w.ttft_target_ms / 1e3, w.tpot_target_ms / 1e3
    kw = dict(weight_precision=w.weight_precision, kv_precision=w.kv_precision, input_tokens=w.prompt_tokens,
              output_tokens=w.output_tokens)
    shapes = candidate_shapes(arch, serving.hardware.device(ctx.accelerator, w.weight_precision, w.kv_precision),
                              scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, tensor_parallel=w.tensor_parallel,
                              pipeline_parallel=w.pipeline_parallel, gpus_per_server=per,
                              max_servers=MAX_SERVERS_PER_REPLICA)
    pools = None
    if w.serving == "disaggregated":
        pools = size_pools(arch, ctx.accelerator, **kw, requests_per_s=w.requests_per_s, ttft_target_s=ttft_t,
                           tpot_target_s=tpot_t, statistic=w.slo_statistic, shapes=shapes, engine=engine,
                           calibration=cal, scaleout_bytes_per_s=ctx.scaleout_bytes_per_s)
    fleet = choose_fleet(arch, ctx.accelerator, **kw, requests_per_s=w.requests_per_s, ttft_target_s=ttft_t,
                         tpot_target_s=tpot_t, statistic=w.slo_statistic, shapes=shapes, engine=engine,
                         calibration=cal, length_cv=w.length_cv)
    shape = fleet.shape or _fallback_shape(shapes)
    replicas = fleet.replicas if fleet.feasible else None
    est = None
    if shape is not None:
        cap = serving.estimate(arch, ctx.accelerator, tensor_parallel=shape.tensor_parallel, **kw,
                               pipeline_parallel=shape.pipeline_parallel, attention_dp=shape.attention_dp,
                               stage_link_bytes_per_s=shape.stage_link_bytes_per_s, length_cv=w.length_cv,
                               engine=engine, calibration=cal)
        if replicas is None and not cap.feasible:  # nothing fits: one replica shows what fails
            replicas = 1
        elif replicas is None:  # no shape meets the targets: keep the fleet at 70 % of capacity instead
            replicas = max(math.ceil(w.requests_per_s / (cap.max_requests_per_s * FALLBACK_UTILISATION)), 1)
        est = serving.estimate(arch, ctx.accelerator, tensor_parallel=shape.tensor_parallel, **kw,
                               requests_per_s=w.requests_per_s / replicas, pipeline_parallel=shape.pipeline_parallel,
                               attention_dp=shape.attention_dp, stage_link_bytes_per_s=shape.stage_link_bytes_per_s,
                               length_cv=w.length_cv, engine=engine, calibration=cal)
    return _assemble(w, ctx, policies, arch, shape, replicas or 0, fleet, est, pools, ttft_t, tpot_t)


def _fallback_shape(shapes):
    """With no fitting shape, report the largest one tried (its figures say why it fails)."""
    return max(shapes, key=lambda s: s.gpus) if shapes else None


def _assemble(w, ctx, policies, arch, shape, replicas, fleet, est, pools, ttft_t, tpot_t) -> InferencePlan:
    stat_ttft = (est.ttft_p95_s if w.slo_statistic == "p95" else est.ttft_s) if est else math.inf
    stat_tpot = (est.tpot_p95_s if w.slo_statistic == "p95" else est.tpot_s) if est else math.inf
    gpus_per_replica = shape.gpus if shape else 0
    mode = "aggregated"
    if pools is not None and (not fleet.feasible or (pools.feasible and pools.gpus <= replicas * gpus_per_replica)):
        mode = "disaggregated"
    gpus = pools.gpus if mode == "disaggregated" else replicas * gpus_per_replica
    if mode == "disaggregated":
        stat_ttft, stat_tpot = pools.ttft_statistic_s, pools.tpot_statistic_s
    fits = est is not None and est.feasible
    seq = w.prompt_tokens + w.output_tokens
    kv_token = float(models.kv_bytes_per_token(arch, w.kv_precision))
    batch = est.batch_size if est and math.isfinite(est.batch_size) else 0.0
    mem = {"weights_bytes": est.weights_per_gpu_bytes if est else 0.0,
           "kv_cache_bytes": est.kv_pool_bytes * est.kv_occupancy if est else 0.0,
           "runtime_bytes": (ctx.gpu_memory_bytes - est.weights_per_gpu_bytes
                             - est.kv_pool_bytes / serving.TRTLLM_BENCH.kv_memory_fraction) if est else 0.0}
    mem["total_bytes"] = sum(mem.values())
    hold = est.e2e_s if est and math.isfinite(est.e2e_s) else 1.0
    slots = max(int(est.max_batch_size * shape.attention_dp * shape.pipeline_parallel), 1) if est else 1
    station = inference_station(max(replicas, 1), slots, max(hold, 1e-9), C.INFERENCE_SERVICE_CV)
    ttft_met, tpot_met = stat_ttft <= ttft_t, stat_tpot <= tpot_t
    host = host_for_server(ctx.server, ctx.accelerator, ratio=policies.host_ram_ratio)
    notes = list(est.notes) if est else []
    within = seq <= arch.max_seq
    p95_request = (est.ttft_p95_s + (w.output_tokens - 1) * est.tpot_p95_s) if est else math.inf
    return InferencePlan(
        name=w.name, team=w.team, model=arch.id, model_source=_source(w), serving_mode=mode,
        tensor_parallel=shape.tensor_parallel if shape else 0, pipeline_parallel=shape.pipeline_parallel if shape else 0,
        attention_dp=shape.attention_dp if shape else 0, tp_searched=w.tensor_parallel == "auto",
        gpus_per_replica=gpus_per_replica,
        weights_bytes=float(model_costs(arch, w.weight_precision, w.kv_precision).weights_bytes),
        kv_bytes_per_token=kv_token, kv_bytes_per_user=kv_token * seq, gpu_memory_bytes=float(ctx.gpu_memory_bytes),
        memory_per_gpu_bytes=mem, fits=fits, batch=int(round(batch)), max_batch=slots, slo_statistic=w.slo_statistic,
        ttft_target_seconds=ttft_t, tpot_target_seconds=tpot_t, ttft_met=bool(ttft_met), tpot_met=bool(tpot_met),
        slo_reason=fleet.reason, best_ttft_seconds=fleet.best_ttft_s, best_tpot_seconds=fleet.best_tpot_s,
        ttft_seconds=est.ttft_s if est else math.inf, ttft_p95_seconds=est.ttft_p95_s if est else math.inf,
        tpot_seconds=est.tpot_s if est else math.inf, tpot_p95_seconds=est.tpot_p95_s if est else math.inf,
        request_seconds=hold, output_tokens_per_s_per_replica=est.max_output_tokens_per_s if est else 0.0,
        latency_target_seconds=ttft_t + w.output_tokens * tpot_t,
        latency_target_met=bool(ttft_met and tpot_met), replicas=replicas, gpus=gpus,
        servers=math.ceil(gpus / ctx.server.gpus), requests_per_s=w.requests_per_s,
        utilisation=est.utilisation if est else math.inf, latency_mean_seconds=est.e2e_s if est else math.inf,
        latency_p95_seconds=p95_request, knee_requests_per_s=_knee(est, replicas),
        within_context=within, context_window=arch.max_seq, uncalibrated=bool(est.uncalibrated) if est else False,
        model_loads_per_hour=w.model_loads_per_hour, host_memory_needed_bytes=float(host.memory.total_bytes),
        server_host_memory_bytes=float(ctx.server.host_memory_bytes), host_memory_fits=bool(host.memory_fits),
        station=station, knee_concurrency=int(knee_concurrency(station, C.KNEE_FACTOR)), estimate=est, pools=pools,
        notes=tuple(notes))


def _knee(est, replicas) -> float:
    """Fleet rate at which mean request latency reaches KNEE_FACTOR x its light-load value."""
    if est is None or replicas <= 0 or not est.feasible:
        return 0.0
    from aisize.serving.curves import knee_requests_per_s

    return replicas * knee_requests_per_s(est, C.KNEE_FACTOR)
