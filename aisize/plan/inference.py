"""One inference service's plan: tensor parallelism, batch, latencies, replicas, GPUs, model loading.

Glue only: memory from aisize.memory.inference, performance from
aisize.serving, replicas from aisize.queueing.servers_for_target, latency under
load from aisize.queueing (inference_station, latency_vs_load, knee_load).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import models
from aisize.host import host_for_server
from aisize.memory.inference import (inference_memory, kv_capacity, transformer_kv_bytes_per_token,
                                     weight_bytes)
from aisize.plan import context as C
from aisize.queueing import Station, inference_station, knee_concurrency, knee_load, latency_vs_load, \
    servers_for_target
from aisize.serving import replica_performance

TP_CANDIDATES = (1, 2, 4, 8, 16, 32, 64, 128)
PERCENTILE = 0.95  # the request-latency target holds at p95
FALLBACK_UTILISATION = 0.7  # assumption: replicas' load when no count meets the latency target
COMPUTE_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8"}  # else bf16


@dataclass(frozen=True)
class InferencePlan:
    """An inference service's plan (bytes, seconds, per replica unless said)."""

    name: str
    team: str
    model: str
    tensor_parallel: int
    tp_searched: bool
    weights_bytes: float  # whole model at the weight precision
    kv_bytes_per_token: float  # whole model at the KV precision (per replica)
    kv_bytes_per_user: float  # (prompt + output) tokens of one request
    gpu_memory_bytes: float
    memory_per_gpu_bytes: dict  # weights, KV at the chosen batch, workspace, context (one GPU)
    fits: bool  # weights + runtime + one full-context sequence fit the replica
    batch: int  # concurrent sequences per replica at the TPOT target (0: target missed)
    tpot_met: bool
    ttft_seconds: float  # prefill, unloaded
    tpot_seconds: float
    request_seconds: float  # unloaded time a request holds a batch slot
    output_tokens_per_s_per_replica: float
    latency_target_seconds: float  # ttft target + output tokens x tpot target
    latency_target_met: bool  # servers_for_target found a feasible count
    replicas: int
    gpus: int
    servers: int
    requests_per_s: float
    utilisation: float
    latency_mean_seconds: float
    latency_p95_seconds: float
    knee_requests_per_s: float  # load at which mean latency reaches KNEE_FACTOR x unloaded
    model_loads_per_hour: float
    host_memory_needed_bytes: float
    server_host_memory_bytes: float
    host_memory_fits: bool
    station: Station  # replicas x batch slots channels, S = request_seconds (inference_station)
    knee_concurrency: int  # requests in flight at which mean latency reaches KNEE_FACTOR x unloaded (closed)


def _evaluate(arch, w, ctx: C.HardwareContext, tps: np.ndarray):
    """Memory and replica performance for each candidate TP (vectorized over ``tps``)."""
    pc = C.params_of(arch)
    seq = w.prompt_tokens + w.output_tokens
    kv_gpu = transformer_kv_bytes_per_token(arch, w.kv_precision, tp=tps)
    mem = inference_memory(params=pc.total, kv_bytes_per_token_per_gpu=kv_gpu, hidden=arch.hidden,
                           ffn_hidden=arch.moe_ffn_hidden or arch.ffn_hidden, vocab=arch.vocab, seq_len=seq,
                           batch=1, weight_dtype=w.weight_precision, tp=tps)
    cap = kv_capacity(ctx.gpu_memory_bytes, memory=mem, kv_bytes_per_token_per_gpu=kv_gpu, seq_len=seq)
    peak = C.peak_for(ctx.accelerator, COMPUTE_DTYPE.get(w.weight_precision, "bf16"))
    perf = replica_performance(w.prompt_tokens, w.output_tokens, w.tpot_target_ms / 1e3, active_params=pc.active,
                               layers=arch.layers, hidden=arch.hidden,
                               weights_bytes=weight_bytes(pc.total, w.weight_precision),
                               kv_bytes_per_token=kv_gpu * tps, tp=tps,
                               memory_bytes_per_s=ctx.accelerator.memory_bandwidth_bytes_per_s,
                               peak_flops_per_s=peak, kv_capacity_bytes=cap.kv_budget_bytes * tps)
    return mem, cap, perf, kv_gpu


