"""The whole plan: every workload on its pool, packed onto servers over time, then fabric, storage, cost.

Each GPU workload is planned on the hardware of the pools it may use
(:mod:`aisize.plan.pools`); job streams get the GPUs their wait target needs
(:mod:`aisize.plan.jobstreams`); the packer puts them on servers, sharing
servers among workloads that fit together or never run at the same time
(:mod:`aisize.plan.placement`, :mod:`aisize.plan.timeline`). Servers, GPUs,
racks and power are those of the packed pools; the compute fabric is the
cheapest design that carries them with the stated growth margin
(:func:`aisize.network.fabric.choose_fabric`); cost last (:mod:`aisize.plan.costing`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from aisize import checks
from aisize.cost import load_prices
from aisize.network.fabric import compute_nics_for, storage_network
from aisize.plan import job as J
from aisize.plan import pools as P
from aisize.plan.context import HardwareContext
from aisize.plan.incremental import workload_key
from aisize.plan.dataprep import DataPrepPlan, plan_dataprep
from aisize.plan.inference import InferencePlan
from aisize.plan.kvtiers import on_bought_storage
from aisize.plan.jobstreams import JobStreamPlan, plan_job_stream, target_slots
from aisize.plan.network import NetworkPlan, PoolFabric, network_plan, pool_fabric
from aisize.plan.placement import Placement, pack
from aisize.plan.fleet import check_site, fleet_plan, needs_fleet
from aisize.plan.service_day import day_candidate, fleet_of, scale_up_reads, service_day
from aisize.plan.storage import StoragePlan, plan_storage, storage_views
from aisize.plan.timeline import Timeline, active_slots, build_timeline
from aisize.plan.training import TrainingPlan


@dataclass(frozen=True)
class PoolPlan:
    """One pool after packing: its servers, GPUs, racks, power and compute fabric."""

    name: str
    server: str
    accelerator: str
    servers: int
    gpus: int
    racks: int
    servers_per_rack: int
    power_watts: float  # at the servers' maximum power
    lower_bound_servers: int  # fewest servers any packing could use (GPUs alone)
    fixed_servers: int | None
    workloads: tuple[str, ...]
    fabric: PoolFabric


@dataclass(frozen=True)
class Plan:
    """A scenario's bill of materials and the figures behind it."""

    scenario_name: str
    server: str  # the first pool's server (every pool in ``pools``)
    accelerator: str
    storage_system: str
    training: tuple[TrainingPlan, ...]
    inference: tuple[InferencePlan, ...]
    dataprep: tuple[DataPrepPlan, ...]
    gpus: int  # GPUs installed in all pools' servers
    servers: int
    racks: int
    servers_per_rack: int
    power_watts: float  # GPU servers at their maximum system power
    host_memory_needed_bytes: float  # the most any workload needs on one server
    server_host_memory_bytes: float
    network: NetworkPlan
    storage: StoragePlan
    policies: dict
    assumptions: dict
    findings: tuple = ()  # aisize.plan.findings.Finding, filled by plan()
    scenario: object = None  # the aisize.scenario.Scenario planned
    job_streams: tuple[JobStreamPlan, ...] = ()
    pools: tuple[PoolPlan, ...] = ()
    placement: Placement | None = None
    timeline: Timeline | None = None
    cost: object = None  # aisize.plan.costing.CostPlan
    gpus_busy_peak: int = 0  # the most GPUs workloads hold at one time
    fleet: object = None  # aisize.plan.fleet.FleetPlan: services through the day, troughs, failures, power

    @property
    def workloads(self) -> tuple:
        """Every workload plan in scenario order groups: training, inference, data preparation."""
        return self.training + self.inference + self.dataprep


def _candidates(scenario, pools, slots, policies, stream_slots, cache=None):
    """{workload: [Candidate, ...]} for every GPU workload, in the pools it may use (fitting ones first).

    With a :class:`~aisize.plan.incremental.PlanCache`, a workload whose inputs did not change since an
    earlier plan takes its candidate from there."""
    names = [p.spec.name for p in pools]
    declared = any(p.declared for p in pools)
    out = {}
    for index, w in enumerate(scenario.workloads):
        if w.kind == "data-prep":
            continue
        which = [names.index(w.pool)] if w.pool is not None else range(len(pools))
        found = [_candidate(w, index, k, pools[k], policies, slots, stream_slots, cache) for k in which]
        fitting = [c for c in found if c.fits]
        if declared and not fitting:
            field = f"workloads.{index}.pool" if w.pool is not None else f"workloads.{index}"
            if w.kind == "job-stream":
                field = f"workloads.{index}.gpus_per_job"
            reasons = "; ".join(f"pool {pools[c.pool].spec.name!r} ({pools[c.pool].spec.server}): {c.why}"
                                for c in found)
            raise ValueError(f"{field}: no pool can hold {w.name!r}: {reasons}")
        if not fitting and w.kind == "job-stream":
            raise ValueError(f"workloads.{index}.gpus_per_job: {found[0].why}")
        out[w.name] = fitting or found[:1]  # the implicit pool keeps a misfit: findings report it
    return out


