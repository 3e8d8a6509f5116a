"""Training: GPUs needed against the target time, and the step time by part per candidate layout.

In the step-time chart an architect sees why a layout wins: compute, the exposed communication of each
parallelism (TP, CP, PP, DP, EP), the pipeline bubble and stragglers, side by side
for the fastest layouts :func:`aisize.plan.layout_candidates` (or
:func:`aisize.training.search_layouts`) returns. Pure: a DataFrame in, a chart out.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, HEIGHT, MARK_DAYS, MARK_GPUS, NUMBER, RED, WIDTH, as_frame, tips

DAYS_DATA = "gpus_vs_days"  # named dataset of gpus_vs_days (swapped as a Vega changeset)


def gpus_vs_days_rows(frame: pd.DataFrame) -> dict[str, list[dict]]:
    """The rows :func:`gpus_vs_days` draws, by dataset name."""
    data = as_frame(frame)
    return {DAYS_DATA: [{"target_days": float(d), "gpus": float(g)} for d, g in zip(data["target_days"], data["gpus"])]}


def gpus_vs_days(frame: pd.DataFrame, marked_days: float | None = None, marked_gpus: float | None = None, *,
                 title: str = "GPUs needed vs target time") -> alt.LayerChart:
    """GPUs needed [count] against the target time [days] (log-log), the chosen target marked.

    ``frame`` has columns ``target_days`` and ``gpus`` (e.g. from :func:`aisize.plan.gpus_vs_days`);
    the rows live in the named dataset of :func:`gpus_vs_days_rows`.
    """
    x = alt.X("target_days:Q", title="target time to train [days] (log)", scale=alt.Scale(type="log"))
    y = alt.Y("gpus:Q", title="GPUs needed [count] (log)", scale=alt.Scale(type="log"))
    line = alt.Chart(alt.NamedData(name=DAYS_DATA)).mark_line(point=True, color=BLUE, interpolate="step-before").encode(
        x=x, y=y, tooltip=tips(alt.Tooltip("target_days:Q", title="days", format=NUMBER),
                               alt.Tooltip("gpus:Q", title="GPUs", format=",d")))
    if marked_days is None or marked_gpus is None:
        return line.properties(width=WIDTH, height=HEIGHT, title=title, datasets=gpus_vs_days_rows(frame))
    # the marked point reads two params, so a viewer can move it without a new chart
    mark = (alt.Chart(pd.DataFrame([{"what": "chosen"}]))
            .transform_calculate(target_days=MARK_DAYS, gpus=MARK_GPUS)
            .mark_point(filled=True, size=140, color=RED).encode(
                x=x, y=y, tooltip=tips(alt.Tooltip("target_days:Q", title="chosen days", format=NUMBER),
                                       alt.Tooltip("gpus:Q", title="GPUs", format=",d"))))
    return alt.layer(line, mark).add_params(alt.param(name=MARK_DAYS, value=float(marked_days)),
                                            alt.param(name=MARK_GPUS, value=float(marked_gpus))).properties(
        width=WIDTH, height=HEIGHT, title=title, datasets=gpus_vs_days_rows(frame))


# Step-time parts (aisize.training.step_time.PARTS) in drawing order, with display names.
STEP_PARTS = {"compute_seconds": "compute", "tp_comm_seconds": "TP communication",
              "cp_comm_seconds": "CP communication", "pp_comm_seconds": "PP sends",
              "dp_comm_exposed_seconds": "DP/FSDP communication", "ep_comm_seconds": "EP all-to-all",
              "host_sync_seconds": "MoE host sync", "offload_exposed_seconds": "activation offload",
              "pp_bubble_seconds": "pipeline bubble", "straggler_seconds": "stragglers"}
PART_COLOURS = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#ff9da6", "#bab0ac",
                "#b279a2", "#9d755d"]
# Named dataset of the chart: the app swaps its rows in a drawn chart (a Vega changeset).
STEP_DATA = "step_parts"


def layout_label(row) -> str:
    """A layout in a few characters: TP8 PP4 CP1 DP16 · interleaved v2 · mb1 · Z1 · full."""
    sched = {"1f1b": "1F1B", "interleaved-1f1b": f"interleaved v{int(row['virtual_stages'])}",
             "zero-bubble": "zero-bubble"}.get(str(row.get("schedule", "1f1b")), str(row.get("schedule")))
    text = f"TP{int(row['tp'])} PP{int(row['pp'])} CP{int(row.get('cp', 1))} DP{int(row['dp'])}"
    if int(row.get("ep", 1)) > 1:
        text += f" EP{int(row['ep'])}"
    if int(row["pp"]) > 1:
        text += f" · {sched}"
    return text + f" · mb{int(row['micro_batch'])} · Z{int(row['zero_stage'])} · {row['recompute']}"


def _records(frame: pd.DataFrame) -> list[dict]:
    """``frame.to_dict("records")``, the same values (Python scalars), without building a Series per column: each
    deep-copies the frame's ``attrs`` (layout candidates carry the model record: 42 copies, about 3 ms of a
    training slider move)."""
    columns = list(frame.columns)
    return [dict(zip(columns, row)) for row in frame.to_numpy(dtype=object).tolist()]


def step_breakdown_rows(frame: pd.DataFrame) -> dict[str, list[dict]]:
    """The rows :func:`step_breakdown` draws, by dataset name (plain lists, no chart built)."""
    return {STEP_DATA: _records(step_breakdown_data(frame))}


def step_breakdown_data(frame: pd.DataFrame) -> pd.DataFrame:
    """Long table (layout, rank, part, order, seconds, share) of the step-time parts of each layout."""
    rows = []
    for rank, r in enumerate(_records(frame)):
        label = f"{rank + 1}. {layout_label(r)}"
        total = sum(float(r[k]) for k in STEP_PARTS)
        for order, (key, name) in enumerate(STEP_PARTS.items()):
            seconds = float(r[key])
            if seconds > 0.0:
                rows.append({"layout": label, "rank": rank, "part": name, "order": order, "seconds": seconds,
                             "share": seconds / total, "mfu": float(r.get("mfu", float("nan")))})
    return pd.DataFrame(rows, columns=["layout", "rank", "part", "order", "seconds", "share", "mfu"])


def step_breakdown(frame: pd.DataFrame, *, title: str = "Step time by part, fastest layouts first") -> alt.Chart:
    """Stacked bars of the step time [s] by part, one per candidate layout (fastest on top).

    ``frame``: rows of :func:`aisize.training.search_layouts` (layout columns and the
    ``*_seconds`` parts of :data:`STEP_PARTS`).
    """
    return alt.Chart(alt.NamedData(name=STEP_DATA)).mark_bar().encode(
        x=alt.X("sum(seconds):Q", title="step time [s]"),
        y=alt.Y("layout:N", title=None, sort=alt.EncodingSortField("rank", op="min", order="ascending"),
                axis=alt.Axis(labelLimit=340)),
        color=alt.Color("part:N", title="step-time part", sort=list(STEP_PARTS.values()),
                        scale=alt.Scale(domain=list(STEP_PARTS.values()), range=PART_COLOURS)),
        order=alt.Order("order:Q"),
        tooltip=tips("layout:N", "part:N", alt.Tooltip("seconds:Q", title="seconds", format=NUMBER),
                     alt.Tooltip("share:Q", title="share of step", format=".1%"),
                     alt.Tooltip("mfu:Q", title="layout MFU", format=".1%")),
    ).properties(width=WIDTH, height=alt.Step(18), title=title, datasets=step_breakdown_rows(frame))
