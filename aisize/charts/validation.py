"""Validation: estimates against published figures."""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize.charts.style import GREY, WIDTH, as_frame, tips

def validation_errors(df: pd.DataFrame) -> alt.LayerChart:
    """Signed error of each validation case vs its published figure [%] (from :func:`aisize.validation.validate`).

    Delegates to :func:`aisize.validation.error_chart`, so the app and the reports draw the same chart.
    """
    from aisize.validation import error_chart

    return error_chart(df)


def serving_validation(df: pd.DataFrame, *, tolerance_pct: float = 15.0,
                       title: str = "Serving: predicted vs published output tokens/s") -> alt.LayerChart:
    """Predicted against published (log-log) for the serving family, with the ±tolerance band."""
    data = as_frame(df)[["case", "family", "published", "predicted", "error_pct", "status", "assumptions"]]
    data = data[data["predicted"].notna()]
    lo, hi = float(data[["published", "predicted"]].min().min()) * 0.8, float(
        data[["published", "predicted"]].max().max()) * 1.25
    t = tolerance_pct / 100.0
    band = pd.DataFrame({"published": [lo, hi], "low": [lo * (1 - t), hi * (1 - t)], "high": [lo * (1 + t), hi * (1 + t)]})
    scale = alt.Scale(type="log", domain=[lo, hi])
    x = alt.X("published:Q", title="published output tokens/s per GPU", scale=scale)
    area = alt.Chart(band).mark_area(opacity=0.15, color=GREY).encode(
        x=x, y=alt.Y("low:Q", scale=scale, title="predicted output tokens/s per GPU"), y2=alt.Y2("high:Q"))
    points = alt.Chart(data).mark_point(size=36, filled=True).encode(
        x=x, y=alt.Y("predicted:Q", scale=scale), color=alt.Color("family:N", title="set"),
        shape=alt.Shape("status:N", scale=alt.Scale(domain=["ok", "outside"], range=["circle", "triangle"])),
        tooltip=tips("case", "family", "assumptions", alt.Tooltip("published:Q", format=",.0f"),
                     alt.Tooltip("predicted:Q", format=",.0f"),
                     alt.Tooltip("error_pct:Q", title="error [%]", format="+.1f")))
    return alt.layer(area, points).properties(width=WIDTH, height=WIDTH, title=title)