def _candidate(w, index, k, pool, policies, slots, stream_slots, cache):
    """One workload's candidate on pool ``k``, from ``cache`` where its inputs are unchanged."""
    def compute(ctx, pol):
        # the candidate reads the pool's spec and hardware context only (hardware None: a read would fail loudly)
        on = dataclasses.replace(pool, ctx=ctx, hardware=None) if cache is not None else pool
        if w.kind == "training":
            return P.training_candidate(w, index, k, on, pol, slots.active[w.name])
        if w.kind == "inference":
            return day_candidate(w, index, k, on, pol, slots)
        return P.stream_candidate(w, index, k, on, pol, slots.active[w.name], stream_slots.get(w.name) or 1)

    if cache is None:
        return compute(pool.ctx, policies)
    base = ("candidate", workload_key(w), index, k, repr(pool.spec), pool.declared, pool.per_rack, pool.max_racks,
            slots.phases, slots.segments, slots.active[w.name], stream_slots.get(w.name))
    if w.kind != "training":
        return cache.call(base, pool.ctx, compute, share=(w.name, k))
    # a training job's layout search is memoised on the whole context: it gets the context itself, and its entry
    # rests on every field but the oversubscription where no count it searched or estimated could see the ratio
    counts = []

    def counted(ctx, pol):
        with J.counts_seen() as seen:
            value = compute(ctx, pol)
        counts.extend(seen)
        return value

    def rests_on():
        return BUT_THE_FABRIC if _fabric_free(counts, pool.ctx) else None
    return cache.call(base, pool.ctx, counted, track_ctx=False, share=(w.name, k), rests_on=rests_on)


BUT_THE_FABRIC = frozenset(f.name for f in dataclasses.fields(HardwareContext)) - {"oversubscription"}


def _fabric_free(counts: list, ctx) -> bool:
    """Whether a training plan whose searches and estimates ran at ``counts`` GPUs plans the same at any
    oversubscription: the leaves' ratio slows only a group spanning more than ``switch_radix`` scale-up domains
    (:func:`aisize.training.comm.scaleout_rate`) and a group of n ranks spans at most n, so at most ``switch_radix``
    GPUs every figure, and so every count the sizing tries next, is the same. No counts (a memoised plan, a job
    without a layout search) say nothing."""
    return bool(counts) and max(counts) <= ctx.switch_radix


def _service_day(w, k, pool, policies, cache):
    """:func:`aisize.plan.service_day.service_day` of a service on pool ``k``, from ``cache`` where unchanged
    (with the wrappers its candidate was planned with, whose memoised day it then reuses)."""
    if cache is None:
        return service_day(w, pool.ctx, policies)
    return cache.call(("day", workload_key(w), k), pool.ctx, lambda ctx, pol: service_day(w, ctx, pol),
                      share=(w.name, k))


def _order(scenario, cands) -> list[str]:
    """First-fit decreasing: largest piece first, then the workload active in more slots, then scenario order."""
    names = [w.name for w in scenario.workloads if w.name in cands]
    return sorted(names, key=lambda n: (-max(cands[n][0].demand.items), -len(cands[n][0].demand.slots),
                                        names.index(n)))


def _rest_streams(scenario, pools, cands):
    """Job streams that take what their pool has left: (name, pool index, one job's Demand)."""
    out = []
    for index, w in enumerate(scenario.workloads):
        if w.kind != "job-stream" or w.gpus != "rest":
            continue
        c = cands.pop(w.name)[0]
        spec = pools[c.pool].spec
        if spec.fixed is None and spec.limit is None:
            raise ValueError(f"workloads.{index}.gpus: 'rest' needs a pool with a fixed number of servers (or "
                             f"max_servers); pool {spec.name!r} grows as needed")
        one = P.split(w.gpus_per_job, spec.gpus_per_server)
        out.append((w.name, c.pool, dataclasses.replace(c.demand, items=tuple(one))))
    return out


def _peak_gpus(placement: Placement, slot_count: int) -> int:
    busy = [0] * max(slot_count, 1)
    for s in placement.servers:
        for entry in s.workloads:
            for t in entry["slots"]:
                busy[t] += entry["gpus"]
    return max(busy)


