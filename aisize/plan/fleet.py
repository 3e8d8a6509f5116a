"""The fleet through the day: each service's day and cost, the GPUs free in the troughs, tenants, spares,
heterogeneous pools, failures and the site's power envelope.

Glue only, after the rest of the plan (it needs the pools' $/GPU-hour): services from
:mod:`aisize.plan.service_day`; tenants :func:`aisize.queueing.priority_queue` on the service's
slots at the peak; spares and goodput :mod:`aisize.fleet.failures`; heterogeneous pools
:func:`aisize.fleet.hetero.heterogeneous`; power :mod:`aisize.fleet.power`.

Tenants: a service's requests wait for one of its replicas' places and hold it for the request's
time; a replica has capacity x request time places (Little's law at its capacity), so the queue
saturates where the replicas do. Classes of that queue wait by priority, shown at the tightest
period of the day (the highest load per ready replica). A tenant's time to first token is its
wait plus the replica's own time to the first token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aisize import checks
from aisize.cost import load_prices
from aisize.fleet.cost import DayCost, day_cost, server_usd_per_gpu_hour
from aisize.fleet.failures import FailureRates, Spares, failure_rates, spares_for
from aisize.fleet.hetero import heterogeneous
from aisize.fleet.power import CoolingLoad, Efficiency, Envelope, cooling_load, efficiency, envelope
from aisize.plan import context as C
from aisize.plan.service_day import ServiceDay, fleet_of, service_day
from aisize.plan.timeline import _in_window
from aisize.queueing import PriorityClass, PriorityResult, priority_queue
from aisize.queueing.analytic import MAX_SERVERS as QUEUE_SERVERS
from aisize.units import HOUR, MINUTE

DEFAULT_FAILURES = "llama3-405b-h100"  # spares need per-GPU rates; node-mtbf scenarios use this published fleet


@dataclass(frozen=True)
class ServiceFleetPlan:
    """One service through the day, priced, with its tenants, spares and heterogeneous options."""

    day: ServiceDay
    pool: str
    cost: DayCost
    tenants: PriorityResult | None  # at the tightest period of the day (``tenants_at_seconds``)
    tenants_at_seconds: float  # time of day of that period [s from midnight]
    tenant_ttft_seconds: tuple  # mean time to first token of each tenant (inf where unstable)
    tenant_ttft_targets_seconds: tuple  # each tenant's target (the service's where not given)
    spares: Spares | None
    heterogeneous: pd.DataFrame | None
    efficiency: Efficiency | None  # over the day, at the pool's server power

    @property
    def stable(self) -> bool:
        """Every tenant's queue is stable at the tightest period (else some TTFTs are unbounded)."""
        return self.tenants is None or self.tenants.stable


@dataclass(frozen=True)
class PoolDay:
    """A pool's GPUs through the day: installed, held by workloads, free (the troughs)."""

    pool: str
    installed_gpus: int
    busy_gpus: np.ndarray  # 24 values: the most GPUs workloads hold in each hour
    by_workload: dict  # workload -> 24 values

    @property
    def free_gpus(self) -> np.ndarray:
        return self.installed_gpus - self.busy_gpus

    @property
    def free_gpu_hours(self) -> float:
        return float(self.free_gpus.sum())


@dataclass(frozen=True)
class FailuresBasis:
    """Where the plan's failure rates come from (worded by :func:`aisize.present.fleet_text.failures_basis_text`):
    ``source`` published (``rates_id``, a published fleet of data/failure_rates.csv, ``policies.failure_rates``) |
    node-mtbf (``node_mtbf_hours``, ``policies.node_mtbf_hours``)."""

    source: str
    rates_id: str | None = None
    node_mtbf_hours: float | None = None

    def __post_init__(self):
        if (self.source, self.rates_id is None, self.node_mtbf_hours is None) not in (
                ("published", False, True), ("node-mtbf", True, False)):
            raise ValueError(f"failures basis {self.source!r} (rates_id={self.rates_id!r}, node_mtbf_hours="
                             f"{self.node_mtbf_hours!r}) is not allowed: published with a rates_id, or node-mtbf "
                             "with node_mtbf_hours")


