"""Validation: estimates against published figures."""

from __future__ import annotations

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, GREY, NUMBER, ORANGE, RED, WIDTH, as_frame, tips

# The verdicts `aisize validate` counts apart (aisize.validation.report.verdict), as the chart colours them: the
# Accuracy table's "rough" cases (within a wide tolerance only) are not drawn in the colour of "ok".
VERDICT_COLOURS = {"ok": BLUE, "rough": ORANGE, "outside": RED}
LABEL_HEAD, LABEL_TAIL = 24, 20  # characters of a case's name kept before and after the cut on the axis


def verdict_class(verdict: str) -> str:
    """"ok", "rough" or "outside" of a verdict of :func:`aisize.validation.report.verdict`."""
    return "rough" if str(verdict).startswith("within the") else str(verdict)


def case_labels(cases) -> list[str]:
    """Each case's name as the axis shows it, whole when short, else its head, "…" and its tail: the cases of one
    run differ at the end ("... tokens/s per GPU", "... peak memory"), so a head alone made pairs read the same.
    A name still the same as another's is shown whole (the tooltip always has all of it)."""
    names = [str(c) for c in cases]
    cut = [n if len(n) <= LABEL_HEAD + LABEL_TAIL + 1 else _cut(n) for n in names]
    return [c if cut.count(c) == 1 else n for c, n in zip(cut, names)]


def _cut(name: str) -> str:
    """``name``'s head and tail at word boundaries ("training M7 LLAMA2-70B…tokens/s per GPU")."""
    head, tail = name[:LABEL_HEAD + 1], name[-LABEL_TAIL - 1:]  # one more: a word that ends at the cut stays
    word = head[:head.rindex(" ")] if " " in head[1:] else ""
    head = word if len(word) >= LABEL_HEAD - 8 else head[:LABEL_HEAD]  # a long word is cut, not dropped
    tail = tail[tail.index(" ") + 1:] if " " in tail[:-1] else tail[1:]
    return f"{head}…{tail}"


def validation_errors_data(df: pd.DataFrame) -> pd.DataFrame:
    """The rows :func:`validation_errors` draws: the cases with a prediction, their verdict class and label."""
    data = as_frame(df)
    if "verdict" not in data:  # rows not from validate(): their status is their verdict
        data["verdict"] = data["status"]
    data = data[data["error_pct"].notna()][["case", "family", "error_pct", "tolerance_pct", "status", "verdict"]].copy()
    data["verdict_class"] = [verdict_class(v) for v in data["verdict"]]
    data["label"] = case_labels(data["case"])
    return data


def validation_errors(df: pd.DataFrame) -> alt.LayerChart:
    """Signed error of each validation case vs its published figure [%] (symlog axis, rows of
    :func:`aisize.validation.validate`), coloured by verdict (ok, rough, outside), a tick at each case's tolerance.

    Cases without a prediction (needs input) are left out. The app's Accuracy tab and the report draw this chart
    (:func:`aisize.validation.error_chart` is this function)."""
    data = validation_errors_data(df)
    # a case per row, its label cut in Python (measuring 100+ labels for an ellipsis took seconds of SVG)
    base = alt.Chart(data).encode(y=alt.Y("label:N", sort=None, title=None, axis=alt.Axis(labelLimit=0)))
    title = "error vs published [%] (symlog)"
    bars = base.mark_bar().encode(
        x=alt.X("error_pct:Q", title=title, scale=alt.Scale(type="symlog")),
        color=alt.Color("verdict_class:N", title="verdict", scale=alt.Scale(
            domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values()))),
        tooltip=tips("case", "family", alt.Tooltip("error_pct:Q", title="error [%]", format=NUMBER),
                     alt.Tooltip("tolerance_pct:Q", title="tolerance [%]"), "verdict"))
    # the ticks share the bars' axis: give them its title, or Vega joins both ("..., tolerance [%]")
    ticks = base.mark_tick(color="black", thickness=1).encode(x=alt.X("tolerance_pct:Q", title=title))
    return (bars + ticks).properties(width=420, height=alt.Step(12), title="aisize vs published figures")


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
