"""The fleet through the day: each service's load, replicas and cost over the day, the troughs of each
pool, tenants, spares, heterogeneous pools, failures and the site's power envelope.

Every figure is ``Plan.fleet`` (:mod:`aisize.plan.fleet`).
"""

from __future__ import annotations

from aisize import charts
from aisize import format as F
from aisize.fleet.autoscale import HPA_SCALE_DOWN_WINDOW_SECONDS, HPA_SYNC_SECONDS, HPA_TOLERANCE, METRIC_WINDOW_SECONDS
from aisize.format import availability, usd
from aisize.plan.fleet import hourly_table, whole_fleet
from aisize.present.fleet_text import failures_basis_text, target_basis_text
from aisize.report.context import ReportContext
from aisize.report.markup import Html, block, count, facts, figure, h3, note, para, pct, sig, table


def _clock(seconds: float) -> str:
    h = seconds / 3600.0
    return f"{int(h):02d}:{int(round(h % 1 * 60)):02d}"


def _service(s) -> str:
    d, day, c = s.day, s.day.day, s.cost
    out = [h3(f"{d.name} (pool {s.pool})"),
           facts([("Peak / mean load", f"{sig(d.profile.peak_per_s)} / {sig(d.profile.mean_per_s)} req/s"),
                  ("Replicas (least – most)", f"{day.least_replicas} – {day.peak_replicas}"),
                  ("GPU-hours a day", sig(day.gpu_hours)),
                  ("$ per M tokens over the day", usd(c.usd_per_million_tokens)),
                  ("… with the peak held all day", usd(c.usd_per_million_tokens_reserved)),
                  ("Scale-up time", f"{sig(d.scale_up_seconds)} s")]),
           para(f"Each replica has {F.plural(d.gpus_per_replica, 'GPU')} and saturates at {sig(d.capacity_per_replica_per_s)} "
                f"requests/s; the autoscaler gives it {sig(d.requests_per_s_per_replica)} requests/s "
                f"({target_basis_text(d.target_basis)}). A new replica reads {sig(d.weights_bytes / 1e9)} GB of "
                f"weights from {d.load_from} at {sig(d.load_bytes_per_s / 1e9)} GB/s, then starts its engine in "
                f"{sig(d.engine_start_seconds)} s. {day.scale_ups} replicas start in a day, at most "
                f"{day.largest_burst} at once: a read burst of {sig(d.burst_read_bytes_per_s / 1e9)} GB/s the "
                f"storage plan includes. The load outruns the serving replicas for "
                f"{sig(day.overloaded_hours * 60)} min a day."),
           block(figure(charts.day_curve(s), "Offered load (dashed, left axis) and replicas (right axis) every 15 "
                                         "minutes: those holding GPUs (loading included) and those serving."))]
    hours = [[f"{int(r.hour):02d}:00", sig(r.requests_per_s), count(int(r.replicas_max)), usd(r.usd_per_hour)]
             for r in hourly_table(s).itertuples()]
    rows = [hours[k] + hours[k + 8] + hours[k + 16] for k in range(8)]  # three columns of eight hours
    out.append(block(table(["Hour", "Req/s", "Replicas", "$/h"] * 3, rows,
                           caption=f"{d.name} by hour: load, the most replicas, $ per hour", css="numeric")))
    if d.lora is not None:
        lo = d.lora
        out.append(para(f"LoRA adapters: {sig(lo.adapter_bytes / 1e6)} MB each; {lo.hbm_adapters} per replica in "
                        f"GPU memory ({sig(lo.hbm_bytes_per_gpu / 2**30)} GiB per GPU, taken from the KV pool) and "
                        f"{lo.host_adapters} in host RAM. Requests find their adapter in GPU memory "
                        f"{pct(lo.hbm_hit_rate)} of the time, in host RAM {pct(lo.host_hit_rate)}, in storage "
                        f"{pct(lo.storage_share)}; the batched-LoRA kernels add "
                        f"{sig(lo.added_iteration_seconds * 1e3)} "
                        f"ms to each iteration ({sig(lo.distinct_per_iteration)} distinct adapters), leaving "
                        f"{pct(lo.capacity_factor)} of the throughput; misses add "
                        f"{sig(lo.added_ttft_mean_seconds * 1e3)} "
                        "ms to the mean time to first token."))
    if s.tenants is not None:
        t = s.tenants
        rows = [[n, pct(u), "unstable: its queue grows" if not ok else f"{sig(w * 1e3)} ms",
                 "—" if not ok else f"{sig(ttft * 1e3)} ms", f"{sig(tgt * 1e3)} ms"]
                for n, u, ok, w, ttft, tgt in zip(t.names, t.cumulative_utilisation, t.class_stable,
                                                  t.wait_mean_seconds, s.tenant_ttft_seconds,
                                                  s.tenant_ttft_targets_seconds)]
        out.append(block(table(["Tenant (priority order)", "Load with higher classes", "Mean wait", "Mean TTFT",
                                "Target"],
                               rows, caption=f"Tenants at the tightest period ({_clock(s.tenants_at_seconds)}), "
                                             f"{'preemptive' if t.preemptive else 'non-preemptive'} priority",
                               css="numeric")))
    if s.spares is not None:
        sp = s.spares
        out.append(para(f"Spares: {sp.spares} beside {sp.replicas_needed} replicas keep the service at "
                        f"{availability(sp.availability)} availability ({availability(sp.availability_without_spares)} without); a "
                        f"replica fails {sig(sp.replica_failures_per_day)} times a day and is down "
                        f"{pct(sp.replica_unavailability)} of the time (restart plus scale-up)."))
    if s.heterogeneous is not None and len(s.heterogeneous):
        rows = []
        for r in s.heterogeneous.itertuples():
            if r.feasible:
                rows.append([r.prefill_server, r.decode_server, count(int(r.prefill_gpus)), count(int(r.decode_gpus)),
                             f"{sig(r.ttft_s * 1e3)} ms", f"{sig(r.tpot_s * 1e3)} ms",
                             f"{sig(r.kv_transfer_s * 1e3)} ms",
                             usd(r.usd_per_million_tokens)])
            else:
                rows.append([r.prefill_server, r.decode_server, "—", "—", "—", "—", "—", r.why])
        stat = d.peak_plan.slo_statistic  # the pairs are sized on the service's target statistic (fleet.hetero)
        out.append(block(table(["Prefill on", "Decode on", "Prefill GPUs", "Decode GPUs", f"TTFT {stat}",
                                f"TPOT {stat}", "KV transfer", "$ per M tokens"], rows,
                               caption="Heterogeneous prefill and decode pools at the peak, cheapest first",
                               css="numeric")))
    if s.efficiency is not None:
        e = s.efficiency
        out.append(para(f"Energy over the day: {sig(e.tokens_per_s_per_mw)} output tokens/s per MW of facility "
                        f"power, {sig(e.kwh_per_million_tokens)} kWh per million tokens."))
    return "".join(out)