@dataclass(frozen=True)
class FleetPlan:
    """The fleet figures of a plan."""

    services: tuple[ServiceFleetPlan, ...]
    pools: tuple[PoolDay, ...]
    failure_rates: FailureRates
    failures_basis: FailuresBasis
    envelope: tuple  # Envelope per pool (site given), else ()
    site_fits: bool | None
    site_it_watts_needed: float
    cooling: tuple[CoolingLoad, ...]

    def service(self, name: str) -> ServiceFleetPlan:
        return next(s for s in self.services if s.day.name == name)


def _rates(policies) -> tuple[FailureRates, FailuresBasis]:
    basis = (FailuresBasis("published", rates_id=policies.failure_rates) if policies.failure_rates != "node-mtbf"
             else FailuresBasis("node-mtbf", node_mtbf_hours=float(policies.node_mtbf_hours)))
    return C.failure_rates_of(policies), basis


def tenant_classes(w, sd: ServiceDay, rate_per_s: float, ready: int, calibration=None):
    """The service's tenants as priority classes on ``ready`` replicas (highest priority first), and the
    servers of that queue: each replica a ``capacity x request time`` places (Little's law at capacity)."""
    f = fleet_of(w)
    i = sd.peak_plan
    hold = max(i.request_seconds, 1e-9)
    slots = max(int(round(sd.capacity_per_replica_per_s * hold)), 1)
    order = sorted(f.tenants, key=lambda t: t.priority)
    places = checks.count("request places in the tenants' queue", max(ready, 1) * slots, QUEUE_SERVERS,
                          why=f"{max(ready, 1):,} replicas x {slots:,} requests each at once "
                              f"({sd.capacity_per_replica_per_s:.3g} requests/s x {hold:.3g} s a request)"
                              + (f"; the scenario's serving calibration sets {slow}"
                                 if calibration is not None and (slow := calibration.slowdowns()) else ""))
    return [PriorityClass(t.name, rate_per_s * t.share, hold, w.length_cv) for t in order], places


def _tenants(w, sd: ServiceDay, calibration=None):
    """Tenants at the tightest period of the day: the highest load per ready replica (a ramp that outruns
    the loading replicas, else the peak)."""
    f = fleet_of(w)
    if f is None or not f.tenants:
        return None, (), (), 0.0
    d = sd.day
    load = d.rate_per_s / np.maximum(d.ready * sd.capacity_per_replica_per_s, 1e-12)
    k = int(np.argmax(load))
    classes, servers = tenant_classes(w, sd, float(d.rate_per_s[k]), int(d.ready[k]), calibration)
    r = priority_queue(classes, servers, preemptive=f.preemptive)
    ttft = tuple(wait + sd.peak_plan.ttft_seconds for wait in r.wait_mean_seconds)
    order = sorted(f.tenants, key=lambda t: t.priority)
    targets = tuple((t.ttft_target_ms or w.ttft_target_ms) / 1e3 for t in order)
    return r, ttft, targets, float(d.seconds[k])


def _spares(w, sd: ServiceDay, rates: FailureRates, policies, gpus_per_server: int):
    f = fleet_of(w)
    if f is None or f.availability_target is None:
        return None
    g = sd.gpus_per_replica
    return spares_for(rates, replicas=max(sd.day.peak_replicas, 1), gpus_per_replica=g,
                      servers_per_replica=max(math.ceil(g / gpus_per_server), 1),
                      recovery_seconds=policies.restart_minutes * MINUTE + sd.scale_up_seconds,
                      availability_target=f.availability_target,
                      field=f"workloads[{w.name}].fleet.availability_target")


def _hetero(w, scenario, prices):
    f = fleet_of(w)
    if f is None or f.heterogeneous is None:
        return None
    h = f.heterogeneous
    servers = sorted(set(h.prefill_servers) | set(h.decode_servers))
    usd = {s: server_usd_per_gpu_hour(s, prices, life_years=scenario.cost.life_years,
                                      average_power_share=scenario.cost.average_power_share) for s in servers}
    return heterogeneous(w.model, prefill_servers=h.prefill_servers, decode_servers=h.decode_servers,
                         requests_per_s=w.requests_per_s * (f.load_profile.peak if f.load_profile else 1.0),
                         input_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                         ttft_target_s=w.ttft_target_ms / 1e3, tpot_target_s=w.tpot_target_ms / 1e3,
                         usd_per_gpu_hour=usd, statistic=w.slo_statistic, weight_precision=w.weight_precision,
                         kv_precision=w.kv_precision, target_utilisation=h.target_utilisation,
                         calibration=C.serving_calibration(scenario.policies))


