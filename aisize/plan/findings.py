"""Findings about a plan as typed facts: what does not fit, what binds, what is over-provisioned.

One function per kind of finding, each returning a list of :class:`Finding`; :func:`findings` runs them all
(problems first) and ends with the assumptions used. A finding states its figures, named with their units,
under a stable ``code``; the planner writes no words: :func:`aisize.present.findings.finding_text` says each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aisize.plan import context as C
from aisize.serving.curves import LOAD_RISE

SEVERITIES = ("problem", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One statement about a plan: its severity, its area, the check and case that found it (``code``, stable:
    surfaces and tests key on it) and the figures it states (``facts``, names carry units: ``_bytes``,
    ``_seconds``, ``_share`` for 0-1 fractions, ``_per_s``)."""

    severity: str  # problem | warning | info
    area: str  # memory | host | storage | network | fabric | compute | checkpoint | inference | placement | queue
    # | cost | power | assumptions
    code: str
    facts: dict = field(default_factory=dict, hash=False)
    # plan objects the sentence reads whose figures the plan's JSON states elsewhere (the scenario, the cost):
    # not exported again with the finding
    refs: dict = field(default_factory=dict, hash=False, compare=False, metadata={"export": False})


def _f(severity: str, area: str, code: str, refs: dict | None = None, **facts) -> Finding:
    return Finding(severity, area, code, facts, refs or {})


def memory_fit(plan) -> list[Finding]:
    out = [_f("problem", "memory", "memory.training_does_not_fit", workload=t.name,
              needed_bytes=t.memory_bytes["total_bytes"], layout=t.layout, accelerator=plan.accelerator,
              usable_bytes=t.gpu_memory_usable_bytes)
           for t in plan.training if not t.memory_fits]
    out += [_f("problem", "memory", "memory.service_does_not_fit", workload=i.name,
               kv_bytes_per_user=i.kv_bytes_per_user, gpus_per_replica=i.gpus_per_replica,
               accelerator=plan.accelerator, reason=i.estimate.reason if i.estimate else None)
            for i in plan.inference if not i.fits]
    return out


def host_memory(plan) -> list[Finding]:
    out = [_f("problem", "host", "host.ram_short", workload=p.name, needed_bytes=p.host_memory_needed_bytes,
              server=plan.server, server_bytes=p.server_host_memory_bytes)
           for p in plan.training + plan.inference if not p.host_memory_fits]
    need = plan.host_memory_needed_bytes
    if need and not out and plan.server_host_memory_bytes > C.OVERPROVISION_FACTOR * need:
        out.append(_f("info", "host", "host.ram_overprovisioned", server=plan.server,
                      server_bytes=plan.server_host_memory_bytes, needed_bytes=need))
    return out


def storage_binding(plan) -> list[Finding]:
    s = plan.storage
    over = {k: u for k, u in s.utilisation.items() if u is not None and u > 1.0}
    if s.scope in ("system", "node") and over:
        return [_f("problem", "storage", "storage.too_small", system=s.system, worst=max(over, key=over.get),
                   over_share=over)]
    if s.scope in ("unit", "drive"):
        return [_f("info", "storage", "storage.units_bought", system=s.system, units=s.units, binding=s.binding,
                   units_by=dict(s.units_by))]
    return [_f("info", "storage", "storage.binding", system=s.system, binding=s.binding,
               utilisation_share=s.utilisation[s.binding])]


def storage_capacity(plan) -> list[Finding]:
    """Capacity is sized only where the catalog gives the storage's capacity; otherwise say what to check."""
    s = plan.storage
    if s.supply_capacity_bytes is not None:
        return []  # counted in the units (unit, drive) or in the utilisation (system, node)
    return [_f("warning", "storage", "storage.capacity_unpublished", system=s.system,
               raw_bytes=s.capacity_bytes["raw_bytes"], usable_bytes=s.capacity_bytes["usable_bytes"],
               usable_ratio=plan.policies["storage_usable_ratio"])]


def storage_overprovisioned(plan) -> list[Finding]:
    s = plan.storage
    used = {k: u for k, u in s.utilisation.items() if u is not None}
    busiest = max(used, key=used.get, default=None)
    if busiest is not None and used[busiest] < 1.0 / C.OVERPROVISION_FACTOR:
        return [_f("info", "storage", "storage.overprovisioned", system=s.system, units=s.units, busiest=busiest,
                   utilisation_share=used[busiest])]
    return []