def fleet(ctx: ReportContext) -> Html:
    """The fleet through the day (the section applies when the plan has fleet figures)."""
    p = ctx.plan
    f = p.fleet
    out = [para("Services that follow a load profile are autoscaled the way Kubernetes' HorizontalPodAutoscaler "
                f"scales model servers: every {HPA_SYNC_SECONDS:g} s it reads the arrival rate over the last "
                f"{METRIC_WINDOW_SECONDS:g} s, asks for ceil(rate / rate per replica) replicas unless within "
                f"{HPA_TOLERANCE:.0%} of the current count, scales down only to the highest request of the last "
                f"{HPA_SCALE_DOWN_WINDOW_SECONDS:g} s, and a new replica serves after its scale-up time. Replicas are "
                "placed only in the hours they are needed, so other work can use the GPUs in the troughs.")]
    out += [_service(s) for s in f.services]
    out.append(h3("Pools through the day"))
    for pd_ in f.pools:
        out.append(block(figure(charts.pool_day(pd_), f"GPUs of pool {pd_.pool} held by each workload in each hour "
                                                  "(the most in the hour), free GPUs on top."),
                         note(f"{sig(pd_.free_gpu_hours)} GPU-hours a day stay free.")))
    if len(f.pools) > 1:
        whole = whole_fleet(f.pools)
        out.append(block(figure(charts.pool_day(whole, title=f"The whole fleet: {F.plural(whole.installed_gpus, 'GPU')} by hour"),
                                "Every pool's GPUs by workload in each hour, free GPUs on top.")))
    r = f.failure_rates
    out.append(h3("Failures, power and cooling"))
    out.append(para(f"Interruptions ({failures_basis_text(f.failures_basis)}): {sig(r.per_gpu_hour * 1e6)} per "
                    f"million GPU-hours and {sig(r.per_server_hour * 1e6)} per million server-hours; this cluster of "
                    f"{F.plural(p.gpus, 'GPU')} "
                    f"in {F.plural(p.servers, 'server')}: {sig(float(r.expected(p.gpus, p.servers, 1.0)))} a day. "
                    f"Source: {r.source.split(': ')[0]}."))
    fit = {pp.server: e for e, pp in zip(f.envelope, p.pools)}
    rows = [[c.server, c.cooling, count(c.servers), f"{sig(c.it_watts / 1e3)} kW",
             count(fit[c.server].servers_fit) if c.server in fit else "—", c.source] for c in f.cooling]
    caption = "Servers by type: cooling (source), heat at maximum power"
    if f.envelope:
        e0 = f.envelope[0]
        caption += (f", and the most a {sig(e0.site_watts / 1e6)} MW site at PUE {e0.pue:g} ({sig(e0.it_watts / 1e3)}"
                    f" kW of IT, {pct(p.scenario.site.other_it_share)} more for fabric and storage) powers")
    out.append(block(table(["Server", "Cooling", "Planned", "Heat", "Most that fit", "Source"], rows, caption=caption),
                     note(f"The plan needs {sig(f.site_it_watts_needed / 1e3)} kW of IT: "
                          + ("it fits." if f.site_fits else "it does NOT fit.")) if f.envelope else ""))
    return Html("".join(out))