def _hourly_use(w, kind, gpus, day: ServiceDay | None) -> np.ndarray:
    """GPUs a placed workload holds in each hour of the day."""
    if day is not None:
        return day.day.hourly("provisioned", "max") * day.gpus_per_replica
    hours = getattr(getattr(w, "when", None), "hours", None)
    return np.array([gpus if _in_window((h, h + 1), hours) else 0 for h in range(24)], dtype=float)


def whole_fleet(pools: tuple[PoolDay, ...]) -> PoolDay:
    """Every pool's GPUs through the day together (the whole fleet's day curve)."""
    by: dict = {}
    for p in pools:
        for w, v in p.by_workload.items():
            by[w] = by.get(w, np.zeros(24)) + v
    return PoolDay("all pools", sum(p.installed_gpus for p in pools), sum((p.busy_gpus for p in pools), np.zeros(24)),
                   by)


def fleet_plan(plan, pools, days_known=None) -> FleetPlan:
    """The fleet figures of a finished plan (``pools``: the resolved pools, in the plan's order; ``days_known``:
    the service days the planner already made, by workload name, read rather than made again)."""
    scenario, pol = plan.scenario, plan.scenario.policies
    prices = load_prices().with_overrides(scenario.cost.prices)
    rates, basis = _rates(pol)
    spare_rates = rates if rates.per_gpu_hour > 0 else failure_rates(DEFAULT_FAILURES)
    ctx_of = {p.spec.name: p.ctx for p in pools}
    rate_of = {r["pool"]: r["usd_per_gpu_hour"] for r in plan.cost.pools}
    pool_of = {w: a["pool"] for w, a in plan.placement.assignment.items()}
    pue = scenario.site.pue if scenario.site is not None and scenario.site.pue else prices.usd("pue")
    services, days = [], {}
    for w in scenario.workloads:
        if w.kind != "inference" or w.name not in pool_of:
            continue
        ctx = ctx_of[pool_of[w.name]]
        sd = (days_known or {}).get(w.name) or service_day(w, ctx, pol)
        days[w.name] = sd
        if fleet_of(w) is None:
            continue
        cost = day_cost(sd.day.gpu_hours, rate_of[pool_of[w.name]], sd.output_tokens_per_day,
                        reserved_gpus=sd.day.peak_replicas * sd.gpus_per_replica)
        tenants, ttft, targets, at = _tenants(w, sd, C.serving_calibration(pol))
        eff = efficiency(servers=sd.day.gpu_hours / 24.0 / ctx.server.gpus, server_power_watts=ctx.server.power_watts,
                         average_power_share=scenario.cost.average_power_share, pue=pue,
                         output_tokens_per_s=sd.output_tokens_per_day / 86400.0)
        spares = _spares(w, sd, spare_rates, pol, ctx.server.gpus)
        services.append(ServiceFleetPlan(sd, pool_of[w.name], cost, tenants, at, ttft, targets, spares,
                                         _hetero(w, scenario, prices), eff))
    pool_days = []
    kinds = {w.name: w for w in scenario.workloads}
    gpus_of = {p.name: p.gpus for p in plan.workloads if hasattr(p, "gpus")}
    gpus_of.update({s.name: s.gpus for s in plan.job_streams})
    for pp in plan.pools:
        by = {n: _hourly_use(kinds[n], None, gpus_of.get(n, 0), days.get(n)) for n in pp.workloads}
        busy = np.minimum(sum(by.values(), np.zeros(24)), pp.gpus)
        pool_days.append(PoolDay(pp.name, pp.gpus, busy, by))
    env, fits, need, cooling = (), None, 0.0, []
    for pool, pp in zip(pools, plan.pools):
        cooling.append(cooling_load(pp.server, pp.servers, pool.ctx.server.power_watts))
    if scenario.site is not None:
        site = scenario.site
        env = tuple(envelope(site.power_mw, pue, server_power_watts=p.ctx.server.power_watts,
                             gpus_per_server=p.ctx.server.gpus, other_it_share=site.other_it_share)
                    for p in pools)
        need = sum(pp.servers * p.ctx.server.power_watts * (1.0 + site.other_it_share)
                   for p, pp in zip(pools, plan.pools))
        fits = need <= site.power_mw * 1e6 / pue
    return FleetPlan(tuple(services), tuple(pool_days), rates, basis, env, fits, float(need), tuple(cooling))


