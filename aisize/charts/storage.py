"""Storage: the IO blend by workload and what the capacity holds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, ORANGE, RED, WIDTH, as_frame
from aisize.units import GB, MB, TB

def _rate_unit(values: Iterable[float]) -> tuple[str, float]:
    """GB/s when any rate reaches 1 GB/s, else MB/s (so small blends stay readable)."""
    top = max([float(v) for v in values], default=0.0)
    return ("GB/s", GB) if top >= GB else ("MB/s", MB)


def io_blend(rows, *, title: str = "Storage IO blend: average rate by workload") -> alt.Chart:
    """Horizontal stacked bars of each workload's average read and write rate [GB/s or MB/s].

    ``rows`` are ``StoragePlan.workloads`` dicts (or a DataFrame with ``name``,
    ``read_bytes_per_s``, ``write_bytes_per_s``).
    """
    df = as_frame(rows)
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
                  "data_preparation_bytes": "data preparation", "model_repository_bytes": "model repository"}


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