def storage_latency(plan) -> list[Finding]:
    s = plan.storage
    ops = s.read_iops + s.write_iops
    if s.io_utilisation >= 1.0:
        return [_f("problem", "storage", "storage.io_unstable", io_per_s=ops, supply_io_per_s=s.supply_iops)]
    out = []
    if s.latency_elasticity > C.KNEE_ELASTICITY:  # the slope at the operating point, as for a service
        out.append(_f("warning", "storage", "storage.past_knee", io_per_s=ops, elasticity=s.latency_elasticity,
                      knee_io_per_s=s.knee_iops, knee_factor=C.KNEE_FACTOR, latency_p95_seconds=s.latency_p95_seconds))
    if s.units_at_knee is not None:  # the latency's own need, beside what the plan buys and why
        out.append(_f("info", "storage", "storage.units_for_knee", system=s.system,
                      units_at_knee=int(round(s.units_at_knee)), units=int(s.units), binding=s.binding,
                      knee_factor=C.KNEE_FACTOR))
    return out


def data_stalls(plan) -> list[Finding]:
    out = []
    allowed = 1.0 - plan.policies["target_gpu_utilisation"]  # sizing to u x demand accepts 1 - u
    gpus = {t.name: t.gpus for t in plan.training}
    for j in plan.storage.jobs:
        if j.stall_fraction > 0:
            bad = j.stall_fraction > allowed + 1e-9
            out.append(_f("problem" if bad else "info", "storage", "storage.data_stall", workload=j.name,
                          stall_share=j.stall_fraction, within_target=not bad,
                          supplied_bytes_per_s=min(j.storage_share_bytes_per_s, j.network_feed_bytes_per_s),
                          needed_bytes_per_s=j.ideal_read_bytes_per_s))
        if j.bottleneck_gpus is not None:
            out.append(_f("info", "storage", "storage.bottleneck_gpus", workload=j.name,
                          bottleneck_gpus=j.bottleneck_gpus, job_gpus=gpus.get(j.name)))
    return out


def network_links(plan) -> list[Finding]:
    out = []
    link = plan.network.compute_link
    for j in plan.storage.jobs:
        u = j.link_utilisation
        severity, code = (("problem", "network.links_short") if u > 1.0 else
                          ("warning", "network.links_busy") if u > C.LINK_WARNING_UTILISATION else
                          ("info", "network.links_used"))
        out.append(_f(severity, "network", code, workload=j.name, link=link, utilisation_share=u))
    return out


def inference_targets(plan) -> list[Finding]:
    out = []
    for i in plan.inference:
        if not i.within_context:
            out.append(_f("problem", "inference", "inference.beyond_context", workload=i.name, model=i.model,
                          request_tokens=i.kv_bytes_per_user / max(i.kv_bytes_per_token, 1),
                          context_window_tokens=i.context_window))
        if i.slo_reason is not None:  # typed (aisize.plan.slo_reason.SloReason), worded in present.slo_text
            out.append(_f("problem", "inference", "inference.slo_unreachable", workload=i.name, reason=i.slo_reason))
        elif not (i.ttft_met and i.tpot_met):
            out.append(_f("problem", "inference", "inference.slo_missed", workload=i.name, statistic=i.slo_statistic,
                          ttft_met=i.ttft_met, ttft_seconds=i.ttft_at_statistic_seconds,
                          ttft_target_seconds=i.ttft_target_seconds, tpot_met=i.tpot_met,
                          tpot_seconds=i.tpot_at_statistic_seconds, tpot_target_seconds=i.tpot_target_seconds))
        if i.uncalibrated:
            out.append(_f("warning", "inference", "inference.uncalibrated", workload=i.name,
                          accelerator=plan.accelerator, replicas=i.replicas,
                          capacity_range_output_tokens_per_s=i.capacity_range_output_tokens_per_s,
                          tpot_range_seconds=i.tpot_range_seconds or (i.tpot_seconds, i.tpot_seconds),
                          overloaded_under=tuple(i.overloaded_under)))
        if i.latency_elasticity > C.KNEE_ELASTICITY and i.stable:  # the slope at the operating point
            out.append(_f("warning", "inference", "inference.past_knee", workload=i.name,
                          requests_per_s=i.requests_per_s, statistic=i.slo_statistic, elasticity=i.latency_elasticity,
                          load_rise_share=LOAD_RISE))
        if i.pools is not None and i.serving_mode == "disaggregated":
            p = i.pools
            out.append(_f("info", "inference", "inference.disaggregated", workload=i.name,
                          prefill_gpus=p.prefill_gpus, decode_gpus=p.decode_gpus,
                          kv_bytes_per_request=p.kv_bytes_per_request, kv_transfer_seconds=p.kv_transfer_s,
                          kv_link_bytes_per_s=p.kv_link_bytes_per_s, kv_link_utilisation_share=p.kv_link_utilisation))
    return out


