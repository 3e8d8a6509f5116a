"""Server pools and what each workload asks of them (the packer's inputs).

A scenario declares ``pools`` (server type, a fixed count or "auto", site and
rack limits); without any, one implicit "auto" pool of ``hardware.server``
holds everything. Each GPU workload is planned on the hardware of every pool it
may use (the one it is pinned to, else every pool in order) and becomes a
:class:`~aisize.plan.placement.Demand` there: its items, host RAM per GPU and
NIC ports per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aisize import checks
from aisize.host import OS_AND_APPLICATION_BYTES, host_for_server
from aisize.network.fabric import compute_nics_for
from aisize.plan import context as C
from aisize.plan.inference import plan_inference
from aisize.plan.placement import Demand, PoolSpec
from aisize.plan.training import plan_training
from aisize.format import bytes_gpu


@dataclass(frozen=True)
class Pool:
    """A pool resolved: its spec for the packer and its hardware context for the workload plans."""

    spec: PoolSpec
    ctx: C.HardwareContext
    hardware: object  # the scenario Hardware with this pool's server and link
    declared: bool  # False for the implicit pool of hardware.server
    per_rack: int  # servers one rack holds
    max_racks: int | None


def servers_per_rack(ctx: C.HardwareContext, rack_power_watts: float = C.RACK_POWER_WATTS) -> int:
    """Servers in one rack: by rack units and the rack power budget; a rack-scale system is a rack."""
    s = ctx.server
    if s.rack_units is None:
        return 1
    return max(1, min(C.RACK_UNITS // s.rack_units, int(rack_power_watts // s.power_watts)))


def resolve_pools(scenario) -> list[Pool]:
    """The scenario's pools (or the implicit one), each with its hardware resolved."""
    hw = scenario.hardware
    declared = list(scenario.pools)
    if not declared:
        ctx = C.resolve(hw)
        return [_pool(hw.server, "hardware.server", hw, ctx, None, None, None, "hardware.server", False)]
    out = []
    for i, p in enumerate(declared):
        pool_hw = hw.model_copy(update={"server": p.server, "scale_out_link": p.scale_out_link})
        ctx = C.resolve(pool_hw)
        out.append(_pool(p.name, f"pools.{i}", pool_hw, ctx, p.servers if p.servers != "auto" else None,
                         p.max_servers, p.max_racks, f"pools.{i}", True))
    return out


def _pool(name, path, hw, ctx, fixed, max_servers, max_racks, field, declared) -> Pool:
    per_rack = servers_per_rack(ctx)
    limits = [(max_servers, f"{field}.max_servers"), (max_racks * per_rack if max_racks else None,
                                                      f"{field}.max_racks")]
    limits = [x for x in limits if x[0] is not None]
    limit, limit_field = min(limits) if limits else (None, f"{field}.servers" if declared else field)
    if fixed is not None:
        if limit is not None and fixed > limit:
            raise ValueError(f"{field}.servers: {fixed} servers exceed {limit_field.split('.')[-1]} "
                             f"({limit} servers)")
        limit_field = f"{field}.servers"
    s, acc = ctx.server, ctx.accelerator
    nics = compute_nics_for(s, ctx.scale_out_link).nics_per_server
    domain = max(1, min(int(acc.scaleup_domain or 1), s.gpus))
    spec = PoolSpec(name, path, s.id, s.gpus, domain, float(s.host_memory_bytes), float(OS_AND_APPLICATION_BYTES),
                    int(nics), fixed, limit, limit_field)
    return Pool(spec, ctx, hw, declared, per_rack, max_racks)


def fewest_servers(gpus, spec: PoolSpec, why: str) -> int:
    """The servers ``gpus`` take at the least, checked against the plan's limits (:func:`aisize.checks.count`)
    before a piece per server is built; ``why`` names what asks for them."""
    why = f"{why}, on {spec.server} servers of {spec.gpus_per_server} GPUs (pool {spec.name!r})"
    checks.count("GPUs", gpus, checks.MAX_GPUS, why=why)
    return checks.count("servers", math.ceil(gpus / spec.gpus_per_server), checks.MAX_SERVERS, why=why)


def split(gpus: int, per_server: int) -> list[int]:
    """Pieces of ``gpus`` that each sit on one server: whole servers, then the remainder."""
    whole, rest = divmod(int(gpus), int(per_server))
    return [per_server] * whole + ([rest] if rest else [])


