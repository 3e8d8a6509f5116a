"""Shared cluster sections: placement and timeline, the job queue, and cost.

Every figure is the plan's (``Plan.pools``, ``.placement``, ``.timeline``,
``.job_streams``, ``.cost``); the job-queue section adds a few simulated points
(:func:`aisize.queueing.simulate_job_stream`) beside the closed form.
"""

from __future__ import annotations

import math

import pandas as pd

from aisize import charts
from aisize import format as F
from aisize.plan import job_wait_curve
from aisize.plan.bom import placement_groups
from aisize.present.cost_text import operating_basis, payback, verdict
from aisize.present.jobstreams import stream_target_text
from aisize.queueing import simulate_job_stream
from aisize.report.context import ReportContext
from aisize.report.markup import DASH, Html, block, count, duration, esc, facts, figure, h3, note, para, pct, sig, \
    table

SIM_JOBS = 20_000  # simulated jobs per point in the report (about 0.1 s each)
SIM_SEED = 7


def usd(x: float) -> str:
    """Dollars for the report (:func:`aisize.format.usd`): "$1.23 M", "$2.39"; None (the plan's unbounded)
    as "unbounded"."""
    return str(F.usd(math.inf if x is None else x))


def placement(ctx: ReportContext) -> Html:
    """Pools, how workloads were packed onto servers in each time slot, and the timeline."""
    p = ctx.plan
    pools = [[x.name if x.name == x.server else f"{x.name} ({x.server})", count(x.servers),
              "auto" if x.fixed_servers is None else count(x.fixed_servers), count(x.lower_bound_servers),
              count(x.gpus), count(x.racks), sig(x.power_watts / 1e3), x.fabric.design] for x in p.pools]
    members = "; ".join(f"{x.name}: {', '.join(x.workloads) or 'nothing'}" for x in p.pools)
    shared = sum(len(s.workloads) > 1 for s in p.placement.servers)
    out = [facts([("Servers", count(p.servers)), ("GPUs installed", count(p.gpus)),
                  ("GPUs busy at once (most)", count(p.gpus_busy_peak)), ("Servers shared", count(shared))]),
           para(f"Workloads are packed onto servers by {p.placement.method}: each serving replica, each "
                "training job's share of a server and each job slot of a job stream needs GPUs (inside one "
                "scale-up domain), host RAM and fabric ports in every time slot it runs, and keeps its server "
                "in all of them. Workloads that never run at the same time share GPUs."),
           block(table(["Pool (server)", "Servers", "Fixed", "Lower bound", "GPUs", "Racks", "kW (max)", "Fabric"],
                       pools, caption="Pools", css="numeric"), note(f"Workloads by pool: {members}."))]
    out.append(block(figure(charts.packing(p.placement, p.placement.slot_labels),
                            "GPUs in use on each server, by workload, in each time slot (phase and hours of the "
                            "day)."), note("The lower bound is the busiest slot's GPUs divided by the GPUs of a "
                                           "server: no packing can use fewer servers.")))
    rows = [[r["pool"], r["server"], r["holds"], f"{r['peak_gpus_used']} / {r['gpus']}",
             f"{sig(r['peak_host_ram_gib'])} / {sig(r['host_ram_gib'])}", f"{r['peak_nics']:g} / {r['nics']}"]
            for r in placement_groups(p).to_dict("records")]
    out.append(block(table(["Pool", "Servers", "Holds (workload: GPUs)", "GPUs used (busiest slot)",
                            "Host RAM GiB", "Fabric ports"], rows, caption="Packing (servers holding the same merged)",
                           css="numeric")))
    out.append(_timeline(ctx))
    return Html("".join(out))


def _timeline(ctx: ReportContext) -> Html:
    t = ctx.plan.timeline
    phases = [[ph["name"], sig(ph["start_day"]), "ongoing" if ph["ongoing"] else sig(ph["days"]), ph["basis"],
               sig(ph["busy_gpus"])] for ph in t.phases]
    rows = [[r["workload"], r["kind"], r["team"], r["phase"], r["pool"], sig(r["start_day"]), sig(r["end_day"]),
             r["hours"], count(r["gpus"])] for r in t.rows]
    return Html(h3("Timeline") + block(figure(charts.timeline(t.rows, t.phases),
                                              "When each workload runs (bars), by team, over the phases (shaded)."))
                + block(table(["Phase", "Starts [day]", "Days", "Length from", "GPUs busy (average)"], phases,
                              caption="Phases", css="numeric"),
                        table(["Workload", "Kind", "Team", "Phase", "Pool", "Start [day]", "End [day]", "Hours",
                               "GPUs"], rows, caption="Workloads over time", css="numeric")))