@lru_cache(maxsize=256)
def plan_inference(w, ctx: C.HardwareContext, policies) -> InferencePlan:
    """Plan one :class:`~aisize.scenario.Inference` service on the resolved hardware."""
    arch = models.resolve(w.model)
    per = ctx.server.gpus
    if w.tensor_parallel == "auto":
        tps = np.array([t for t in TP_CANDIDATES if t <= per and arch.heads % t == 0])
    else:
        tps = np.array([w.tensor_parallel])
    mem, cap, perf, kv_gpu = _evaluate(arch, w, ctx, tps)
    fit = np.atleast_1d(cap.sequences) >= 1
    ok = fit & (np.atleast_1d(perf.batch) >= 1)
    # smallest TP that fits and meets TPOT; else the largest that fits; else the largest
    i = int(np.argmax(ok)) if ok.any() else (int(np.flatnonzero(fit)[-1]) if fit.any() else len(tps) - 1)
    tp = int(tps[i])
    pick = (lambda x: float(np.broadcast_to(x, tps.shape)[i]))
    batch = int(pick(perf.batch))
    slots = max(batch, 1)
    request_s = pick(perf.request_seconds)
    target = w.ttft_target_ms / 1e3 + w.output_tokens * w.tpot_target_ms / 1e3
    size = servers_for_target(w.requests_per_s, request_s, target, PERCENTILE, service_cv=C.INFERENCE_SERVICE_CV)
    if size.feasible:
        replicas = math.ceil(int(size.servers) / slots)
    else:  # the target cannot be met at any scale: keep the queue stable below the knee instead
        replicas = math.ceil(w.requests_per_s * request_s / slots / FALLBACK_UTILISATION)
    replicas = max(replicas, 1)
    station = inference_station(replicas, slots, request_s, C.INFERENCE_SERVICE_CV)
    q = latency_vs_load(station, w.requests_per_s)
    knee = _knee(station)
    gpus = replicas * tp
    servers = math.ceil(gpus / per)
    mem_one = {k: pick(v) for k, v in mem.as_dict().items()}
    mem_one["kv_cache_bytes"] = pick(kv_gpu) * (w.prompt_tokens + w.output_tokens) * slots
    mem_one["total_bytes"] = (mem_one["weights_bytes"] + mem_one["kv_cache_bytes"]
                              + mem_one["activation_workspace_bytes"] + mem_one["cuda_context_bytes"])
    host = host_for_server(ctx.server, ctx.accelerator, ratio=policies.host_ram_ratio)
    return InferencePlan(
        w.name, w.team, w.model, tp, w.tensor_parallel == "auto",
        float(weight_bytes(C.params_of(arch).total, w.weight_precision)),
        float(transformer_kv_bytes_per_token(arch, w.kv_precision)),
        float(pick(kv_gpu) * tp * (w.prompt_tokens + w.output_tokens)), float(ctx.gpu_memory_bytes), mem_one,
        bool(fit[i]), batch, batch >= 1, pick(perf.ttft_seconds), pick(perf.tpot_seconds), request_s,
        pick(perf.output_tokens_per_s), target, bool(size.feasible), replicas, gpus, servers, w.requests_per_s,
        float(q.utilisation), float(q.response_mean_seconds), float(q.response_p95_seconds),
        float(knee.arrival_rate_per_s), w.model_loads_per_hour, float(host.memory.total_bytes),
        float(ctx.server.host_memory_bytes), bool(host.memory_fits), station,
        int(knee_concurrency(station, C.KNEE_FACTOR)))


@lru_cache(maxsize=256)
def _knee(station):
    return knee_load(station, C.KNEE_FACTOR)
