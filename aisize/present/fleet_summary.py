"""The fleet through the day as plain text and as a dict (``aisize fleet``), and the day simulated to check it."""

from __future__ import annotations

import numpy as np

from aisize import format as F
from aisize.fleet import simulate_day
from aisize.plan.fleet import hourly_table
from aisize.present.fleet_text import failures_basis_text, target_basis_text
from aisize.units import HOUR


def simulate_service(sfp, *, seed: int = 0):
    """The service's day simulated request by request (:func:`aisize.fleet.simulate_day`), same policy."""
    d = sfp.day
    hold = max(d.peak_plan.request_seconds, 1e-9)
    return simulate_day(d.profile, d.policy, gpus_per_replica=d.gpus_per_replica,
                        capacity_per_replica_per_s=d.capacity_per_replica_per_s, service_seconds=hold,
                        late_after_seconds=d.peak_plan.ttft_target_seconds, seed=seed)


def fleet_text(plan, *, simulate: bool = False) -> str:
    """The plan's fleet figures as text (``simulate``: each service's day simulated beside the model), every
    figure through :mod:`aisize.format` as the app and the report show it."""
    f = plan.fleet
    if f is None:
        return (f"{plan.scenario_name}: no fleet figures (give a service a `fleet`, the scenario a `site`, or "
                "policies.failure_rates)\n")
    title = "Fleet over the day"  # a scenario named after the view ("Fleet over the day") is not said twice
    out = [title if plan.scenario_name.strip().lower() == title.lower() else f"{title}: {plan.scenario_name}", ""]
    for s in f.services:
        d, day = s.day, s.day.day
        p = d.profile
        stat = d.peak_plan.slo_statistic  # the statistic the pairing table's TTFT and TPOT are (fleet.hetero)
        out += [f"Service {d.name} (pool {s.pool}, {F.plural(d.gpus_per_replica, 'GPU')} per replica)",
                f"  load: peak {F.per_s(p.peak_per_s, 'req/s')}, mean {F.per_s(p.mean_per_s, 'req/s')} (peak/mean "
                f"{F.sig(p.peak_to_mean)}), {F.count(p.requests_per_day)} requests/day",
                f"  replica: capacity {F.per_s(d.capacity_per_replica_per_s, 'req/s')}, autoscaler target "
                f"{F.per_s(d.requests_per_s_per_replica, 'req/s')} ({target_basis_text(d.target_basis)})",
                f"  scale-up: {F.duration(d.scale_up_seconds)} = {F.bytes_si(d.weights_bytes)} of weights from "
                f"{d.load_from} at {F.rate(d.load_bytes_per_s)} + {F.duration(d.engine_start_seconds)} engine "
                f"start; {day.scale_ups} scale-ups a day, largest burst {day.largest_burst} replicas "
                f"({F.rate(d.burst_read_bytes_per_s)} of reads)",
                f"  replicas: peak {day.peak_replicas}, least {day.least_replicas}, mean {F.sig(day.mean_replicas)}; "
                f"{F.num(day.gpu_hours)} GPU-hours a day ({F.count(day.peak_replicas * 24 * d.gpus_per_replica)} "
                "if the peak were held all day)",
                f"  overloaded {F.duration(day.overloaded_hours * HOUR)}, above target "
                f"{F.duration(day.above_target_hours * HOUR)}",
                f"  cost: {F.usd(s.cost.usd_per_day)}/day at {F.usd(s.cost.usd_per_gpu_hour)}/GPU-hour; "
                f"{F.usd(s.cost.usd_per_million_tokens)} per million output tokens over the day "
                f"({F.usd(s.cost.usd_per_million_tokens_reserved)} if the peak's GPUs are held all day)"]
        if s.efficiency is not None:
            e = s.efficiency
            out.append(f"  energy: {F.num(e.tokens_per_s_per_mw)} tokens/s per MW, "
                       f"{F.energy(e.kwh_per_million_tokens * F.JOULES_PER_KWH)} per million tokens (day average)")
        if d.lora is not None:
            lo = d.lora
            out.append(f"  adapters: {F.bytes_si(lo.adapter_bytes)} each, {lo.hbm_adapters} in GPU memory "
                       f"({F.bytes_gpu(lo.hbm_bytes_per_gpu)} per GPU), hit {F.pct(lo.hbm_hit_rate)} in GPU memory, "
                       f"{F.pct(lo.host_hit_rate)} from host RAM, {F.pct(lo.storage_share)} from storage; "
                       f"+{F.ms(lo.added_iteration_seconds)} per iteration, capacity x{F.sig(lo.capacity_factor)}, "
                       f"+{F.ms(lo.added_ttft_mean_seconds)} mean TTFT")
        if s.tenants is not None:
            t = s.tenants
            at = s.tenants_at_seconds / 3600.0
            out.append(f"  tenants at the tightest period ({int(at):02d}:{int(round(at % 1 * 60)):02d}, "
                       f"{'preemptive' if t.preemptive else 'non-preemptive'}):")
            for n, u, ok, w, ttft, tgt in zip(t.names, t.cumulative_utilisation, t.class_stable, t.wait_mean_seconds,
                                              s.tenant_ttft_seconds, s.tenant_ttft_targets_seconds):
                state = ("UNSTABLE at this minute: its queue grows while the ramp outruns the loading replicas" if not ok
                         else f"mean wait {F.ms(w)}, mean TTFT {F.ms(ttft)}")
                out.append(f"    {n}: load with higher classes {F.pct(u)}; {state} (target {F.ms(tgt)})")
        if s.spares is not None:
            sp = s.spares
            out.append(f"  spares: {sp.spares} for {sp.replicas_needed} replicas: availability "
                       f"{F.availability(sp.availability)}; without spares "
                       f"{F.availability(sp.availability_without_spares)}; a replica fails "
                       f"{F.sig(sp.replica_failures_per_day)} times a day")
        if s.heterogeneous is not None and len(s.heterogeneous):
            out.append("  heterogeneous prefill/decode (cheapest first):")
            for _, r in s.heterogeneous.iterrows():
                if r.feasible:
                    out.append(f"    {r.prefill_server} ({F.plural(r.prefill_gpus, 'GPU')}) + {r.decode_server} "
                               f"({F.plural(r.decode_gpus, 'GPU')}): {F.usd(r.usd_per_million_tokens)}/M tokens, "
                               f"TTFT {stat} {F.ms(r.ttft_s)}, TPOT {stat} {F.ms(r.tpot_s)}, "
                               f"KV transfer {F.ms(r.kv_transfer_s)}")
                else:
                    out.append(f"    {r.prefill_server} + {r.decode_server}: {r.why}")
        table = hourly_table(s)
        out.append("  hour  req/s  replicas(max)  GPUs      $/h")
        for _, r in table.iterrows():
            out.append(f"  {int(r.hour):02d}   {F.sig(r.requests_per_s):>6} {int(r.replicas_max):8d} "
                       f"{int(r.gpus_max):10d}  {F.usd(r.usd_per_hour):>7}")
        if simulate:
            sim = simulate_service(s)
            out.append(f"  simulated ({F.count(sim.requests)} requests): {F.num(sim.gpu_hours)} GPU-hours "
                       f"({F.pct(day.gpu_hours / sim.gpu_hours - 1, signed=True)} model vs simulation), mean replicas "
                       f"{F.sig(sim.mean_replicas)}, peak {sim.peak_replicas}; waits mean "
                       f"{F.duration(sim.wait_mean_seconds)}, p99 {F.duration(sim.wait_p99_seconds)}, "
                       f"{F.pct(sim.late_share)} beyond the TTFT target")
            if s.tenants is not None and not all(s.tenants.class_stable):
                # the two models answer different questions; say which figure to quote (issue 47, item 5)
                out.append("  which to trust: the simulation for waits over the day (it follows the autoscaler minute "
                           "by minute, every tenant in one queue); the tenant lines for who waits first in the "
                           "tightest minute, a steady-state queue that grows only while the ramp outruns the "
                           "loading replicas")
        out.append("")
    for pd_ in f.pools:
        free = pd_.free_gpus
        busy = " ".join(f"{int(b)}" for b in pd_.busy_gpus)
        out.append(f"Pool {pd_.pool}: {pd_.installed_gpus} GPUs; busy by hour {busy}")
        out.append(f"  free GPU-hours a day: {F.count(pd_.free_gpu_hours)} (fewest free {int(free.min())} at "
                   f"{int(np.argmin(free)):02d}:00, most {int(free.max())} at {int(np.argmax(free)):02d}:00)")
    r = f.failure_rates
    out.append(f"Failures ({failures_basis_text(f.failures_basis)}): {F.sig(r.per_gpu_hour * 1e6)} per million "
               f"GPU-hours + {F.sig(r.per_server_hour * 1e6)} per million server-hours; this cluster "
               f"{F.sig(float(r.expected(plan.gpus, plan.servers, 1.0)))} interruptions a day")
    for t in plan.training:
        out.append(f"  training {t.name}: goodput {F.pct(t.goodput)}")
    for e, pp in zip(f.envelope, plan.pools):
        out.append(f"Site: {F.power(e.site_watts)} at PUE {F.sig(e.pue)} feeds {F.power(e.it_watts)} of IT: "
                   f"at most {F.count(e.servers_fit)} {pp.server} ({F.count(e.gpus_fit)} GPUs, "
                   f"{F.power(e.server_watts)} each with other IT)")
    if f.site_fits is not None:
        out.append(f"  this plan needs {F.power(f.site_it_watts_needed)} of IT: "
                   + ("fits" if f.site_fits else "DOES NOT FIT"))
    for c in f.cooling:
        out.append(f"Cooling {c.server}: {c.cooling}, {c.servers} servers, {F.power(c.it_watts)} of heat at "
                   "maximum power")
    return "\n".join(out) + "\n"
