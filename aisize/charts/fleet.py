"""Altair charts of a fleet through the day: a service's load and replicas, a pool's GPUs by hour.

Same rules as the rest of :mod:`aisize.charts`: plan figures in (``Plan.fleet``), a chart out, titles and axes
with units, nothing computed here but resampling and unit conversions for display.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from aisize.charts.style import BLUE, GREY, ORANGE, WIDTH, tips
from aisize.format import plural

PALETTE = [BLUE, ORANGE, "#54a24b", "#b279a2", "#eeca3b", "#9d755d", "#72b7b2", "#ff9da6"] * 4
POINTS_PER_HOUR = 4  # the autoscaler's periods shown every 15 minutes (the most replicas in each)
DAY_HEIGHT = 180  # a day chart is wide and low: load and replicas read well at this height


def day_rows(sfp) -> pd.DataFrame:
    """A service's day every 15 minutes: offered rate, replicas serving and holding GPUs (the most in each)."""
    d = sfp.day.day
    n = 24 * POINTS_PER_HOUR
    hours = np.arange(n) / POINTS_PER_HOUR
    return pd.DataFrame({"hour": hours, "requests_per_s": d.rate_per_s.reshape(n, -1).mean(axis=1),
                         "replicas holding GPUs": d.provisioned.reshape(n, -1).max(axis=1),
                         "replicas serving": d.ready.reshape(n, -1).min(axis=1)})


DAY_LOAD, DAY_REPLICAS, POOL_GPUS = "day_load", "day_replicas", "pool_gpus"  # named datasets (Vega changesets)


def day_curve_rows(sfp) -> dict[str, list[dict]]:
    """The rows :func:`day_curve` draws, by dataset name: the load every 15 minutes, then the replicas holding GPUs
    and those serving."""
    data = day_rows(sfp)
    hours = [float(h) for h in data["hour"]]
    load = [{"hour": h, "requests_per_s": float(r)} for h, r in zip(hours, data["requests_per_s"])]
    reps = [{"hour": h, "what": what, "replicas": int(n)} for what in ("replicas holding GPUs", "replicas serving")
            for h, n in zip(hours, data[what])]
    return {DAY_LOAD: load, DAY_REPLICAS: reps}


def day_curve(sfp, *, title: str | None = None) -> alt.LayerChart:
    """The service's load (line, left axis) and its replicas (steps, right axis) through the day; the rows live in
    the named datasets of :func:`day_curve_rows`."""
    x = alt.X("hour:Q", title="hour of the day", scale=alt.Scale(domain=[0, 24]), axis=alt.Axis(tickCount=12))
    load = alt.Chart(alt.NamedData(name=DAY_LOAD)).mark_line(color=GREY, strokeDash=[4, 3]).encode(
        x=x, y=alt.Y("requests_per_s:Q", title="offered load [requests/s]"),
        tooltip=tips("hour:Q", alt.Tooltip("requests_per_s:Q", title="requests/s", format=",.2f")))
    steps = alt.Chart(alt.NamedData(name=DAY_REPLICAS)).mark_line(interpolate="step-after").encode(
        x=x, y=alt.Y("replicas:Q", title="replicas"),
        color=alt.Color("what:N", title=None, scale=alt.Scale(range=[BLUE, ORANGE])),
        tooltip=tips("hour:Q", "what:N", "replicas:Q"))
    return alt.layer(load, steps).resolve_scale(y="independent").properties(
        width=WIDTH, height=DAY_HEIGHT, title=title or f"{sfp.day.name} through the day",
        datasets=day_curve_rows(sfp))


def pool_rows(pool_day) -> pd.DataFrame:
    """One row per (hour, workload) with the GPUs it holds, and a "free" row per hour."""
    rows = [{"hour": h, "workload": w, "gpus": float(v[h])} for w, v in pool_day.by_workload.items() for h in range(24)]
    rows += [{"hour": h, "workload": "free", "gpus": float(pool_day.free_gpus[h])} for h in range(24)]
    return pd.DataFrame(rows)


def pool_day_rows(pool_day) -> dict[str, list[dict]]:
    """The rows :func:`pool_day` draws, by dataset name."""
    return {POOL_GPUS: pool_rows(pool_day).to_dict("records")}


def pool_day_key(pool_day) -> tuple:
    """What :func:`pool_day` draws besides its rows (the pool, its GPUs, its workloads in order): equal keys, the
    same chart with other rows (an app move swaps them in, :class:`aisize.app.controls.ChartSlot`)."""
    return pool_day.pool, int(pool_day.installed_gpus), tuple(pool_day.by_workload)


def pool_day(pool_day, *, title: str | None = None) -> alt.Chart:
    """Stacked bars: a pool's GPUs by workload in each hour of the day, free GPUs on top (the troughs); the rows
    live in the named datasets of :func:`pool_day_rows`."""
    names = [w for w in pool_day.by_workload] + ["free"]
    return alt.Chart(alt.NamedData(name=POOL_GPUS)).mark_bar().encode(
        x=alt.X("hour:O", title="hour of the day"),
        y=alt.Y("sum(gpus):Q", title="GPUs", scale=alt.Scale(domain=[0, max(pool_day.installed_gpus, 1)])),
        color=alt.Color("workload:N", title="workload", sort=names,
                        scale=alt.Scale(domain=names, range=PALETTE[:len(names) - 1] + ["#dddddd"])),
        order=alt.Order("order:Q"),
        tooltip=tips("hour:O", "workload:N", "gpus:Q")).transform_calculate(
        order=f"indexof({names!r}, datum.workload)").properties(
        width=WIDTH, height=DAY_HEIGHT - 30,
        title=title or f"Pool {pool_day.pool}: {plural(pool_day.installed_gpus, 'GPU')} by hour",
        datasets=pool_day_rows(pool_day))
