"""Network: the time of one collective against the GPUs taking part."""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, HEIGHT, RED, WIDTH, as_frame

def collective_time(frame: pd.DataFrame, op: str, marked_gpus: int | None = None, *,
                    title: str | None = None) -> alt.LayerChart:
    """Time of one collective [s] against the GPUs taking part [count] (log2 axis), one count marked.

    ``frame`` has ``gpus`` and ``seconds`` (from :func:`aisize.network.collective_seconds`).
    """
    data = as_frame(frame)[["gpus", "seconds"]]
    x = alt.X("gpus:Q", title="GPUs [count] (log2)", scale=alt.Scale(type="log", base=2))
    y = alt.Y("seconds:Q", title=f"{op} time [s]")
    layers = [alt.Chart(data).mark_line(color=BLUE).encode(
        x=x, y=y, tooltip=[alt.Tooltip("gpus:Q", format=",d"), alt.Tooltip("seconds:Q", format=",.4g")])]
    if marked_gpus is not None:
        layers.append(alt.Chart(data[data["gpus"] == marked_gpus]).mark_point(filled=True, size=120, color=RED)
                      .encode(x=x, y=y, tooltip=[alt.Tooltip("gpus:Q", format=",d"),
                                                 alt.Tooltip("seconds:Q", format=",.4g")]))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title or f"{op} time vs GPUs")
