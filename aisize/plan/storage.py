"""The shared storage of a plan: the IO blend of every workload, capacity, units, stalls, latency.

What is bought: a purchasable system the scenario names (aisize.storage.sizing.purchasable) is
sized by the unit; a guidance row (NVIDIA DGX SuperPOD's per-node levels) names a performance
level, not a product, so the plan buys the catalog's purchasable system whose count meets the demand
at the least cost (choose_system) and keeps the guidance as a comparison; a whole measured
system (scope ``system``) is bought once and checked. Units are sized on the blend's peaks (bursts
coinciding) with ``policies.storage_headroom`` free and at least ``policies.storage_minimum_units``;
a unit is priced by its unit price or raw capacity (aisize.cost.storage), and the blend queues on
the bought units: a storage_station of their IOPS and unloaded latency, whose open-system latency follows the
curve fitted on published SPECstorage load tables (docs/storage.md).

Glue only: aisize.storage.blender (blend), capacity (capacity_plan), sizing (storage_units,
choose_system, unit_iops_at), aisize.cost (unit_usd), demand (data_stall), aisize.network.links
(link_feed_for) and aisize.queueing (storage_station, latency_vs_load, knee_load).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

from aisize import catalog
from aisize.cost import load_prices, unit_usd
from aisize.fleet.failures import FailureRates
from aisize.network.fabric import Nics
from aisize.network.links import link_feed_for
from aisize.plan import context as C
from aisize.plan.dataprep import DataPrepPlan, dataprep_workload
from aisize.plan.inference import InferencePlan
from aisize.plan.training import TrainingPlan
from aisize.queueing import (Station, StorageStation, bend_concurrency, knee_concurrency, knee_load, latency_vs_load,
                             mgc_wait, outstanding_ios, storage_station)
from aisize.serving.curves import LOAD_RISE, elasticity, rise_within
from aisize.storage.blender import (blend, checkpoint_bursts, inference_model_loading, kv_cache_tier, training_reads,
                                    workload)
from aisize.storage.capacity import capacity_plan
from aisize.storage.demand import data_stall
from aisize.storage.sizing import choose_system, storage_units, unit_iops_at
from aisize.units import HOUR


@dataclass(frozen=True)
class JobStorage:
    """What storage and network give one training job."""

    name: str
    ideal_read_bytes_per_s: float  # all its GPUs at 100 %
    storage_share_bytes_per_s: float  # its share of the storage's read supply
    network_feed_bytes_per_s: float  # its servers' scale-out links (link_feed_for)
    link_utilisation: float  # demand at the target utilisation / link feed, per server
    stall_fraction: float  # share of step time waiting for data
    bottleneck_gpus: float | None  # GPUs at which the storage supply runs out (None: scales per node)


@dataclass(frozen=True)
class StoragePlan:
    """Aggregate IO, capacity, supply, units and latency of the shared storage."""

    system: str  # the catalog id of the storage bought
    scope: str  # system | unit | node | drive
    read_bytes_per_s: float  # blend averages [B/s]
    write_bytes_per_s: float
    read_peak_bytes_per_s: float  # bursts coinciding
    write_peak_bytes_per_s: float
    read_iops: float
    write_iops: float
    metadata_ops_per_s: float
    read_share: float
    dominant_workload: str
    dominant_peak_workload: str
    workloads: tuple  # one dict per blended workload (name, kind, bytes/s, IO sizes, read share)
    capacity_bytes: dict  # datasets, checkpoints, data preparation, model repository, usable, raw
    units: float  # systems, building blocks, drives or nodes the supply counts
    units_by: dict  # units each constraint needs (read, write, iops, capacity) at the headroom
    binding: str  # what sets the units (unit, drive) or the highest need / supply; "minimum": the floor
    utilisation: dict  # peak need / supply per constraint (None where the storage gives no figure)
    supply_read_bytes_per_s: float
    supply_write_bytes_per_s: float
    supply_iops: float
    supply_capacity_bytes: float | None
    write_assumed: bool
    io_utilisation: float  # the blend's operations/s over the station's fitted saturation (StorageStation)
    latency_mean_seconds: float
    latency_p95_seconds: float
    knee_iops: float  # operations/s at which mean latency reaches KNEE_FACTOR x unloaded
    units_at_knee: float | None  # building blocks that keep the blend below the knee (unit/drive scope)
    jobs: tuple  # JobStorage per training job
    station: Station  # the queue the blend runs on (storage_station: the fitted load curve, open and closed)
    knee_concurrency: int  # outstanding IOs at the closed curve's bend (queueing.bend_concurrency: saturation x
    # unloaded latency, where its flat and rising asymptotes meet; 1.62x unloaded there). The open system's knee
    # (knee_iops, KNEE_FACTOR x unloaded) lies further out, at 1.41x these IOs in flight, on the straight part
    # outstanding IOs where the closed curve's mean latency reaches KNEE_FACTOR x unloaded (the Queueing tab names it
    # beside the bend; queueing.knee_concurrency)
    knee_factor_concurrency: int
    outstanding_ios: float  # IOs the blend keeps in flight (Little's law at latency_mean_seconds; inf: unstable)
    # what the units are sized for: peak read, write [B/s] (checkpoints at their stall budget), iops [1/s], capacity [B]
    demand: dict = dataclasses.field(default_factory=dict)
    headroom: float = 0.0  # share of each rating left free at the peak (policies.storage_headroom)
    minimum_units: int = 1  # policies.storage_minimum_units
    unit_iops: float = 0.0  # operations/s one unit serves at the blend's mean IO size (sizing.unit_iops_at)
    named: str = ""  # the scenario's hardware.storage (a guidance id when the plan chose the system)
    comparison: dict | None = None  # the named guidance at this plan's servers (not bought), or None
    candidates: dict = dataclasses.field(default_factory=dict)  # purchasable id -> units, read, raw, cost, rack units
    record: object = None  # the catalog StorageSystem bought (what aisize.cost.storage prices)
    # relative rise of the mean IO latency per relative rise of the blend's IO rate, at the blend (issue 49.2: the knee
    # is the slope at the operating point; past C.KNEE_ELASTICITY a small rise in load raises latency sharply)
    latency_elasticity: float = 0.0


@dataclass(frozen=True)
class KVTierStorage:
    """What the storage plan reads of a service's KV tiers (:class:`~aisize.plan.kvtiers.KVTierPlan`)."""

    storage_capacity_bytes: float
    storage_read_bytes_per_s: float
    storage_write_bytes_per_s: float
    storage_io_bytes: float


