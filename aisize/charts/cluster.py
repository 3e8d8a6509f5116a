"""Altair charts of a shared cluster: the timeline, the packing, job-queue waits, cost, and a comparison.

Same rules as the rest of :mod:`aisize.charts`: plan figures in, a chart out, titles and
axes with units, nothing computed here but unit conversions for display.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, GREY, HEIGHT, LABEL_LIMIT, NUMBER, ORANGE, RED, WIDTH, tips
from aisize.format import plural

DAY = "time from the start [days]"
# One colour per workload on every cluster chart (Vega's category20): the packing coloured by workload and the
# timeline beside it by team, so red meant R1 in one and RAG in the other (screenshot review, issue 47.6)
WORKLOAD_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
                    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]


def workload_colours(names) -> alt.Scale:
    """The colour scale of workloads ``names``: sorted by name, so charts showing the same workloads agree."""
    domain = sorted({str(n) for n in names})
    return alt.Scale(domain=domain, range=[WORKLOAD_PALETTE[k % len(WORKLOAD_PALETTE)] for k in range(len(domain))])


TIMELINE_DATA, TIMELINE_PHASES = "timeline_rows", "timeline_phases"  # named datasets (swapped as a Vega changeset)


def timeline_rows(rows, phases) -> dict[str, list[dict]]:
    """The rows :func:`timeline` draws, by dataset name: a bar per workload, a band per phase."""
    bars = [{**r, "label": f"{r['workload']} ({plural(r['gpus'], 'GPU')}, {r['hours']})"} for r in rows]
    names = timeline_key(rows, phases)[1]
    bands = [{"phase": name, "start": p["start_day"], "end": p["start_day"] + p["days"]} for name, p in zip(names, phases)]
    return {TIMELINE_DATA: bars, TIMELINE_PHASES: bands}


def timeline_key(rows, phases) -> tuple:
    """What :func:`timeline` draws besides its rows (the workloads, in order, and the phases): equal keys, the same
    chart with other rows (an app move swaps them in, :class:`aisize.app.controls.ChartSlot`)."""
    return (tuple(r["workload"] for r in rows),
            tuple(p["name"] + (" (ongoing)" if p["ongoing"] else "") for p in phases))


def timeline(rows, phases, *, title: str = "When workloads run") -> alt.LayerChart:
    """Gantt chart: one bar per workload from its start to its end day, coloured by workload as :func:`packing`
    (:func:`workload_colours`; the team is in the tooltip); phases shaded.

    ``rows`` and ``phases`` are ``Plan.timeline.rows`` / ``.phases``; an open-ended phase is drawn
    ``aisize.plan.timeline.ONGOING_DISPLAY_DAYS`` long and labelled "ongoing". The rows live in the named datasets
    of :func:`timeline_rows`.
    """
    # Vega-Lite joins the differing titles of a shared axis ("day, day, end [day]"): every layer's x (and
    # x2, which would add its own) says the one title
    data = timeline_rows(rows, phases)
    workloads, phase_names = timeline_key(rows, phases)
    shade = alt.Chart(alt.NamedData(name=TIMELINE_PHASES)).mark_rect(opacity=0.12).encode(
        x=alt.X("start:Q", title=DAY), x2=alt.X2("end:Q"),
        color=alt.Color("phase:N", title="phase", sort=list(phase_names),
                        scale=alt.Scale(range=["#bab0ac", "#ffffff", "#9d755d", "#eeeeee"])),
        tooltip=tips("phase:N", "start:Q", "end:Q"))
    bars = alt.Chart(alt.NamedData(name=TIMELINE_DATA)).mark_bar(height=14).encode(
        x=alt.X("start_day:Q", title=DAY), x2=alt.X2("end_day:Q"),
        y=alt.Y("label:N", title=None, sort=None),
        color=alt.Color("workload:N", title="workload", scale=workload_colours(workloads)),
        tooltip=tips("workload:N", "kind:N", "team:N", "phase:N", "pool:N", "hours:N", "gpus:Q",
                     alt.Tooltip("start_day:Q", title="start [day]", format=",.2f"),
                     alt.Tooltip("end_day:Q", title="end [day]", format=",.2f")))
    return (shade + bars).resolve_scale(color="independent").properties(
        width=WIDTH, height=max(60, 24 * len(workloads)), title=title, datasets=data)


def packing_rows(placement, slot_labels) -> pd.DataFrame:
    """One row per (time slot, server, workload) with the GPUs it holds there."""
    rows = []
    for s in placement.servers:
        for w in s.workloads:
            for t in w["slots"]:
                rows.append({"slot": slot_labels[t], "server": f"{s.pool} #{s.server + 1}", "workload": w["workload"],
                             "gpus": w["gpus"], "capacity": s.gpus})
    return pd.DataFrame(rows, columns=["slot", "server", "workload", "gpus", "capacity"])


def packing(placement, slot_labels, *, title: str = "GPUs in use on each server") -> alt.Chart:
    """Stacked bars: each server's GPUs by workload, one panel per time slot (phase and hours of the day), in the
    workload colours of :func:`timeline`."""
    data = packing_rows(placement, slot_labels)
    servers = list(dict.fromkeys(f"{s.pool} #{s.server + 1}" for s in placement.servers))
    top = max([s.gpus for s in placement.servers] + [1])
    bars = alt.Chart(data).mark_bar().encode(
        x=alt.X("server:N", title="server", sort=servers),
        y=alt.Y("sum(gpus):Q", title="GPUs in use", scale=alt.Scale(domain=[0, top])),
        color=alt.Color("workload:N", title="workload", scale=workload_colours(data["workload"])),
        tooltip=tips("slot:N", "server:N", "workload:N", "gpus:Q", "capacity:Q"))
    width = max(120, min(WIDTH, 18 * len(servers)))
    return bars.properties(width=width, height=160).facet(
        column=alt.Column("slot:N", title=None, sort=list(dict.fromkeys(slot_labels)))).properties(title=title)


WAIT_CURVE, WAIT_PLANNED, WAIT_TARGET = "wait_curve", "wait_planned", "wait_target"  # named datasets
_WAIT_FLOOR_HOURS = 1e-3  # waits below 3.6 s are drawn at the axis floor (a log axis has no zero)


def wait_vs_gpus_rows(curve: pd.DataFrame, planned_gpus: int, target_hours: float | None = None) -> dict:
    """The rows :func:`wait_vs_gpus` draws, by dataset name: the stable sizes' mean, then p95, waits; the planned
    size; the target, where one is given."""
    stable = curve[curve["stable"]]
    lines = [{"gpus": int(g), "utilisation": float(u), "statistic": label, "hours": max(float(h), _WAIT_FLOOR_HOURS)}
             for column, label in (("wait_mean_hours", "mean wait"), ("wait_p95_hours", "p95 wait"))
             for g, u, h in zip(stable["gpus"], stable["utilisation"], stable[column])]
    rows = {WAIT_CURVE: lines, WAIT_PLANNED: [{"gpus": int(planned_gpus), "what": "planned"}]}
    if target_hours is not None and math.isfinite(target_hours):
        rows[WAIT_TARGET] = [{"hours": float(target_hours), "what": "target"}]
    return rows


def wait_vs_gpus(curve: pd.DataFrame, planned_gpus: int, target_hours: float | None = None,
                 simulated: pd.DataFrame | None = None, *, title: str = "Job wait vs GPUs") -> alt.LayerChart:
    """Mean and p95 wait [h] against the partition's GPUs (log wait axis), the planned size marked.

    ``curve`` is :func:`aisize.plan.job_wait_curve`; unstable sizes (infinite waits) are left out.
    ``simulated`` (columns gpus, wait_mean_hours) adds simulation points; ``target_hours`` a rule. The curve, the
    planned size and the target live in the named datasets of :func:`wait_vs_gpus_rows`.
    """
    data = wait_vs_gpus_rows(curve, planned_gpus, target_hours)
    lines = alt.Chart(alt.NamedData(name=WAIT_CURVE)).mark_line(point=True).encode(
        x=alt.X("gpus:Q", title="GPUs in the partition"),
        y=alt.Y("hours:Q", title="wait [h]", scale=alt.Scale(type="log")),
        color=alt.Color("statistic:N", title=None, scale=alt.Scale(range=[BLUE, ORANGE])),
        tooltip=tips("gpus:Q", "statistic:N", alt.Tooltip("hours:Q", format=NUMBER),
                     alt.Tooltip("utilisation:Q", format=".0%")))
    layers = [lines, alt.Chart(alt.NamedData(name=WAIT_PLANNED)).mark_rule(
        color=RED, strokeDash=[4, 3]).encode(x=alt.X("gpus:Q"), tooltip=tips("what:N", "gpus:Q"))]
    if WAIT_TARGET in data:
        layers.append(alt.Chart(alt.NamedData(name=WAIT_TARGET)).mark_rule(
            color=GREY, strokeDash=[2, 2]).encode(y=alt.Y("hours:Q"), tooltip=tips("what:N", "hours:Q")))
    if simulated is not None and len(simulated):
        sim = simulated.assign(hours=simulated["wait_mean_hours"].clip(lower=_WAIT_FLOOR_HOURS),
                               statistic="simulated mean")
        layers.append(alt.Chart(sim).mark_point(shape="diamond", size=70, color="black", filled=True).encode(
            x=alt.X("gpus:Q"), y=alt.Y("hours:Q"),
            tooltip=tips("gpus:Q", alt.Tooltip("hours:Q", format=NUMBER), "statistic:N")))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title, datasets=data)


def _cost_records(cost) -> list[dict]:
    """:func:`cost_rows` as plain dicts, the amounts as floats (what the float64 column holds)."""
    rows = [{"item": x.item, "kind": "capital (amortised)", "usd_per_year": float(x.usd / cost.life_years)}
            for x in cost.capital_lines if x.usd > 0]
    return rows + [{"item": x["item"], "kind": "operating", "usd_per_year": float(x["usd_per_year"])}
                   for x in cost.operating_lines if x["usd_per_year"] > 0]


def cost_rows(cost) -> pd.DataFrame:
    """Yearly cost by line: capital lines amortised over the life, then operating lines [USD/year]."""
    return pd.DataFrame(_cost_records(cost), columns=["item", "kind", "usd_per_year"])


COST_DATA = "cost_lines"  # named dataset of cost_breakdown (swapped as a Vega changeset)


def cost_breakdown_rows(cost) -> dict[str, list[dict]]:
    """The rows :func:`cost_breakdown` draws, by dataset name."""
    return {COST_DATA: _cost_records(cost)}  # no DataFrame: a Cost move's rows in 0.05 ms, not 0.7


def cost_breakdown(cost, *, title: str = "Cost per year") -> alt.Chart:
    """Horizontal bars: each line's cost per year, capital amortised straight-line over the life.

    The rows live in the named dataset of :func:`cost_breakdown_rows`; the height follows the line count."""
    data = cost_rows(cost)
    return alt.Chart(alt.NamedData(name=COST_DATA)).mark_bar().encode(
        x=alt.X("usd_per_year:Q", title="USD per year", axis=alt.Axis(format="~s")),
        y=alt.Y("item:N", title=None, sort="-x", axis=alt.Axis(labelLimit=LABEL_LIMIT)),
        color=alt.Color("kind:N", title=None, scale=alt.Scale(range=[BLUE, ORANGE])),
        tooltip=tips("item:N", "kind:N",
                     alt.Tooltip("usd_per_year:Q", title="USD per year", format="$,.3s"))).properties(
        width=WIDTH, height=max(80, 20 * len(data)), title=title, datasets=cost_breakdown_rows(cost))


def comparison(table: pd.DataFrame, *, title: str = "B against A") -> alt.Chart:
    """Bars of B's change from A [%] for every numeric figure that differs (``comparison_table``)."""
    rows = table[table["differs"] & table["change"].notna()].copy()
    rows["percent"] = rows["change"].astype(float) * 100.0
    rows["better"] = rows["better"].replace("", "—")
    return alt.Chart(rows).mark_bar().encode(
        x=alt.X("percent:Q", title="change from A [%]"),
        y=alt.Y("metric:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
        color=alt.Color("better:N", title="better", scale=alt.Scale(domain=["A", "B", "—"],
                                                                    range=[BLUE, ORANGE, GREY])),
        tooltip=tips("metric:N", alt.Tooltip("percent:Q", format="+,.1f"), "better:N")).properties(
        width=WIDTH, height=max(60, 22 * len(rows)), title=title)