def compute_notes(plan) -> list[Finding]:
    out = []
    for t in plan.training:
        if t.chinchilla_note:
            out.append(_f("info", "compute", "compute.chinchilla", workload=t.name, note=t.chinchilla_note))
        if t.mfu_predicted is not None:
            ratio = t.mfu_predicted / t.mfu_assumed
            if ratio > C.MFU_GAP_FACTOR or ratio < 1.0 / C.MFU_GAP_FACTOR:
                out.append(_f("warning", "compute", "compute.mfu_gap", workload=t.name,
                              mfu_predicted_share=t.mfu_predicted, mfu_assumed_share=t.mfu_assumed))
    return out


def throughput_basis(plan) -> list[Finding]:
    """What each job's time rests on: a measurement, a calibrated estimate or the assumed MFU."""
    return [_f("info", "compute", "compute.throughput_basis", workload=t.name, rule=t.throughput_rule,
               basis=t.throughput_basis,
               mfu_assumed_share=t.mfu_assumed, training_days=t.training_days, days_low=t.days_low,
               days_high=t.days_high, days_range_basis=t.days_range_basis, source=t.throughput_source)
            for t in plan.training]


def checkpoints(plan) -> list[Finding]:
    out = []
    for t in plan.training:
        if t.goodput <= 0:
            out.append(_f("problem", "checkpoint", "checkpoint.goodput_zero", workload=t.name))
        elif t.goodput < C.GOODPUT_WARNING:
            out.append(_f("warning", "checkpoint", "checkpoint.goodput_low", workload=t.name, goodput_share=t.goodput,
                          goodput_warning_share=C.GOODPUT_WARNING))
        c = t.checkpoint
        if c is not None and c.write_bytes_per_s < c.write_bytes_per_s_for_stall:
            out.append(_f("warning", "checkpoint", "checkpoint.write_slow", workload=t.name,
                          write_bytes_per_s=c.write_bytes_per_s, needed_bytes_per_s=c.write_bytes_per_s_for_stall,
                          max_stall_share=C.CHECKPOINT_MAX_STALL))
    return out


def placement(plan) -> list[Finding]:
    """How the packing did against its lower bound, and which servers workloads share."""
    out = []
    for p in plan.pools:
        if not p.servers:
            out.append(_f("info", "placement", "placement.pool_unused", pool=p.name))
            continue
        out.append(_f("info", "placement", "placement.pool", pool=p.name, servers=p.servers, server=p.server,
                      lower_bound_servers=p.lower_bound_servers,
                      shared_servers=sum(len(s.workloads) > 1 for s in plan.placement.servers if s.pool == p.name),
                      gpus_busy_peak=plan.gpus_busy_peak, gpus=plan.gpus, pools=len(plan.pools)))
    return out


def job_streams(plan) -> list[Finding]:
    out = []
    for j in plan.job_streams:
        if not j.stable:
            out.append(_f("problem", "queue", "queue.unstable", workload=j.name, offered_gpus=j.offered_gpus,
                          gpus=j.gpus, utilisation_share=j.utilisation))
            continue
        out.append(_f("info" if j.target_met else "warning", "queue", "queue.wait", workload=j.name, gpus=j.gpus,
                      slots=j.slots, target=j.target, wait_mean_seconds=j.wait_mean_seconds,
                      wait_p95_seconds=j.wait_p95_seconds, utilisation_share=j.utilisation, target_met=j.target_met))
    return out


def cost(plan) -> list[Finding]:
    """Unpriced and assumed prices, then (as present.cost_text orders them) each stale price, the rental rate
    compared with and the buy-or-rent verdict (a warning where no rate rents the GPU bought)."""
    c = plan.cost
    out = []
    if c.unpriced:
        out.append(_f("warning", "cost", "cost.unpriced", items=tuple(c.unpriced)))
    if c.assumed:
        out.append(_f("info", "cost", "cost.assumed_prices", items=tuple(c.assumed)))
    out += [_f("warning", "cost", "cost.stale_price", price=p["id"], item=p["item"], date=p["date"],
               age_months=p["age_months"]) for p in c.stale_prices]
    if c.verdict_kind == "no-rate":
        return out + [_f("warning", "cost", "cost.verdict", refs={"cost": c}, kind=c.verdict_kind)]
    out += [_f("info", "cost", "cost.rental_compared", note=n) for n in c.rental_notes]
    return out + [_f("info", "cost", "cost.verdict", refs={"cost": c}, kind=c.verdict_kind)]


