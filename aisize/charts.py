"""Altair chart builders shared by the app and the reports.

Pure functions: plan figures or DataFrames in, an ``alt.Chart`` (or layer) out,
each with a title and axis titles that carry their units. Nothing here computes
a sizing figure: the numbers come from :mod:`aisize.plan`, :mod:`aisize.queueing`
and :mod:`aisize.validation`; these functions only convert units for display
and draw. The app renders them with ``alt.JupyterChart`` (offline), the report
as SVG.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import altair as alt
import pandas as pd

from aisize.units import GB, TB, GiB, MB

WIDTH, HEIGHT = 440, 240
BLUE, ORANGE, RED, GREY = "#4c78a8", "#f58518", "#e45756", "#7f7f7f"

# Params a viewer may set to move a marker without a new chart (JupyterChart.params.<name>).
MARK = "marked"  # operating point of latency_vs_load / latency_vs_concurrency
MARK_DAYS, MARK_GPUS = "marked_days", "marked_gpus"  # chosen point of gpus_vs_days

# Memory line items in drawing order (training and inference breakdowns), with display names.
MEMORY_ITEMS = {
    "weights_bytes": "weights", "gradients_bytes": "gradients", "master_weights_bytes": "master weights",
    "optimizer_moments_bytes": "optimizer moments", "activations_bytes": "activations",
    "loss_buffers_bytes": "logits and loss", "kv_cache_bytes": "KV cache", "activation_workspace_bytes": "activation workspace",
    "temporary_buffers_bytes": "temporary buffers", "communication_buffers_bytes": "communication buffers",
    "cuda_context_bytes": "CUDA context", "fragmentation_bytes": "fragmentation",
}


def _frame(rows) -> pd.DataFrame:
    return rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


LIMIT_DASHES = {"GPU memory": [1, 0], "usable after headroom": [4, 3]}  # solid, dashed


def memory_breakdown(memory_bytes: Mapping[str, float], gpu_memory_bytes: float,
                     usable_bytes: float | None = None, *, title: str = "Memory per GPU") -> alt.LayerChart:
    """Stacked bar of the per-GPU memory line items [GiB] against the GPU's memory (red rule).

    Parameters
    ----------
    memory_bytes : line items [B], e.g. ``TrainingPlan.memory_bytes`` or
        ``InferencePlan.memory_per_gpu_bytes`` (``total_bytes`` and ``host_bytes`` are not drawn)
    gpu_memory_bytes : the GPU's memory [B]
    usable_bytes : memory after headroom [B] (dashed rule), optional
    """
    rows = [{"item": MEMORY_ITEMS[k], "order": i, "gib": float(memory_bytes[k]) / GiB, "bar": "need"}
            for i, k in enumerate(MEMORY_ITEMS) if float(memory_bytes.get(k, 0.0) or 0.0) > 0.0]
    data = pd.DataFrame(rows, columns=["item", "order", "gib", "bar"])
    x_max = max(data["gib"].sum(), gpu_memory_bytes / GiB) * 1.08
    x = alt.X("sum(gib):Q", title="memory per GPU [GiB]", scale=alt.Scale(domain=[0, x_max]))
    bars = alt.Chart(data).mark_bar(height=34).encode(
        x=x, y=alt.Y("bar:N", title=None, axis=None),
        color=alt.Color("item:N", title="line item", sort=list(MEMORY_ITEMS.values()),
                        scale=alt.Scale(scheme="tableau20")),
        order=alt.Order("order:Q"),
        tooltip=["item:N", alt.Tooltip("gib:Q", title="GiB", format=",.2f")])
    limits = [{"limit": "GPU memory", "gib": gpu_memory_bytes / GiB}]
    if usable_bytes is not None:
        limits.append({"limit": "usable after headroom", "gib": usable_bytes / GiB})
    # the legend lists only the limits drawn: a domain entry without a rule would still get a swatch
    drawn = [x["limit"] for x in limits]
    rules = alt.Chart(pd.DataFrame(limits)).mark_rule(color=RED, size=2).encode(
        x="gib:Q", strokeDash=alt.StrokeDash("limit:N", title="limit",
                                             scale=alt.Scale(domain=drawn, range=[LIMIT_DASHES[k] for k in drawn])),
        tooltip=["limit:N", alt.Tooltip("gib:Q", title="GiB", format=",.1f")])
    return (bars + rules).properties(width=WIDTH, height=70, title=title)


def gpus_vs_days(frame: pd.DataFrame, marked_days: float | None = None, marked_gpus: float | None = None, *,
                 title: str = "GPUs needed vs target time") -> alt.LayerChart:
    """GPUs needed [count] against the target time [days] (log-log), the chosen target marked.

    ``frame`` has columns ``target_days`` and ``gpus`` (e.g. from :func:`aisize.plan.gpus_vs_days`).
    """
    data = _frame(frame)[["target_days", "gpus"]]
    x = alt.X("target_days:Q", title="target time to train [days] (log)", scale=alt.Scale(type="log"))
    y = alt.Y("gpus:Q", title="GPUs needed [count] (log)", scale=alt.Scale(type="log"))
    line = alt.Chart(data).mark_line(point=True, color=BLUE, interpolate="step-before").encode(
        x=x, y=y, tooltip=[alt.Tooltip("target_days:Q", title="days", format=",.3g"),
                           alt.Tooltip("gpus:Q", title="GPUs", format=",d")])
    if marked_days is None or marked_gpus is None:
        return line.properties(width=WIDTH, height=HEIGHT, title=title)
    # the marked point reads two params, so a viewer can move it without a new chart
    mark = (alt.Chart(pd.DataFrame([{"what": "chosen"}]))
            .transform_calculate(target_days=MARK_DAYS, gpus=MARK_GPUS)
            .mark_point(filled=True, size=140, color=RED).encode(
                x=x, y=y, tooltip=[alt.Tooltip("target_days:Q", title="chosen days", format=",.3g"),
                                   alt.Tooltip("gpus:Q", title="GPUs", format=",d")]))
    return alt.layer(line, mark).add_params(alt.param(name=MARK_DAYS, value=float(marked_days)),
                                            alt.param(name=MARK_GPUS, value=float(marked_gpus))).properties(
        width=WIDTH, height=HEIGHT, title=title)


# Named datasets of the two latency charts: the app swaps their rows in a drawn chart (a Vega
# changeset) instead of building a new chart, so a slider move that changes the curve stays cheap.
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
        tooltip=[alt.Tooltip("requests_per_s:Q", title="requests/s", format=",.3g"), "statistic:N",
                 alt.Tooltip("seconds:Q", title="s", format=",.3g")])
    markers = _markers(x, LOAD_KNEE, requests_per_s, "planned load", LOAD_TARGET if target_seconds is not None
                       else None)
    return _with_markers(alt.layer(lines, *markers), requests_per_s).properties(
        width=WIDTH, height=HEIGHT, title=title, datasets=data)


def _with_markers(chart, at):
    return chart if at is None else chart.add_params(alt.param(name=MARK, value=float(at)))


def _markers(x, knee_data: str, at=None, at_label="", target_data: str | None = None) -> list:
    """Labelled vertical rules at the knee (dashed red, dataset ``knee_data``: ``where`` and x's field)
    and the operating point (grey, at the MARK param); a horizontal target rule (dataset ``target_data``)."""
    field = x.shorthand.split(":")[0]
    rule = {"knee": (alt.Chart(alt.NamedData(name=knee_data)), RED, [6, 3])}
    if at is not None:
        # the operating point reads the MARK param (its value is `at`): moving it needs no new chart
        rule["at"] = (alt.Chart(alt.Data(values=[{"where": at_label}])).transform_calculate(**{field: MARK}),
                      GREY, [1, 0])
    out = []
    for base, color, dash in rule.values():
        base = base.encode(x=alt.X(f"{field}:Q"))
        out.append(base.mark_rule(color=color, size=2, strokeDash=dash).encode(
            tooltip=["where:N", alt.Tooltip(f"{field}:Q", format=",.4g")]))
        out.append(base.mark_text(color=color, align="left", dx=4, dy=4, baseline="top", y=0,
                                  fontWeight="bold").encode(text="where:N"))
    if target_data is not None:
        base = alt.Chart(alt.NamedData(name=target_data)).encode(y="seconds:Q")
        out.append(base.mark_rule(color=GREY, strokeDash=[2, 2]).encode(
            tooltip=["what:N", alt.Tooltip("seconds:Q", title="s", format=",.3g")]))
        out.append(base.mark_text(color=GREY, align="right", x="width", dy=-6).encode(text="what:N"))
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
                           latency_unit: str = "ms",
                           title: str = "Latency vs concurrency") -> alt.LayerChart:
    """Closed-system mean latency against requests outstanding, the knee marked.

    ``frame`` has ``concurrency`` [count] and ``response_mean_seconds`` [s] (from
    :func:`aisize.plan.concurrency_curve`); ``latency_unit`` is "ms" or "s". The rows
    live in the named datasets of :func:`latency_vs_concurrency_data`.
    """
    data = latency_vs_concurrency_data(frame, knee_concurrency, latency_unit)
    x = alt.X("concurrency:Q", title="requests outstanding [count]")
    line = alt.Chart(alt.NamedData(name=CONCURRENCY_CURVE)).mark_line(color=BLUE).encode(
        x=x, y=alt.Y("latency:Q", title=f"mean latency [{latency_unit}]"),
        tooltip=[alt.Tooltip("concurrency:Q", format=",.4g"),
                 alt.Tooltip("latency:Q", title=latency_unit, format=",.4g")])
    return _with_markers(alt.layer(line, *_markers(x, CONCURRENCY_KNEE, concurrency, "operating point")),
                         concurrency).properties(width=WIDTH, height=HEIGHT, title=title, datasets=data)


def _rate_unit(values: Iterable[float]) -> tuple[str, float]:
    """GB/s when any rate reaches 1 GB/s, else MB/s (so small blends stay readable)."""
    top = max([float(v) for v in values], default=0.0)
    return ("GB/s", GB) if top >= GB else ("MB/s", MB)


def io_blend(rows, *, title: str = "Storage IO blend: average rate by workload") -> alt.Chart:
    """Horizontal stacked bars of each workload's average read and write rate [GB/s or MB/s].

    ``rows`` are ``StoragePlan.workloads`` dicts (or a DataFrame with ``name``,
    ``read_bytes_per_s``, ``write_bytes_per_s``).
    """
    df = _frame(rows)
    unit, div = _rate_unit(list(df["read_bytes_per_s"]) + list(df["write_bytes_per_s"]))
    data = df.melt(id_vars=["name"], value_vars=["read_bytes_per_s", "write_bytes_per_s"],
                   var_name="direction", value_name="rate")
    data["direction"] = data["direction"].map({"read_bytes_per_s": "read", "write_bytes_per_s": "write"})
    data["rate"] = data["rate"] / div
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("sum(rate):Q", title=f"average rate [{unit}]"),
        y=alt.Y("name:N", title=None, sort=list(df["name"])),
        color=alt.Color("direction:N", title="direction", scale=alt.Scale(domain=["read", "write"],
                                                                         range=[BLUE, ORANGE])),
        tooltip=["name:N", "direction:N", alt.Tooltip("rate:Q", title=unit, format=",.4g")],
    ).properties(width=WIDTH - 80, height=alt.Step(22), title=title)


CAPACITY_ITEMS = {"datasets_bytes": "datasets", "checkpoints_bytes": "checkpoints",
                  "data_preparation_bytes": "data preparation", "model_repository_bytes": "model repository",
                  "kv_cache_bytes": "KV-cache tier"}


def capacity_breakdown(capacity_bytes: Mapping[str, float], *, title: str = "Storage capacity") -> alt.LayerChart:
    """Stacked bar of what the storage keeps [TB], with the raw capacity after data protection (rule).

    ``capacity_bytes`` is ``StoragePlan.capacity_bytes``.
    """
    data = pd.DataFrame([{"item": v, "order": i, "tb": float(capacity_bytes.get(k, 0.0)) / TB, "bar": "usable"}
                         for i, (k, v) in enumerate(CAPACITY_ITEMS.items())])
    bars = alt.Chart(data).mark_bar(height=34).encode(
        x=alt.X("sum(tb):Q", title="capacity [TB]"), y=alt.Y("bar:N", title=None, axis=None),
        color=alt.Color("item:N", title="kept", sort=list(CAPACITY_ITEMS.values())), order="order:Q",
        tooltip=["item:N", alt.Tooltip("tb:Q", title="TB", format=",.2f")])
    raw = pd.DataFrame([{"limit": "raw (after data protection)", "tb": capacity_bytes["raw_bytes"] / TB}])
    rule = alt.Chart(raw).mark_rule(color=RED, size=2).encode(
        x="tb:Q", tooltip=["limit:N", alt.Tooltip("tb:Q", title="TB", format=",.2f")])
    return (bars + rule).properties(width=WIDTH, height=70, title=title)


def collective_time(frame: pd.DataFrame, op: str, marked_gpus: int | None = None, *,
                    title: str | None = None) -> alt.LayerChart:
    """Time of one collective [s] against the GPUs taking part [count] (log2 axis), one count marked.

    ``frame`` has ``gpus`` and ``seconds`` (from :func:`aisize.network.collective_seconds`).
    """
    data = _frame(frame)[["gpus", "seconds"]]
    x = alt.X("gpus:Q", title="GPUs [count] (log2)", scale=alt.Scale(type="log", base=2))
    y = alt.Y("seconds:Q", title=f"{op} time [s]")
    layers = [alt.Chart(data).mark_line(color=BLUE).encode(
        x=x, y=y, tooltip=[alt.Tooltip("gpus:Q", format=",d"), alt.Tooltip("seconds:Q", format=",.4g")])]
    if marked_gpus is not None:
        layers.append(alt.Chart(data[data["gpus"] == marked_gpus]).mark_point(filled=True, size=120, color=RED)
                      .encode(x=x, y=y, tooltip=[alt.Tooltip("gpus:Q", format=",d"),
                                                 alt.Tooltip("seconds:Q", format=",.4g")]))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title or f"{op} time vs GPUs")


def validation_errors(df: pd.DataFrame) -> alt.LayerChart:
    """Signed error of each validation case vs its published figure [%] (from :func:`aisize.validation.validate`).

    Delegates to :func:`aisize.validation.error_chart`, so the app and the reports draw the same chart.
    """
    from aisize.validation import error_chart

    return error_chart(df)


SERVING_CURVE, SERVING_TARGETS = "serving_curve", "serving_targets"


def serving_latency_data(curve: pd.DataFrame, ttft_target_seconds: float | None = None,
                         tpot_target_seconds: float | None = None) -> dict[str, list[dict]]:
    """The rows :func:`serving_latency` draws (long form, in ms), by dataset name."""
    rows = [{"requests_per_s": float(r), "metric": metric, "statistic": stat, "ms": float(v) * 1e3}
            for metric, cols in (("TTFT", ("ttft_seconds", "ttft_p95_seconds")),
                                 ("TPOT", ("tpot_seconds", "tpot_p95_seconds")))
            for stat, col in zip(("mean", "p95"), cols) for r, v in zip(curve["requests_per_s"], curve[col])]
    targets = [{"metric": m, "ms": float(t) * 1e3, "what": f"{m} target"}
               for m, t in (("TTFT", ttft_target_seconds), ("TPOT", tpot_target_seconds)) if t is not None]
    return {SERVING_CURVE: rows, SERVING_TARGETS: targets}


def serving_latency(curve: pd.DataFrame, ttft_target_seconds: float | None = None,
                    tpot_target_seconds: float | None = None, requests_per_s: float | None = None, *,
                    title: str = "TTFT and TPOT vs load") -> alt.HConcatChart:
    """Time to first token and time per output token [ms], mean and p95, against request rate,
    one panel each, with the targets as red rules and the planned load as a grey rule.

    ``curve`` is :func:`aisize.plan.latency_curve`'s frame (``requests_per_s`` and the
    ``ttft_*``/``tpot_*`` columns in seconds).
    """
    data = serving_latency_data(curve, ttft_target_seconds, tpot_target_seconds)
    x = alt.X("requests_per_s:Q", title="request rate [requests/s]")

    def panel(metric):
        lines = alt.Chart(alt.NamedData(name=SERVING_CURVE)).transform_filter(
            alt.datum.metric == metric).mark_line().encode(
            x=x, y=alt.Y("ms:Q", title=f"{metric} [ms]"),
            color=alt.Color("statistic:N", title="latency", scale=alt.Scale(range=[BLUE, ORANGE])),
            tooltip=[alt.Tooltip("requests_per_s:Q", title="requests/s", format=",.3g"), "statistic:N",
                     alt.Tooltip("ms:Q", format=",.3g")])
        layers = [lines, alt.Chart(alt.NamedData(name=SERVING_TARGETS)).transform_filter(
            alt.datum.metric == metric).mark_rule(color=RED, strokeDash=[6, 3]).encode(
            y="ms:Q", tooltip=["what:N", alt.Tooltip("ms:Q", format=",.4g")])]
        if requests_per_s is not None:
            layers.append(alt.Chart(alt.Data(values=[{"where": "planned load"}])).transform_calculate(
                requests_per_s=MARK).mark_rule(color=GREY).encode(x="requests_per_s:Q", tooltip=["where:N"]))
        return alt.layer(*layers).properties(width=WIDTH // 2, height=HEIGHT, title=metric)

    chart = alt.hconcat(panel("TTFT"), panel("TPOT")).properties(title=title, datasets=data)
    return _with_markers(chart, requests_per_s)


def serving_frontier(frontier: pd.DataFrame, feasible: pd.DataFrame | None = None, *,
                     title: str = "Serving configurations: throughput per GPU vs per user") -> alt.LayerChart:
    """Tokens/s per GPU against tokens/s per user of the configurations that fit (the Pareto
    frontier as a line, by mode), with those meeting the targets as points."""
    f = _frame(frontier)
    x = alt.X("tokens_per_s_per_user:Q", title="output tokens/s per user (1 / TPOT)", scale=alt.Scale(type="log"))
    y = alt.Y("tokens_per_s_per_gpu:Q", title="output tokens/s per GPU", scale=alt.Scale(type="log"))
    tip = [alt.Tooltip(c, format=",.3g") if c.startswith("tokens") else c
           for c in ("mode", "weight_precision", "tensor_parallel", "pipeline_parallel", "attention_dp", "batch",
                     "tokens_per_s_per_gpu", "tokens_per_s_per_user") if c in f]
    line = alt.Chart(f).mark_line(point=True).encode(x=x, y=y, color=alt.Color("mode:N", title="mode"),
                                                     tooltip=tip)
    layers = [line]
    if feasible is not None and len(feasible):
        ok = _frame(feasible).nlargest(200, "tokens_per_s_per_gpu")
        layers.insert(0, alt.Chart(ok).mark_circle(opacity=0.25, color=GREY, size=20).encode(x=x, y=y, tooltip=tip))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title)


def serving_validation(df: pd.DataFrame, *, tolerance_pct: float = 15.0,
                       title: str = "Serving: predicted vs published output tokens/s") -> alt.LayerChart:
    """Predicted against published (log-log) for the serving family, with the ±tolerance band."""
    data = _frame(df)[["case", "published", "predicted", "error_pct", "status", "assumptions"]]
    lo, hi = float(data[["published", "predicted"]].min().min()) * 0.8, float(
        data[["published", "predicted"]].max().max()) * 1.25
    t = tolerance_pct / 100.0
    band = pd.DataFrame({"published": [lo, hi], "low": [lo * (1 - t), hi * (1 - t)], "high": [lo * (1 + t), hi * (1 + t)]})
    scale = alt.Scale(type="log", domain=[lo, hi])
    x = alt.X("published:Q", title="published output tokens/s", scale=scale)
    area = alt.Chart(band).mark_area(opacity=0.15, color=GREY).encode(
        x=x, y=alt.Y("low:Q", scale=scale, title="predicted output tokens/s"), y2="high:Q")
    points = alt.Chart(data).mark_circle(size=36).encode(
        x=x, y=alt.Y("predicted:Q", scale=scale),
        color=alt.Color("status:N", scale=alt.Scale(domain=["ok", "outside"], range=[BLUE, RED])),
        tooltip=["case", "assumptions", alt.Tooltip("published:Q", format=",.0f"),
                 alt.Tooltip("predicted:Q", format=",.0f"), alt.Tooltip("error_pct:Q", format="+.1f")])
    return alt.layer(area, points).properties(width=WIDTH, height=WIDTH, title=title)
