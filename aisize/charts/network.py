"""Network: the time of one collective against the GPUs taking part."""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, HEIGHT, NUMBER, RED, WIDTH, as_frame

COLLECTIVE_DATA, COLLECTIVE_MARK = "collective_time", "collective_marked"  # named datasets


def collective_time_rows(frame: pd.DataFrame, marked_gpus: int | None = None) -> dict[str, list[dict]]:
    """The rows :func:`collective_time` draws, by dataset name: the curve and the marked count."""
    data = as_frame(frame)
    rows = [{"gpus": float(g), "seconds": float(s)} for g, s in zip(data["gpus"], data["seconds"])]
    return {COLLECTIVE_DATA: rows, COLLECTIVE_MARK: [r for r in rows if r["gpus"] == marked_gpus]}


def collective_time(frame: pd.DataFrame, op: str, marked_gpus: int | None = None, *,
                    title: str | None = None) -> alt.LayerChart:
    """Time of one collective [s] against the GPUs taking part [count] (log2 axis), one count marked.

    ``frame`` has ``gpus`` and ``seconds`` (from :func:`aisize.network.collective_seconds`); the rows
    live in the named datasets of :func:`collective_time_rows`.
    """
    x = alt.X("gpus:Q", title="GPUs [count] (log2)", scale=alt.Scale(type="log", base=2))
    y = alt.Y("seconds:Q", title=f"{op} time [s]")
    tip = [alt.Tooltip("gpus:Q", format=",d"), alt.Tooltip("seconds:Q", format=NUMBER)]
    line = alt.Chart(alt.NamedData(name=COLLECTIVE_DATA)).mark_line(color=BLUE).encode(x=x, y=y, tooltip=tip)
    point = alt.Chart(alt.NamedData(name=COLLECTIVE_MARK)).mark_point(filled=True, size=120, color=RED).encode(
        x=x, y=y, tooltip=tip)
    return alt.layer(line, point).properties(width=WIDTH, height=HEIGHT, title=title or f"{op} time vs GPUs",
                                             datasets=collective_time_rows(frame, marked_gpus))
