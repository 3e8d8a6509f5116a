"""Plain-language findings about a plan: what does not fit, what binds, what is over-provisioned.

One function per kind of finding, each returning a list of :class:`Finding`;
:func:`findings` runs them all (problems first) and ends with the assumptions used.
"""

from __future__ import annotations


from dataclasses import dataclass

from aisize.format import bytes_gpu, days, duration, layout, ms, num, pct, plural, rate, sig, span
from aisize.plan import context as C
from aisize.serving.curves import LOAD_RISE
from aisize.present.assumption_text import assumption_sentences
from aisize.present.cost_text import cost_notes
from aisize.units import GB

SEVERITIES = ("problem", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One statement about a plan."""

    severity: str  # problem | warning | info
    area: str  # memory | host | storage | network | fabric | compute | checkpoint | inference | placement | queue
    # | cost | assumptions
    text: str


def _gb(x: float) -> str:
    return f"{sig(x / GB)} GB"


def _tb(x: float) -> str:
    return f"{sig(x / 1e12)} TB"


def memory_fit(plan) -> list[Finding]:
    out = []
    for t in plan.training:
        if not t.memory_fits:
            out.append(Finding("problem", "memory", (
                f"{t.name}: needs {bytes_gpu(t.memory_bytes['total_bytes'])} per GPU with layout "
                f"{layout(t.layout, recompute=False)}, but {plan.accelerator} offers "
                f"{bytes_gpu(t.gpu_memory_usable_bytes)} after headroom: it does not fit")))
    for i in plan.inference:
        if not i.fits:
            out.append(Finding("problem", "memory", (
                f"{i.name}: weights and one {bytes_gpu(i.kv_bytes_per_user)} context do not fit any replica "
                f"shape tried (up to {i.gpus_per_replica} x {plan.accelerator}): "
                + (i.estimate.reason if i.estimate else "no shape holds the model"))))
    return out


def host_memory(plan) -> list[Finding]:
    out = [Finding("problem", "host", f"{p.name}: needs {bytes_gpu(p.host_memory_needed_bytes)} of host RAM per "
                   f"server; {plan.server} has {bytes_gpu(p.server_host_memory_bytes)}")
           for p in plan.training + plan.inference if not p.host_memory_fits]
    need = plan.host_memory_needed_bytes
    if need and not out and plan.server_host_memory_bytes > C.OVERPROVISION_FACTOR * need:
        out.append(Finding("info", "host", (
            f"host RAM is over-provisioned for this plan: {plan.server} has "
            f"{bytes_gpu(plan.server_host_memory_bytes)}, "
            f"{sig(plan.server_host_memory_bytes / need)}x the {bytes_gpu(need)} the plan needs per server")))
    return out


def storage_binding(plan) -> list[Finding]:
    s = plan.storage
    out = []
    over = {k: u for k, u in s.utilisation.items() if u is not None and u > 1.0}
    if s.scope in ("system", "node") and over:
        worst = max(over, key=over.get)
        out.append(Finding("problem", "storage", (
            f"storage {s.system} is too small: {worst} demand is {sig(over[worst])}x what it supplies "
            f"({', '.join(f'{k} {sig(v)}x' for k, v in over.items())})")))
    elif s.scope in ("unit", "drive"):
        out.append(Finding("info", "storage", (
            f"{s.units:.0f} x {s.system} bought; {s.binding} binds (units by read {s.units_by['read']:.0f}, "
            f"write {s.units_by['write']:.0f}, IOPS {s.units_by['iops']:.0f}, capacity {s.units_by['capacity']:.0f})")))
    else:
        out.append(Finding("info", "storage", (
            f"storage {s.system}: {s.binding} binds at {pct(s.utilisation[s.binding])} of what it supplies")))
    return out


def storage_capacity(plan) -> list[Finding]:
    """Capacity is sized only where the catalog gives the storage's capacity; otherwise say what to check."""
    s = plan.storage
    if s.supply_capacity_bytes is not None:
        return []  # counted in the units (unit, drive) or in the utilisation (system, node)
    raw, usable = s.capacity_bytes["raw_bytes"], s.capacity_bytes["usable_bytes"]
    return [Finding("warning", "storage", (
        f"storage {s.system} publishes no capacity, so aisize cannot check it: the plan needs "
        f"{_tb(raw)} raw ({_tb(usable)} usable at storage_usable_ratio "
        f"{plan.policies['storage_usable_ratio']:g}); confirm the system holds it"))]


def storage_overprovisioned(plan) -> list[Finding]:
    s = plan.storage
    used = [u for u in s.utilisation.values() if u is not None]
    if used and max(used) < 1.0 / C.OVERPROVISION_FACTOR:
        return [Finding("info", "storage", (
            f"storage is over-provisioned: the busiest constraint ({s.binding}) uses {pct(max(used))} of "
            f"{s.units:.0f} x {s.system}"))]
    return []


def storage_latency(plan) -> list[Finding]:
    s = plan.storage
    ops = s.read_iops + s.write_iops
    if s.io_utilisation >= 1.0:
        return [Finding("problem", "storage", f"storage IO queue is unstable: {ops:,.0f} operations/s exceed "
                        f"{s.supply_iops:,.0f}/s; latency grows without bound")]
    out = []
    if s.latency_elasticity > C.KNEE_ELASTICITY:  # the slope at the operating point, as for a service
        out.append(Finding("warning", "storage", (
            f"storage runs past its latency knee: at {ops:,.0f} operations/s its mean IO latency rises "
            f"{num(s.latency_elasticity)} times as fast as the load (mean latency doubles at {s.knee_iops:,.0f}/s); "
            f"p95 latency {ms(s.latency_p95_seconds)}")))
    if s.units_at_knee is not None:  # the latency's own need, beside what the plan buys and why
        need = plural(int(round(s.units_at_knee)), "unit")
        out.append(Finding("info", "storage", (
            f"{need} of {s.system} would keep the blend below the latency knee (mean latency within "
            f"{C.KNEE_FACTOR:g}x unloaded); the plan buys {plural(int(s.units), 'unit')}, sized by {s.binding}")))
    return out


def data_stalls(plan) -> list[Finding]:
    out = []
    allowed = 1.0 - plan.policies["target_gpu_utilisation"]  # sizing to u x demand accepts 1 - u
    for j in plan.storage.jobs:
        if j.stall_fraction > 0:
            bad = j.stall_fraction > allowed + 1e-9
            out.append(Finding("problem" if bad else "info", "storage", (
                f"{j.name}: GPUs wait for data {pct(j.stall_fraction)} of the time (supplied "
                f"{_gb(min(j.storage_share_bytes_per_s, j.network_feed_bytes_per_s))}/s of "
                f"{_gb(j.ideal_read_bytes_per_s)}/s)" + ("" if bad else ", within the target utilisation"))))
        if j.bottleneck_gpus is not None:
            out.append(Finding("info", "storage", (
                f"{j.name}: storage becomes the bottleneck at about {j.bottleneck_gpus:,.0f} GPUs")))
    return out


def network_links(plan) -> list[Finding]:
    out = []
    link = plan.network.compute_link
    for j in plan.storage.jobs:
        u = j.link_utilisation
        if u > 1.0:
            out.append(Finding("problem", "network", (
                f"{j.name}: the {link} links are below the data demand ({sig(u)}x their capacity); "
                "use faster or more NICs")))
        elif u > C.LINK_WARNING_UTILISATION:
            out.append(Finding("warning", "network", f"{j.name}: training data fills {pct(u)} of the {link} links"))
        else:
            out.append(Finding("info", "network", f"{j.name}: training data uses {pct(u)} of the {link} links"))
    return out


def inference_targets(plan) -> list[Finding]:
    out = []
    for i in plan.inference:
        stat = i.slo_statistic
        if not i.within_context:
            out.append(Finding("problem", "inference", (
                f"{i.name}: a request of {i.kv_bytes_per_user / max(i.kv_bytes_per_token, 1):,.0f} tokens exceeds "
                f"{i.model}'s context window of {i.context_window:,} tokens: the model cannot serve it")))
        if i.slo_reason:
            out.append(Finding("problem", "inference", f"{i.name}: {i.slo_reason}"))
        elif not (i.ttft_met and i.tpot_met):
            missed = []
            if not i.ttft_met:
                missed.append(f"TTFT {stat} {_ms(i.ttft_at_statistic_seconds)} "
                              f"over the {_ms(i.ttft_target_seconds)} target")
            if not i.tpot_met:
                missed.append(f"TPOT {stat} {_ms(i.tpot_at_statistic_seconds)} "
                              f"over the {_ms(i.tpot_target_seconds)} target")
            out.append(Finding("problem", "inference", f"{i.name}: " + "; ".join(missed)))
        if i.uncalibrated:
            spread = ""
            if i.capacity_range_output_tokens_per_s:
                lo, hi = i.capacity_range_output_tokens_per_s
                t_lo, t_hi = i.tpot_range_seconds or (i.tpot_seconds, i.tpot_seconds)
                spread = (f": under the calibrated generations' efficiencies its {plural(i.replicas, 'replica')} serve "
                          f"{sig(lo)} to {sig(hi)} output tokens/s at most and its TPOT mean is "
                          + (_ms(t_lo) if t_lo == t_hi else f"{_ms(t_lo)} to {_ms(t_hi)}")
                          + (f" (with the {' and '.join(i.overloaded_under)} efficiencies the load would overload "
                             f"them)" if i.overloaded_under else "") + "; size with the low end")
            out.append(Finding("warning", "inference", (
                f"{i.name}: {plan.accelerator} is of a GPU generation without fitted serving efficiencies; "
                f"Hopper's stand in, so its figures are uncalibrated{spread}")))
        if i.latency_elasticity > C.KNEE_ELASTICITY and i.stable:  # the slope at the operating point
            out.append(Finding("warning", "inference", (
                f"{i.name}: past the latency knee at {i.requests_per_s:g} requests/s: its {i.slo_statistic} "
                f"request latency rises {num(i.latency_elasticity)} times as fast as the load there (at this slope "
                f"{pct(LOAD_RISE)} more load adds {pct(i.latency_elasticity * LOAD_RISE)} to latency)")))
        if i.pools is not None and i.serving_mode == "disaggregated":
            p = i.pools
            out.append(Finding("info", "inference", (
                f"{i.name}: disaggregated, {p.prefill_gpus} prefill + {p.decode_gpus} decode GPUs; each request "
                f"ships its prompt's {bytes_gpu(p.kv_bytes_per_request)} of KV cache ({_ms(p.kv_transfer_s)}), "
                f"{rate(p.kv_link_bytes_per_s)} in all, {pct(p.kv_link_utilisation)} of the prefill NICs")))
    return out


def _ms(seconds: float) -> str:
    return str(ms(seconds))


def compute_notes(plan) -> list[Finding]:
    out = []
    for t in plan.training:
        if t.chinchilla_note:
            out.append(Finding("info", "compute", f"{t.name}: {t.chinchilla_note}"))
        if t.mfu_predicted is not None:
            ratio = t.mfu_predicted / t.mfu_assumed
            if ratio > C.MFU_GAP_FACTOR or ratio < 1.0 / C.MFU_GAP_FACTOR:
                out.append(Finding("warning", "compute", (
                    f"{t.name}: the step-time model predicts MFU {pct(t.mfu_predicted)}, the plan assumes "
                    f"{pct(t.mfu_assumed)}: check the assumption")))
    return out


def throughput_basis(plan) -> list[Finding]:
    """What each job's time rests on: a measurement, a calibrated estimate or the assumed MFU."""
    out = []
    for t in plan.training:
        mfu = "" if "MFU" in t.throughput_basis else f" ({pct(t.mfu_assumed)} MFU)"  # the basis may name it
        text = (f"{t.name}: throughput {t.throughput_basis}{mfu}; {days(t.training_days)}, "
                f"range {span(t.days_low, t.days_high, 'days')} ({t.days_range_basis})")
        out.append(Finding("info", "compute", text + (f"; source: {t.throughput_source}" if t.throughput_source
                                                      else "")))
    return out


def checkpoints(plan) -> list[Finding]:
    out = []
    for t in plan.training:
        if t.goodput <= 0:
            out.append(Finding("problem", "checkpoint", (
                f"{t.name}: goodput 0: failures come faster than checkpoints and restarts; the job never "
                "finishes (raise the node MTBF, cut the restart time or use fewer servers)")))
        elif t.goodput < C.GOODPUT_WARNING:
            out.append(Finding("warning", "checkpoint", (
                f"{t.name}: goodput {pct(t.goodput)}: failures and checkpoints cost over "
                f"{pct(1 - C.GOODPUT_WARNING)} of wall time")))
        c = t.checkpoint
        if c is not None and c.write_bytes_per_s < c.write_bytes_per_s_for_stall:
            out.append(Finding("warning", "checkpoint", (
                f"{t.name}: checkpoints write at {_gb(c.write_bytes_per_s)}/s; keeping writes under "
                f"{pct(C.CHECKPOINT_MAX_STALL)} of training needs {_gb(c.write_bytes_per_s_for_stall)}/s")))
    return out


def placement(plan) -> list[Finding]:
    """How the packing did against its lower bound, and which servers workloads share."""
    out = []
    for p in plan.pools:
        if not p.servers:
            out.append(Finding("info", "placement", f"pool {p.name}: no workload needs it (0 servers)"))
            continue
        shared = sum(len(s.workloads) > 1 for s in plan.placement.servers if s.pool == p.name)
        bound = ("the fewest any packing could use" if p.servers == p.lower_bound_servers else
                 f"the GPUs alone need at least {p.lower_bound_servers}")
        out.append(Finding("info", "placement", (
            f"pool {p.name}: {p.servers} x {p.server} ({bound}); {shared} server{'' if shared == 1 else 's'} "
            f"shared by several workloads; at most {plan.gpus_busy_peak} of {plan.gpus} GPUs busy at once")))
    return out


def job_streams(plan) -> list[Finding]:
    out = []
    for j in plan.job_streams:
        if not j.stable:
            out.append(Finding("problem", "queue", (
                f"{j.name}: unstable: {sig(j.offered_gpus)} GPUs of work arrive on average for {j.gpus} GPUs "
                f"(utilisation {pct(j.utilisation)}, at least 100 %); the queue grows without bound")))
            continue
        severity = "info" if j.target_met else "warning"
        out.append(Finding(severity, "queue", (
            f"{j.name}: {j.gpus} GPUs ({j.slots} jobs at once) for {j.target}: mean wait "
            f"{duration(j.wait_mean_seconds)}, "
            f"p95 {duration(j.wait_p95_seconds)}, utilisation {pct(j.utilisation)}"
            + ("" if j.target_met else " - the target is not met"))))
    return out


def cost(plan) -> list[Finding]:
    c = plan.cost
    out = []
    if c.unpriced:
        out.append(Finding("warning", "cost", f"no price for {', '.join(c.unpriced)}: counted at $0 (add rows to "
                                              "data/prices.csv or cost.prices)"))
    if c.assumed:
        out.append(Finding("info", "cost", (
            f"{len(c.assumed)} price{'' if len(c.assumed) == 1 else 's'} used are assumptions to replace with "
            f"quotes: {', '.join(c.assumed)} (scenario cost.prices overrides any)")))
    # stale prices, the rental rate chosen for the GPU bought, and the buy-or-rent verdict, in present.cost_text's words
    out += [Finding(severity, "cost", text) for severity, text in cost_notes(c)]
    return out


def fabric(plan) -> list[Finding]:
    return [Finding("info", "fabric", f"pool {p.name} compute fabric: {p.fabric.reason}")
            for p in plan.pools if p.servers]


def assumptions(plan) -> list[Finding]:
    # one finding, in the sentences the CLI, the app and the report say (present.assumption_text); its prefix lets
    # a surface that lists the assumptions apart leave this one out
    said = " ".join(assumption_sentences(plan.scenario, plan.assumptions, plan))
    out = [Finding("info", "assumptions", f"assumptions used: {said}")]
    if plan.storage.write_assumed:
        out.append(Finding("info", "assumptions", (
            f"{plan.storage.system} publishes no write rate: writes assumed at "
            f"{pct(C.UNKNOWN_WRITE_SHARE)} of its read rate")))
    return out + _storage_queue_basis(plan)


def _storage_queue_basis(plan) -> list[Finding]:
    """Say which of the storage queue's figures its catalog row does not publish, and what stands in for them."""
    from aisize.plan.queues import storage_queue_basis  # the queue's figures and their origin, one reader

    b = storage_queue_basis(plan)
    said = []
    if b.published_iops_per_s is None:
        said.append(f"no IOPS, so its IO rate is its read bandwidth / the blend's mean IO size, "
                    f"{sig(b.unit_rate_per_s)} IO/s per unit")
    if not b.latency_published:
        said.append(f"no IO latency, so its queue assumes {ms(b.latency_seconds)} unloaded "
                    "(STORAGE_LATENCY_SECONDS, the planner's default)")
    if not said:
        return []
    return [Finding("info", "assumptions", f"storage {b.system} publishes " + "; and ".join(said))]


CHECKS = (memory_fit, host_memory, storage_binding, storage_capacity, storage_overprovisioned, storage_latency,
          data_stalls, network_links, inference_targets, compute_notes, throughput_basis, checkpoints, placement,
          job_streams, fabric, cost, assumptions)


def _fleet(plan) -> list[Finding]:
    from aisize.plan.fleet import fleet_findings

    return fleet_findings(plan)


CHECKS = CHECKS[:-1] + (_fleet, CHECKS[-1])  # the fleet through the day (aisize.plan.fleet), before assumptions


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