@dataclass(frozen=True)
class ServiceStorage:
    """What the storage plan reads of a service (:class:`~aisize.plan.inference.InferencePlan`): its weights'
    loads and its KV tier on the storage. The plan reads these alone, so a move that leaves them as they were (a
    service's latencies, its queue) leaves the storage as it was (:func:`storage_views`, the plan cache's key)."""

    name: str
    model: str
    replicas: int
    gpus: int
    servers: int
    weights_bytes: float
    model_loads_per_hour: float
    kv_tiers: KVTierStorage | None  # None: no KV tier on the storage (no prefix, or none of it kept there)


def storage_views(inference: tuple[InferencePlan, ...]) -> tuple[ServiceStorage, ...]:
    """Each service as the storage plan reads it (:class:`ServiceStorage`)."""
    def kv(t):
        return None if t is None else KVTierStorage(t.storage_capacity_bytes, t.storage_read_bytes_per_s,
                                                    t.storage_write_bytes_per_s, t.storage_io_bytes)
    return tuple(ServiceStorage(i.name, i.model, i.replicas, i.gpus, i.servers, i.weights_bytes,
                                i.model_loads_per_hour, kv(i.kv_tiers)) for i in inference)


def _blend_workloads(training, inference, dataprep, scale_ups, rates: FailureRates):
    out = []
    for t in training:
        out.append(training_reads(t.name, t.read_bytes_per_s, io_bytes=t.read_io_bytes,
                                  metadata_ops_per_s=t.metadata_ops_per_s))
        if t.checkpoint is not None:
            c = t.checkpoint
            out.append(checkpoint_bursts(f"{t.name} checkpoints", c.checkpoint_bytes, c.write_seconds,
                                         c.interval_seconds))
    for i in inference:
        if scale_ups and i.name in scale_ups:  # an autoscaled service reads its weights at each scale-up
            out.append(scale_ups[i.name])
        elif i.replicas > 0 and i.weights_bytes > 0:
            out.append(model_loads(i, rates))
        kv = i.kv_tiers
        if kv is not None and kv.storage_capacity_bytes:  # a KV-cache tier on the shared storage (aisize.plan.kvtiers)
            out.append(kv_cache_tier(f"{i.name} KV cache tier", kv.storage_read_bytes_per_s,
                                     kv.storage_write_bytes_per_s, io_bytes=kv.storage_io_bytes))
    out += [dataprep_workload(d) for d in dataprep]
    return out or [workload("(no storage IO)", "mixed")]