def plan(scenario, cache=None) -> Plan:
    """Plan a :class:`~aisize.scenario.Scenario`: a bill of materials, the figures behind it, and findings.

    Raises ValueError (naming the workload and field) when a fixed layout or input is inconsistent,
    or when a pool cannot hold what is pinned to it, or when the inputs ask for more than the
    formulas accept (:mod:`aisize.plan.errors`). ``cache``: a :class:`~aisize.plan.incremental.PlanCache`
    whose per-workload results of earlier plans are reused where their inputs did not change (the app's).
    """
    from aisize.plan.errors import planning_error

    if scenario.site is not None:  # a site below one server is the site's error, not a workload's
        check_site(scenario, P.resolve_pools(scenario))
    fixed = {f"pools.{i}.servers": p.servers for i, p in enumerate(scenario.pools) if p.servers != "auto"}
    if sum(fixed.values()) > checks.MAX_SERVERS:  # the packer makes them all first: the pools' error, not a workload's
        raise ValueError(f"{', '.join(fixed)}: {sum(fixed.values()):,} servers in all, more than aisize plans "
                         f"({checks.MAX_SERVERS:,})")
    try:
        return _plan(scenario, cache)
    except (ValueError, ArithmeticError) as error:
        raise planning_error(error, scenario, _plan) from error


def _plan(scenario, cache=None) -> Plan:
    from aisize.plan.costing import plan_cost
    from aisize.plan.findings import assumptions_used, findings

    pol = scenario.policies
    pools = P.resolve_pools(scenario)
    slots = active_slots(scenario)
    streams = {w.name: target_slots(w) for w in scenario.workloads if w.kind == "job-stream"}
    if cache is not None:
        cache.begin(pol)
    cands = _candidates(scenario, pools, slots, pol, streams, cache)
    fill = _rest_streams(scenario, pools, cands)
    placement, chosen, filled = _packed(pools, cands, _order(scenario, cands), slots, tuple(fill), cache)
    picked = {n: next(c for c in cs if c.pool == chosen[n]) for n, cs in cands.items()}
    training = tuple(picked[w.name].plan for w in scenario.workloads if w.kind == "training")
    inference = tuple(picked[w.name].plan for w in scenario.workloads if w.kind == "inference")
    dataprep = tuple(plan_dataprep(w) for w in scenario.workloads if w.kind == "data-prep")
    stream_plans = []
    for w in scenario.workloads:
        if w.kind == "job-stream":
            jobs = filled.get(w.name, streams[w.name])
            if not jobs:
                i = scenario.workloads.index(w)
                raise ValueError(f"workloads.{i}.gpus: 'rest' leaves no room for one {w.gpus_per_job}-GPU job in "
                                 f"pool {pools[chosen[w.name]].spec.name!r}")
            stream_plans.append(plan_job_stream(w, jobs, pools[chosen[w.name]].spec.name))
    primary = pools[0].ctx
    pool_plans = _pool_plans(scenario, pools, placement, cache)
    servers = sum(p.servers for p in pool_plans)
    read_per_server = sum(t.read_bytes_per_s for t in training) / max(servers, 1)
    nics = compute_nics_for(primary.server, primary.scale_out_link)
    days = {w.name: _service_day(w, chosen[w.name], pools[chosen[w.name]], pol, cache) for w in scenario.workloads
            if fleet_of(w) is not None and w.name in chosen}
    reads = {n: scale_up_reads(sd) for n, sd in days.items()}

    services = storage_views(inference)  # what storage reads of each service: a service move keeps its figures

    def storage_plan(ctx, policies):
        return plan_storage(training, services, dataprep, ctx, policies, servers, nics, reads)
    # a move that leaves every workload's plan, or what the storage reads of it, and what the storage read of the
    # hardware and policies as they were (a price, the fabric, a service's latency) keeps it
    storage = storage_plan(primary, pol) if cache is None else cache.reuse(
        "storage", (training, services, dataprep, servers, nics, reads), primary, storage_plan)
    # second pass: the services' KV tiers on the storage bought (sized on the first pass's demand; no cycle)
    by_name = {w.name: w for w in scenario.workloads}
    inference = tuple(on_bought_storage(i, by_name[i.name], pools[chosen[i.name]].ctx, pol, storage.record)
                      for i in inference)
    net = _network(scenario, primary, pool_plans, servers, nics, read_per_server, storage, cache)
    host_need = max([p.host_memory_needed_bytes for p in training + inference], default=0.0)
    kinds = {w.name: w for w in scenario.workloads}
    placed = {}
    for p in training:
        placed[p.name] = ("training", p.team, placement.assignment[p.name]["pool"], p.gpus, p.training_days, p.gpus)
    for p in inference:  # a service through the day keeps its GPUs busy on average over the day
        busy = days[p.name].day.gpu_hours / 24.0 if p.name in days else p.gpus
        placed[p.name] = ("inference", p.team, placement.assignment[p.name]["pool"], p.gpus, None, busy)
    for p in stream_plans:
        placed[p.name] = ("job-stream", p.team, placement.assignment[p.name]["pool"], p.gpus, None, p.offered_gpus)
    gpus = sum(p.gpus for p in pool_plans)
    assumptions = assumptions_used(pol) if cache is None else cache.reuse(  # the policies' fields it read, as they were
        "assumptions", (), primary, lambda ctx, policies: assumptions_used(policies))
    timeline = build_timeline(scenario, {n: placed[n] for n in kinds if n in placed}, gpus)
    p = Plan(scenario.name, pools[0].ctx.server.id, pools[0].ctx.accelerator.id, primary.storage.id, training,
             inference, dataprep, int(gpus), int(servers), int(sum(x.racks for x in pool_plans)),
             int(pool_plans[0].servers_per_rack), float(sum(x.power_watts for x in pool_plans)), float(host_need),
             float(primary.server.host_memory_bytes), net, storage, pol.model_dump(mode="json"),
             assumptions, (), scenario, tuple(stream_plans), pool_plans, placement, timeline, None,
             _peak_gpus(placement, slots.count()))
    p = dataclasses.replace(p, cost=plan_cost(p, pools))
    if needs_fleet(scenario):
        p = dataclasses.replace(p, fleet=fleet_plan(p, pools, days))
    return dataclasses.replace(p, findings=tuple(findings(p)))