def _host_per_gpu(need_bytes: float, spec: PoolSpec) -> float:
    """Host RAM per GPU beyond the OS share; capped at what a server has (a misfit is a finding)."""
    return max(0.0, min(need_bytes, spec.host_bytes) - spec.os_bytes) / spec.gpus_per_server


def _nics_per_gpu(total_gpus: int, spec: PoolSpec) -> float:
    """Fabric ports per GPU: only work spread over several servers talks over the compute fabric."""
    return spec.nics / spec.gpus_per_server if total_gpus > spec.gpus_per_server else 0.0


@dataclass(frozen=True)
class Candidate:
    """One workload planned on one pool: its plan, demand and whether it fits there."""

    pool: int
    plan: object  # TrainingPlan | InferencePlan | None (job streams)
    demand: Demand
    fits: bool
    why: str  # why it does not fit ("" when it does)


def training_candidate(w, index: int, pool_index: int, pool: Pool, policies, slots) -> Candidate:
    t = plan_training(w, pool.ctx, policies)
    spec = pool.spec
    fewest_servers(t.gpus, spec, f"the job's {t.gpus:,} GPUs")
    d = Demand(w.name, f"workloads.{index}", tuple(split(t.gpus, spec.gpus_per_server)),
               _host_per_gpu(t.host_memory_needed_bytes, spec), _nics_per_gpu(t.gpus, spec), slots)
    why = ("" if t.memory_fits and t.host_memory_fits else
           f"needs {bytes_gpu(t.memory_bytes['total_bytes'])} per GPU (usable {bytes_gpu(t.gpu_memory_usable_bytes)})"
           if not t.memory_fits else f"needs {bytes_gpu(t.host_memory_needed_bytes)} of host RAM per server")
    return Candidate(pool_index, t, d, not why, why)


def inference_candidate(w, index: int, pool_index: int, pool: Pool, policies, slots) -> Candidate:
    i = plan_inference(w, pool.ctx, policies)
    spec = pool.spec
    fewest_servers(i.gpus, spec, f"{i.replicas:,} replicas of {i.gpus_per_replica} GPUs" if i.gpus_per_replica else
                   f"{i.replicas:,} prefill and decode replicas, {i.gpus:,} GPUs in all")
    per_replica = max(i.replica_gpus, default=1)  # a replica spans servers only when larger than one
    pieces = [piece for g in i.replica_gpus for piece in split(g, spec.gpus_per_server)] or split(1, spec.gpus_per_server)
    # a disaggregated service ships every request's KV cache from prefill to decode GPUs over the fabric
    talks = per_replica if i.serving_mode == "aggregated" else spec.gpus_per_server + 1
    d = Demand(w.name, f"workloads.{index}", tuple(pieces), _host_per_gpu(i.host_memory_needed_bytes, spec),
               _nics_per_gpu(talks, spec), slots)
    why = ("" if i.fits and i.host_memory_fits else
           f"weights and one context do not fit {i.tensor_parallel} x {pool.ctx.accelerator.id}" if not i.fits
           else f"needs {bytes_gpu(i.host_memory_needed_bytes)} of host RAM per server")
    return Candidate(pool_index, i, d, not why, why)


def stream_candidate(w, index: int, pool_index: int, pool: Pool, policies, slots, job_slots: int) -> Candidate:
    spec = pool.spec
    checks.count("jobs at once", job_slots, checks.MAX_REPLICAS, why=f"{w.name!r}'s job slots")
    fewest_servers(job_slots * w.gpus_per_job, spec, f"{job_slots:,} jobs at once of {w.gpus_per_job} GPUs")
    host = host_for_server(pool.ctx.server, pool.ctx.accelerator, ratio=policies.host_ram_ratio)
    d = Demand(w.name, f"workloads.{index}", tuple(split(w.gpus_per_job, spec.gpus_per_server) * job_slots),
               _host_per_gpu(float(host.memory.total_bytes), spec), _nics_per_gpu(w.gpus_per_job, spec), slots)
    capacity = (spec.fixed or spec.limit or math.inf) * spec.gpus_per_server
    why = "" if w.gpus_per_job <= capacity else (f"one job needs {w.gpus_per_job} GPUs; pool {spec.name!r} holds "
                                                 f"at most {capacity:g}")
    return Candidate(pool_index, None, d, not why, why)