def model_loads(service: ServiceStorage, rates: FailureRates):
    """A service's weights read from the shared storage (docs/storage-demand.md).

    Peak: every replica loads its weights at once within MODEL_LOAD_SECONDS, as at deployment, which happens
    at least once whatever ``model_loads_per_hour`` says. Average: the loads that recur, scheduled reloads
    (``model_loads_per_hour``, each one of the whole fleet) plus a replica's restart after an interruption of
    its GPUs or servers (``rates``); the one-off deployment adds nothing to a long-run average."""
    replicas = int(service.replicas)
    gpus = service.gpus / replicas
    servers = max(1, math.ceil(service.servers / replicas))  # at least its own: its server failing restarts it
    per_hour = service.model_loads_per_hour + float(rates.per_hour(gpus, servers))
    period = HOUR / per_hour if per_hour > 0 else math.inf
    load = min(C.MODEL_LOAD_SECONDS, period)
    if math.isinf(period):  # nothing recurs: the deployment burst only
        return workload(f"{service.name} model loading", "inference", read_peak_bytes_per_s=replicas
                        * service.weights_bytes / load)
    return inference_model_loading(f"{service.name} model loading", service.weights_bytes, replicas, load, period)


def _capacity(training, inference, dataprep, policies):
    datasets = {(t.dataset if t.model_kind == "other" else t.name): t.dataset_bytes for t in training}
    ckpt = sum(t.checkpoint.checkpoint_bytes for t in training if t.checkpoint is not None)
    prep = sum(d.capacity_bytes for d in dataprep)
    models = sum({(i.model, i.weights_bytes): i.weights_bytes for i in inference}.values())
    kv = sum(i.kv_tiers.storage_capacity_bytes for i in inference if i.kv_tiers is not None)
    cap = capacity_plan(sum(datasets.values()), checkpoint_bytes=ckpt,
                        checkpoints_retained=policies.checkpoint_retention, scratch_bytes=prep + models + kv,
                        protection=policies.storage_usable_ratio)
    return {"datasets_bytes": cap.dataset_bytes, "checkpoints_bytes": cap.checkpoint_bytes,
            "data_preparation_bytes": prep, "model_repository_bytes": models, "kv_cache_bytes": kv,
            "usable_bytes": cap.usable_bytes, "raw_bytes": cap.raw_bytes}


