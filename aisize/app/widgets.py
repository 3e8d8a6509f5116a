"""Widgets of the aisize Voila app (``notebooks/app.ipynb``).

A first page: the time of one collective (all-reduce of a 7B model's BF16
gradients by default) over a growing number of GPUs, from
:func:`aisize.network.collective_seconds`. Controls are a collective
dropdown and a GPU-count slider; the result is an HTML number and an Altair
chart (``alt.JupyterChart``, offline: its JavaScript comes from vl-convert,
never from a CDN).

Widget values arrive from the browser, so they are untrusted: the widgets
themselves reject options not offered and clamp slider values to their range,
and :func:`aisize.network.collective_seconds` checks them again; a
``ValueError`` is shown on the page instead of a traceback.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import altair as alt
import ipywidgets as widgets
import numpy as np
import pandas as pd

from aisize.network import OPS, collective_seconds
from aisize.units import GB, gbit_per_s_to_bytes_per_s

# Assumptions of this page, stated on it: 7e9 parameters x 2 bytes (BF16
# gradients), one 400 Gbit/s (InfiniBand NDR) port per GPU.
PAYLOAD_BYTES = 7e9 * 2
LINK_GBIT_PER_S = 400.0
GPUS_MIN, GPUS_MAX, GPUS_DEFAULT = 2, 256, 8

# vega-embed's menu without "Open in Vega Editor" (an external site) and the source views.
EMBED_OPTIONS = {"actions": {"export": True, "source": False, "compiled": False, "editor": False}}

# GPU counts drawn on the chart: every count the slider offers (log-scaled axis).
CHART_GPUS = np.arange(GPUS_MIN, GPUS_MAX + 1)


def link_bytes_per_s() -> float:
    """Per-GPU link rate of this page [B/s]."""
    return gbit_per_s_to_bytes_per_s(LINK_GBIT_PER_S)


def result_seconds(op: str, gpus):
    """Time of collective ``op`` over ``gpus`` GPUs with the page's payload and link [s]."""
    return collective_seconds(op, PAYLOAD_BYTES, gpus, link_bytes_per_s())


def format_seconds(seconds: float) -> str:
    """A duration for display, four significant digits: '0.6125 s', '12.5 ms'."""
    if seconds >= 1.0 or seconds == 0.0:
        return f"{seconds:.4g} s"
    return f"{seconds * 1e3:.4g} ms"


def result_html(op: str, gpus: int) -> str:
    """The result line: the collective, the GPU count and its time."""
    text = format_seconds(float(result_seconds(op, gpus)))
    return (f"<p>{html.escape(op)} of {PAYLOAD_BYTES / GB:g} GB over {gpus} GPUs: "
            f"<b class='aisize-result'>{text}</b></p>")


def chart(op: str, gpus: int) -> alt.LayerChart:
    """Collective time against GPU count, the chosen count marked (param ``gpus``)."""
    frame = pd.DataFrame({"gpus": CHART_GPUS, "seconds": result_seconds(op, CHART_GPUS)})
    marked = alt.param(name="gpus", value=gpus)
    x = alt.X("gpus:Q", title="GPUs", scale=alt.Scale(type="log", base=2))
    y = alt.Y("seconds:Q", title=f"{op} time [s]")
    curve = alt.Chart(frame).mark_line().encode(x=x, y=y)
    # the browser picks the marked row by the param, so a slider move sends one number
    point = (alt.Chart(frame).transform_filter("datum.gpus == gpus")
             .mark_point(filled=True, size=120, color="crimson").encode(x=x, y=y))
    return (curve + point).add_params(marked).properties(width=520, height=260)


@dataclass(frozen=True)
class App:
    """The page's widgets; ``view`` is what the notebook displays."""

    op: widgets.Dropdown
    gpus: widgets.IntSlider
    result: widgets.HTML
    chart: alt.JupyterChart
    view: widgets.VBox


def build_app(display: bool = True) -> App:
    """Build the page's widgets, wire them, and (by default) display them."""
    alt.JupyterChart.enable_offline()
    op = widgets.Dropdown(options=OPS, value="all-reduce", description="Collective")
    gpus = widgets.IntSlider(value=GPUS_DEFAULT, min=GPUS_MIN, max=GPUS_MAX, description="GPUs")
    result = widgets.HTML(result_html(op.value, gpus.value))
    jchart = alt.JupyterChart(chart(op.value, gpus.value), embed_options=EMBED_OPTIONS)
    note = widgets.HTML(f"<p>Payload {PAYLOAD_BYTES / GB:g} GB (7B parameters, BF16 gradients); "
                        f"{LINK_GBIT_PER_S:g} Gbit/s per GPU; ring algorithm.</p>")
    app = App(op, gpus, result, jchart, widgets.VBox([op, gpus, result, jchart, note]))

    def on_gpus(change) -> None:
        _update(app, new_chart=False)

    def on_op(change) -> None:
        _update(app, new_chart=True)

    gpus.observe(on_gpus, names="value")
    op.observe(on_op, names="value")
    if display:
        from IPython.display import display as show

        show(app.view)
    return app


def _update(app: App, new_chart: bool) -> None:
    try:
        app.result.value = result_html(app.op.value, app.gpus.value)
        if new_chart:
            app.chart.chart = chart(app.op.value, app.gpus.value)
        else:
            app.chart.params.gpus = app.gpus.value
    except ValueError as error:
        app.result.value = f"<p class='aisize-error'>{html.escape(str(error))}</p>"
