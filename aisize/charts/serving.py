"""Serving: TTFT and TPOT against load, and the throughput frontier of the configuration search."""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize import checks
from aisize.charts.style import BLUE, GREY, HEIGHT, MARK, NUMBER, ORANGE, RED, WIDTH, as_frame, with_marker, tips

SERVING_CURVE, SERVING_TARGETS = "serving_curve", "serving_targets"
# The param the curve's rates are multiplied by where drawn [count]: the replicas sharing the load evenly, for a curve
# of one replica; 1 for a curve already of the whole fleet. A move that changes only the replica count sets it and
# sends no rows (issue 51: the rows were 21 kB of a request-rate move's 29 kB). Vega's formula transform writes its
# field into the row in place, so the rows' rate (the curve's, ``requests_per_s``) and the drawn rate are two fields:
# the same one would be multiplied again on every new factor.
RATE_FACTOR = "rate_factor"
FLEET_RATE = "fleet_requests_per_s"  # the drawn rate: the rows' times RATE_FACTOR [requests/s]
# a row's series (its field: "<metric> <statistic>", in ms) and the curve's column each is read from [s]
SERIES_COLUMNS = {"TTFT mean": "ttft_seconds", "TTFT p95": "ttft_p95_seconds", "TPOT mean": "tpot_seconds",
                  "TPOT p95": "tpot_p95_seconds"}


def serving_latency_data(curve: pd.DataFrame, ttft_target_seconds: float | None = None,
                         tpot_target_seconds: float | None = None) -> dict[str, list[dict]]:
    """The rows :func:`serving_latency` draws, by dataset name: one row a rate with each series in ms (``"TTFT
    mean"``, ``"TTFT p95"``, ``"TPOT mean"``, ``"TPOT p95"``), which each panel folds into its two lines (a row a
    point: four times the rows and 21 kB a new curve, where these are 8.7 kB); the rates are the curve's, drawn
    times the chart's :data:`RATE_FACTOR`."""
    # each column read once as Python floats (tolist: float() of each element, without a Series iteration)
    columns = [[float(v) * 1e3 for v in curve[c].tolist()] for c in SERIES_COLUMNS.values()]
    rows = [dict(zip(("requests_per_s", *SERIES_COLUMNS), (float(r), *v)))
            for r, *v in zip(curve["requests_per_s"].tolist(), *columns)]
    targets = [{"metric": m, "ms": float(t) * 1e3, "what": f"{m} target"}
               for m, t in (("TTFT", ttft_target_seconds), ("TPOT", tpot_target_seconds)) if t is not None]
    return {SERVING_CURVE: rows, SERVING_TARGETS: targets}


def serving_latency(curve: pd.DataFrame, ttft_target_seconds: float | None = None,
                    tpot_target_seconds: float | None = None, requests_per_s: float | None = None, *,
                    rate_factor: int = 1, title: str = "TTFT and TPOT vs load") -> alt.HConcatChart:
    """Time to first token and time per output token [ms], mean and p95, against request rate,
    one panel each, with the targets as red rules and the planned load as a grey rule.

    ``curve`` is :func:`aisize.plan.latency_curve`'s frame (``requests_per_s`` and the
    ``ttft_*``/``tpot_*`` columns in seconds), drawn at ``rate_factor`` times its rates (the :data:`RATE_FACTOR`
    param: e.g. a curve of one replica and the replica count; Python's and Vega's products of two doubles are the
    same double, so the drawn rates are those of the curve multiplied in the kernel).
    """
    factor = int(checks.integer("rate_factor", rate_factor, low=1, high=10**7))
    data = serving_latency_data(curve, ttft_target_seconds, tpot_target_seconds)
    # every layer's x is this one: a differing title would be joined onto the axis's ("…, requests/s")
    x = alt.X(f"{FLEET_RATE}:Q", title="request rate [requests/s]")

    def panel(metric):
        lines = alt.Chart(alt.NamedData(name=SERVING_CURVE)).transform_fold(
            [f"{metric} mean", f"{metric} p95"], as_=["series", "ms"]).transform_calculate(
            statistic=f"slice(datum.series, {len(metric) + 1})").transform_calculate(
            **{FLEET_RATE: f"datum.requests_per_s * {RATE_FACTOR}"}).mark_line().encode(
            x=x, y=alt.Y("ms:Q", title=f"{metric} [ms]"),
            color=alt.Color("statistic:N", title="latency", scale=alt.Scale(range=[BLUE, ORANGE])),
            tooltip=tips(alt.Tooltip(f"{FLEET_RATE}:Q", title="requests/s", format=NUMBER), "statistic:N",
                         alt.Tooltip("ms:Q", format=NUMBER)))
        layers = [lines, alt.Chart(alt.NamedData(name=SERVING_TARGETS)).transform_filter(
            alt.datum.metric == metric).mark_rule(color=RED, strokeDash=[6, 3]).encode(
            y=alt.Y("ms:Q"), tooltip=tips("what:N", alt.Tooltip("ms:Q", format=NUMBER)))]
        if requests_per_s is not None:
            layers.append(alt.Chart(alt.Data(values=[{"where": "planned load"}])).transform_calculate(
                **{FLEET_RATE: MARK}).mark_rule(color=GREY).encode(x=x, tooltip=tips("where:N")))
        return alt.layer(*layers).properties(width=WIDTH // 2, height=HEIGHT, title=metric)

    chart = alt.hconcat(panel("TTFT"), panel("TPOT")).properties(title=title, datasets=data).add_params(
        alt.param(name=RATE_FACTOR, value=factor))
    return with_marker(chart, requests_per_s)


def serving_frontier(frontier: pd.DataFrame, feasible: pd.DataFrame | None = None, *,
                     title: str = "Serving configurations: throughput per GPU vs per user") -> alt.LayerChart:
    """Tokens/s per GPU against tokens/s per user of the configurations that fit (the Pareto
    frontier as a line, by mode), with those meeting the targets as points."""
    f = as_frame(frontier)
    x = alt.X("tokens_per_s_per_user:Q", title="output tokens/s per user (1 / TPOT)", scale=alt.Scale(type="log"))
    y = alt.Y("tokens_per_s_per_gpu:Q", title="output tokens/s per GPU", scale=alt.Scale(type="log"))
    titles = {"mode": "mode", "weight_precision": "weights", "tensor_parallel": "tensor parallel",
              "pipeline_parallel": "pipeline parallel", "attention_dp": "attention DP", "batch": "batch",
              "tokens_per_s_per_gpu": "output tokens/s per GPU", "tokens_per_s_per_user": "output tokens/s per user"}
    tip = [alt.Tooltip(c, title=t, format=NUMBER) if c.startswith("tokens") else alt.Tooltip(c, title=t)
           for c, t in titles.items() if c in f]
    line = alt.Chart(f).mark_line(point=True).encode(x=x, y=y, color=alt.Color("mode:N", title="mode"),
                                                     tooltip=tip)
    layers = [line]
    if feasible is not None and len(feasible):
        ok = as_frame(feasible).nlargest(200, "tokens_per_s_per_gpu")
        layers.insert(0, alt.Chart(ok).mark_circle(opacity=0.25, color=GREY, size=20).encode(x=x, y=y, tooltip=tip))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title)