# Whole-plan steps after the workloads' plans, from ``cache`` (PlanCache.reuse) where their inputs are equal to the
# last plan's: a move that leaves every workload's demand as it was (a service's latency target, a length CV at the
# same replicas) keeps the placement, the pools' fabrics and the network. Each key holds every value its step reads
# (the scenario's hardware by its JSON, the price overrides as given: the price table itself is fixed in a process).

def _packed(pools, cands, order, slots, fill, cache):
    """:func:`aisize.plan.placement.pack` of the candidates' demands, the placement labelled with the slots."""
    specs = [p.spec for p in pools]
    demands = {n: [(c.pool, c.demand) for c in cs] for n, cs in cands.items()}

    def packed(ctx=None, policies=None):
        placement, chosen, filled = pack(specs, demands, order, slots.count(), fill)
        return dataclasses.replace(placement, slot_labels=slots.labels()), chosen, filled
    if cache is None:
        return packed()
    return cache.reuse("placement", (specs, demands, order, slots.count(), fill, slots.labels()), pools[0].ctx,
                       packed)


def _pool_plans(scenario, pools, placement, cache) -> tuple:
    """Each pool's :class:`PoolPlan` (its racks, power and compute fabric) after packing."""
    def planned(ctx=None, policies=None):
        prices = load_prices().with_overrides(scenario.cost.prices)
        return tuple(_pool_plan(p, pp, scenario.hardware, placement, prices) for p, pp in zip(pools, placement.pools))
    if cache is None:
        return planned()
    read = tuple((p.spec, p.ctx, p.per_rack, p.max_racks) for p in pools)  # what _pool_plan reads of a pool
    return cache.reuse("pools", (read, placement, scenario.hardware.model_dump_json(), dict(scenario.cost.prices)),
                       pools[0].ctx, planned)


def _network(scenario, primary, pool_plans, servers, nics, read_per_server, storage, cache):
    """:func:`aisize.plan.network.network_plan`: the pools' compute fabrics and the storage network."""
    supply, scaleup = storage.supply_read_bytes_per_s, J.scaleup(primary)
    if cache is None:
        return network_plan(primary, scenario.hardware, pool_plans, servers, nics, read_per_server, supply, scaleup)
    return cache.reuse("network", (pool_plans, servers, nics, read_per_server, supply, scaleup,
                                   scenario.hardware.model_dump_json()), primary,
                       lambda ctx, pol: network_plan(ctx, scenario.hardware, pool_plans, servers, nics,
                                                     read_per_server, supply, scaleup))


def _pool_plan(pool: P.Pool, placed, hardware, placement: Placement, prices) -> PoolPlan:
    ctx, n = pool.ctx, placed.servers
    racks = math.ceil(n / pool.per_rack) if n else 0
    if pool.max_racks is not None and racks > pool.max_racks:  # guarded by the packer's limit; kept as a check
        raise ValueError(f"{pool.spec.field_path}.max_racks: {racks} racks needed, {pool.max_racks} allowed")
    names = tuple(w for w, a in placement.assignment.items() if a["pool"] == pool.spec.name)
    spans = any(s.peak_nics > 0 for s in placement.servers if s.pool == pool.spec.name)
    return PoolPlan(pool.spec.name, ctx.server.id, ctx.accelerator.id, n, n * ctx.server.gpus, racks, pool.per_rack,
                    float(n * ctx.server.power_watts), placed.lower_bound_servers, pool.spec.fixed, names,
                    pool_fabric(ctx, hardware, n, prices, spans=spans))


__all__ = ["Plan", "PoolPlan", "NetworkPlan", "plan", "storage_network"]
