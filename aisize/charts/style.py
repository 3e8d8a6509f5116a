"""What every chart shares: sizes, colours, the params a viewer moves, and small helpers."""

from __future__ import annotations

import altair as alt
import pandas as pd

WIDTH, HEIGHT = 440, 240
BLUE, ORANGE, RED, GREY = "#4c78a8", "#f58518", "#e45756", "#7f7f7f"

# Params a viewer may set to move a marker without a new chart (JupyterChart.params.<name>).
MARK = "marked"  # operating point of latency_vs_load / latency_vs_concurrency / serving_latency
MARK_DAYS, MARK_GPUS = "marked_days", "marked_gpus"  # chosen point of gpus_vs_days
# A tooltip's number as :func:`aisize.format.sig` writes it: three significant figures, thousands
# separated, never an exponent (d3-format's "g" writes 8,710 as "8.71e+3").
NUMBER = ",.3r"
# Widest axis or legend label [px] a chart draws in full (Vega cuts at 160/180 px by default, which cut
# "runtime (engine reserve, activations)" and the cost lines' names); CHAR_PX is the width of a character of
# Vega's 10-11 px label font, generously, for sizing a label by its length.
LABEL_LIMIT, CHAR_PX = 320, 6.5


def label_fits(text: str, limit: float = LABEL_LIMIT) -> bool:
    """Whether ``text`` fits a label ``limit`` px wide uncut (at :data:`CHAR_PX` per character)."""
    return len(str(text)) * CHAR_PX <= limit


def as_frame(rows) -> pd.DataFrame:
    """A copy of ``rows`` as a DataFrame (rows may be a DataFrame or an iterable of dicts)."""
    return rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


def with_marker(chart, at):
    """``chart`` with the :data:`MARK` param set to ``at`` (unchanged when ``at`` is None)."""
    return chart if at is None else chart.add_params(alt.param(name=MARK, value=float(at)))


def tips(*fields) -> list[alt.Tooltip]:
    """Tooltip channels from shorthands ("name:N") and ready :class:`alt.Tooltip` objects.

    Every channel is built as its class: Altair turns a bare string channel into one through a
    schema lookup of about 5 ms each, which summed to 0.3 s of a report's 20 charts."""
    return [f if isinstance(f, alt.Tooltip) else alt.Tooltip(f) for f in fields]