def _sized_peaks(b, training) -> tuple[float, float, float]:
    """(read [B/s], write [B/s], operations/s) the storage is sized for: every workload at its peak (bursts
    coinciding, the blend's worst case), except that a checkpoint needs no faster write than the one that keeps
    it within CHECKPOINT_MAX_STALL of its interval (its burst in the blend runs at whatever the named storage
    gave the job, which would make the sizing chase its own tail)."""
    for_stall = {f"{t.name} checkpoints": t.checkpoint.write_bytes_per_s_for_stall
                 for t in training if t.checkpoint is not None}
    read = write = ops = 0.0
    for w in b.workloads:
        wp = w.write_peak_bytes_per_s
        if w.kind == "checkpoint" and w.name in for_stall:
            wp = min(wp, float(for_stall[w.name]))
        read, write = read + w.read_peak_bytes_per_s, write + wp
        ops += w.read_peak_bytes_per_s / w.read_io_bytes + wp / w.write_io_bytes
    return read, write, ops


def _with_write(rec):
    """The record with the planner's assumed write rate where it publishes none (UNKNOWN_WRITE_SHARE)."""
    if rec.write_bandwidth_bytes_per_s is not None:
        return rec
    return dataclasses.replace(rec, write_bandwidth_bytes_per_s=C.UNKNOWN_WRITE_SHARE * rec.read_bandwidth_bytes_per_s)


def _buy(rec, need, peak_ops, peak_io, policies, servers):
    """(record bought, its sizing, units, comparison, candidates) for the named record ``rec``."""
    headroom, least = policies.storage_headroom, policies.storage_minimum_units
    comparison, candidates = None, {}
    if rec.kind == "guidance":  # a performance level: buy a real system to the demand, compare with the level
        write = rec.write_bandwidth_bytes_per_s
        comparison = {"system": rec.id, "name": rec.name, "servers": servers,
                      "read_bytes_per_s": rec.read_bandwidth_bytes_per_s * servers,
                      "write_bytes_per_s": write * servers if write is not None else None}
        table = load_prices()  # the choice's unit prices (a scenario's override prices the line, not the choice)
        choice = choose_system(catalog.storage, read_bytes_per_s=need["read"], write_bytes_per_s=need["write"],
                               iops_at_io=peak_ops, io_bytes=peak_io, capacity_bytes=need["capacity"],
                               headroom=headroom, minimum_units=least, unknown_write_share=C.UNKNOWN_WRITE_SHARE,
                               unit_usd=lambda s: unit_usd(s, table))
        rec, candidates = choice.system, choice.candidates
    bought = _with_write(rec)
    # the IO rate one unit serves at the peak's IO size: its rated IOPS, at most its read rate / IO size (the
    # same bound choose_system sized with), so a unit without an IOPS rating is still sized for the IO demand
    per_unit_iops = unit_iops_at(bought, peak_io) if need["iops"] else None
    sized = storage_units(read_bytes_per_s=need["read"], write_bytes_per_s=need["write"], iops=need["iops"],
                          capacity_bytes=need["capacity"] if bought.capacity_bytes else 0.0,
                          unit_read_bytes_per_s=bought.read_bandwidth_bytes_per_s,
                          unit_write_bytes_per_s=bought.write_bandwidth_bytes_per_s, unit_iops=per_unit_iops,
                          unit_capacity_bytes=bought.capacity_bytes, headroom=headroom, minimum_units=least)
    units = float(max(servers, 1)) if rec.scope == "node" else (1.0 if rec.scope == "system" else sized.units)
    return rec, bought, sized, units, comparison, candidates


@lru_cache(maxsize=128)
def _knee_iops(station) -> float:
    return float(knee_load(station, C.KNEE_FACTOR).arrival_rate_per_s)


@lru_cache(maxsize=128)  # a service move that adds replicas changes the blend, seldom the units bought
def _knee_outstanding(station) -> int:
    """IOs in flight where the closed curve bends (queueing.bend_concurrency): the knee the Queueing tab draws is a
    property of the curve's shape (issue 49.2), not the 2x-latency point, which sits on its straight part."""
    return bend_concurrency(station)


@lru_cache(maxsize=128)
def _knee_factor_outstanding(station) -> int:
    """IOs in flight where the closed curve reaches C.KNEE_FACTOR x its unloaded latency (queueing.knee_concurrency)."""
    return int(knee_concurrency(station, C.KNEE_FACTOR))