def simulated_points(stream, sizes=None) -> pd.DataFrame:
    """Simulated mean wait [h] of a stream at a few partition sizes (the planned one and its neighbours)."""
    g = stream.gpus_per_job
    lo = int(math.floor(stream.offered_gpus / g)) + 1
    slots = sorted({s for s in (sizes or (stream.slots - 1, stream.slots, stream.slots + 1)) if s >= lo})
    rows = []
    for s in slots:
        sim = simulate_job_stream(stream.jobs_per_day / 86400.0, g, stream.job_seconds, s * g,
                                  distribution=stream.hours_distribution, job_cv=stream.job_cv, jobs=SIM_JOBS,
                                  seed=SIM_SEED)
        rows.append({"gpus": s * g, "wait_mean_hours": sim.wait_mean_seconds / 3600.0,
                     "ci95_hours": sim.wait_mean_ci95_seconds / 3600.0})
    return pd.DataFrame(rows, columns=["gpus", "wait_mean_hours", "ci95_hours"])


def jobqueue(ctx: ReportContext) -> Html:
    """Each job stream: its partition, waits and utilisation, the wait-vs-GPUs curve with simulated points."""
    out = [para("A job stream is a queue of jobs that each hold a fixed number of GPUs while they run. With every "
                "job the same size g, a partition of G GPUs runs at most c = ⌊G/g⌋ jobs at once, so it is an "
                "M/G/c queue of c job slots; mean waits come from the Allen–Cunneen approximation "
                "(exact for exponential job lengths). It stops holding when jobs of different sizes share one "
                "partition (large jobs block smaller ones and GPUs fragment: each stream gets its own "
                "partition here) and for heavy-tailed job lengths on few slots; the diamonds are a simpy "
                "simulation of the same stream.")]
    for s in ctx.plan.job_streams:
        curve = job_wait_curve(s)
        sim = simulated_points(s)
        target = next(w for w in ctx.scenario.workloads if w.name == s.name).target_wait_hours
        out.append(h3(s.name))
        out.append(facts([("GPUs", count(s.gpus)), ("Jobs at once", count(s.slots)),
                          ("Utilisation", pct(s.utilisation)), ("Mean wait", duration(s.wait_mean_seconds)),
                          ("p95 wait", duration(s.wait_p95_seconds)),
                          ("Target", ("met: " if s.target_met else "missed: ") + stream_target_text(s.target))]))
        if not s.stable:
            out.append(para(f"Unstable: {sig(s.offered_gpus)} GPUs of work arrive on average for {F.plural(s.gpus, 'GPU')} "
                            "(utilisation at or above 100 %): the queue grows without bound."))
        rows = [[count(r.gpus), pct(r.utilisation), duration(r.wait_mean_hours * 3600) if r.stable else "unstable",
                 duration(r.wait_p95_hours * 3600) if r.stable else "unstable"] for r in curve.itertuples()]
        sims = [[count(r.gpus), duration(r.wait_mean_hours * 3600), duration(r.ci95_hours * 3600)]
                for r in sim.itertuples()]
        out.append(block(figure(charts.wait_vs_gpus(curve, s.gpus, target, sim, title=f"{s.name}: wait vs GPUs"),
                                f"Mean and p95 wait against the partition's GPUs ({s.jobs_per_day:g} jobs/day of "
                                f"{F.plural(s.gpus_per_job, 'GPU')}, {sig(s.job_seconds / 3600)} h each, "
                                f"{s.hours_distribution}); dashed: the planned size; diamonds: simulated mean "
                                "waits. Waits under 4 s are drawn at the axis floor.")))
        out.append(block(table(["GPUs", "Utilisation", "Mean wait", "p95 wait"], rows, caption="Wait vs GPUs",
                               css="numeric narrow"),
                         table(["GPUs", "Simulated mean wait", "95 % half-width"], sims,
                               caption=f"Simulation ({SIM_JOBS:,} jobs per point)", css="numeric narrow")))
    return Html("".join(out))