def fabric(plan) -> list[Finding]:
    return [_f("info", "fabric", "fabric.pool", pool=p.name, reason=p.fabric.reason) for p in plan.pools if p.servers]


def assumptions(plan) -> list[Finding]:
    # every assumption by name, worded by present.assumption_text; its code lets a surface that lists the
    # assumptions apart leave this one out
    out = [_f("info", "assumptions", "assumptions.used", refs={"scenario": plan.scenario, "plan": plan},
              assumptions=plan.assumptions)]
    if plan.storage.write_assumed:
        out.append(_f("info", "assumptions", "assumptions.write_rate", system=plan.storage.system,
                      write_share=C.UNKNOWN_WRITE_SHARE))
    return out + _storage_queue_basis(plan)


def _storage_queue_basis(plan) -> list[Finding]:
    """Which of the storage queue's figures its catalog row does not publish, and what stands in for them."""
    from aisize.plan.queues import storage_queue_basis  # the queue's figures and their origin, one reader

    b = storage_queue_basis(plan)
    if b.published_iops_per_s is not None and not b.iops_derived and b.latency_published:
        return []  # both figures measured on the system bought: nothing stands in
    return [_f("info", "assumptions", "assumptions.storage_queue", system=b.system,
               iops_published=b.published_iops_per_s is not None, unit_io_per_s=b.unit_rate_per_s,
               iops_derived=b.iops_derived, iops_node_ceiling_per_s=b.iops_node_ceiling_per_s,
               latency_published=b.latency_published, latency_seconds=b.latency_seconds,
               latency_source=b.latency_source)]


def _fleet(plan) -> list[Finding]:
    from aisize.plan.fleet import fleet_findings

    return fleet_findings(plan)


CHECKS = (memory_fit, host_memory, storage_binding, storage_capacity, storage_overprovisioned, storage_latency,
          data_stalls, network_links, inference_targets, compute_notes, throughput_basis, checkpoints, placement,
          job_streams, fabric, cost, _fleet, assumptions)  # the fleet through the day (plan.fleet) before assumptions


def findings(plan) -> list[Finding]:
    """Every finding about ``plan``, problems first, then warnings, then information."""
    found = [f for check in CHECKS for f in check(plan)]
    return sorted(found, key=lambda f: SEVERITIES.index(f.severity))


def assumptions_used(policies) -> dict:
    """Every policy value and every named planner or engine default a plan uses, with its value."""
    from aisize import host
    from aisize import training as engine_training
    from aisize.network import collectives
    from aisize.plan import inference as inf_plan
    from aisize.plan import timeline, training

    tcal = C.training_calibration(policies)  # the scenario's training section or the shipped constants
    engine = {
        "training.dp_overlap": tcal.dp_overlap,
        "training.async_tp_hidden_share": tcal.async_tp_hidden_share,
        "host.os_and_application_bytes": host.OS_AND_APPLICATION_BYTES,
        "host.loader_workers_per_gpu": host.DEFAULT_LOADER_WORKERS_PER_GPU,
        "network.link_efficiency": collectives.DEFAULT_EFFICIENCY,
        "plan.default_seq_len": training.DEFAULT_SEQ_LEN,
        "plan.ongoing_display_days": timeline.ONGOING_DISPLAY_DAYS,
        "plan.inference_fallback_utilisation": inf_plan.FALLBACK_UTILISATION,
    }
    cal = C.serving_calibration(policies)  # the scenario's (policies.serving_calibration) or aisize's default
    engine |= {f"serving.{row['constant']}": row["value"] for row in cal.as_table()}
    engine |= {f"training.{c['name']}": c["value"] for c in engine_training.efficiency_constants(tcal)}
    chosen = policies.model_dump(mode="json", exclude={"serving_calibration"}) | {"serving_calibration": cal.name}
    return ({f"policies.{k}": v for k, v in chosen.items()}
            | {f"plan.{k}": v for k, v in C.planner_assumptions().items()} | engine)


__all__ = ["Finding", "findings", "assumptions_used", "SEVERITIES"]
