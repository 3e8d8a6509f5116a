"""Latency against load and against concurrency, the knee and the operating point marked.

The rows live in named datasets, so the app can swap them in a drawn chart (a Vega changeset)
instead of building a new chart, and a slider move that changes the curve stays cheap.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, GREY, HEIGHT, MARK, NUMBER, ORANGE, RED, WIDTH, with_marker, tips

LOAD_CURVE, LOAD_KNEE, LOAD_TARGET = "load_curve", "load_knee", "load_target"
CONCURRENCY_CURVE, CONCURRENCY_KNEE = "concurrency_curve", "concurrency_knee"
LATENCY_UNITS = {"ms": 1e3, "s": 1.0}


def latency_vs_load_data(curve: pd.DataFrame, knee_requests_per_s: float,
                         target_seconds: float | None = None) -> dict[str, list[dict]]:
    """The rows :func:`latency_vs_load` draws, by dataset name (plain lists, no chart built).

    ``curve`` as in :func:`latency_vs_load`; rows in long form (``requests_per_s``,
    ``statistic`` "mean"/"p95", ``seconds`` [s]), the knee [requests/s] and the target [s].
    """
    rates = [float(r) for r in curve["requests_per_s"]]
    rows = [{"requests_per_s": r, "statistic": statistic, "seconds": float(s)}
            for statistic, column in (("mean", "latency_mean_seconds"), ("p95", "latency_p95_seconds"))
            for r, s in zip(rates, curve[column])]
    out = {LOAD_CURVE: rows, LOAD_KNEE: [{"where": "knee", "requests_per_s": float(knee_requests_per_s)}]}
    if target_seconds is not None:
        out[LOAD_TARGET] = [{"seconds": float(target_seconds), "what": "latency target"}]
    return out


def latency_vs_load(curve: pd.DataFrame, knee_requests_per_s: float, requests_per_s: float | None = None,
                    target_seconds: float | None = None, *,
                    title: str = "Request latency vs load") -> alt.LayerChart:
    """Mean and p95 latency [s] against request rate [requests/s], with the knee and the planned load.

    ``curve`` is :func:`aisize.plan.latency_curve`'s frame (``requests_per_s``,
    ``latency_mean_seconds``, ``latency_p95_seconds``). The rows live in the named
    datasets of :func:`latency_vs_load_data`.
    """
    data = latency_vs_load_data(curve, knee_requests_per_s, target_seconds)
    x = alt.X("requests_per_s:Q", title="request rate [requests/s]")
    lines = alt.Chart(alt.NamedData(name=LOAD_CURVE)).mark_line().encode(
        x=x, y=alt.Y("seconds:Q", title="latency [s]"),
        color=alt.Color("statistic:N", title="latency", scale=alt.Scale(range=[BLUE, ORANGE])),
        tooltip=tips(alt.Tooltip("requests_per_s:Q", title="requests/s", format=NUMBER), "statistic:N",
                     alt.Tooltip("seconds:Q", title="s", format=NUMBER)))
    markers = knee_markers(x, LOAD_KNEE, requests_per_s, "planned load", LOAD_TARGET if target_seconds is not None
                       else None)
    return with_marker(alt.layer(lines, *markers), requests_per_s).properties(
        width=WIDTH, height=HEIGHT, title=title, datasets=data)


def knee_markers(x, knee_data: str, at=None, at_label="", target_data: str | None = None) -> list:
    """Labelled vertical rules at the knee (dashed red, dataset ``knee_data``: ``where`` and x's field)
    and the operating point (grey, at the MARK param); a horizontal target rule (dataset ``target_data``)."""
    field = x.shorthand.split(":")[0]
    label = x.to_dict(validate=False).get("title", field)  # the axis's title names the rules' value too
    rule = {"knee": (alt.Chart(alt.NamedData(name=knee_data)), RED, [6, 3])}
    if at is not None:
        # the operating point reads the MARK param (its value is `at`): moving it needs no new chart
        rule["at"] = (alt.Chart(alt.Data(values=[{"where": at_label}])).transform_calculate(**{field: MARK}),
                      GREY, [1, 0])
    out = []
    for line, (base, color, dash) in enumerate(rule.values()):
        base = base.encode(x=alt.X(f"{field}:Q", title=label))
        out.append(base.mark_rule(color=color, size=2, strokeDash=dash).encode(
            tooltip=tips("where:N", alt.Tooltip(f"{field}:Q", title=label, format=NUMBER))))
        # one label a line down from the other: near each other the two rules' labels overlapped
        out.append(base.mark_text(color=color, align="left", dx=4, dy=4 + 14 * line, baseline="top", y=0,
                                  fontWeight="bold").encode(text=alt.Text("where:N")))
    if target_data is not None:
        base = alt.Chart(alt.NamedData(name=target_data)).encode(y=alt.Y("seconds:Q"))
        out.append(base.mark_rule(color=GREY, strokeDash=[2, 2]).encode(
            tooltip=tips("what:N", alt.Tooltip("seconds:Q", title="s", format=NUMBER))))
        out.append(base.mark_text(color=GREY, align="right", x="width", dy=-6).encode(text=alt.Text("what:N")))
    return out


def latency_vs_concurrency_data(frame: pd.DataFrame, knee_concurrency: float,
                                latency_unit: str = "ms") -> dict[str, list[dict]]:
    """The rows :func:`latency_vs_concurrency` draws, by dataset name: ``concurrency`` [count] and
    ``latency`` [``latency_unit``], and the knee [count]."""
    scale = LATENCY_UNITS[latency_unit]
    rows = [{"concurrency": float(n), "latency": float(s) * scale}
            for n, s in zip(frame["concurrency"], frame["response_mean_seconds"])]
    return {CONCURRENCY_CURVE: rows,
            CONCURRENCY_KNEE: [{"where": "knee", "concurrency": float(knee_concurrency)}]}


def latency_vs_concurrency(frame: pd.DataFrame, knee_concurrency: float, concurrency: float | None = None, *,
                           latency_unit: str = "ms", outstanding: str = "requests",
                           title: str = "Latency vs concurrency") -> alt.LayerChart:
    """Closed-system mean latency against requests outstanding, the knee marked.

    ``frame`` has ``concurrency`` [count] and ``response_mean_seconds`` [s] (from
    :func:`aisize.plan.concurrency_curve`); ``latency_unit`` is "ms" or "s"; ``outstanding`` names what is in
    flight on the x axis ("requests" for a service, "IOs" for storage). The rows
    live in the named datasets of :func:`latency_vs_concurrency_data`.
    """
    data = latency_vs_concurrency_data(frame, knee_concurrency, latency_unit)
    x = alt.X("concurrency:Q", title=f"{outstanding} outstanding [count]")
    line = alt.Chart(alt.NamedData(name=CONCURRENCY_CURVE)).mark_line(color=BLUE).encode(
        x=x, y=alt.Y("latency:Q", title=f"mean latency [{latency_unit}]"),
        tooltip=tips(alt.Tooltip("concurrency:Q", format=NUMBER),
                     alt.Tooltip("latency:Q", title=latency_unit, format=NUMBER)))
    return with_marker(alt.layer(line, *knee_markers(x, CONCURRENCY_KNEE, concurrency, "operating point")),
                         concurrency).properties(width=WIDTH, height=HEIGHT, title=title, datasets=data)
