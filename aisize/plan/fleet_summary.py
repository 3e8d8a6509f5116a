"""The fleet through the day as plain text and as a dict (``aisize fleet``), and the day simulated to check it."""

from __future__ import annotations

import math

import numpy as np

from aisize.fleet import simulate_day
from aisize.plan.fleet import hourly_table


def simulate_service(sfp, *, seed: int = 0):
    """The service's day simulated request by request (:func:`aisize.fleet.simulate_day`), same policy."""
    d = sfp.day
    hold = max(d.peak_plan.request_seconds, 1e-9)
    return simulate_day(d.profile, d.policy, gpus_per_replica=d.gpus_per_replica,
                        capacity_per_replica_per_s=d.capacity_per_replica_per_s, service_seconds=hold,
                        late_after_seconds=d.peak_plan.ttft_target_seconds, seed=seed)


def _fmt(x, spec=",.1f"):
    return "unbounded" if isinstance(x, float) and not math.isfinite(x) else format(x, spec)


def fleet_text(plan, *, simulate: bool = False) -> str:
    """The plan's fleet figures as text (``simulate``: each service's day simulated beside the model)."""
    f = plan.fleet
    if f is None:
        return (f"{plan.scenario_name}: no fleet figures (give a service a `fleet`, the scenario a `site`, or "
                "policies.failure_rates)\n")
    out = [f"Fleet over the day: {plan.scenario_name}", ""]
    for s in f.services:
        d, day = s.day, s.day.day
        p = d.profile
        out += [f"Service {d.name} (pool {s.pool}, {d.gpus_per_replica} GPU(s) per replica)",
                f"  load: peak {p.peak_per_s:,.2f} req/s, mean {p.mean_per_s:,.2f} req/s (peak/mean "
                f"{p.peak_to_mean:.2f}), {p.requests_per_day:,.0f} requests/day",
                f"  replica: capacity {d.capacity_per_replica_per_s:,.3f} req/s, autoscaler target "
                f"{d.requests_per_s_per_replica:,.3f} req/s ({d.target_basis})",
                f"  scale-up: {d.scale_up_seconds:,.0f} s = {d.weights_bytes / 1e9:,.1f} GB of weights from "
                f"{d.load_from} at {d.load_bytes_per_s / 1e9:,.1f} GB/s + {d.engine_start_seconds:,.0f} s engine "
                f"start; {day.scale_ups} scale-ups a day, largest burst {day.largest_burst} replicas "
                f"({d.burst_read_bytes_per_s / 1e9:,.1f} GB/s of reads)",
                f"  replicas: peak {day.peak_replicas}, least {day.least_replicas}, mean {day.mean_replicas:,.2f}; "
                f"{day.gpu_hours:,.1f} GPU-hours a day ({day.peak_replicas * 24 * d.gpus_per_replica:,} if the peak "
                f"were held all day)",
                f"  overloaded {day.overloaded_hours * 60:,.1f} min, above target "
                f"{day.above_target_hours * 60:,.1f} min",
                f"  cost: ${s.cost.usd_per_day:,.0f}/day at ${s.cost.usd_per_gpu_hour:,.2f}/GPU-hour; "
                f"${s.cost.usd_per_million_tokens:,.3f} per million output tokens over the day "
                f"(${s.cost.usd_per_million_tokens_reserved:,.3f} if the peak's GPUs are held all day)"]
        if s.efficiency is not None:
            e = s.efficiency
            out.append(f"  energy: {e.tokens_per_s_per_mw:,.0f} tokens/s per MW, {e.kwh_per_million_tokens:,.3f} kWh "
                       "per million tokens (day average)")
        if d.lora is not None:
            lo = d.lora
            out.append(f"  adapters: {lo.adapter_bytes / 1e6:,.0f} MB each, {lo.hbm_adapters} in GPU memory "
                       f"({lo.hbm_bytes_per_gpu / 2**30:,.2f} GiB per GPU), hit {lo.hbm_hit_rate:.1%} in GPU memory, "
                       f"{lo.host_hit_rate:.1%} from host RAM, {lo.storage_share:.1%} from storage; +"
                       f"{lo.added_iteration_seconds * 1e3:,.2f} ms per iteration, capacity x{lo.capacity_factor:.3f}, "
                       f"+{lo.added_ttft_mean_seconds * 1e3:,.2f} ms mean TTFT")
        if s.tenants is not None:
            t = s.tenants
            at = s.tenants_at_seconds / 3600.0
            out.append(f"  tenants at the tightest period ({int(at):02d}:{int(round(at % 1 * 60)):02d}, "
                       f"{'preemptive' if t.preemptive else 'non-preemptive'}):")
            for n, u, ok, w, ttft, tgt in zip(t.names, t.cumulative_utilisation, t.class_stable, t.wait_mean_seconds,
                                              s.tenant_ttft_seconds, s.tenant_ttft_targets_seconds):
                state = ("UNSTABLE: its queue grows in this period (until loading replicas serve)" if not ok
                         else f"wait {w * 1e3:,.1f} ms, TTFT {ttft * 1e3:,.0f} ms")
                out.append(f"    {n}: load with higher classes {u:.2f}; {state} (target {tgt * 1e3:,.0f} ms)")
        if s.spares is not None:
            sp = s.spares
            out.append(f"  spares: {sp.spares} for {sp.replicas_needed} replicas: availability {sp.availability:.5f} "
                       f"(without {sp.availability_without_spares:.5f}); a replica fails "
                       f"{sp.replica_failures_per_day:.4f} times a day, down {sp.replica_unavailability:.2e}")
        if s.heterogeneous is not None and len(s.heterogeneous):
            out.append("  heterogeneous prefill/decode (cheapest first):")
            for _, r in s.heterogeneous.iterrows():
                if r.feasible:
                    out.append(f"    {r.prefill_server} ({r.prefill_gpus:.0f} GPUs) + {r.decode_server} "
                               f"({r.decode_gpus:.0f} GPUs): ${r.usd_per_million_tokens:,.3f}/M tokens, TTFT "
                               f"{r.ttft_s * 1e3:,.0f} ms, TPOT {r.tpot_s * 1e3:,.1f} ms, KV transfer "
                               f"{r.kv_transfer_s * 1e3:,.1f} ms")
                else:
                    out.append(f"    {r.prefill_server} + {r.decode_server}: {r.why}")
        table = hourly_table(s)
        out.append("  hour  req/s  replicas(max)  GPUs  $/h")
        for _, r in table.iterrows():
            out.append(f"  {int(r.hour):02d}    {r.requests_per_s:6.2f} {int(r.replicas_max):8d} {int(r.gpus_max):10d}"
                       f"  {r.usd_per_hour:7.2f}")
        if simulate:
            sim = simulate_service(s)
            out.append(f"  simulated ({sim.requests:,} requests): {sim.gpu_hours:,.1f} GPU-hours "
                       f"({(day.gpu_hours / sim.gpu_hours - 1) * 100:+.1f} % model vs simulation), mean replicas "
                       f"{sim.mean_replicas:,.2f}, peak {sim.peak_replicas}; waits mean "
                       f"{sim.wait_mean_seconds:,.3f} s, "
                       f"p99 {sim.wait_p99_seconds:,.2f} s, {sim.late_share:.2%} beyond the TTFT target")
        out.append("")
    for pd_ in f.pools:
        free = pd_.free_gpus
        busy = " ".join(f"{int(b)}" for b in pd_.busy_gpus)
        out.append(f"Pool {pd_.pool}: {pd_.installed_gpus} GPUs; busy by hour {busy}")
        out.append(f"  free GPU-hours a day: {pd_.free_gpu_hours:,.0f} (fewest free {int(free.min())} at "
                   f"{int(np.argmin(free)):02d}:00, most {int(free.max())} at {int(np.argmax(free)):02d}:00)")
    r = f.failure_rates
    out.append(f"Failures ({f.failures_basis}): {r.per_gpu_hour * 1e6:,.2f} per million GPU-hours + "
               f"{r.per_server_hour * 1e6:,.2f} per million server-hours; this cluster "
               f"{float(r.expected(plan.gpus, plan.servers, 1.0)):,.3f} interruptions a day")
    for t in plan.training:
        out.append(f"  training {t.name}: goodput {t.goodput:.1%}")
    for e, pp in zip(f.envelope, plan.pools):
        out.append(f"Site: {e.site_watts / 1e6:,.2f} MW at PUE {e.pue:g} feeds {e.it_watts / 1e3:,.0f} kW of IT: "
                   f"at most {e.servers_fit:,} {pp.server} ({e.gpus_fit:,} GPUs, {e.server_watts / 1e3:,.2f} kW each "
                   "with other IT)")
    if f.site_fits is not None:
        out.append(f"  this plan needs {f.site_it_watts_needed / 1e3:,.0f} kW of IT: "
                   + ("fits" if f.site_fits else "DOES NOT FIT"))
    for c in f.cooling:
        out.append(f"Cooling {c.server}: {c.cooling}, {c.servers} servers, {c.it_watts / 1e3:,.1f} kW of heat at "
                   "maximum power")
    return "\n".join(out) + "\n"