def hourly_table(sfp: ServiceFleetPlan) -> pd.DataFrame:
    """A service's day by hour: rate, replicas (most and mean), GPUs, and $ per hour at the pool's rate."""
    d = sfp.day.day
    rate = d.rate_per_s.reshape(24, -1).mean(axis=1)
    most = d.hourly("provisioned", "max")
    return pd.DataFrame({"hour": np.arange(24), "requests_per_s": rate, "replicas_max": most,
                         "replicas_mean": d.hourly("provisioned", "mean"),
                         "gpus_max": most * sfp.day.gpus_per_replica,
                         "usd_per_hour": d.hourly("provisioned", "mean") * sfp.day.gpus_per_replica
                         * sfp.cost.usd_per_gpu_hour})


def check_site(scenario, pools) -> None:
    """Raise ValueError naming ``site.power_mw`` when the site cannot power one server of a pool."""
    site = scenario.site
    if site is None:
        return
    pue = site.pue or load_prices().with_overrides(scenario.cost.prices).usd("pue")
    for p in pools:
        envelope(site.power_mw, pue, server_power_watts=p.ctx.server.power_watts, gpus_per_server=p.ctx.server.gpus,
                 other_it_share=site.other_it_share)


def needs_fleet(scenario) -> bool:
    """Whether the scenario asks for fleet figures (a service's fleet, a site, published failure rates)."""
    return (scenario.site is not None or scenario.policies.failure_rates != "node-mtbf"
            or any(fleet_of(w) is not None for w in scenario.workloads))


__all__ = ["FailuresBasis", "FleetPlan", "ServiceFleetPlan", "PoolDay", "fleet_plan", "hourly_table", "needs_fleet",
           "whole_fleet", "check_site", "fleet_findings", "tenant_classes", "Envelope"]


def fleet_findings(plan) -> list:
    """Findings about the fleet through the day (none without fleet figures), as typed facts
    (:class:`aisize.plan.findings.Finding`; :mod:`aisize.present.findings` words them)."""
    from aisize.plan.findings import Finding

    f = plan.fleet
    if f is None:
        return []
    out = []
    for s in f.services:
        d, c = s.day, s.cost
        out.append(Finding("info", "inference", "fleet.service_day", {
            "workload": d.name, "least_replicas": d.day.least_replicas, "peak_replicas": d.day.peak_replicas,
            "gpu_hours": d.day.gpu_hours, "peak_held_gpu_hours": d.day.peak_replicas * d.gpus_per_replica * 24,
            "usd_per_million_tokens": c.usd_per_million_tokens,
            "usd_per_million_tokens_peak_held": c.usd_per_million_tokens_reserved}))
        if d.day.overloaded_hours > 0:
            out.append(Finding("warning", "inference", "fleet.overloaded", {
                "workload": d.name, "overloaded_seconds": d.day.overloaded_hours * HOUR,
                "scale_up_seconds": d.scale_up_seconds}))
        if s.tenants is not None and s.tenants.unstable_classes:
            out.append(Finding("warning", "inference", "fleet.tenants_unstable", {
                "workload": d.name, "at_seconds": s.tenants_at_seconds, "tenants": tuple(s.tenants.unstable_classes)}))
        if s.heterogeneous is not None and len(s.heterogeneous) and s.heterogeneous.iloc[0].feasible:
            b = s.heterogeneous.iloc[0]
            out.append(Finding("info", "inference", "fleet.cheapest_pair", {
                "workload": d.name, "prefill_server": b.prefill_server, "decode_server": b.decode_server,
                "usd_per_million_tokens": float(b.usd_per_million_tokens)}))
    for pd_ in f.pools:
        if pd_.free_gpu_hours > 0:
            out.append(Finding("info", "placement", "fleet.free_gpus", {
                "pool": pd_.pool, "free_gpu_hours": pd_.free_gpu_hours, "free_gpus_max": int(pd_.free_gpus.max())}))
    if f.site_fits is False:
        out.append(Finding("problem", "power", "power.site_short", {
            "it_watts_needed": f.site_it_watts_needed, "it_watts_supplied": f.envelope[0].it_watts}))
    return out