def plan_storage(training: tuple[TrainingPlan, ...], inference: tuple[ServiceStorage, ...],
                 dataprep: tuple[DataPrepPlan, ...], ctx: C.HardwareContext, policies, servers: int,
                 nics: Nics, scale_ups: dict | None = None) -> StoragePlan:
    """Blend every workload, choose or size the storage bought from the blend's peaks, and queue the blend on it.

    ``scale_ups`` maps an autoscaled service to the storage workload of its scale-ups (its weights
    read by each new replica), which replaces its hourly model reload. ``inference``: the services as
    :func:`storage_views` gives them."""
    b = blend(_blend_workloads(training, inference, dataprep, scale_ups, C.failure_rates_of(policies)))
    cap = _capacity(training, inference, dataprep, policies)
    ops = b.read_iops + b.write_iops
    mean_io = (b.read_bytes_per_s + b.write_bytes_per_s) / ops if ops else C.READ_IO_BYTES
    peak_read, peak_write, peak_ops = _sized_peaks(b, training)
    peak_io = (peak_read + peak_write) / peak_ops if peak_ops else C.READ_IO_BYTES
    need = {"read": peak_read, "write": peak_write, "iops": peak_ops, "capacity": cap["raw_bytes"]}
    rec, bought, sized, units, comparison, candidates = _buy(ctx.storage, need, peak_ops, peak_io, policies,
                                                              servers)
    per = {"read": bought.read_bandwidth_bytes_per_s, "write": bought.write_bandwidth_bytes_per_s,
           "iops": bought.read_iops_per_s, "capacity": bought.capacity_bytes}
    supply = {k: (v * units if v is not None else None) for k, v in per.items()}
    # the station serves at most the rated IOPS and what the read bandwidth allows at the blend's IO size
    unit_iops = unit_iops_at(bought, mean_io)
    supply_iops = unit_iops * units
    util = {k: (need[k] / supply[k] if supply[k] else None) for k in need}
    binding = max((k for k in util if util[k] is not None), key=lambda k: util[k])  # busiest, ties to read
    if rec.scope in ("unit", "drive"):  # the count is sized: the busiest constraint set it, unless the floor did
        top = max(sized.by_read, sized.by_write, sized.by_iops, sized.by_capacity)
        binding = binding if 0 < top >= sized.units else "minimum"
    latency = rec.latency_seconds or C.STORAGE_LATENCY_SECONDS
    station = storage_station(supply_iops, latency)
    q = latency_vs_load(station, max(ops, 1e-9))
    knee = _knee_iops(station)
    at_knee = None
    if rec.scope in ("unit", "drive"):
        one = storage_station(unit_iops, latency)
        at_knee = float(math.ceil(ops / _knee_iops(one))) if ops else 1.0
    jobs = _jobs(training, b, supply["read"], ctx, nics, policies, rec.scope)
    return StoragePlan(
        rec.id, rec.scope, b.read_bytes_per_s, b.write_bytes_per_s, b.read_peak_bytes_per_s,
        b.write_peak_bytes_per_s, b.read_iops, b.write_iops, b.metadata_ops_per_s, b.read_share,
        b.dominant_bandwidth, b.dominant_peak, tuple(_rows(b)), cap, units,
        {"read": sized.by_read, "write": sized.by_write, "iops": sized.by_iops, "capacity": sized.by_capacity},
        binding, util, supply["read"], supply["write"], float(supply_iops), supply["capacity"],
        rec.write_bandwidth_bytes_per_s is None, float(q.utilisation), float(q.response_mean_seconds),
        float(q.response_p95_seconds), knee, at_knee, jobs, station=station,
        knee_concurrency=_knee_outstanding(station),
        knee_factor_concurrency=_knee_factor_outstanding(station),
        outstanding_ios=_outstanding(ops, float(q.response_mean_seconds)), demand=need,
        headroom=float(policies.storage_headroom), minimum_units=int(policies.storage_minimum_units),
        unit_iops=float(unit_iops), named=ctx.storage.id, comparison=comparison, candidates=candidates, record=rec,
        latency_elasticity=_elasticity(station, ops, float(q.response_mean_seconds)))