def cost(ctx: ReportContext) -> Html:
    """Capital by line, operating cost, $/GPU-hour, each workload's cost and the break-even against renting."""
    c = ctx.plan.cost
    # the buy-or-rent verdict and its payback in present.cost_text's words (the plan's figures typed)
    value, unit, why = payback(c)
    rate = (f"{usd(c.cloud_usd_per_gpu_hour)} per {c.cloud_gpu} GPU-hour ({c.cloud_rate})" if c.cloud_rate
            else f"{DASH} (no rate for the GPU bought)")
    rent = (f" Renting the busy GPU-hours would cost {usd(c.rent_usd_per_year)} a year against "
            f"{usd(c.own_usd_per_year)} for owning." if c.rent_usd_per_year is not None else "")
    out = [facts([("Capital", usd(c.capital_usd)), ("Operating per year", usd(c.operating_usd_per_year)),
                  ("Per GPU-hour", usd(c.usd_per_gpu_hour)), ("GPUs busy", pct(c.gpu_utilisation)),
                  ("Cloud rate", rate),
                  ("Break-even busy share", pct(c.break_even_utilisation) if c.cloud_rate else f"{DASH} (no rate)"),
                  ("Pays back", " ".join(x for x in (value, unit) if x) + f" ({why})")]),
           para(f"Capital is amortised straight-line over {c.life_years:g} years; energy is the servers' maximum "
                f"power × {pct(c.average_power_share)} average draw × PUE × 8,760 h × the energy price (switch and "
                "storage power are not counted). The cost per GPU-hour divides the yearly cost of owning by the "
                f"installed GPU-hours.{rent}"),
           para(Html(f"<strong>Buy or rent:</strong> {esc(verdict(c))}."))]
    out.append(block(figure(charts.cost_breakdown(c), "Cost per year by line: capital amortised over the life, and "
                                                  "operating cost.")))
    rows = [[x.item, F.num(x.quantity), x.unit, usd(x.unit_usd), usd(x.usd), x.kind] for x in c.capital_lines]
    rows.append([Html("<strong>Total capital</strong>"), "", "", "", usd(c.capital_usd), ""])
    out.append(block(table(["Item", "Quantity", "Unit", "Unit price", "USD", "Price"], rows,
                           caption="Capital by bill-of-materials line", css="numeric")))
    yearly = [[x["item"], usd(x["usd_per_year"]), operating_basis(x)] for x in c.operating_lines]
    yearly.append([Html("<strong>Operating per year</strong>"), usd(c.operating_usd_per_year), ""])
    out.append(block(table(["Item", "USD per year", "Basis"], yearly, caption="Operating cost")))
    work = [[t["workload"], "one training run", usd(t["usd"]), f"{sig(t['gpu_hours'])} GPU-hours"]
            for t in c.training]
    work += [[i["workload"], "1 M output tokens", usd(i["usd_per_million_tokens"]),
              f"{usd(i['usd_per_hour'])}/h for {sig(i['tokens_per_s_at_load'])} tokens/s; at full capacity "
              f"{usd(i['usd_per_million_tokens_at_capacity'])}"] for i in c.inference]
    work += [[j["workload"], "one job", usd(j["usd_per_job"]), f"with the partition's idle time "
              f"{usd(j['usd_per_job_with_idle'])}"] for j in c.job_streams]
    if work:
        out.append(block(table(["Workload", "Per", "USD", "Basis"], work, caption="What each workload costs")))
    prices = [[p["id"], p["item"], p["unit"], usd(p["usd"]),
               Html(f"<strong>{esc(p['kind'])}</strong>") if p["kind"] == "assumption" else p["kind"],
               p["date"] or DASH, p["source"]] for p in c.prices_used]
    out.append(block(table(["Price", "Item", "Unit", "USD", "Kind", "Date", "Source"], prices,
                           caption="Prices used (assumptions must be replaced with quotes)", css="sources"),
                     note("Override any price in the scenario: cost: {prices: {id: value}}.")))
    return Html("".join(out))