def _elasticity(station, ops: float, latency_seconds: float) -> float:
    """:func:`aisize.serving.curves.elasticity` of the station's mean latency at ``ops`` [1/s] against LOAD_RISE more
    (or half the way to saturation, when nearer): 0 without IO, inf at or past saturation. For the fitted M/M/2 the
    point slope is 2ρ²/(1 − ρ²), 2 exactly at the mean-doubling knee ρ = 0.707."""
    if not ops:
        return 0.0
    rise = rise_within(ops, station.capacity_per_s, LOAD_RISE)
    if rise <= 0:
        return math.inf
    return elasticity(latency_seconds, _mean_response(station, ops * (1.0 + rise)), rise)


def _mean_response(station, ops: float) -> float:
    """``float(latency_vs_load(station, ops).response_mean_seconds)`` without its percentiles, which the elasticity
    does not read: the same Allen-Cunneen wait (:func:`aisize.queueing.mgc_wait` is :func:`~aisize.queueing.ggc`'s
    mean) at the fitted queue's rate, plus the service time, to the bit."""
    if type(station) is not StorageStation:
        return float(latency_vs_load(station, ops).response_mean_seconds)
    c, s = station.effective_servers, station.service_seconds
    _, _, wait = mgc_wait(ops * (c / s) / station.saturation_per_s, s, c, service_cv=station.service_cv, quantiles=())
    return float(wait + s)


def _outstanding(ops: float, latency_seconds: float) -> float:
    """Little's law at the blend: 0 without IO, unbounded where the queue is unstable."""
    if not ops:
        return 0.0
    return float(outstanding_ios(ops, latency_seconds)) if math.isfinite(latency_seconds) else math.inf


_ROW_FIELDS = ("read_bytes_per_s", "write_bytes_per_s", "read_peak_bytes_per_s", "write_peak_bytes_per_s",
               "read_iops", "write_iops", "read_io_bytes", "write_io_bytes", "metadata_ops_per_s")


def _rows(blend) -> list[dict]:
    """One row per workload of the blend, with its read share of its own bytes."""
    rows = []
    for w in blend.workloads:
        row = {"name": w.name, "kind": w.kind} | {k: float(getattr(w, k)) for k in _ROW_FIELDS}
        total = row["read_bytes_per_s"] + row["write_bytes_per_s"]
        rows.append(row | {"read_share": row["read_bytes_per_s"] / total if total else 0.0})
    return rows


def _jobs(training, b, supply_read, ctx, nics: Nics, policies, scope) -> tuple[JobStorage, ...]:
    """Each training job's storage share (proportional to ideal demand when short) and data stall."""
    ideal_reads = b.read_bytes_per_s + sum(t.ideal_read_bytes_per_s - t.read_bytes_per_s for t in training)
    scale = min(1.0, supply_read / ideal_reads) if ideal_reads else 1.0
    out = []
    for t in training:
        share = t.ideal_read_bytes_per_s * scale
        per_server = t.dataset_bytes / t.servers  # one epoch's bytes through one server
        feed = link_feed_for(ctx.scale_out_link, per_server, t.sample_bytes, links=nics.nics_per_server)
        feed_total = float(feed.bytes_per_s) * t.servers
        supplied = min(share, feed_total)
        stall = float(data_stall(supplied, t.ideal_read_bytes_per_s).stall_fraction)
        per_gpu = t.ideal_read_bytes_per_s / t.gpus
        bottleneck = None if scope == "node" else supply_read / per_gpu
        out.append(JobStorage(t.name, t.ideal_read_bytes_per_s, share, feed_total,
                              t.read_bytes_per_s / feed_total, stall, bottleneck))
    return tuple(out)
